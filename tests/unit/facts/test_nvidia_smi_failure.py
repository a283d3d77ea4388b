"""A failing nvidia-smi is quoted, and the advice follows its cause, in `gpu_health`, in
acceptance's `nvidia_driver` and in driver_compat's `ngc_driver` (one shared helper,
`facts.nvidia_smi_failure.nvidia_smi_failure`).

Before, `gpu_health` said only "nothing checked: nvidia-smi failed (exit code 15)" and advised
"install the NVIDIA driver" for every failure, also for a box whose driver runs but whose GPU
fell off the bus, or a VM without its GPU attached. The lines are nvidia-smi's real messages, as
users posted them: "GPU is lost" (github.com/JosephKJ/OWOD/issues/81), "Unknown Error" of a GPU
that fell off the bus (github.com/NVIDIA/open-gpu-kernel-modules/issues/387), the driver/library
mismatch and "couldn't communicate" messages, "No devices were found". Each is run through the
real fact probes (every nvidia-smi format its own probe, each under sh and timeout), with an
`nvidia-smi` on PATH that prints that line and exits as nvidia-smi does.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import acceptance, driver_compat, gpu_health, ngc

from .smi_failures import (
    ADVICE,
    HEALTH,
    INFOROM,
    LOST,
    MISMATCH,
    NO_MODULE,
    NONE,
    OFF_BUS,
    SMI_PROBES,
    UNKNOWN,
    Raw,
    _facts,
    _probes,
)


def _compat(raw: Raw) -> Check:
    """driver_compat's ngc_driver check of the default image on a host with this nvidia-smi."""
    return driver_compat.evaluate(_facts(raw), driver_compat.DEFAULT_IMAGE, ngc.load_releases())[0]


def _health(raw: Raw) -> Check:
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=_facts(raw))
    plan = gpu_health.GpuHealthStep({}).plan(ctx)  # type: ignore[arg-type]
    assert plan.failed
    [check] = plan.checks
    return check


@pytest.mark.parametrize(
    ("line", "code", "advice"),
    [
        (LOST, 15, ["`dmesg`", "Xid", "79", "reset the GPU", "replace"]),
        (OFF_BUS, 15, ["`dmesg`", "Xid", "reset the GPU", "replace"]),
        (MISMATCH, 18, ["different versions", "reboot", "reinstall"]),
        (
            NO_MODULE,
            9,
            ["kernel module is not loaded", "reboot", "reinstall the driver for the running kernel"],
        ),
        (NONE, 6, ["not attached", "passthrough or vGPU", "lspci"]),
    ],
    ids=["gpu-lost", "unknown-error", "mismatch", "no-module", "no-devices"],
)
def test_a_failing_nvidia_smi_is_quoted_and_advised_by_cause(
    tmp_path: Path, line: str, code: int, advice: list[str]
) -> None:
    raw = _probes(tmp_path, line, code)
    # one call per probe: each nvidia-smi probe printed the line once and kept the exit code
    assert {name: (out.exit_code, out.stdout) for name, out in raw.items()} == dict.fromkeys(
        SMI_PROBES, (code, line + "\n")
    )
    # the output that explains the failure is the richest format's (-q -x)
    assert _facts(raw).gpu_raw == raw["nvidia_smi"]
    check = _health(raw)
    assert (check.name, check.verdict) == ("gpu_health", "fail")
    assert check.actual == f"nothing checked: nvidia-smi failed (exit code {code}): {line[:160]}"
    assert check.detail == HEALTH + ADVICE[line]
    for words in advice:
        assert words in check.detail, (words, check.detail)
    if line != NO_MODULE:
        # the driver is installed and answers: "install the driver" would send the user astray
        assert "install the NVIDIA driver" not in check.detail
    # acceptance's nvidia_driver and driver_compat's ngc_driver quote the same line and give the
    # same advice
    driver = acceptance.rule_driver(_facts(raw))
    assert (driver.verdict, driver.actual, driver.detail) == (
        "fail",
        f"nvidia-smi failed ({line[:160]})",
        ADVICE[line],
    )
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == (
        "fail",
        f"nvidia-smi failed ({line[:160]})",
        ADVICE[line],
    )
    # the GPUs could not be read: a GPU rule is unverified, the driver rule alone fails
    count = {c.name: c for c in acceptance.evaluate(OrderSpec(gpu_count=1), _facts(raw))}["gpu_count"]
    assert (count.verdict, count.actual) == ("unverified", f"unknown: nvidia-smi failed ({line[:160]})")


