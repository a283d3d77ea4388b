"""The names of the probes that ask nvidia-smi about the GPUs, without the parsers (gpu_merge,
nvidia_smi): a command that gathers no GPU facts (sync, teardown) need not import them."""

from __future__ import annotations

# probe name -> (format label, the nvidia-smi arguments), richest format first
GPU_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("nvidia_smi", "xml", "-q -x"),
    ("nvidia_smi_q", "text", "-q"),
    ("nvidia_smi_csv", "csv", "--query-gpu"),
    ("nvidia_smi_table", "table", "(default table)"),
)
LIST_PROBE = "nvidia_smi_list"
# the driver version a saved torch or vLLM collect_env report read from the box's nvidia-smi
# (its `Nvidia driver version:` line, the table's banner value): a version answer, no GPU row
ENV_DRIVER_PROBE = "collect_env_driver"
# the kernel's release a saved collect_env report's `Python platform: Linux-RELEASE-ARCH-with-...`
# line names (Python's `platform.platform()`): no uname output of its own, read by the signs of a
# guest only (steps/checks/gpu_health/guest.py: a WSL2 guest's `-microsoft-standard-WSL2`)
ENV_PLATFORM_PROBE = "collect_env_platform"
# every probe whose output lists GPUs
GPU_PROBES: tuple[str, ...] = (*(name for name, _, _ in GPU_SOURCES), LIST_PROBE)
APPS_PROBE = "nvidia_smi_apps"
# every probe that runs nvidia-smi (connection/probe_commands.py core_probes), with its arguments: the formats
# above, `-L`, the compute apps, `topo -m`, `nvlink -s` and `nvlink -e`
NVIDIA_SMI_ARGS: dict[str, str] = {
    **{name: args for name, _, args in GPU_SOURCES},
    LIST_PROBE: "-L",
    APPS_PROBE: "--query-compute-apps",
    "nvidia_topo": "topo -m",
    "nvidia_nvlink": "nvlink -s",
    "nvidia_nvlink_errors": "nvlink -e",
}
# nvidia-smi(1), RETURN VALUE: "Return code 14 - infoROM is corrupted": a warning printed beside
# a whole answer (the table of every GPU with `echo $?` 14: NVIDIA/gpu-operator#285; "status 14
# is a warning and doesn't affect actual execution": pytorch/pytorch#87464). Its other codes
# (9 no driver, 15 a GPU fallen off the bus, 4 no permission ...) say the answer is partial or none.
WARNING_EXIT = 14
