"""Why a failing nvidia-smi read no GPU, in its own words, and what to do about that cause.

The one helper behind every message about a failing nvidia-smi: acceptance's `nvidia_driver`,
`gpu_health`'s "nothing checked", `driver_compat`'s `ngc_driver` and the container step's GPU
smoke run. Each step frames the sentence (which step, what was being checked); the quoted line
and the advice come from here, so they read the same everywhere: also the advice for an
nvidia-smi that is missing (NOT_FOUND_ADVICE) or hung (HUNG_ADVICE).
"""

from __future__ import annotations

import re

# What to do where the driver sees no GPU ("No devices were found")
NO_DEVICES_ADVICE = (
    "the NVIDIA driver runs but sees no GPU: the GPUs are not attached to this machine (a VM"
    " without its passthrough or vGPU device, a container started without GPUs) or not"
    " powered, or the installed driver refuses them (its kernel log line `NVRM: The NVIDIA GPU"
    " ... installed in this system requires use of the NVIDIA open kernel modules`, as a"
    " Blackwell GPU does, or `... is not supported by the NVIDIA <version> driver release`);"
    " check `lspci | grep -i nvidia` and `sudo dmesg | grep NVRM`, and ask the vendor to"
    " attach the ordered GPUs or to install a driver that supports them"
)
# What to do where nvidia-smi cannot reach the kernel module ("couldn't communicate with the
# NVIDIA driver", "Driver Not Loaded")
NOT_LOADED_ADVICE = (
    "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
    " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
    " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
    " again"
)

