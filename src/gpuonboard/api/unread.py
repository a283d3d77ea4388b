"""Saved outputs that read nothing of the box (a kernel log reader's refusal, the shell's
`nvidia-smi: command not found`) beside one of their kind that read it: no rival views of the box
(`dmesg` refused, then `sudo dmesg`), so the one that read the box is judged and the other noted."""

from __future__ import annotations

from collections.abc import Mapping

from gpuonboard.errors import UsageError
from gpuonboard.facts.extra_probes import KERNEL_LOG_REFUSED
from gpuonboard.facts.probe import ProbeOutput


def unread(out: ProbeOutput) -> str:
    """Why a saved output read nothing of the box, as the box said it (a kernel log reader's
    refusal, the shell's `nvidia-smi: command not found`); "" for one that read something. Such
    an output gives way to one of its kind that read the box (`sudo dmesg` after `dmesg`)."""
    if out.stdout.strip() or out.exit_code not in (127, KERNEL_LOG_REFUSED):
        return ""
    return out.stderr.strip() or f"exit code {out.exit_code}"


def keeps_first(
    kind: str,
    out: ProbeOutput,
    where: str,
    raw: Mapping[str, ProbeOutput],
    origin: Mapping[str, str],
    notes: list[str],
    same_box: bool = True,
) -> bool:
    """Whether the output of `kind` read before is kept over `out` (of file `where`): an output
    that read nothing of the box (unread: refused, its tool not found) gives way to one that did,
    noted (of two such, the first is kept); two that read the box are refused (exit 2), and so
    are any two not known to be of one box and one time (`same_box` False: files of two folders,
    such as two hosts' or two runs' raw/<host>/ folders, where a box whose driver broke since
    would be judged on another's or its own older answer)."""
    if kind not in raw:
        return False
    first = unread(raw[kind])
    if not same_box or not (unread(out) or first):
        raise UsageError(
            f"{where}: a second {kind} output (the first is {origin[kind]}); pass one file per command."
        )
    lost, keep, why = (
        (origin[kind], where, first) if first and not unread(out) else (where, origin[kind], unread(out))
    )
    notes.append(f"{lost}: not read: it answered `{why}`; {keep} is judged.")
    return lost == where
