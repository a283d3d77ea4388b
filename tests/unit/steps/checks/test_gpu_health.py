"""GPU health and driver-compatibility rules, pure, over facts parsed from real captures."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import GpuInfo, parse_query_csv
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.checks import driver_compat, gpu_health, ngc

from ...facts.smi_failures import ADVICE, HEALTH, MISMATCH

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DERIVED = Path(__file__).parents[3] / "fixtures" / "derived"


def facts(path: Path, **extra: str) -> object:
    raw = {"nvidia_smi": ProbeOutput(path.read_text(), "", 0)}
    raw.update({k: ProbeOutput(v, "", 0) for k, v in extra.items()})
    return parse_facts(raw)


def verdicts(path: Path) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(facts(path))}


def test_throttled_h100s_fail_throttling() -> None:
    v = verdicts(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt")
    assert v["throttling"][0] == "fail"
    assert v["throttling"][1].count("hw_slowdown, hw_power_brake_slowdown") == 8


def test_an_active_reason_this_tool_does_not_know_is_no_pass() -> None:
    """The real driver-340 K20m `-q -x` (P0, 4 % busy) with <clocks_throttle_reason_unknown>
    edited in-test from Not Active to Active: nvidia-smi says an unspecified factor reduces the
    clocks; the reason was dropped and throttling passed "none active"."""
    text = (REAL / "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml").read_text()
    edited = text.replace(
        "<clocks_throttle_reason_unknown>Not Active<", "<clocks_throttle_reason_unknown>Active<"
    )
    assert edited != text
    [check] = [
        c
        for c in gpu_health.evaluate(parse_facts({"nvidia_smi": ProbeOutput(edited, "", 0)}))
        if c.name == "throttling"
    ]
    assert (check.verdict, check.actual) == ("warn", "GPU 0: unknown (a reason this tool does not know)")
    assert "holds the clocks back" in check.detail


def test_an_active_clock_setting_reason_is_named_not_called_none_active() -> None:
    """The real driver-340 K20m `-q -x` (P0) reads Applications Clocks Setting: Active (its
    application clocks at their default 705 MHz of 758 max): no slowdown, but "none active" was
    untrue; the row names the setting."""
    v = verdicts(REAL / "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml")
    assert v["throttling"] == (
        "pass",
        "no slowdown active; GPU 0: applications_clocks_setting active (a clock setting)",
    )


def test_a10_with_pending_remap_fails_memory_repair() -> None:
    v = verdicts(REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt")
    # the real capture also has 4 rows remapped after uncorrectable errors: named, not hidden
    assert v["memory_repair"] == (
        "fail",
        "GPU 0: row remap pending; GPU 0: 4 row(s) remapped after uncorrectable errors",
    )


def test_t4_with_processes_fails_and_reports_pass_through() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")
    assert v["foreign_processes"][0] == "fail"
    assert v["virtualization"] == ("pass", "Pass-Through")


def test_rtx_4000_ada_processes_and_consumer_ecc() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
    assert v["foreign_processes"][0] == "fail" and "pid 4937 python" in v["foreign_processes"][1]


def test_derived_a100_box_with_mig_on_every_gpu_warns_with_the_fix() -> None:
    f = facts(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml")
    checks = {c.name: c for c in gpu_health.evaluate(f)}
    assert {k: c.verdict for k, c in checks.items() if c.verdict != "pass"} == {
        "mig_mode": "warn",  # (some rentals are MIG slices on purpose; the GO headline names it)
        "persistence_mode": "warn",
        "memory_repair": "unverified",  # <remapped_rows>N/A</remapped_rows> in MIG mode
    }
    mig = checks["mig_mode"]
    assert mig.actual == "Enabled on all 8 GPUs"
    assert "CUDA sees only MIG instances" in mig.detail
    assert "`sudo nvidia-smi -i N -mig 0` for N in 0, 1, 2, 3, 4, 5, 6, 7" in mig.detail
    assert "reboot" in mig.detail


def test_persistence_and_mig_of_the_real_mig_captures() -> None:
    # a real A100 in MIG mode (XML) and a real H200 in MIG mode (plain table, current mode only)
    for name in (
        "nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
        "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt",
    ):
        assert verdicts(REAL / name)["mig_mode"] == ("warn", "Enabled on GPU 0"), name
    # no MIG on the H200 capture, none pending
    assert verdicts(REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml")["mig_mode"] == (
        "pass",
        "Disabled",
    )


H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
H200_TEXT = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
A100_MIG_XML = REAL / "nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml"


def edited(path: Path, old: str, new: str) -> str:
    """The real capture `path` with exactly one field changed from `old` to `new` (the only
    simulated part: which value the GPU reports; every other byte is the capture's)."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not exactly once in {path.name}"
    return text.replace(old, new)


def check_of(text: str, name: str) -> gpu_health.Check:
    f = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return next(c for c in gpu_health.evaluate(f) if c.name == name)


def test_mig_pending_changes_warn() -> None:
    # the H200 (MIG Disabled) with <pending_mig> Enabled: partitioned after the next reset
    c = check_of(edited(H200_XML, "<pending_mig>Disabled<", "<pending_mig>Enabled<"), "mig_mode")
    assert (c.verdict, c.actual) == ("warn", "Enabled pending a GPU reset on GPU 0")
    assert "`sudo nvidia-smi -i N -mig 0` for N in 0" in c.detail
    # the A100 in MIG mode with <pending_mig> Disabled: the vendor ran -mig 0 but did not reset
    c = check_of(edited(A100_MIG_XML, "<pending_mig>Enabled<", "<pending_mig>Disabled<"), "mig_mode")
    assert (c.verdict, c.actual) == ("warn", "Enabled on GPU 0 (Disabled pending a GPU reset on GPU 0)")
    assert "already set to Disabled" in c.detail and "-mig 0" not in c.detail


def test_h200_driver_580_memory_repair_fields_clean_pass() -> None:
    for path in (H200_XML, H200_TEXT):
        assert verdicts(path)["memory_repair"] == ("pass", "nothing pending"), path.name
    # the DTD v13 RTX 4000 Ada says N/A for unrepairable memory: not held against it
    v = verdicts(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
    assert v["memory_repair"] == ("pass", "nothing pending")


# One field of the real H200 driver-580 capture changed at a time: (XML edit, -q text edit),
# expected verdict, actual, and a phrase of the advice.
MEMORY_CASES = [
    (
        ("<unrepairable_memory>No<", "<unrepairable_memory>Yes<"),
        (
            "Unrepairable Memory                            : No",
            "Unrepairable Memory                            : Yes",
        ),
        "fail",
        "GPU 0: unrepairable memory",
        "replacement GPU",
    ),
    (
        ("<channel_repair_pending>No<", "<channel_repair_pending>Yes<"),
        (
            "Channel Repair Pending                         : No",
            "Channel Repair Pending                         : Yes",
        ),
        "fail",
        "GPU 0: channel repair pending",
        "reset the GPU",
    ),
    (
        ("<tpc_repair_pending>No<", "<tpc_repair_pending>Yes<"),
        (
            "TPC Repair Pending                             : No",
            "TPC Repair Pending                             : Yes",
        ),
        "fail",
        "GPU 0: TPC repair pending",
        "cluster of SMs",
    ),
    (
        ("<sram_threshold_exceeded>No<", "<sram_threshold_exceeded>Yes<"),
        (
            "SRAM Threshold Exceeded                    : No",
            "SRAM Threshold Exceeded                    : Yes",
        ),
        "warn",
        "GPU 0: SRAM error threshold exceeded",
        "field diagnostics",
    ),
    (
        ("<remapped_row_unc>0<", "<remapped_row_unc>3<"),
        (
            "        Uncorrectable Error                            : 0",
            "        Uncorrectable Error                            : 3",
        ),
        "warn",
        "GPU 0: 3 row(s) remapped after uncorrectable errors",
        "error history",
    ),
    (
        ("<row_remapper_histogram_none>0 bank(s)<", "<row_remapper_histogram_none>2 bank(s)<"),
        (
            "            None                                       : 0 bank(s)",
            "            None                                       : 2 bank(s)",
        ),
        "warn",
        "GPU 0: 2 bank(s) with no spare row left, 0 with few",
        "cannot be remapped",
    ),
    (
        ("<row_remapper_histogram_low>0 bank(s)<", "<row_remapper_histogram_low>5 bank(s)<"),
        (
            "            Low                                        : 0 bank(s)",
            "            Low                                        : 5 bank(s)",
        ),
        "warn",
        "GPU 0: 0 bank(s) with no spare row left, 5 with few",
        "spare rows",
    ),
]


@pytest.mark.parametrize(("xml_edit", "text_edit", "verdict", "actual", "advice"), MEMORY_CASES)
def test_memory_damage_of_newer_drivers(
    xml_edit: tuple[str, str], text_edit: tuple[str, str], verdict: str, actual: str, advice: str
) -> None:
    for path, (old, new) in ((H200_XML, xml_edit), (H200_TEXT, text_edit)):
        c = check_of(edited(path, old, new), "memory_repair")
        assert (c.verdict, c.actual) == (verdict, actual), path.name
        assert advice in c.detail, c.detail


def test_memory_failures_outrank_warnings_and_each_gets_advice() -> None:
    text = edited(H200_XML, "<unrepairable_memory>No<", "<unrepairable_memory>Yes<")
    text = text.replace("<sram_threshold_exceeded>No<", "<sram_threshold_exceeded>Yes<")
    c = check_of(text, "memory_repair")
    assert c.verdict == "fail"
    assert c.actual == "GPU 0: unrepairable memory; GPU 0: SRAM error threshold exceeded"
    assert "replacement GPU" in c.detail and "field diagnostics" in c.detail


def _plan(raw: dict[str, ProbeOutput]) -> object:
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=parse_facts(raw))
    return gpu_health.GpuHealthStep({}).plan(ctx)  # type: ignore[arg-type]


def test_no_driver_fails_as_nothing_checked() -> None:
    plan = _plan({"nvidia_smi": ProbeOutput("", "sh: nvidia-smi: not found", 127)})
    assert plan.failed  # type: ignore[attr-defined]
    assert plan.msg == (  # type: ignore[attr-defined]
        "no GPU health check could run: nothing checked: nvidia-smi not found (no NVIDIA driver)"
    )
    [check] = plan.checks  # type: ignore[attr-defined]
    assert (check.name, check.verdict) == ("gpu_health", "fail")
    # nvidia-smi present but failing (driver/library mismatch prints on stdout, exit 9)
    mismatch = "Failed to initialize NVML: Driver/library version mismatch\n"
    plan = _plan({"nvidia_smi": ProbeOutput(mismatch, "", 9)})
    assert plan.failed and plan.checks[0].actual == (  # type: ignore[attr-defined]
        "nothing checked: nvidia-smi failed (exit code 9):"
        " Failed to initialize NVML: Driver/library version mismatch"
    )
    assert plan.checks[0].detail == HEALTH + ADVICE[MISMATCH]  # type: ignore[attr-defined]


def test_idle_4090_link_downshift_is_a_warning_not_a_failure() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml")
    assert v["pcie_link"] == (
        "warn",
        "GPU 0 in a Gen3 slot (the card is Gen4); idle, power saving: GPU 0 Gen1 of Gen3",
    )
    assert v["ecc_mode"][0] == "pass" and v["ecc_uncorrectable"][0] == "pass"


@pytest.mark.parametrize(
    ("fixture", "image", "verdict", "text"),
    [
        (
            "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            "warn",
            "804",
        ),
        (
            "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            "pass",
            "forward",
        ),
        (
            "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
            "nvcr.io/nvidia/pytorch:23.10-py3",
            "pass",
            "",
        ),
        (
            "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
            "mirror.example.cn/nvidia/pytorch:24.08-py3",
            "warn",
            "535.86",
        ),
        (
            "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
            "nvcr.io/nvidia/pytorch:99.01-py3",
            "warn",
            "pin one",
        ),
    ],
)
def test_driver_compat_verdicts(fixture: str, image: str, verdict: str, text: str) -> None:
    mirrors = ["mirror.example.cn"]  # (a mirror counts as NGC only when configured)
    check = driver_compat.evaluate(facts(REAL / fixture), image, ngc.load_releases(), mirrors)[0]
    assert check.verdict == verdict, check
    assert text in check.detail + check.actual


def test_no_driver_is_a_compat_failure() -> None:
    f = parse_facts({"nvidia_smi": ProbeOutput("", "", 127)})
    check = driver_compat.evaluate(f, driver_compat.DEFAULT_IMAGE, ngc.load_releases())[0]
    assert (check.verdict, check.actual) == ("fail", "no NVIDIA driver answered")


def test_nvcc_is_information_only() -> None:
    nvcc = (REAL / "nvcc-version__cuda-11.4__jetson-agx-xavier-aarch64.txt").read_text()
    assert driver_compat.parse_nvcc(nvcc) == "11.4.239"
    f = facts(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml", nvcc=nvcc)
    checks = driver_compat.evaluate(f, driver_compat.DEFAULT_IMAGE, ngc.load_releases())
    assert (checks[1].name, checks[1].actual, checks[1].verdict) == (
        "host_cuda_toolkit",
        "nvcc 11.4.239",
        "pass",
    )


def test_thresholds_merge_and_validate() -> None:
    assert gpu_health.thresholds_from(
        {"temperature_warn": 70}, {"gpu_health": {"temperature_warn": "75"}}
    ) == {"temperature_warn": 75.0}
    with pytest.raises(StepArgsError, match="must be a number"):
        gpu_health.thresholds_from({}, {"gpu_health": {"power_cap_warn": "high"}})


# `pcie_link` and a card in a slot of an older PCIe generation than its own.
#
# The real RTX 4090 capture reports `max_device_link_gen` 4 and `max_host_link_gen` 3: the card
# sits in a Gen3 slot, so nvidia-smi's `max_link_gen` (the link's max) is 3 and a link at Gen3
# looks "at max" while the card runs at half its host-to-GPU bandwidth.

RTX4090 = REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
H100_TEXT = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


def _pcie(text: str) -> gpu_health.Check:
    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    return check


def _under_load(xml: str) -> str:
    """The real 4090 capture as it would read under load: link up at the slot's Gen3, busy."""
    xml = re.sub(r"<current_link_gen>1<", "<current_link_gen>3<", xml)
    xml = re.sub(r"<device_current_link_gen>1<", "<device_current_link_gen>3<", xml)
    xml = re.sub(r"<gpu_util>0 %<", "<gpu_util>100 %<", xml)
    return re.sub(r"<performance_state>P\d+<", "<performance_state>P2<", xml)


def test_gen4_card_in_gen3_slot_is_named_even_under_load() -> None:
    check = _pcie(_under_load(RTX4090.read_text()))
    assert check.verdict == "warn"
    assert check.actual == "GPU 0 in a Gen3 slot (the card is Gen4)"
    assert "ask the vendor for a slot or server of the card's generation" in check.detail


def test_idle_gen4_card_in_gen3_slot_names_the_slot_and_the_idle_downshift() -> None:
    check = _pcie(RTX4090.read_text())
    assert check.verdict == "warn"
    assert check.actual == "GPU 0 in a Gen3 slot (the card is Gen4); idle, power saving: GPU 0 Gen1 of Gen3"
    assert "below the card's own PCIe generation" in check.detail


def test_text_form_host_max_below_device_max_warns() -> None:
    text = H100_TEXT.read_text()
    capped = re.sub(r"(Host Max\s+:) 5", r"\1 4", text)
    assert capped != text
    check = _pcie(capped)
    assert check.verdict == "warn"
    assert check.actual.startswith("GPU 0 in a Gen4 slot (the card is Gen5)")


@pytest.mark.parametrize(
    "fixture",
    [
        "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",  # host max N/A
        "nvidia-smi-q__a10__1gpu__driver535.129.03.txt",  # host max N/A
        "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",  # 4 and 4
    ],
)
def test_no_slot_warning_when_the_host_matches_or_does_not_say(fixture: str) -> None:
    assert "slot" not in _pcie((REAL / fixture).read_text()).actual


# `memory_repair` on the real A10 with a row remap pending says what to ask the vendor.

A10 = Path(__file__).parents[3] / "fixtures" / "real" / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"


def test_pending_remap_asks_the_vendor_for_a_gpu_reset_or_reboot() -> None:
    facts = parse_facts({"nvidia_smi": ProbeOutput(A10.read_text(), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "memory_repair"]
    assert check.verdict == "fail"
    # the vendor-actionable request: reset the GPU (or reboot), check again, else another GPU
    assert "ask the vendor to reset the GPU (`nvidia-smi -i N -r`" in check.detail
    assert "or reboot, then check again" in check.detail
    assert "ask for another GPU" in check.detail


# `power_limit` passes "at default" only when nvidia-smi gave the default limit.
#
# The plain table prints only the enforced cap ("Pwr:Usage/Cap"): before, any table passed as
# "at default", so an H100 SXM capped at 500 W of its 700 W would have passed too.


def power_check(text: str) -> gpu_health.Check:
    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return next(c for c in gpu_health.evaluate(facts) if c.name == "power_limit")


@pytest.mark.parametrize(
    ("fixture", "actual"),
    [
        ("nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt", "enforced 700 W; default not reported"),
        ("nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt", "enforced 500 W; default not reported"),
        ("nvidia-smi__l40s__1gpu__driver550.127.05.txt", "enforced 350 W; default not reported"),
    ],
)
def test_table_cannot_tell_the_default(fixture: str, actual: str) -> None:
    check = power_check((REAL / fixture).read_text())
    assert (check.verdict, check.actual) == ("unverified", actual)
    assert "nvidia-smi -q -d POWER" in check.detail


def test_capped_h100_in_a_table_is_not_at_default() -> None:
    """The real 8 x H100 table with GPU 0's cap lowered to 500 W (one edit, made here)."""
    text = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()
    assert text.count("/  700W |") == 8
    check = power_check(text.replace("/  700W |", "/  500W |", 1))
    assert check.verdict == "unverified" and check.actual == "enforced 500 W, 700 W; default not reported"


@pytest.mark.parametrize(
    "fixture",
    [
        "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
        "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
        "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
    ],
)
def test_forms_with_the_default_still_pass(fixture: str) -> None:
    check = power_check((REAL / fixture).read_text())
    assert (check.verdict, check.actual) == ("pass", "at default")


# gpu_health truth: ECC off on workstation cards, busy GPUs without a process list, PCIe
# replays, unreadable sensors; over real captures where they exist.


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
        "GPU 0 at 100 % utilisation with 31.6 GiB used, and no process list was read from this output"
    )


def test_idle_h100_from_csv_passes_on_its_figures() -> None:
    report = parse_query_csv(
        (REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv").read_text(), ()
    )
    # the capture's engine columns (utilization.encoder/decoder/jpeg/ofa 0 %, sessionCount 0),
    # as read by hand: whether or not the CSV reader fills them yet, the rule judges these
    gpus = [
        dataclasses.replace(
            g,
            encoder_util_pct=0.0,
            decoder_util_pct=0.0,
            jpeg_util_pct=0.0,
            ofa_util_pct=0.0,
            encoder_sessions=0,
        )
        for g in report.gpus
    ]
    check = gpu_health.rule_foreign_processes(gpus)
    assert check.verdict == "pass"
    assert check.actual == (
        "none by utilisation, memory used and the video engines (GPU 0 0 % / 0 MiB);"
        " no process list was read from this output"
    )
    # without the encoder / decoder figures, idle SM and memory are not enough to say "nobody"
    blind = [dataclasses.replace(g, encoder_util_pct=None, encoder_sessions=None) for g in gpus]
    check = gpu_health.rule_foreign_processes(blind)
    assert check.verdict == "unverified"
    assert "the video encoder figures were not read" in check.actual


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


def test_foreign_processes_names_no_process_by_an_unread_name() -> None:
    """The real Windows RTX 2060 table (WDDM) lists four C+G processes whose name nvidia-smi
    could not read (`Insufficient Permissions`): the row named them as processes called so."""
    text = (REAL / "nvidia-smi__geforce-rtx-2060__1gpu__driver442.50__windows-tcc-wddm.txt").read_text()
    [check] = [
        c
        for c in gpu_health.evaluate(parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)}))
        if c.name == "foreign_processes"
    ]
    assert "pid 1532 (name not read: Insufficient Permissions) (memory N/A)" in check.actual
    assert "pid 9284 C:\\Windows\\explorer.exe (memory N/A)" in check.actual


def test_foreign_processes_says_a_process_has_no_name_given() -> None:
    """The real H200 -q under load with its first process's `Name` value blanked (a pod's
    nvidia-smi -q gives a host process's id and memory but no name: Project-HAMi/HAMi#700): the
    row read "pid 10291  (2566 MiB)", a blank where the name goes."""
    text = (REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt").read_text()
    text = text.replace(": /root/tools/memhog\n", ":\n", 1)
    [check] = [
        c
        for c in gpu_health.evaluate(parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)}))
        if c.name == "foreign_processes"
    ]
    assert check.verdict == "fail"
    assert "pid 10291 (no name given) (2566 MiB)" in check.actual


