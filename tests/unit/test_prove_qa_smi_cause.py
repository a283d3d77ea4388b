"""QA: prove (smoke_train, allreduce, gpu_benchmark) quotes the line of a failing nvidia-smi that
names its cause, and advises by that cause, through the project's one helper
(`facts.nvidia_smi_failure`), as acceptance, gpu_health, driver_compat and the container step do.

Before, prove quoted nvidia-smi's FIRST output line: on a real box that may be a warning printed
before the failure ("WARNING: infoROM is corrupted ..."), so the report named the infoROM as the
reason the run fell back to the CPU. The nvidia-smi output goes through the real fact probes (every
nvidia-smi format its own probe), with an `nvidia-smi` on PATH that prints those lines and exits as
nvidia-smi does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.prove import (
    allreduce_checks,
    broken_driver_sentence,
    load_references,
    nvidia_smi_failure,
    parse_result,
    smoke_checks,
)

from .test_gpu_truth_followups_smi_failure import _facts, _probes

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "prove"
INFOROM = "WARNING: infoROM is corrupted at gpu 0000:02:00.0"
NO_MODULE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    " Make sure that the latest NVIDIA driver is installed and running."
)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
ADVICE = {
    NO_MODULE: "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
    " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
    " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
    " again",
    MISMATCH: "the NVIDIA kernel module and the driver's library are different versions (a driver"
    " updated without a reboot): ask the vendor to reboot the box, or to reinstall one driver"
    " version, and run the check again",
}
FRAME = "the NVIDIA driver does not answer, so this ran on the CPU and proves nothing about the GPUs"
FIX_DRIVER = "fix the driver (see acceptance's nvidia_driver and gpu_health) and run prove again"


def _load(name: str) -> dict[str, Any]:
    data = parse_result((FIX / name).read_text())
    assert data is not None
    return data


@pytest.mark.parametrize(("cause", "code"), [(NO_MODULE, 9), (MISMATCH, 18)])
def test_the_cause_line_is_quoted_after_a_warning_and_advised_by_cause(
    tmp_path: Path, cause: str, code: int
) -> None:
    raw = _probes(tmp_path, f"{INFOROM}\n{cause}", code)
    failure = nvidia_smi_failure(_facts(raw))
    assert failure == f"nvidia-smi failed (exit code {code}): {cause}"
    detail = f"{failure}: {FRAME}; {ADVICE[cause]}"
    assert broken_driver_sentence(failure) == detail  # (gpu_benchmark's benchmark_device too)
    [smoke] = [
        c for c in smoke_checks(_load("smoke_cpu.out"), 0, gpu_failure=failure) if c.name == "training_device"
    ]
    assert (smoke.verdict, smoke.actual, smoke.detail) == ("fail", f"cpu ({failure})", detail)
    checks = allreduce_checks(
        _load("allreduce_cpu_gloo.out"), load_references(), "", 0, "unknown", gpu_failure=failure
    )
    [busbw] = [c for c in checks if c.name == "allreduce_busbw"]
    assert (
        busbw.verdict == "fail"
        and busbw.actual.endswith(f" on the CPU ({failure})")
        and busbw.detail == detail
    )


def test_an_unknown_cause_and_a_hung_nvidia_smi_keep_the_fix_the_driver_advice(tmp_path: Path) -> None:
    raw = _probes(tmp_path, "Segmentation fault", 139)
    failure = nvidia_smi_failure(_facts(raw))
    assert failure == "nvidia-smi failed (exit code 139): Segmentation fault"
    assert broken_driver_sentence(failure) == f"{failure}: {FRAME}; {FIX_DRIVER}"
    hung = nvidia_smi_failure(parse_facts({"nvidia_smi": ProbeOutput("", "", 124)}))
    assert hung == "nvidia-smi did not answer (stopped after its timeout)"
    assert broken_driver_sentence(hung) == f"{hung}: {FRAME}; {FIX_DRIVER}"
