"""nvidia-smi's real failure messages, the advice each step gives for each cause, and the fact
probes run with an `nvidia-smi` on PATH that fails so: shared by the tests of the steps that
report a failing nvidia-smi (gpu_health, acceptance, driver_compat, prove)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.connection.probe_commands import core_probes
from gpuonboard.facts.probe import ProbeOutput

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
# a warning nvidia-smi prints before the failure itself ("WARNING: infoROM is corrupted at gpu
# 0000:02:00.0", as users posted it): quoting the first line quoted this noise
INFOROM = "WARNING: infoROM is corrupted at gpu 0000:02:00.0"

# the advice, word for word, for each cause (every step that reports a failing nvidia-smi)
ADVICE = {
    MISMATCH: "the NVIDIA kernel module and the driver's library are different versions (a driver"
    " updated without a reboot): ask the vendor to reboot the box, or to reinstall one driver"
    " version, and run the check again",
    LOST: "a GPU has fallen off the bus or hangs, and nvidia-smi stops at it: ask the vendor to check"
    " `dmesg` for NVIDIA Xid errors (79: fallen off the bus), to reset the GPU"
    " (`sudo nvidia-smi -r`) or reboot, and to reseat or replace it if it stays so",
    NONE: "the NVIDIA driver runs but sees no GPU: the GPUs are not attached to this machine (a VM"
    " without its passthrough or vGPU device, a container started without GPUs) or not"
    " powered, or the installed driver refuses them (its kernel log line `NVRM: The NVIDIA GPU"
    " ... installed in this system requires use of the NVIDIA open kernel modules`, as a"
    " Blackwell GPU does, or `... is not supported by the NVIDIA <version> driver release`);"
    " check `lspci | grep -i nvidia` and `sudo dmesg | grep NVRM`, and ask the vendor to"
    " attach the ordered GPUs or to install a driver that supports them",
    NO_MODULE: "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
    " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
    " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
    " again",
}
ADVICE[OFF_BUS] = ADVICE[LOST]
UNKNOWN = "nvidia-smi's message says why; ask the vendor to repair the NVIDIA driver and run the check again"
HEALTH = "no ECC, memory-repair, PCIe, power, throttling or MIG check could run; "


# the fact probes that call nvidia-smi: one call each (probe_commands.py core_probes)
SMI_PROBES = (
    "nvidia_smi",
    "nvidia_smi_q",
    "nvidia_smi_csv",
    "nvidia_smi_table",
    "nvidia_smi_list",
    "nvidia_smi_apps",
    "nvidia_topo",
    "nvidia_nvlink",
)
Raw = ProbeOutput | Mapping[str, ProbeOutput]


def _probes(tmp_path: Path, line: str, code: int) -> dict[str, ProbeOutput]:
    """Every nvidia-smi fact probe's real output on a host whose nvidia-smi prints `line`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "message").write_text(line + "\n")
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat '{tmp_path / 'message'}'\nexit {code}\n")
    smi.chmod(0o755)
    probes = [p for p in core_probes() if p.name in SMI_PROBES]
    assert [p.name for p in probes] == list(SMI_PROBES)
    raw = {}
    for probe in probes:
        out = subprocess.run(
            ["sh", "-c", probe.command],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        )
        raw[probe.name] = ProbeOutput(out.stdout, out.stderr, out.returncode)
    return raw


def _facts(raw: Raw):  # type: ignore[no-untyped-def]
    return parse_facts({"nvidia_smi": raw} if isinstance(raw, ProbeOutput) else dict(raw))
