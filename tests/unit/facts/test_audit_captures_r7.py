"""The truth audit's seventh round (its part of tests/unit/facts/audit_captures.py): nvidia-smi
outputs that answer less than the rules asked, where the verdict had been taken from what was
not there. R7-F1: a `--query-gpu -l N` log read as one GPU per sample (test_query_csv_samples.py);
R7-F2: `pcie_link` passed "at max" with the card's maximum not given; R7-F3: `ecc_mode` and
`memory_repair` passed a workstation or unrecognised card (a vGPU profile) whose ECC facts were
not in the output; R7-F4: a vGPU guest's 0 C passed as a temperature. Each value below was read
off the capture by hand; each test fails without its fix."""

from __future__ import annotations

from gpuonboard.steps.checks import gpu_health

from .audit_captures import saved

H100_GEN = "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver595.71.05__gen-current-only.csv"
VGPU_A6000 = "nvidia-smi__rtxa6000-24q-vgpu__1gpu__driver550.54.15__guest.txt"
VGPU_P4 = "nvidia-smi-q-x__grid-p4-1q-vgpu__1gpu__driver513.46__windows-guest.xml"
A6000_CSV = "nvidia-smi-query-gpu__rtx-a6000__2gpu__indented.csv"
QUADRO_P400 = "nvidia-smi-q-x__quadro-p400__1gpu__driver418.43.xml"  # <current_ecc>N/A</current_ecc>
RTX3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"  # ECC cell N/A


def rules(name: str) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(saved(name))}


def test_r7_f2_a_link_read_without_the_cards_maximum_is_not_at_max() -> None:
    # header: index, name, driver_version, pstate, pcie.link.gen.current, ... (no .max, no width)
    # (the fields not read named, round 25: the width as well as the card's maximum)
    assert rules(H100_GEN)["pcie_link"] == (
        "unverified",
        "GPU 0 Gen5 (max generation, current width and max width not reported)",
    )


def test_r7_f3_ecc_facts_left_out_of_a_card_that_may_have_ecc_are_unverified() -> None:
    # an RTX A6000 has ECC; this query asked for no ECC field
    got = rules(A6000_CSV)
    assert got["ecc_mode"] == ("unverified", "not reported for all 2 GPUs")
    assert got["memory_repair"][0] == "unverified"
    # a vGPU profile of an A6000 ("NVIDIA RTXA6000-24Q"): the table's ECC cell reads 0 (on), and
    # a table carries no repair state
    got = rules(VGPU_A6000)
    assert got["ecc_mode"] == ("pass", "Enabled on GPU 0")
    assert got["memory_repair"] == (
        "unverified",
        "not reported for GPU 0 (the formats read gave none: N/A or no such field)",
    )


def test_r7_f3_ecc_said_to_be_na_stays_not_applicable() -> None:
    # nvidia-smi's own N/A: a Quadro P400 and a GeForce RTX 3090 have no ECC
    assert rules(QUADRO_P400)["ecc_mode"] == ("pass", "not applicable (no ECC on these GPUs)")
    assert rules(QUADRO_P400)["memory_repair"][0] == "pass"
    assert rules(RTX3090)["ecc_mode"] == ("pass", "not applicable (no ECC on these GPUs)")
    assert rules(RTX3090)["memory_repair"] == ("pass", "not reported (not required of these GPUs)")


def test_r7_f4_a_vgpu_guests_zero_degrees_is_no_reading() -> None:
    # <gpu_temp>0 C</gpu_temp>, every threshold N/A (GRID P4-1Q, a Windows guest)
    assert rules(VGPU_P4)["temperature"] == ("unverified", "0 C on GPU 0: no reading")


def test_r7_f3_na_in_q_text_is_said_not_left_out() -> None:
    """`nvidia-smi -q`'s "ECC Mode / Current : N/A" is nvidia-smi's own N/A (it was read as left out)."""
    from gpuonboard.facts.nvidia_smi import parse_any

    from .audit_captures import read

    text = read("nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt")
    assert parse_any(text).gpus[0].ecc_na


def test_a_gpu_nvidia_smi_cannot_read_is_not_judged_as_having_no_ecc() -> None:
    # an H100 whose every cell reads [GPU requires reset]: its repair state is no "not required"
    got = rules("nvidia-smi-query-gpu__h100__1gpu__gpu-requires-reset.csv")
    assert got["memory_repair"] == ("warn", "not judged: GPU 0 unreadable")
    assert got["ecc_mode"] == ("warn", "not judged: GPU 0 unreadable")


def test_a_vgpu_guests_ecc_na_is_no_answer() -> None:
    """A vGPU guest's driver hides the board's ECC: its N/A is not "no ECC" (an A6000's profile)."""
    import dataclasses

    from gpuonboard.facts.nvidia_smi import GpuInfo

    guest = GpuInfo(index=0, name="NVIDIA RTXA6000-24Q", ecc_na=True, virtualization_mode="VGPU")
    assert gpu_health.rule_ecc_mode([guest]).verdict == "unverified"
    assert gpu_health.rule_memory_repair([guest]).verdict == "unverified"
    bare = dataclasses.replace(guest, virtualization_mode="None")  # (outside a guest: said, no ECC)
    assert gpu_health.rule_ecc_mode([bare]).actual == "not applicable (no ECC on these GPUs)"


