"""NVML's init errors are three causes, each advised as itself; a missing and a hung nvidia-smi
get one advice, word for word, in every step.

Before, any "Failed to initialize NVML: ..." line was "the NVIDIA kernel module is not loaded ...
ask the vendor to reboot": also "Insufficient Permissions" (the login user may not open
/dev/nvidia*; a reboot changes nothing) and "Unknown Error" (most often a container that lost its
GPU devices after its host's `systemctl daemon-reload`, NVIDIA's notice
github.com/NVIDIA/nvidia-docker/issues/1730). And a hung nvidia-smi was "reset or reboot" in
driver_compat (and the container smoke run) but "`dmesg` Xid 79, reseat or replace" in acceptance
and gpu_health; a missing one was "install the driver first" in one, "install the NVIDIA driver
the order promised" in the other.

The lines are nvidia-smi's real messages as users posted them (the issues named at each); each
runs through the real fact probes (every nvidia-smi format its own probe, under sh and timeout)
with an `nvidia-smi` on PATH that prints it and exits with nvidia-smi's documented code for that
error.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import acceptance, driver_compat, gpu_health, ngc

from .smi_failures import SMI_PROBES, Raw, _facts, _probes

# github.com/NVIDIA/nvidia-docker/issues/284, NVIDIA/nvidia-container-toolkit/issues/33 (exit 4:
# nvidia-smi's "Insufficient Permissions")
PERMS = "Failed to initialize NVML: Insufficient Permissions"
# github.com/NVIDIA/nvidia-container-toolkit/issues/251, /issues/1227 (exit 255: "other error")
UNKNOWN_INIT = "Failed to initialize NVML: Unknown Error"
# the kernel module really not loaded (NVML_ERROR_DRIVER_NOT_LOADED, exit 9)
NOT_LOADED = "Failed to initialize NVML: Driver Not Loaded"
# WSL / a cgroup blocking the GPU control device (github.com/microsoft/WSL/issues/10289): its own
# cause (NVML_ERROR_OPERATING_SYSTEM), never "module not loaded"
BLOCKED = "Failed to initialize NVML: GPU access blocked by the operating system"

PERMS_ADVICE = (
    "the login user may not open the NVIDIA device files (/dev/nvidia*), though the driver"
    " runs: run `ls -l /dev/nvidia*` on the host; when they are not open to all (the driver's"
    " default mode is 0666; the nvidia module's NVreg_DeviceFileGID and NVreg_DeviceFileMode"
    " options or a udev rule can narrow them to a group such as video), add the user to"
    " their group (`sudo usermod -aG GROUP USER`, then log in again) or ask the vendor to"
    " open them to it; in a container, SELinux may refuse them (ask the vendor); then run the"
    " check again"
)
UNKNOWN_INIT_ADVICE = (
    "NVML failed with an error it does not name: in a container (many rented instances are"
    " one) this is most often the container's access to the GPU devices lost after its host"
    " ran `systemctl daemon-reload` (systemd managing its cgroups; a known NVIDIA Container"
    " Toolkit issue), which only a restarted container gets back: ask the vendor to restart"
    " the instance; on a machine of its own, check `dmesg | grep -i -e nvidia -e xid` and ask"
    " the vendor to reboot it; then run the check again"
)
MODULE_ADVICE = (
    "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
    " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
    " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
    " again"
)
BLOCKED_ADVICE = (
    "the operating system blocks the GPU from NVML, though a driver answers: in a WSL2 or"
    " Hyper-V guest the Windows host does not hand this Linux system the GPU (a data-centre"
    " GPU in TCC mode, or the guest's GPU libraries missing); in a container, its device"
    " cgroup refuses the GPU; ask the vendor to give the instance the GPU itself (PCI"
    " passthrough) or to fix the host's GPU sharing, then run the check again"
)
HUNG = (
    "a hung driver (nvidia-smi never answered; most often a GPU that fell off the bus): ask the"
    " vendor to check `dmesg` for NVIDIA Xid errors (Xid 79: fallen off the bus), to reboot the"
    " box, and to reseat or replace a GPU that hangs again; then run the check again"
)
NOT_FOUND = (
    "no nvidia-smi on the login user's PATH: no NVIDIA driver is installed, or one without its"
    " utilities (on Ubuntu nvidia-smi comes in nvidia-utils-<branch>); install the NVIDIA driver"
    " the order promised (or ask the vendor to) and run the check again"
)
HEALTH = "no ECC, memory-repair, PCIe, power, throttling or MIG check could run; "


def _health(raw: Raw) -> Check:
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=_facts(raw))
    plan = gpu_health.GpuHealthStep({}).plan(ctx)  # type: ignore[arg-type]
    assert plan.failed
    [check] = plan.checks
    return check


def _compat(raw: Raw) -> Check:
    facts = _facts(raw)
    return driver_compat.evaluate(facts, driver_compat.DEFAULT_IMAGE, ngc.load_releases())[0]


@pytest.mark.parametrize(
    ("line", "code", "advice"),
    [
        (PERMS, 4, PERMS_ADVICE),
        (UNKNOWN_INIT, 255, UNKNOWN_INIT_ADVICE),
        (NOT_LOADED, 9, MODULE_ADVICE),
    ],
    ids=["insufficient-permissions", "unknown-error", "driver-not-loaded"],
)
def test_each_nvml_init_error_is_advised_as_its_own_cause(
    tmp_path: Path, line: str, code: int, advice: str
) -> None:
    raw = _probes(tmp_path, line, code)
    # one call per probe: each nvidia-smi probe printed the line once and kept the exit code
    assert {name: (out.exit_code, out.stdout) for name, out in raw.items()} == dict.fromkeys(
        SMI_PROBES, (code, line + "\n")
    )
    # an NVML error is no provider's refusal: every format failed, none was refused
    evidence = _facts(raw).gpu_evidence
    assert evidence is not None and (evidence.report, evidence.refusals) == (None, ())
    gpu_raw = _facts(raw).gpu_raw
    assert nvidia_smi_failure(gpu_raw.stdout, gpu_raw.stderr) == (line, advice)
    health = _health(raw)
    assert (health.verdict, health.actual, health.detail) == (
        "fail",
        f"nothing checked: nvidia-smi failed (exit code {code}): {line}",
        HEALTH + advice,
    )
    driver = acceptance.rule_driver(_facts(raw))
    assert (driver.verdict, driver.actual, driver.detail) == ("fail", f"nvidia-smi failed ({line})", advice)
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == ("fail", f"nvidia-smi failed ({line})", advice)
    if advice != MODULE_ADVICE:
        # the kernel module is loaded (NVML reached it): a reboot or reinstall for the running
        # kernel is not what fixes it
        assert "kernel module is not loaded" not in health.detail + driver.detail + compat.detail


def test_nvml_blocked_by_the_os_is_its_own_cause_never_module_not_loaded(tmp_path: Path) -> None:
    """WSL2 / Hyper-V GPU-PV / a cgroup blocking the GPU control device (NVML_ERROR_OPERATING_SYSTEM,
    exit 17): advised as itself in driver_compat, and never "module not loaded" anywhere (it was
    quoted with the general advice, "repair the NVIDIA driver", which names no fix)."""
    raw = _probes(tmp_path, BLOCKED, 17)
    assert {name: (out.exit_code, out.stdout) for name, out in raw.items()} == dict.fromkeys(
        SMI_PROBES, (17, BLOCKED + "\n")
    )
    gpu_raw = _facts(raw).gpu_raw
    assert nvidia_smi_failure(gpu_raw.stdout, gpu_raw.stderr) == (BLOCKED, BLOCKED_ADVICE)
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == (
        "fail",
        f"nvidia-smi failed ({BLOCKED})",
        BLOCKED_ADVICE,
    )
    driver = acceptance.rule_driver(_facts(raw))
    assert driver.verdict != "pass" and driver.actual.startswith(f"nvidia-smi failed ({BLOCKED})")
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=_facts(raw))
    [health] = gpu_health.GpuHealthStep({}).plan(ctx).checks  # type: ignore[arg-type]
    assert health.verdict != "pass" and BLOCKED in health.actual
    for check in (compat, driver, health):
        assert "kernel module is not loaded" not in check.detail


def test_nvml_blocked_by_the_os_is_judged_alike_in_every_step(tmp_path: Path) -> None:
    raw = _probes(tmp_path, BLOCKED, 17)
    driver = acceptance.rule_driver(_facts(raw))
    compat = _compat(raw)
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=_facts(raw))
    [health] = gpu_health.GpuHealthStep({}).plan(ctx).checks  # type: ignore[arg-type]
    assert driver.verdict == compat.verdict == health.verdict


def test_a_per_gpu_permission_error_is_not_a_gpu_fallen_off_the_bus() -> None:
    """nvidia-smi names a per-GPU NVML error as "Unable to determine the device handle for GPU
    <bus id>: <NVML's error string>" (its "GPU is lost" and "Unknown Error" lines are advised as a
    GPU fallen off the bus); with NVML's "Insufficient Permissions" it is the permission cause."""
    line = "Unable to determine the device handle for GPU 0000:01:00.0: Insufficient Permissions"
    assert nvidia_smi_failure(line + "\n", "") == (line, PERMS_ADVICE)
    lost = "Unable to determine the device handle for GPU0000:0B:00.0: Unknown Error"
    assert "fallen off the bus" in nvidia_smi_failure(lost + "\n", "")[1]


