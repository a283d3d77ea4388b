"""Saved outputs that are read and hold nothing the rules judge: a `--query-gpu` CSV of one field
no rule reads (`compute_cap`, `fan.speed`). Such a file is named in a note and the folder's other
files are judged; before, the whole folder was refused as "not a recognised command output"."""

from __future__ import annotations

import re

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi.query_csv import QUERY_FIELDS

# a --query-gpu field name (nvidia-smi's own: lower case, dotted or underscored), with the unit
# `--format=csv` puts after it (`fan.speed [%]`)
_ONE_FIELD = re.compile(r"([a-z][a-z0-9_]*(?:[._][a-z0-9_]+)+)(?:\s*\[[^\]]*\])?")
# (its list quoted or not: `--query-gpu=name,memory.total`, `--query-gpu "name"`, m36b 21)
_QUERY_GPU = re.compile(r"--query-gpu(?:=|\s+)[\"']?([\w.,]+)")
# the fields the readers take beside the recommended list (facts/nvidia_smi/query_csv.py)
_READ_PREFIXES = (
    "ecc.",
    "retired_pages.",
    "remapped_rows.",
    "clocks_event_reasons.",
    "clocks_throttle_reasons.",
    "power.",
    "enforced.power.",
    "temperature.",
    "pcie.",
    "memory.",
    "mig.",
    "fabric.",
    "utilization.",
    "pci.",
    "gpu_",
    "clocks.",
)
_SAVE = (
    "save `nvidia-smi -q -x` of the box, or a CSV of the fields the rules read"
    " (`--query-gpu=index,name,memory.total,driver_version,ecc.mode.current,... --format=csv`)"
)


class UnjudgedOutput(UsageError):
    """A saved output that was read and holds no fact a rule judges: said in a note, not refused."""


def _read_by_rules(field: str) -> bool:
    return field in QUERY_FIELDS or field.startswith(_READ_PREFIXES)


def query_gpu_fields(command: str) -> list[str] | None:
    """The fields an nvidia-smi command line asks for with `--query-gpu=a,b` (in order), None
    where it asks for none (or is no nvidia-smi command)."""
    found = _QUERY_GPU.search(command) if "nvidia-smi" in command else None
    return [f for f in found.group(1).split(",") if f] if found else None


def one_field_csv(command: str, text: str) -> str | None:
    """Why a one-column `--query-gpu` CSV of a field no rule reads is not judged (its field and
    rows named, what to save), where `text` is one: its header is a field name nvidia-smi prints
    (`compute_cap`, `fan.speed [%]`) over one cell a row, or its copied command asks for that one
    field with `noheader`. None for any other text (a field the rules read is left to the readers)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    listed = query_gpu_fields(command) or []
    if not lines or any("," in line for line in lines) or len(listed) > 1:
        return None
    header = _ONE_FIELD.fullmatch(lines[0])
    if listed and "noheader" in command:
        field, rows = listed[0], lines
    elif header is not None and (not listed or listed[0] == header.group(1)):
        field, rows = header.group(1), lines[1:]
    else:
        return None
    if _read_by_rules(field) or not rows:
        return None
    shown = ", ".join(dict.fromkeys(rows[:4])) + (", ..." if len(set(rows)) > 4 else "")
    return (
        f"a `--query-gpu` CSV of {field} only ({len(rows)} row(s): {shown}), no field the rules read,"
        f" so it is shown as read and not judged: {_SAVE}."
    )


def lone_values(text: str) -> str | None:
    """The refusal of a column of `[N/A]` (or `[Not Supported]`, `N/A`) alone, with no header and
    no copied command above it: a `--query-gpu ... noheader` value nvidia-smi could not read, of a
    field that cannot be told; None for any other text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not all(re.fullmatch(r"\[(?:N/A|Not Supported|Unknown Error)\]|N/A", ln) for ln in lines):
        return None
    return (
        f"a column of {lines[0]} alone, with no header or command line above it (a `--query-gpu ..."
        " --format=csv,noheader` field nvidia-smi could not read?): which field it is cannot be told,"
        f" so nothing is read from it: save the output with its header (`--format=csv`) or under its"
        f" copied command line, or {_SAVE}."
    )


# `nvidia-container-cli info` (the NVIDIA Container Toolkit's view of the driver, `-k -d
# /dev/tty` adding its glog `I0114 04:33:38 ... nvc_info.c:...]` lines): `NVRM version:   390.87`,
# `CUDA version:   9.1`, then a block per GPU (`Device Index:`, `Model:`, `Bus Location:`,
# `Architecture:   6.1`, the GPU's compute capability, no CPU's). /proc/driver/nvidia/version's
# `NVRM version: NVIDIA UNIX x86_64 Kernel Module ...` is the kernel module's (facts/kernel_nvrm.py).
_CLI_FIELD = re.compile(r"^(NVRM version|CUDA version|Device Index|Model|Bus Location):[ \t]*(.*?)\s*$", re.M)