# nvidia-smi's own words for why it read no GPU, each with what to do; the first line of its
# output naming one of them is quoted (a driver/library mismatch prints on stdout), not its first
# line, which on a real box may be a warning or a header before the cause. "Failed to initialize
# NVML: X" is NVML's init error X, and the X say different things (NVML API reference, nvmlInit_v2:
# docs.nvidia.com/deploy/nvml-api/group__nvmlInitializationAndCleanup.html): "Driver Not Loaded"
# (the kernel module), "Insufficient Permissions" (no permission to talk to the driver) and
# "Unknown Error" (any unexpected error) are three causes, never one "module not loaded".
_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        # NVML_ERROR_NO_PERMISSION: the user running nvidia-smi may not open /dev/nvidia*. The
        # driver creates them mode 0666 unless the nvidia module's NVreg_DeviceFileUID/GID/Mode
        # (or a udev rule) narrow them to a group, e.g. video and 0660 (openSUSE's
        # modprobe.nvidia.install); inside a container SELinux can refuse them too
        # (github.com/NVIDIA/nvidia-docker/issues/284, /issues/676;
        # github.com/NVIDIA/nvidia-container-toolkit/issues/33). Before the line of any other
        # cause: a per-GPU "Unable to determine the device handle ...: Insufficient Permissions"
        # is this cause too, not a GPU fallen off the bus.
        re.compile(r"Insufficient Permissions", re.IGNORECASE),
        "the login user may not open the NVIDIA device files (/dev/nvidia*), though the driver"
        " runs: run `ls -l /dev/nvidia*` on the host; when they are not open to all (the driver's"
        " default mode is 0666; the nvidia module's NVreg_DeviceFileGID and NVreg_DeviceFileMode"
        " options or a udev rule can narrow them to a group such as video), add the user to"
        " their group (`sudo usermod -aG GROUP USER`, then log in again) or ask the vendor to"
        " open them to it; in a container, SELinux may refuse them (ask the vendor); then run the"
        " check again",
    ),
    (
        re.compile(r"version mismatch", re.IGNORECASE),
        "the NVIDIA kernel module and the driver's library are different versions (a driver"
        " updated without a reboot): ask the vendor to reboot the box, or to reinstall one driver"
        " version, and run the check again",
    ),
    (
        re.compile(
            r"GPU is lost|Unable to (?:determine|detect) the device handle|fallen off the bus", re.IGNORECASE
        ),
        "a GPU has fallen off the bus or hangs, and nvidia-smi stops at it: ask the vendor to check"
        " `dmesg` for NVIDIA Xid errors (79: fallen off the bus), to reset the GPU"
        " (`sudo nvidia-smi -r`) or reboot, and to reseat or replace it if it stays so",
    ),
    (
        re.compile(r"No devices were found", re.IGNORECASE),
        NO_DEVICES_ADVICE,
    ),
    (
        # NVML_ERROR_UNKNOWN at init. Most reported inside a container that worked before: with
        # systemd managing the container's cgroups, a `systemctl daemon-reload` on its host
        # takes its access to the GPU device nodes away, and only a new (restarted) container
        # gets it back (NVIDIA's notice github.com/NVIDIA/nvidia-docker/issues/1730;
        # github.com/NVIDIA/nvidia-container-toolkit/issues/48, /issues/251, /issues/1227,
        # the host's own nvidia-smi working meanwhile). The per-GPU "Unable to determine the
        # device handle ...: Unknown Error" of a GPU fallen off the bus is the cause above.
        re.compile(r"Failed to initialize NVML: Unknown Error", re.IGNORECASE),
        "NVML failed with an error it does not name: in a container (many rented instances are"
        " one) this is most often the container's access to the GPU devices lost after its host"
        " ran `systemctl daemon-reload` (systemd managing its cgroups; a known NVIDIA Container"
        " Toolkit issue), which only a restarted container gets back: ask the vendor to restart"
        " the instance; on a machine of its own, check `dmesg | grep -i -e nvidia -e xid` and ask"
        " the vendor to reboot it; then run the check again",
    ),
    (
        # NVML_ERROR_OPERATING_SYSTEM (exit 17): the OS blocks NVML from the GPU's control device.
        # A WSL2 or Hyper-V guest (GPU-PV) whose Windows host does not hand it the GPU (a
        # data-centre GPU in TCC mode, the guest's GPU libraries missing: github.com/microsoft/WSL
        # issues/9938, /9166, /14339 (an L40S on Windows Server 2025),
        # github.com/staralt/dxgkrnl-dkms/issues/7), or a container whose device cgroup refuses the
        # GPU (the NVIDIA Container Toolkit's no-cgroups = true: WSL issue 9938's answers)
        re.compile(r"GPU access blocked by the operating system", re.IGNORECASE),
        "the operating system blocks the GPU from NVML, though a driver answers: in a WSL2 or"
        " Hyper-V guest the Windows host does not hand this Linux system the GPU (a data-centre"
        " GPU in TCC mode, or the guest's GPU libraries missing); in a container, its device"
        " cgroup refuses the GPU; ask the vendor to give the instance the GPU itself (PCI"
        " passthrough) or to fix the host's GPU sharing, then run the check again",
    ),
    (
        re.compile(
            r"couldn't communicate with the NVIDIA driver|Failed to initialize NVML: Driver Not Loaded"
            r"|driver is not loaded",
            re.IGNORECASE,
        ),
        NOT_LOADED_ADVICE,
    ),
)

# What to do when nvidia-smi is not on the host at all (the probe's `command -v nvidia-smi` found
# none: exit 127), for every step that reports it. On Ubuntu nvidia-smi comes in the driver's
# nvidia-utils-<branch> package (manpages.ubuntu.com: nvidia-smi.1 "Provided by:
# nvidia-utils-550-server").
NOT_FOUND_ADVICE = (
    "no nvidia-smi on the login user's PATH: no NVIDIA driver is installed, or one without its"
    " utilities (on Ubuntu nvidia-smi comes in nvidia-utils-<branch>); install the NVIDIA driver"
    " the order promised (or ask the vendor to) and run the check again"
)

# What to do when nvidia-smi did not answer within its timeout (the probe stopped it: exit 124),
# for every step that reports it: a hung driver, most often stuck on a GPU fallen off the bus
HUNG_ADVICE = (
    "a hung driver (nvidia-smi never answered; most often a GPU that fell off the bus): ask the"
    " vendor to check `dmesg` for NVIDIA Xid errors (Xid 79: fallen off the bus), to reboot the"
    " box, and to reseat or replace a GPU that hangs again; then run the check again"
)

# the advice for a failure none of _CAUSES names (nvidia-smi's quoted line says why)
UNKNOWN_CAUSE_ADVICE = (
    "nvidia-smi's message says why; ask the vendor to repair the NVIDIA driver and run the check again"
)


