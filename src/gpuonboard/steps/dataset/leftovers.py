"""What earlier uploads left on the host, and what the messages say of it (all pure): rsync
temp and partial files of interrupted uploads (resumed from, or removed), files in the copy
the dataset no longer has (kept, and said), transfers of earlier runs the lease stopped."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from gpuonboard import transfer
from gpuonboard.steps.dataset.common import count, parent_dirs, shown
from gpuonboard.transfer import uploadlock
from gpuonboard.transfer.scanstore import host_seconds
from gpuonboard.units import format_bytes


def kept_on_host(host: Mapping[str, tuple[str, int, int]], local: set[str], where: str = "") -> str:
    """Pure: the message's note on files in the host's copy (or in `where`, the plaintext dir)
    that the dataset does not have (deleted here since, or written there): plain mode keeps them,
    as rsync without --delete; said, so that "up to date" never hides them."""
    extra = [rel for rel, (kind, _, _) in host.items() if rel not in local and kind in ("f", "l")]
    if extra:  # a path that is a directory in the dataset now: rsync replaces it, not kept
        dirs = parent_dirs(local)
        extra = sorted(rel for rel in extra if rel not in dirs and not rsync_temp(rel, local))
    if not extra:
        return ""
    verb = "is" if len(extra) == 1 else "are"
    files = count(len(extra), "file")
    place = f"in {where} on the host" if where else "on the host"
    return f"; {files} {place} {verb} not in the dataset and kept there (e.g. {extra[0]!r})"


def replaced_newer(
    host: Mapping[str, tuple[str, int, int]],
    send: Sequence[transfer.Entry],
    written: Mapping[str, set[tuple[int, int]]] | None,
    unpacked: bool = False,
) -> str:
    """Pure: the notes on files of the host's copy that the upload replaces although they may
    hold work done there, or "": rsync -a replaced them, unsaid (the plan named them among the
    files it sends). `written` is the host's list of what uploads wrote in the copy
    (uploadlock.parse_written; None without one): a file that differs from every size and mtime
    an upload gave it was changed there (said so); one it lists as it is now was not (an unpack's
    stamp, newer than the dataset's mtimes, is listed so); one it does not list (no record: a
    dir of the user's own the dataset merges into, data put there by scp or cp) is named when
    newer than the dataset's, as that alone, never as edited; after an unpack (`unpacked`) its
    mtimes prove nothing, and such a file is not named."""
    changed, newer = [], []
    for e in send:
        there = host.get(e.rel)
        if e.kind != "f" or there is None or there[0] != "f":
            continue
        wrote = (written or {}).get(e.rel)
        if wrote is not None:
            if (there[1], there[2]) not in wrote:
                changed.append(e.rel)
        elif not unpacked and there[2] > host_seconds(e):
            newer.append(e.rel)
    return _changed_note(sorted(changed)) + _newer_note(sorted(newer))


def _changed_note(changed: list[str]) -> str:
    """Pure: the note on files changed on the host since an upload wrote them, or ""."""
    if not changed:
        return ""
    one = len(changed) == 1
    what = "1 file on the host was" if one else f"{len(changed)} files on the host were"
    it = "it" if one else "them"
    return (
        f"; {what} changed there since an upload wrote {it} and {'is' if one else 'are'} replaced by"
        f" the dataset's version (e.g. {changed[0]!r}): what was done to {it} there is not kept"
        " (--check names such files before anything is sent; pull them first)"
    )


def _newer_note(newer: list[str]) -> str:
    """Pure: the note on files no upload's list vouches for that are newer on the host, or ""."""
    if not newer:
        return ""
    one = len(newer) == 1
    what = "1 file on the host is" if one else f"{len(newer)} files on the host are"
    it, they = ("it", "it was") if one else ("them", "they were")
    return (
        f"; {what} newer than the dataset's, with no record of an upload writing {it}, and"
        f" replaced by its version (e.g. {newer[0]!r}): if {they} changed there, pull {it} first"
        " (--check names such files before anything is sent)"
    )


def rsync_temp(rel: str, local: set[str]) -> bool:
    """Pure: rel is rsync's temp name `.<file>.XXXXXX` beside a dataset file (a killed rsync's,
    or one still writing): not a file of the user's to report as kept (the plan resumes from it
    or removes it, and says so)."""
    return transfer.rsync_temp_of(rel) in local


def interrupted(
    remote: transfer.RemoteState, names: set[str], sending: set[str]
) -> tuple[list[str], list[str], dict[str, int], int]:
    """Pure: what interrupted uploads left in the target for the files rsync writes there
    (`names`; `sending`: those this run sends): (rsync temp files of files to send, resumed from
    as partial files; temp files of the others, and partial files of any file not sent, removed;
    the bytes each file to send resumes from, its biggest partial or temp file; the bytes of the
    rest, which go). A dropped link's receiver kept its temp file, not a partial one: this run
    stops it, then resumes from its temp file (the rerun re-sent the whole file)."""
    resume: list[str] = []
    remove: list[str] = []
    sizes: dict[str, list[int]] = {}
    for rel, (kind, size, _) in remote.files.items():
        of = transfer.rsync_temp_of(rel) if kind == "f" else None
        if of is None or of not in names or rel in names:  # (no dataset file's: said as kept, left)
            continue
        (resume if of in sending else remove).append(rel)
        sizes.setdefault(of, []).append(size)
    for of, size in remote.partials.items():
        if of in sending:
            sizes.setdefault(of, []).append(size)
        else:
            remove.append(posixpath.join(posixpath.dirname(of), transfer.PARTIAL_DIR, posixpath.basename(of)))
            sizes.setdefault(of, []).append(size)
    basis = {of: max(got) for of, got in sizes.items() if of in sending}
    freed = sum(sum(got) for got in sizes.values()) - sum(basis.values())
    return sorted(resume), sorted(remove), basis, freed


def stopped_note(stopped: uploadlock.Stopped) -> str:
    """Pure: the message's note on what the lease found of earlier runs of this copy."""
    note = ""
    if stopped.processes:
        note += (
            f"; stopped {count(stopped.processes, 'transfer')} an earlier upload of this copy left"
            " running on the host (its link dropped)"
        )
    return note


def resumed_note(resumed: tuple[int, int], verb: str) -> str:
    """Pure: the message's note on the partial files (or a dropped link's temp files) an upload
    resumes from: ("resume"|"resumed", files and bytes)."""
    n, size = resumed
    if not n:
        return ""
    return (
        f"; {verb} from {count(n, 'partial file')} an interrupted upload left"
        f" ({format_bytes(size, binary=True)} already there)"
    )


def leftovers_note(rels: Sequence[str]) -> str:
    """Pure: the message's note on the temp and partial files interrupted uploads left."""
    return f"{count(len(rels), 'temp or partial file')} an interrupted upload left (e.g. {shown(rels[0])!r})"
