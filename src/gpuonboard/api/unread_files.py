"""A folder's file that could not be read (its permissions, a binary, past the size bound, a
damaged gzip): one missing answer, the folder's other files judged. The rules that are shown
only where their output was given (Xid and SXid from a kernel log, NVLink's from `nvlink -s` and
`-e`) would be silently absent; each the unread file could have answered is unverified, naming it
(review revB F4: a damaged `dmesg.txt.gz` holding an Xid beside a whole `-q -x` passed)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from gpuonboard.api.refused_files import could_hold
from gpuonboard.steps.base import Check

# the rules shown only where an output of their kind was given: (kind, rule, what it judges)
_GIVEN_ONLY = (
    ("kernel_log", "gpu_xid", "no Xid since boot needing action"),
    ("kernel_log", "nvswitch_sxid", "no SXid since boot needing action"),
    ("nvidia_nvlink", "nvlink_links", "every NVLink link up"),
    ("nvidia_nvlink_errors", "nvlink_errors", "no NVLink errors"),
)
# the command whose output each kind is
_COMMAND = {
    "kernel_log": "sudo dmesg -T",
    "nvidia_nvlink": "nvidia-smi nvlink -s",
    "nvidia_nvlink_errors": "nvidia-smi nvlink -e",
}
# what a file's name says it holds (the first that matches): one of those kinds, or another
# kind ("": none of those rules); a name saying none is any kind
_NAMED = (
    (re.compile(r"dmesg|journal|kern|syslog|messages|xid|nvrm", re.I), "kernel_log"),
    (re.compile(r"nvlink.*(?:-e\b|_e\b|err)", re.I), "nvidia_nvlink_errors"),
    (re.compile(r"nvlink", re.I), "nvidia_nvlink"),
    (
        re.compile(
            r"smi|lscpu|cpu|free|mem|df\b|lsblk|disk|topo|os.release|nvcc|nproc|ib|rdma|fabric|cgroup"
            r"|lspci|nvme|env|torch|version",
            re.I,
        ),
        "",
    ),
)


# how much of an unread file's start is looked at for its kind
_START = 65536
# a line that could be one of a kind's output, in a file read as text whose output was not
# recognised: a kernel log's line (saved_kinds.log_line) or the driver's words, `nvlink -s`'s and
# `-e`'s GPU and link lines; a file of none (an `lspci` listing, a headerless GPU CSV, a
# `systemd-detect-virt` word, nvidia-smi's `drain state` answer) holds no such output
_SIGN = {
    "kernel_log": re.compile(r"NVRM|\bS?Xid\b|nvidia-nvswitch|\bkernel:"),
    "nvidia_nvlink": re.compile(r"(?i)nvlink|^\s*(?:Link \d+|GPU \d+):", re.M),
}
_SIGN["nvidia_nvlink_errors"] = _SIGN["nvidia_nvlink"]


def _named_kind(path: Path) -> str | None:
    """The kind a file's readable start shows (the whole lines before its first NUL byte: a
    kernel log saved as `gpu-smi.txt` whose middle a disk error zeroed), else the kind its name
    says (None: any). A file whose start cannot be read (its permissions) is known by its name."""
    return _shown_kind(path) or next((kind for pattern, kind in _NAMED if pattern.search(path.name)), None)


def _shown_kind(path: Path) -> str | None:
    """The kind of the whole lines a file starts with, before any NUL byte (None: none known)."""
    from gpuonboard.api.saved_kinds import detect_kind

    if not path.is_file():  # (a named pipe no program wrote to: never opened again)
        return None
    try:
        with path.open("rb") as f:
            start = f.read(_START)
    except OSError:
        return None
    start = start.split(b"\x00", 1)[0]
    start = start[: start.rfind(b"\n") + 1]
    return detect_kind(start.decode("utf-8", errors="replace")) if start.strip() else None


def _may_show(path: Path, kind: str) -> bool:
    """Whether a file may hold an output of `kind` by what it shows: False only for a whole text
    file (within _START, no NUL byte, UTF-8) none of whose lines could be of that output; True for
    one that cannot be looked at whole (unreadable, binary, compressed, longer)."""
    from gpuonboard.api.saved_kinds import log_line
    from gpuonboard.facts.kernel_kinds import unstamped_kernel_line

    try:
        with path.open("rb") as f:
            start = f.read(_START + 1)
        text = start.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return True
    if len(start) > _START or "\x00" in text or not text.strip():
        return True
    if kind == "kernel_log" and any(
        log_line(line) or unstamped_kernel_line(line) for line in text.splitlines()
    ):
        return True
    return _SIGN[kind].search(text) is not None


def unread_rows(
    unread: Sequence[Path],
    given: Collection[str],
    shown: Collection[str],
    other: Collection[Path] = (),
    held: Mapping[Path, Collection[str]] | None = None,
) -> list[Check]:
    """An unverified row, naming the files, for each rule shown only where its output is given
    that no output of its kind (`given`) answered and none is shown (`shown`: the rows' names)
    that a file not read (`unread`) could have answered, by its name's kind or any. A file of
    them that was read but holds no output this tool knows (`other`: a pod's log) is no file
    that could not be read, nor one to save again: the row asks for the rule's output instead.
    A file read and refused among several (`held`: the kinds it holds) could answer the rules of
    those kinds, wherever its name or start says another (a session saved as `smi-session.txt`
    holding an Xid line). A text file none of whose lines could be of a kind's output (an `lspci`
    listing, a headerless GPU CSV, `oracle`) is no file that could have answered its rules."""
    held = held or {}

    def may(p: Path, kind: str) -> bool:
        if kind in held.get(p, ()):  # (a file the tool refused, saying it holds that kind)
            return True
        said = could_hold(p, kind, held)
        named = _named_kind(p) in (kind, None) if said is None else said
        return named and _may_show(p, kind)

    rows = []
    for kind, rule, expected in _GIVEN_ONLY:
        if kind in given or rule in shown:
            continue
        could = [str(p) for p in unread if may(p, kind) and p not in other]
        known = [str(p) for p in unread if may(p, kind) and p in other]
        said = [f"{', '.join(could)} could not be read (see its note)"] if could else []
        said = [f"not read: {said[0]}"] if said else []
        said += (
            [f"not judged: {', '.join(known)} holds no output this tool reads (see its note)"]
            if known
            else []
        )
        if not said:
            continue
        detail = (
            f"a saved file that may hold the output this rule reads could not be read, so what it"
            f" would show is unknown: save it again ({', '.join(could)}) and judge the folder again."
            if could
            else ""
        )
        if known:
            detail += (" " if detail else "") + (
                f"No `{_COMMAND[kind]}` output was recognised in {', '.join(known)}, which was read:"
                f" add the box's `{_COMMAND[kind]}` output to the folder to judge this rule."
            )
        rows.append(Check(rule, expected, "; ".join(said), "unverified", detail))
    return rows
