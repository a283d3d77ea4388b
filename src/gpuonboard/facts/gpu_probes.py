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
# every probe whose output lists GPUs
GPU_PROBES: tuple[str, ...] = (*(name for name, _, _ in GPU_SOURCES), LIST_PROBE)
APPS_PROBE = "nvidia_smi_apps"