# its glog line for each device it lists before the blocks: `listing device /dev/nvidia7 (GPU-... at
# 00000000:db:00.0)`; a Jetson's `listing device (null) ((null) at (null))`
_CLI_LISTING = re.compile(r"\] listing device (\S+) \(")
_NULL = "(null)"  # (a field nvidia-container-cli could not read: a Jetson's driver version, UUID, bus)


# `nvidia-container-cli -d`'s debug log: its banner and its glog lines (`I0805 21:04:28.332330 29658
# nvc.c:281] initializing library context ...`), which it prints before the info block
_CLI_DEBUG_BANNER = re.compile(
    r"^[^\S\n]*-- WARNING, the following logs are for debugging purposes only --\s*$", re.M
)
_CLI_GLOG = re.compile(
    r"^[^\S\n]*[IWE]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ (?:nvc\w*|driver|utils|rpc|elftool)\.c:\d+\] ", re.M
)
# its own error line, where it failed (`nvidia-container-cli: initialization error: ...`): no cut
_CLI_ERROR = re.compile(r"^[^\S\n]*nvidia-container-cli: \S", re.M)


def container_cli_cut(text: str) -> str | None:
    """The note for an `nvidia-container-cli -k -d /dev/tty info` output cut inside its debug log,
    before the info block it prints after it (no `NVRM version:` line; measure33b 21, 22): no
    driver or GPU is read from it. None for any other text (a whole info output, one that ends in
    the tool's error line)."""
    glog = _CLI_GLOG.findall(text)
    if _CLI_FIELD.search(text) or _CLI_ERROR.search(text) or not glog:
        return None
    if not (_CLI_DEBUG_BANNER.search(text) or len(glog) >= 3):
        return None
    last = next(line.strip() for line in reversed(text.splitlines()) if line.strip())
    return (
        f"an `nvidia-container-cli -d` info output cut inside its debug log, before its info block"
        f" ({len(glog)} log line(s), the last `{last[:90]}`): the `NVRM version:` and GPU lines it"
        " prints after them are not in it, so no driver or GPU is read: save the whole"
        f" `nvidia-container-cli info` output (without `-d` it prints the info block alone), or {_SAVE}."
    )


def container_cli_info(text: str) -> str | None:
    """The note for an `nvidia-container-cli info` output (its driver, CUDA version and GPUs named),
    read and not judged: the toolkit's view, not one of nvidia-smi's formats the rules read. A
    field it prints as `(null)` (a Jetson's driver version, UUID and bus) is said unread; GPU
    blocks fewer than the devices its log lines list (an output cut after GPU 0's block) are said
    as cut, never as the box's count (m32b 07, 08). None for any other text."""
    fields = _CLI_FIELD.findall(text)
    driver = next((v for k, v in fields if k == "NVRM version"), "")
    if not (re.fullmatch(r"\d+\.\d+(?:\.\d+)?", driver) or driver == _NULL) or not any(
        k in ("CUDA version", "Device Index") for k, _ in fields
    ):
        return None
    cuda = next((v for k, v in fields if k == "CUDA version"), "")
    models = [v for k, v in fields if k == "Model"]
    buses = [v for k, v in fields if k == "Bus Location"]
    gpus = ", ".join(
        f"{m} at {buses[i]}" if i < len(buses) and buses[i] != _NULL else m for i, m in enumerate(models)
    )
    devices = _CLI_LISTING.findall(text)
    if len(devices) > len(models):
        span = devices[0] if len(devices) == 1 else f"{devices[0]} to {devices[-1]}"
        listed = (
            f"{len(devices)} devices listed by its log lines ({span}), {len(models)} GPU block(s)"
            f" read before the output is cut short ({gpus[:200] or 'none'})"
        )
    else:
        listed = f"{len(models)} GPU(s): {gpus[:200]}" if models else "no GPU listed"
    said = "driver not named (`NVRM version: (null)`)" if driver == _NULL else f"driver {driver}"
    return (
        f"an `nvidia-container-cli info` output (the NVIDIA Container Toolkit's view: {said}"
        + (f", CUDA {cuda}" if cuda else "")
        + f", {listed}), shown as read and not judged: it is not one of nvidia-smi's outputs the"
        " rules read (its `Architecture` is the GPU's compute capability, no CPU's); save"
        " `nvidia-smi -q` of the box."
    )