RTX4090_8_Q = REAL / "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt"


@pytest.mark.parametrize("value", ["N/A", ""])
def test_one_gpus_slowdown_reason_unread_is_no_pass(value: str) -> None:
    """The real 8 x RTX 4090 `-q` with GPU 1's `SW Thermal Slowdown : Not Active` edited in-test
    to `N/A` or to nothing, its other reasons and the other GPUs' as read: that GPU's slowdown
    reason was not read, never Not Active; throttling passed "none active"."""
    text = RTX4090_8_Q.read_text()
    at = text.index("SW Thermal Slowdown", text.index("GPU 00000000", 2000))
    end = text.index("\n", at)
    edited = text[:at] + re.sub(r": .*", f": {value}", text[at:end]).rstrip() + text[end:]
    [check] = [
        c
        for c in gpu_health.evaluate(parse_facts({"nvidia_smi_q": ProbeOutput(edited, "", 0)}))
        if c.name == "throttling"
    ]
    assert (check.verdict, check.actual) == (
        "unverified",
        "none active (of what was read; GPU 1: clock event reason sw_thermal_slowdown not reported)",
    )


def _throttling_with_gpu1(reason: str, value: str, cut: bool = False) -> tuple[str, str]:
    """throttling's (verdict, actual) of the real 8 x RTX 4090 `-q` with GPU 1's clock event
    reason `reason` edited in-test to `value` (and, with `cut`, the text cut before GPU 2's
    record: a view of GPUs 0 and 1 whose records name them by PCI address)."""
    text = RTX4090_8_Q.read_text()
    gpu1 = text.index("GPU 00000000", 2000)
    at = text.index(reason, gpu1)
    end = text.index("\n", at)
    edited = text[:at] + re.sub(r": .*", f": {value}", text[at:end]) + text[end:]
    if cut:
        edited = edited[: edited.index("\nGPU 00000000", gpu1 + 10) + 1]
    [check] = [
        c
        for c in gpu_health.evaluate(parse_facts({"nvidia_smi_q": ProbeOutput(edited, "", 0)}))
        if c.name == "throttling"
    ]
    return check.verdict, check.actual


