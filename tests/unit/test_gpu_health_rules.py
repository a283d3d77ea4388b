"""GPU health and driver-compatibility rules, pure, over facts parsed from real captures."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.checks import driver_compat, gpu_health, ngc

from .test_gpu_truth_followups_smi_failure import ADVICE, HEALTH, MISMATCH

REAL = Path(__file__).parents[1] / "fixtures" / "real"
DERIVED = Path(__file__).parents[1] / "fixtures" / "derived"


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
    assert v["pcie_link"] == ("warn", "GPU 0 in a Gen3 slot (the card is Gen4); GPU 0 Gen1 of Gen3")
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