def test_a_hung_nvidia_smi_gets_one_advice_in_every_step() -> None:
    raw = ProbeOutput("", "", 124)
    facts = parse_facts({"nvidia_smi": raw})
    driver = acceptance.rule_driver(facts)
    assert (driver.actual, driver.detail) == ("nvidia-smi did not answer within 60 s (stopped)", HUNG)
    health = _health(raw)
    assert (health.actual, health.detail) == (
        "nothing checked: nvidia-smi did not answer (stopped)",
        HEALTH + HUNG,
    )
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == (
        "fail",
        "nvidia-smi did not answer (stopped)",
        HUNG,
    )
    # the container step's "GPU smoke run not possible" sentence takes driver_failure's words
    assert driver_compat.driver_failure(facts) == ("nvidia-smi did not answer (stopped)", HUNG)


def test_a_missing_nvidia_smi_gets_one_advice_in_acceptance_and_driver_compat() -> None:
    raw = ProbeOutput("", "", 127)
    facts = parse_facts({"nvidia_smi": raw})
    driver = acceptance.rule_driver(facts)
    assert (driver.verdict, driver.actual, driver.detail) == ("fail", "nvidia-smi not found", NOT_FOUND)
    compat = _compat(raw)
    assert (compat.verdict, compat.actual, compat.detail) == ("fail", "no NVIDIA driver answered", NOT_FOUND)
