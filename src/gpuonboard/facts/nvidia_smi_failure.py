"""Why a failing nvidia-smi read no GPU, in its own words, and what to do about that cause.

The one helper behind every message about a failing nvidia-smi: acceptance's `nvidia_driver`,
`gpu_health`'s "nothing checked", `driver_compat`'s `ngc_driver` and the container step's GPU
smoke run. Each step frames the sentence (which step, what was being checked); the quoted line
and the advice come from here, so they read the same everywhere.
"""

from __future__ import annotations

import re

# nvidia-smi's own words for why it read no GPU, each with what to do; the first line of its
# output naming one of them is quoted (a driver/library mismatch prints on stdout), not its first
# line, which on a real box may be a warning or a header before the cause
_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"version mismatch", re.IGNORECASE),
        "the NVIDIA kernel module and the driver's library are different versions (a driver"
        " updated without a reboot): ask the vendor to reboot the box, or to reinstall one driver"
        " version, and run the check again",
    ),
    (
        re.compile(r"GPU is lost|Unable to determine the device handle|fallen off the bus", re.IGNORECASE),
        "a GPU has fallen off the bus or hangs, and nvidia-smi stops at it: ask the vendor to check"
        " `dmesg` for NVIDIA Xid errors (79: fallen off the bus), to reset the GPU"
        " (`sudo nvidia-smi -r`) or reboot, and to reseat or replace it if it stays so",
    ),
    (
        re.compile(r"No devices were found", re.IGNORECASE),
        "the NVIDIA driver runs but sees no GPU: the GPUs are not attached to this machine (a VM"
        " without its passthrough or vGPU device, a container started without GPUs) or not"
        " powered; check `lspci | grep -i nvidia` and ask the vendor to attach the ordered GPUs",
    ),
    (
        re.compile(
            r"couldn't communicate with the NVIDIA driver|Failed to initialize NVML|driver is not loaded",
            re.IGNORECASE,
        ),
        "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
        " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
        " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
        " again",
    ),
)

# the advice for a failure none of _CAUSES names (nvidia-smi's quoted line says why)
UNKNOWN_CAUSE_ADVICE = (
    "nvidia-smi's message says why; ask the vendor to repair the NVIDIA driver and run the check again"
)


def nvidia_smi_failure(stdout: str, stderr: str) -> tuple[str, str]:
    """nvidia-smi's own line saying why it read no GPU (the first naming a known cause, else its
    first line; '' when it printed nothing) and what to do about that cause ('' when unknown:
    the caller adds UNKNOWN_CAUSE_ADVICE or its own)."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for line in lines:
        for pattern, advice in _CAUSES:
            if pattern.search(line):
                return line, advice
    return (lines[0] if lines else ""), ""
