"""Why a container run failed, in one sentence: the line of its output naming a known cause
(anywhere in stderr or stdout, not only the last), with that cause and what to do; else the
last line that is not known noise (docker's `See 'docker run --help'.`, torch's debugging hints).

One table, `CAUSES`: pattern -> cause -> advice, in priority order (the first entry whose
pattern is on any line wins: a CUDA error 804 warning names the cause of the "torch sees 0
GPUs" that follows it). Each entry carries the public source its words were read in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure

# what driver_compat's ngc_driver check does for an image its driver cannot run (steps/checks/ngc.py)
_DRIVER_ADVICE = (
    "use an image whose CUDA this driver runs natively (the driver_compat step's ngc_driver check"
    " names the newest NGC PyTorch release it runs), or upgrade the driver"
)
_CONFIGURE = "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"
_CDI_GENERATE = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"


def _toolkit_cli_advice(line: str) -> str:
    """nvidia-container-cli's own reason, advised as nvidia-smi's is (a driver/library version
    mismatch, a driver not loaded: the same NVML errors), else how to see the toolkit's view."""
    _, advice = nvidia_smi_failure(line, "")
    return advice or (
        "run `nvidia-container-cli -k -d /dev/tty info` on the host to see what the toolkit"
        " cannot find, and repair the driver or the NVIDIA Container Toolkit"
    )


@dataclass(frozen=True)
class Cause:
    """A known reason a container run fails: its pattern, the cause and what to do."""

    pattern: re.Pattern[str]
    cause: str  # `{arch}` is the host's CPU architecture
    advice: str | Callable[[str], str]  # text, or made from the matched line's tail


CAUSES: tuple[Cause, ...] = (
    # hpcaitech/ColossalAI#4381: torch's "UserWarning: CUDA initialization: ... Error 804: forward
    # compatibility was attempted on non supported HW", then device_count() 0; ngc.py's wording
    Cause(
        re.compile(r"Error 804|forward compatibility was attempted on non supported HW", re.I),
        "CUDA forward compatibility was refused on this GPU (CUDA error 804): the image's CUDA is newer"
        " than the host's driver, and forward compatibility does not work on GeForce cards (only on"
        " data-centre and select professional GPUs)",
        _DRIVER_ADVICE,
    ),
    # CUDA runtime's cudaErrorInsufficientDriver (search-index file id 62735146657 and others);
    # torch's own words for it, with the driver's CUDA as a number (Motphys/phys-bench#14: "The
    # NVIDIA driver on your system is too old (found version 12040)", then its advice lines)
    Cause(
        re.compile(
            r"CUDA driver version is insufficient for CUDA runtime version"
            r"|The NVIDIA driver on your system is too old",
            re.I,
        ),
        "the host's NVIDIA driver is too old for the image's CUDA",
        _DRIVER_ADVICE,
    ),
    # xy-gao/DA3-blender#25 (RTX 5090): "RuntimeError: CUDA error: no kernel image is available for
    # execution on the device", then torch's TORCH_USE_CUDA_DSA hint; gpu_family.py's wording
    Cause(
        re.compile(r"no kernel image is available for execution on the device", re.I),
        "the image's PyTorch has no kernels for this GPU's architecture (a GPU newer, or older, than"
        " the ones it was built for)",
        "use an image release built for this GPU (the driver_compat step's ngc_driver check names the"
        " releases that support its family; a new GPU such as an RTX 50xx or B200 needs a recent one)",
    ),
    # NVIDIA/nvidia-docker#1034: `docker: Error response from daemon: could not select device
    # driver "" with capabilities: [[gpu]].`: moby finds no nvidia-container-runtime-hook on
    # dockerd's PATH (moby daemon/nvidia_linux.go, commit 18a2f3f01538afa4c631c2b09f898dd3d8a8168d)
    Cause(
        re.compile(r"could not select device driver .* with capabilities: \[\[gpu\]\]", re.I),
        "docker has no GPU support: nvidia-container-runtime-hook is not on dockerd's PATH (the NVIDIA"
        " Container Toolkit is not installed, or docker was not restarted after it was)",
        "install nvidia-container-toolkit on the host and restart docker (sudo systemctl restart docker)",
    ),
    # NVIDIA/TensorRT-LLM#799, nvidia-container-toolkit cmd/nvidia-container-runtime-hook/main.go:
    # the hook in csv (Jetson) or cdi mode refuses docker's --gpus
    Cause(
        re.compile(r"invoking the NVIDIA Container Runtime Hook directly", re.I),
        "the NVIDIA Container Toolkit's hook refuses docker's --gpus here (its mode is csv, as on a"
        " Jetson, or cdi, not legacy)",
        "run GPU containers with `--runtime nvidia` (gpuonboard does when"
        ' /etc/nvidia-container-runtime/config.toml says mode = "csv" or "cdi", or the host is a Tegra'
        f" system); register that runtime with docker: {_CONFIGURE}",
    ),
    # moby's error for `--runtime nvidia` without the runtime in daemon.json (search-index file
    # ids 55959052071, 53577921575: "docker: Error response from daemon: unknown or invalid
    # runtime name: nvidia")
    Cause(
        re.compile(r"unknown or invalid runtime name: nvidia", re.I),
        "docker has no `nvidia` runtime registered, which this host's NVIDIA Container Toolkit mode needs",
        f"register it: {_CONFIGURE}",
    ),
    # podman's CDI: warmshao/FasterLivePortrait#116 (`docker run --gpus=all` through podman's shim),
    # NVIDIA/nvidia-container-toolkit#146 ("unresolvable CDI devices nvidia.com/gpu=all"): no CDI
    # spec podman read names the GPUs (none generated, one this user cannot read, or one in a
    # directory podman does not search: /run/cdi in NixOS/nixpkgs#420638)
    Cause(
        re.compile(r"unresolvable CDI devices? .*nvidia\.com/gpu", re.I),
        "podman found no NVIDIA CDI spec naming the GPUs (none generated, one this user cannot read,"
        " or one outside the directories podman searches: /etc/cdi, /var/run/cdi)",
        f"generate it: {_CDI_GENERATE} (readable by the user that runs podman), and check that"
        " `nvidia-ctk cdi list` names nvidia.com/gpu=all",
    ),
    # NVIDIA/nvidia-container-toolkit#885 (rootless podman): the spec names a device node the host
    # no longer has (generated before a driver, GPU or boot change)
    Cause(
        re.compile(r"failed to stat CDI host device", re.I),
        "the NVIDIA CDI spec names a device the host does not have now (it was generated before a"
        " driver, GPU or boot change)",
        f"generate it again: {_CDI_GENERATE}",
    ),
    # the toolkit's prestart hook failing, e.g. "nvidia-container-cli: initialization error: nvml
    # error: driver/library version mismatch: unknown" (search-index file ids 37128441387,
    # 10889783564) or "... driver not loaded: unknown" (file id 32215258224)
    Cause(
        re.compile(r"nvidia-container-cli: .+", re.I),
        "the NVIDIA Container Toolkit could not give the container the GPUs",
        _toolkit_cli_advice,
    ),
    # an image for another CPU: nubosoftware/linux-remote-desktop#4 ("exec
    # /opt/nvidia/nvidia_entrypoint.sh: exec format error"; also search-index file id 57397682505)
    Cause(
        re.compile(r"exec format error", re.I),
        "the image's programs are built for another CPU architecture than this host's ({arch})",
        "pull a build of the image for this host's platform (nvcr.io's -py3 tags are multi-arch) or"
        " have the mirror copy all platforms; compare `docker image inspect --format"
        " '{{.Architecture}}' IMAGE` with `uname -m` on the host",
    ),
)

