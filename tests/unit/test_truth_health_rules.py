"""gpu_health truth: ECC off on workstation cards, busy GPUs without a process list, PCIe
replays, unreadable sensors; over real captures where they exist."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import GpuInfo, parse_query_csv
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[1] / "fixtures" / "real"


def rules(name: str) -> dict[str, tuple[str, str, str]]:
    facts = parse_facts({"nvidia_smi": ProbeOutput((REAL / name).read_text(), "", 0)})
    return {c.name: (c.verdict, c.actual, c.detail) for c in gpu_health.evaluate(facts)}


# --- 1. ECC "Disabled" is disabled, not "not applicable" ---------------------------------


def test_rtx_6000_ada_table_with_ecc_off_warns_with_the_fix() -> None:
    verdict, actual, detail = rules("nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt")["ecc_mode"]
    assert verdict == "warn"
    assert actual == "Disabled on all 4 GPUs (workstation GPU with ECC)"
    assert "sudo nvidia-smi -e 1" in detail and "reboot" in detail and "6 %" in detail


def test_rtx_4000_sff_ada_xml_with_ecc_off_warns() -> None:
    verdict, actual, _ = rules("nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")[
        "ecc_mode"
    ]
    assert (verdict, actual) == ("warn", "Disabled on GPU 0 (workstation GPU with ECC)")


def test_ecc_na_is_not_applicable_and_datacentre_off_fails() -> None:
    # RTX 3090: the table's ECC cell reads N/A (no ECC): not applicable
    assert rules("nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt")["ecc_mode"][:2] == (
        "pass",
        "not applicable (no ECC on these GPUs)",
    )
    # a GeForce RTX 4090 that reports "Disabled" is named as such, without a verdict against it
    verdict, actual, _ = rules("nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt")["ecc_mode"]
    assert verdict == "pass" and actual.startswith("Disabled on all 8 GPUs (GeForce")
    gpus = [GpuInfo(index=0, name="NVIDIA L40S", ecc_mode="Disabled")]
    assert gpu_health.rule_ecc_mode(gpus).verdict == "fail"
    assert gpu_health.rule_ecc_mode([GpuInfo(index=0, name="NVIDIA H100 80GB HBM3")]).verdict == "unverified"


# --- 2. busy without a process list ---------------------------------------------------------


def test_h200_under_load_from_csv_fails_without_a_process_list() -> None:
    report = parse_query_csv(
        (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv").read_text(), ()
    )
    gpus = list(report.gpus)
    assert not gpus[0].processes_known
    check = gpu_health.rule_foreign_processes(gpus)
    assert check.verdict == "fail"
    assert check.actual == (
        "GPU 0 at 100 % utilisation with 31.6 GiB used, though this nvidia-smi output lists no processes"
    )


def test_idle_h100_from_csv_passes_on_its_figures() -> None:
    report = parse_query_csv(
        (REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv").read_text(), ()
    )
    check = gpu_health.rule_foreign_processes(list(report.gpus))
    assert check.verdict == "pass"
    assert check.actual.startswith("none by utilisation and memory used (GPU 0 0 % / 0 MiB)")


def test_no_list_and_no_figures_is_unverified_and_an_empty_list_on_a_busy_gpu_fails() -> None:
    blind = [GpuInfo(index=0, name="NVIDIA H100 80GB HBM3")]
    assert gpu_health.rule_foreign_processes(blind).verdict == "unverified"
    # the list is known and empty (a container's view) but the GPU works: someone else's job
    busy = [
        GpuInfo(
            index=0, name="NVIDIA H100", processes_known=True, utilization_gpu_pct=97, memory_used_mib=40960
        )
    ]
    check = gpu_health.rule_foreign_processes(busy)
    assert check.verdict == "fail" and "lists no process there" in check.actual
    idle = [
        GpuInfo(index=0, name="NVIDIA H100", processes_known=True, utilization_gpu_pct=0, memory_used_mib=1)
    ]
    assert gpu_health.rule_foreign_processes(idle).actual == "none"


# --- 3. PCIe replays ------------------------------------------------------------------------

# replay counts of the real 8x H100 -q capture (leptonai/gpud), rollovers all 0
H100_REPLAYS = (67, 63, 52, 43, 49, 53, 82, 67)


def _gpus(replays: tuple[int, ...], rollovers: int = 0, name: str = "NVIDIA H100 80GB HBM3") -> list[GpuInfo]:
    return [
        GpuInfo(index=i, name=name, pcie_replays=r, pcie_replay_rollovers=rollovers)
        for i, r in enumerate(replays)
    ]


def test_replays_of_the_real_h100_box_pass_with_counts() -> None:
    check = gpu_health.rule_pcie_replays(_gpus(H100_REPLAYS))
    assert check is not None and check.verdict == "pass"
    assert check.actual == "67, 63, 52, 43, 49, 53, 82, 67 replays since reset, no rollover"


def test_replay_thresholds_and_rollovers() -> None:
    warn = gpu_health.rule_pcie_replays(_gpus((0, 350)))
    assert warn is not None and (warn.verdict, warn.actual) == ("warn", "GPU 1: 350 replays")
    fail = gpu_health.rule_pcie_replays(_gpus((0, 4200)))
    assert fail is not None and fail.verdict == "fail" and "riser" in fail.detail
    rolled = gpu_health.rule_pcie_replays(_gpus((5,), rollovers=1))
    assert rolled is not None and (rolled.verdict, rolled.actual) == (
        "fail",
        "GPU 0: 5 replays, 1 rollover(s)",
    )
    limits = gpu_health.pcie_replay_limits()
    assert limits == {"warn_replays": 100, "fail_replays": 1000, "fail_rollovers": 1}


def test_replays_not_reported() -> None:
    # the plain table carries no replay counter: unverified on a data-centre box ...
    v = rules("nvidia-smi__h200__8gpu__driver570.158.01.txt")["pcie_replays"]
    assert v[:2] == ("unverified", "not reported by this nvidia-smi output")
    # ... and no row for a workstation / consumer box
    assert "pcie_replays" not in rules("nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt")


# --- 4. a cell fault is reported --------------------------------------------------------------


def test_cell_fault_warns_without_failing_the_gpu() -> None:
    gpus = [
        GpuInfo(index=0, name="NVIDIA H100", ecc_mode="Enabled"),
        GpuInfo(index=3, name="NVIDIA H100", ecc_mode="Enabled", cell_faults=("fan sensor reads ERR!",)),
    ]
    check = gpu_health.rule_sensor_faults(gpus)
    assert check is not None and (check.verdict, check.actual) == ("warn", "GPU 3: fan sensor reads ERR!")
    assert gpu_health.rule_unreadable(gpus) is None
    assert gpu_health.rule_sensor_faults(gpus[:1]) is None


# --- 5. missing facts that could hide a problem --------------------------------------------


def test_table_without_link_or_throttle_fields_is_unverified() -> None:
    r = rules("nvidia-smi__h200__8gpu__driver570.158.01.txt")
    assert r["pcie_link"][:2] == ("unverified", "not reported")
    assert r["throttling"][:2] == ("unverified", "not reported")