@pytest.mark.parametrize(
    "reason", ["Display Clock Setting", "Idle", "Applications Clocks Setting", "Sync Boost"]
)
def test_a_reason_that_changes_no_verdict_unread_leaves_the_pass(reason: str) -> None:
    """The real 8 x RTX 4090 `-q` with GPU 1's `<reason> : Not Active` edited in-test to `N/A`:
    the idle state and the clock settings judge no slowdown, so one GPU's unread value of them
    leaves the pass "none active" (it was unverified, "GPU 1: clock event reason
    display_clock_setting not reported")."""
    assert _throttling_with_gpu1(f"        {reason}  ", "N/A") == ("pass", "none active")


def test_a_reason_fault_of_a_gpu_named_by_address_is_said_once() -> None:
    """The real 8 x RTX 4090 `-q` cut before GPU 2's record (GPUs 0 and 1 of 8: named by PCI
    address), GPU 1's `SW Power Cap : Not Active` edited in-test to `[Unknown Error]`: the cell
    fault names it; before, the label's colons kept the same GPU's "clock event reason
    sw_power_cap not reported" beside it."""
    verdict, actual = _throttling_with_gpu1("SW Power Cap", "[Unknown Error]", cut=True)
    assert verdict == "unverified"
    assert "GPU at PCI 00000000:23:00.0: Clocks Event Reasons/SW Power Cap reads [Unknown Error]" in actual
    assert "not reported" not in actual