# Lines that are never the reason: docker's pointer to its help (docker/cli cli/command/container
# run.go, commit 01db39ab1bee95c963f28b2b29432575ac7eab2c: "See 'docker run --help'."), its
# client's note after the daemon refused the container (NVIDIA/nvidia-docker#1034: "ERRO[0000]
# error waiting for container: context canceled"), torch's debugging hints after a CUDA error
# (xy-gao/DA3-blender#25), docker info's trailer (docker/cli cli/command/system/info.go).
NOISE: tuple[re.Pattern[str], ...] = (
    re.compile(r"^See '.*--help'\.?$"),
    re.compile(r"^Run '.*--help' for more information"),
    re.compile(r"^ERRO\[\d+\] error waiting for container"),
    re.compile(r"Compile with `?TORCH_USE_CUDA_DSA`? to enable device-side assertions"),
    re.compile(r"^CUDA kernel errors might be asynchronously reported"),
    re.compile(r"^For debugging consider passing CUDA_LAUNCH_BLOCKING=1"),
    re.compile(r"^errors pretty printing info$"),
)


def run_failure(stdout: str, stderr: str, code: int, arch: str | None = None) -> str:
    """Pure: why a container run failed, in one sentence: `CAUSE (the run said: LINE); ADVICE` for a known
    cause, else the last line that is not noise (else `exit code N`)."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for c in CAUSES:
        for line in lines:
            m = c.pattern.search(line)
            if m is None:
                continue
            quoted = line[m.start() :]
            quoted = quoted if len(quoted) <= 200 else quoted[:197] + "..."
            advice = c.advice(quoted) if callable(c.advice) else c.advice
            return f"{c.cause.format(arch=arch or 'unknown')} (the run said: {quoted}); {advice}"
    kept = [ln for ln in lines if not any(n.search(ln) for n in NOISE)]
    if kept:
        return kept[-1]
    return lines[-1] if lines else f"exit code {code}"
