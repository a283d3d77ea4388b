"""A failing nvidia-smi is quoted, and the advice follows its cause, in `gpu_health` and in
acceptance's `nvidia_driver` (one shared helper, `acceptance.nvidia_smi_failure`).

Before, `gpu_health` said only "nothing checked: nvidia-smi failed (exit code 15)" and advised
"install the NVIDIA driver" for every failure, also for a box whose driver runs but whose GPU
fell off the bus, or a VM without its GPU attached. The lines are nvidia-smi's real messages, as
users posted them: "GPU is lost" (github.com/JosephKJ/OWOD/issues/81), "Unknown Error" of a GPU
that fell off the bus (github.com/NVIDIA/open-gpu-kernel-modules/issues/387), the driver/library
mismatch and "couldn't communicate" messages, "No devices were found". Each is run through the
real fact probe (`n -q -x || n -q || ... || n` under sh and timeout), with an `nvidia-smi` on
PATH that prints that line and exits as nvidia-smi does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.facts.gather import core_probes, parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps import acceptance, gpu_health
from gpuonboard.steps.base import Check

LOST = (
    "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost."
    " Reboot the system to recover this GPU"
)
OFF_BUS = "Unable to determine the device handle for GPU0000:0B:00.0: Unknown Error"
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
NO_MODULE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    " Make sure that the latest NVIDIA driver is installed and running."
)
NONE = "No devices were found"


def _probe(tmp_path: Path, line: str, code: int) -> ProbeOutput:
    """The nvidia_smi fact probe's real output on a host whose nvidia-smi prints `line`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "message").write_text(line + "\n")
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat '{tmp_path / 'message'}'\nexit {code}\n")
    smi.chmod(0o755)
    probe = next(p for p in core_probes() if p.name == "nvidia_smi")
    out = subprocess.run(
        ["sh", "-c", probe.command],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    return ProbeOutput(out.stdout, out.stderr, out.returncode)


def _health(raw: ProbeOutput) -> Check:
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=parse_facts({"nvidia_smi": raw}))
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
    raw = _probe(tmp_path, line, code)
    assert raw.exit_code == code and raw.stdout.count(line) == 4  # the probe's four calls
    check = _health(raw)
    assert (check.name, check.verdict) == ("gpu_health", "fail")
    assert check.actual == f"nothing checked: nvidia-smi failed (exit code {code}): {line[:160]}"
    for words in advice:
        assert words in check.detail, (words, check.detail)
    if line != NO_MODULE:
        # the driver is installed and answers: "install the driver" would send the user astray
        assert "install the NVIDIA driver" not in check.detail
    # acceptance's nvidia_driver quotes the same line and gives the same advice
    driver = acceptance.rule_driver(parse_facts({"nvidia_smi": raw}))
    assert (driver.verdict, driver.actual) == ("fail", f"nvidia-smi failed ({line[:160]})")
    assert driver.detail and driver.detail in check.detail


def test_no_devices_found_with_exit_0_is_no_gpu_listed_and_says_so() -> None:
    """An nvidia-smi that prints "No devices were found" and exits 0 listed no GPU: quoted, with
    the attach advice, and acceptance calls it a failure with the same line."""
    raw = ProbeOutput(NONE + "\n", "", 0)
    check = _health(raw)
    assert check.actual == f"nothing checked: nvidia-smi listed no GPU: {NONE}"
    assert "not attached" in check.detail
    driver = acceptance.rule_driver(parse_facts({"nvidia_smi": raw}))
    assert (driver.verdict, driver.actual) == ("fail", f"nvidia-smi failed ({NONE})")


def test_the_cause_line_is_found_after_other_output() -> None:
    """The line naming the cause is quoted even when other lines come first (an XML header of the
    first call, a banner), and an unknown failure still quotes nvidia-smi's first line."""
    raw = ProbeOutput('<?xml version="1.0" ?>\n' + OFF_BUS + "\n", "", 15)
    assert acceptance.nvidia_smi_failure(raw.stdout, raw.stderr)[0] == OFF_BUS
    assert _health(raw).actual.endswith(f": {OFF_BUS}")
    weird = ProbeOutput("Segmentation fault\n", "", 139)
    check = _health(weird)
    assert check.actual == "nothing checked: nvidia-smi failed (exit code 139): Segmentation fault"
    assert "repair the NVIDIA driver" in check.detail


def test_missing_and_hung_nvidia_smi_keep_their_advice() -> None:
    missing = _health(ProbeOutput("", "sh: nvidia-smi: not found", 127))
    assert "install the NVIDIA driver" in missing.detail
    hung = _health(ProbeOutput("", "", 124))
    assert hung.actual == "nothing checked: nvidia-smi did not answer (stopped)"
    assert "hung driver" in hung.detail and "Xid" in hung.detail