def test_no_devices_found_with_exit_0_is_no_gpu_listed_and_says_so() -> None:
    """An nvidia-smi that prints "No devices were found" and exits 0 listed no GPU: quoted, with
    the attach advice, and acceptance calls it a failure with the same line."""
    raw = ProbeOutput(NONE + "\n", "", 0)
    check = _health(raw)
    assert check.actual == f"nothing checked: nvidia-smi listed no GPU: {NONE}"
    assert check.detail == HEALTH + ADVICE[NONE]
    driver = acceptance.rule_driver(parse_facts({"nvidia_smi": raw}))
    assert (driver.verdict, driver.actual, driver.detail) == (
        "fail",
        f"nvidia-smi failed ({NONE})",
        ADVICE[NONE],
    )
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == (
        "fail",
        f"nvidia-smi listed no GPU ({NONE})",
        ADVICE[NONE],
    )


def test_the_cause_line_is_found_after_other_output() -> None:
    """The line naming the cause is quoted even when other lines come first (an XML header of the
    first call, a banner), and an unknown failure still quotes nvidia-smi's first line."""
    raw = ProbeOutput('<?xml version="1.0" ?>\n' + OFF_BUS + "\n", "", 15)
    assert nvidia_smi_failure(raw.stdout, raw.stderr) == (OFF_BUS, ADVICE[OFF_BUS])
    assert _health(raw).actual.endswith(f": {OFF_BUS}")
    weird = ProbeOutput("Segmentation fault\n", "", 139)
    check = _health(weird)
    assert check.actual == "nothing checked: nvidia-smi failed (exit code 139): Segmentation fault"
    assert check.detail == HEALTH + UNKNOWN
    compat = _compat(weird)
    assert (compat.actual, compat.detail) == ("nvidia-smi failed (Segmentation fault)", UNKNOWN)


@pytest.mark.parametrize(
    "line", [MISMATCH, NO_MODULE, LOST, NONE], ids=["mismatch", "no-module", "lost", "none"]
)
def test_a_warning_before_the_cause_is_not_quoted(line: str) -> None:
    """nvidia-smi's warning on stderr comes first in the output read (stderr, then stdout): every
    step quotes the line naming the cause after it, and advises by that cause. driver_compat (and
    the container step's smoke run, which uses its sentence) quoted the warning and advised a
    reboot for any failure."""
    raw = ProbeOutput(line + "\n", INFOROM + "\n", 6 if line == NONE else 9)
    assert nvidia_smi_failure(raw.stdout, raw.stderr) == (line, ADVICE[line])
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == (
        "fail",
        f"nvidia-smi failed ({line})",
        ADVICE[line],
    )
    check = _health(raw)
    assert (check.actual, check.detail) == (
        f"nothing checked: nvidia-smi failed (exit code {raw.exit_code}): {line}",
        HEALTH + ADVICE[line],
    )
    driver = acceptance.rule_driver(parse_facts({"nvidia_smi": raw}))
    assert (driver.actual, driver.detail) == (f"nvidia-smi failed ({line})", ADVICE[line])


def test_missing_and_hung_nvidia_smi_keep_their_advice() -> None:
    missing = _health(ProbeOutput("", "sh: nvidia-smi: not found", 127))
    assert "install the NVIDIA driver" in missing.detail
    hung = _health(ProbeOutput("", "", 124))
    assert hung.actual == "nothing checked: nvidia-smi did not answer (stopped)"
    assert "hung driver" in hung.detail and "Xid" in hung.detail


def test_windows_unable_to_detect_the_device_handle_is_a_lost_gpu(tmp_path: Path) -> None:
    """Easy-GPU-PV#276, verbatim: Windows' nvidia-smi says `Unable to detect the device handle for
    GPU0000:B1:00.0: Unknown Error` where Linux drivers say `determine`; it got "ask the vendor to
    repair the NVIDIA driver" instead of the lost-GPU advice `determine` gets."""
    from gpuonboard.api import offline

    name = "nvidia-smi__windows-unable-to-detect-device-handle-unknown-error__a10-gpu-pv__easy-gpu-pv-276.txt"
    real = Path(__file__).parents[2] / "fixtures" / "real" / name
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "nvidia-smi.txt").write_text(real.read_text())
    facts = parse_facts(offline.load_outputs([str(tmp_path / "box")]))
    got = {c.name: c for c in offline.judge(facts, OrderSpec(gpu_model="A10", gpu_count=1))}
    driver = got["nvidia_driver"]
    assert driver.verdict == "fail" and "Unable to detect the device handle" in driver.actual, driver
    assert "fallen off the bus" in driver.detail and "repair the NVIDIA driver" not in driver.detail, driver