RTX4090_MASKS = (
    "index, uuid, clocks_throttle_reasons.active\n"
    "0, GPU-313bbff0-b0a0-fd26-4820-0578bdef3a12, 0x0000000000000001\n"
    "1, GPU-1a287db8-89a4-4cd7-5933-ae53d0c4d4ad, 0x0000000000000001\n"
    "2, GPU-a4f36154-6f3f-303f-e098-dec1632fd43f, 0x0000000000000001\n"
    "3, GPU-025f6884-1162-3032-9aab-14e0d5622783, [N/A]\n"
)


@pytest.mark.parametrize(
    "csv",
    [
        RTX4090_MASKS.split("\n1,")[0].replace("0x0000000000000001", "0x0000000000000000") + "\n",
        RTX4090_MASKS,
    ],
    ids=["gpu0-only", "gpu3-na"],
)
def test_a_reasons_mask_of_some_gpus_leaves_the_others_pass(csv: str) -> None:
    """The real 8 x RTX 4090 `-q` beside a CSV of `index, uuid, clocks_throttle_reasons.active` by
    the capture's uuids: GPU 0 only at 0x0 (a `-i 0` query), or GPUs 0-3 at 0x1 (gpu_idle) with
    GPU 3's `[N/A]`. The mask alone reads NVML's `unknown` reason, which -q never prints: the GPUs
    it did not cover lacked it by the format, not by a cell (it was unverified, "GPU 1: clock
    event reason unknown not reported")."""
    raw = {
        "nvidia_smi_q": ProbeOutput(RTX4090_8_Q.read_text(), "", 0),
        "nvidia_smi_csv": ProbeOutput(csv, "", 0),
    }
    [check] = [c for c in gpu_health.evaluate(parse_facts(raw)) if c.name == "throttling"]
    assert (check.verdict, check.actual) == ("pass", "none active")