# --- round 7, second search: NVLink listings by GPU number, siblings on one address, counts of
# some GPUs, a view of one GPU

H800_NVLINK = "nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt"  # GPU 0, GPU 1, `...`, GPU 7
V100_GPU3 = "nvidia-smi-nvlink-s__v100-sxm2-32gb__1of-n-gpu__2-inactive.txt"  # GPU 3 alone
H100_NVLINK_E = "nvidia-smi-nvlink-e__h100-80gb-hbm3__1gpu__driver-unknown__elided.txt"
T4_ONE_BUS = "nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt"
A100_MIG = "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.80.02__7-mig.txt"
H20_MIG = "nvidia-smi__h20__8gpu-3mig__driver570.158.01__elided-tail.txt"
H800_GPU7 = "nvidia-smi__h800__gpu7-of-8__driver525.105.17__ecc-off.txt"


def fabric(name: str) -> dict[str, tuple[str, str]]:
    from gpuonboard.steps.checks import fabric_health

    return {c.name: (c.verdict, c.actual) for c in fabric_health.health_checks(saved(name))}


def test_r7_f5_nvlink_blocks_are_the_gpus_they_name() -> None:
    """A listing's blocks were taken as GPUs 0, 1, 2 ... by their place: GPU 3's two links down
    read as "GPU 0 not listed" (unverified), and an elided listing named the wrong GPUs."""
    assert fabric(V100_GPU3)["nvlink_links"] == (
        "fail",
        "GPU 3: 4 of 6 links active, inactive link(s) 3, 5; links not readable for GPU 0 (not listed),"
        " GPU 1 (not listed), GPU 2 (not listed)",
    )
    verdict, actual = fabric(H800_NVLINK)["nvlink_links"]
    assert verdict == "unverified"
    assert actual == "links not readable for " + ", ".join(f"GPU {i} (not listed)" for i in range(2, 7))


def test_r7_f5_an_nvlink_error_listing_alone_is_judged() -> None:
    """`nvlink -e` given alone names its GPUs' models itself: it was no row at all. This one is
    cut with `[...]` after link 1: 3 of an H100's 18 links are no pass."""
    assert fabric(H100_NVLINK_E)["nvlink_errors"] == (
        "unverified",
        "counters not readable for GPU 0 (3 of 18 links listed)",
    )


def test_r7_f6_two_gpus_on_one_address_keep_their_own_readings() -> None:
    """GPU 1, listed at GPU 0's bus id with ERR! cells, took GPU 0's 41 C and 26 W."""
    gpus = saved(T4_ONE_BUS).gpu.gpus  # type: ignore[union-attr]
    assert [(g.index, g.temperature_c, g.power_draw_w) for g in gpus] == [(0, 41, 26.0), (1, None, None)]
    assert rules(T4_ONE_BUS)["sensor_faults"][0] == "warn"
    # and a GPU at another's address is no GPU of its own: gpu_health fails it, gpu_count counts it
    # unreadable
    assert rules(T4_ONE_BUS)["gpu_health"] == (
        "fail",
        "GPU 1 (00000000:00:03.0): nvidia-smi reads the PCI address of GPU 0 (00000000:00:03.0)",
    )


def test_r7_f7_one_gpus_ecc_count_is_not_every_gpus() -> None:
    """GPUs in MIG mode print `On` in the table's ECC cell, no count: GPU 0's 0 spoke for all."""
    assert rules(A100_MIG)["ecc_uncorrectable"] == (
        "unverified",
        "0 since boot on GPU 0 (no lifetime count); 0 since boot on GPU 7 (its MIG slices' volatile"
        " counts; no lifetime count); not reported for GPU 1, GPU 2, GPU 3, GPU 4, GPU 5, GPU 6",
    )  # (round 35: GPU 7's MIG devices row gives its slice's volatile count)
    # (round 39: GPUs 0-2 are in MIG mode, their counts on the `MIG devices:` rows, which the
    # `...` left out with the tail: said so, never "not reported")
    assert rules(H20_MIG)["ecc_uncorrectable"] == (
        "unverified",
        "0 since boot on GPU 3, GPU 4, GPU 5, GPU 6, GPU 7 (no lifetime count); GPU 0, GPU 1, GPU 2 are"
        " in MIG mode, where the table gives each slice's volatile uncorrectable ECC count on its row of"
        " the `MIG devices:` table (the output was cut short in or before that table: those rows are in"
        " the part cut away)",
    )


def test_r7_f8_a_view_of_gpu_7_alone_is_no_one_gpu_box() -> None:
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks import acceptance

    checks = {c.name: c for c in acceptance.evaluate(OrderSpec(gpu_count=8), saved(H800_GPU7))}
    assert checks["gpu_count"].verdict == "unverified"
    assert "it lists GPU 7 but not GPU 0, 1, 2, 3, 4, 5, 6" in checks["gpu_count"].actual
