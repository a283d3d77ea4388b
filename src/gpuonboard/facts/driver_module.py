"""The version of the NVIDIA kernel module loaded now, where nvidia-smi does not say it: the
driver's own version file, `/proc/driver/nvidia/version` (its first line the module's banner,
`NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023`, or
`... Open Kernel Module for x86_64  565.57.01  Release Build ...`; then `GCC version: ...`), and
the kernel log's `NVRM: API mismatch: the client has the version 550.76, but this kernel module
has the version 550.67.` (nv.c's version check: the program's driver library against the module
loaded; nvidia-smi fails on it with "Failed to initialize NVML: Driver/library version
mismatch"). Pure: no I/O."""

from __future__ import annotations

import re
from typing import NamedTuple

# the probe a saved /proc/driver/nvidia/version is read as (offline: api/saved_forms.py; live:
# the table probe's output after MODULE_FILE_MARK, where nvidia-smi failed)
MODULE_PROBE = "nvidia_module_version"
MODULE_FILE = "/proc/driver/nvidia/version"
# the line the live nvidia-smi table probe prints before the module file it adds where nvidia-smi
# failed (connection/probe_commands.py core_probes): a healthy box reads no file more
MODULE_FILE_MARK = f"==> {MODULE_FILE} <=="

# the file's first line (kernel-open/nvidia nv.c's pNVRM_ID after `NVRM version: `), any
# platform's words; the version a driver release's (R100 and later: three digits first)
_MODULE_LINE = re.compile(
    r"^[ \t]*NVRM version:[ \t]+NVIDIA UNIX\b[^\n]*?\bKernel Module(?: for \S+)?"
    r"[ \t]+(?P<version>\d+\.\d+(?:\.\d+)?)\b",
    re.M,
)
_GCC_LINE = re.compile(r"^[ \t]*GCC version:", re.M)
# a driver release (R100 and later); a Jetson's module names its L4T release instead (`35.3.1`
# of an Orin: nix-community/nixGL#139), which is no driver branch to compare with an order's
_RELEASE = re.compile(r"\d{3,}\.\d+(?:\.\d+)?")
# nv.c: "API mismatch: the client has the version %s, but this kernel module has the version %s."
# (the driver prints it over several `NVRM: ` lines: read on their texts joined)
_API_MISMATCH = re.compile(
    r"API\s+mismatch:\s+the\s+client\s+has\s+the\s+version\s+(?P<client>\d+\.\d+(?:\.\d+)?),?\s+but"
    r"\s+this\s+kernel\s+module\s+has\s+the\s+version\s+(?P<module>\d+\.\d+(?:\.\d+)?)",
)
# the driver's tag and what a log puts before it (a stamp, a host, `kernel:`)
_NVRM_TAG = re.compile(r"^.*?\bNVRM:\s?")


class ModuleVersion(NamedTuple):
    """The loaded kernel module's version, where it was read (`said`: the file's line, or the
    kernel log's mismatch sentence), and the client library's of a mismatch ("" if none)."""

    version: str
    said: str
    client: str = ""

    @property
    def release(self) -> bool:
        """Whether the version is a driver release (R100+), one an order's minimum compares with."""
        return _RELEASE.fullmatch(self.version) is not None


def looks_like_module_file(text: str) -> bool:
    """Whether `text` is /proc/driver/nvidia/version: its banner line first (a `GCC version:`
    line, and nothing else, may follow)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not _MODULE_LINE.match(lines[0]):
        return False
    return all(_GCC_LINE.match(line) for line in lines[1:])


def module_file_version(text: str) -> ModuleVersion | None:
    """The module version /proc/driver/nvidia/version names; None for another text."""
    found = _MODULE_LINE.search(text)
    if found is None:
        return None
    line = " ".join(found.group(0).split())
    return ModuleVersion(found.group("version"), f"{MODULE_FILE}: `{line}`")


def mismatch_versions(log: str) -> ModuleVersion | None:
    """The kernel log's last API mismatch: the module's version and the client library's;
    None where the log has none."""
    said = " ".join(_NVRM_TAG.sub("", line, count=1) for line in log.splitlines() if "NVRM:" in line)
    found = next(reversed(list(_API_MISMATCH.finditer(said))), None)
    if found is None:
        return None
    said = (
        f"the kernel log's `API mismatch: the client has the version {found.group('client')}, but this"
        f" kernel module has the version {found.group('module')}`"
    )
    return ModuleVersion(found.group("module"), said, found.group("client"))


def split_module_file(text: str) -> tuple[str, str | None]:
    """The live table probe's output: nvidia-smi's own answer, and the module file it printed
    after it (after MODULE_FILE_MARK on a line of its own, only where nvidia-smi failed), or None
    where there is none. The answer is given back as nvidia-smi printed it."""
    answer, mark, module = text.partition(f"\n{MODULE_FILE_MARK}\n")
    return (answer, module) if mark else (text, None)