def _cause_of(line: str) -> tuple[str, bool] | None:
    """The advice of the first of _CAUSES that `line` names, and whether a cause's words begin
    the line (after a table's `|`); None where it names none."""
    advice = next((advice for pattern, advice in _CAUSES if pattern.search(line)), None)
    if advice is None:
        return None
    starts = (m for pattern, _ in _CAUSES if (m := pattern.search(line)))
    return advice, any(not line[: m.start()].strip(" |\t") for m in starts)


def _unticked(line: str) -> str:
    """`line` without a poster's Markdown inline-code backticks: the pair around the whole line
    (`` `Failed to initialize NVML: ...` ``), or the one backtick left at its start or end where
    the inline code spans lines (`` `Failed to initialize NVML...`` then ``...shut down NVML...` ``);
    a backtick inside the line, with its partner there, is the message's own."""
    if line.count("`") == 2 and line.startswith("`") and line.endswith("`") and len(line) > 2:
        return line[1:-1].strip()
    if line.count("`") == 1 and (line.startswith("`") or line.endswith("`")):
        return line.strip("`").strip()
    return line


def nvidia_smi_failure(stdout: str, stderr: str) -> tuple[str, str]:
    """nvidia-smi's own line saying why it read no GPU (the first naming a known cause, one whose
    cause's words begin the line first, else its first line; '' when it printed nothing) and what
    to do about that cause ('' when unknown: the caller adds UNKNOWN_CAUSE_ADVICE or its own);
    a poster's inline-code backticks around the line are not quoted."""
    lines = [_unticked(ln.strip()) for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln]
    causes = [(line, *cause) for line in lines if (cause := _cause_of(line)) is not None]
    # (nvidia-smi's own line, a cause's words at the line's start, before another tool's line
    # quoting them after its own words: `NVIDIA GPU Details | Failed: Unable to determine ...`)
    own = [(line, advice) for line, advice, at_start in causes if at_start]
    if causes:
        return own[0] if own else (causes[0][0], causes[0][1])
    return (lines[0] if lines else ""), ""


# the line nvidia-smi prints below `Failed to initialize NVML: Driver/library version mismatch`
# (drivers of 2024 on): the version of the NVML library it loaded, the driver's user-space side
_NVML_LIBRARY = re.compile(r"^[^\S\n]*NVML library version:\s*(\d+(?:\.\d+)+)\s*$", re.MULTILINE)


def mismatch_library_version(stdout: str, stderr: str) -> str | None:
    """The NVML library version nvidia-smi names below its version-mismatch failure (`NVML
    library version: 580.178`), None where it failed otherwise or names none. That is the
    library's version, not the loaded kernel module's: the two differ, which is the failure."""
    text = stderr + "\n" + stdout
    if "version mismatch" not in text.lower():
        return None
    found = _NVML_LIBRARY.search(text)
    return found.group(1) if found else None


def answered_unread(text: str) -> str | None:
    """The driver version of an nvidia-smi output that answered but whose GPU rows could not be
    read: its banner gives the driver version, no GPU is read from it, the parser finds it cut
    short or mangled (a table cut after its banner, wrapped or redrawn in a paste), and it states
    no GPU count of its own. A failure line above it (a lost GPU's "Unable to determine the
    device handle for GPU1: ...") names that one GPU: it is no failed nvidia-smi. None otherwise
    (a -q that says 'Attached GPUs : 1' and lists none is nvidia-smi's own answer)."""
    from gpuonboard.facts.nvidia_smi import parse_any

    report = parse_any(text)
    if report.gpus or report.complete or report.attached_gpus is not None:
        return None
    return report.driver_version


# the exit codes of an nvidia-smi call stopped by a signal before its time was up (the probe's own
# timeout exits 124: connection/probe_commands.py), as a shell reports them: 128 + the signal's number
_STOPPED = {137: "killed", 143: "terminated"}


def stopped_said(exit_code: int | None) -> str:
    """'was stopped (exit 137: killed)' for an nvidia-smi call a signal stopped before the probe's
    timeout (another process, the kernel's OOM killer, a session closed), never a hang; '' for
    any other code."""
    how = _STOPPED.get(exit_code or 0)
    return f"was stopped (exit {exit_code}: {how})" if how else ""
