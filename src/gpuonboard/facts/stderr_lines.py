"""The lines of a tool's stderr that a reader reads: nvidia-smi's infoROM warning (a fault of the
GPU it names, beside any of its outputs), GNU df's line for a mount it could not read, and
lsblk's, lscpu's and free's own warnings (`lsblk: dm-0: failed to get device path`). A run
keeps them with its raw output (report/jsonfile.py), and a saved terminal paste holds them among
the output's lines: both are split back to stderr (`split_stderr_lines`), so that judging them
again reads them as the live run did.
"""

from __future__ import annotations

import re

from gpuonboard.facts.disks import DF_UNREAD
from gpuonboard.facts.nvidia_smi.faults import INFOROM_LINE

# the host tools' own warnings, each naming the tool (by its path where run so): `lsblk: dm-0:
# failed to get device path`, lscpu's and free's; a paste keeps them among the output's lines
_TOOL_SAYS = re.compile(r"^(?:/[\w/.-]*/)?(?:lsblk|lscpu|free): \S")
_WORDS = ("infoROM", "df: ", "lsblk: ", "lscpu: ", "free: ")


def _read(line: str) -> bool:
    return (
        INFOROM_LINE.match(line) is not None
        or DF_UNREAD.match(line) is not None
        or _TOOL_SAYS.match(line) is not None
    )


def kept_stderr(stderr: str) -> str:
    """The lines of `stderr` a reader reads, each ending in a newline ("" for none)."""
    return "".join(line.rstrip("\r\n") + "\n" for line in stderr.splitlines() if _read(line))


def split_stderr_lines(text: str) -> tuple[str, str]:
    """(`text` without those lines, those lines): an output saved with them goes back to being
    the output and its stderr."""
    if not any(word in text for word in _WORDS):  # (most outputs have none)
        return text, ""
    return "".join(line for line in text.splitlines(keepends=True) if not _read(line)), kept_stderr(text)
