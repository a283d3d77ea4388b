"""The local side of the dataset: its scan (the one warm() started before the login, or a
fresh one), the names in it gpuonboard keeps for itself, the file hashes the hash cache still
vouches for, and whether a file changed since the scan."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path

from gpuonboard import transfer
from gpuonboard.steps.dataset.common import NOTHING_SENT
from gpuonboard.transfer import hashcache, uploadlock
from gpuonboard.units import format_bytes

PRESCAN_MAX_AGE = 30.0  # s: an older scan of the dataset (started before the login) is redone


def scanned(src: Path) -> transfer.SourceTree:
    """The scan warm() started (when it began moments ago: not when earlier steps of a
    playbook ran for minutes, during which the dataset may have changed), else one now."""
    return transfer.take_prescan(src, PRESCAN_MAX_AGE) or transfer.scan_source(src, hashes=False)


def reserved_entry(src: Path, tree: transfer.SourceTree) -> str | None:
    """The failure sentence when the dataset's top holds a name gpuonboard keeps for itself on
    the host (its copy mark, its lease), else None."""
    kept = (uploadlock.COPY_MARK, uploadlock.LEASE_IN_COPY)
    top = tree.root if tree.root.is_dir() else None  # (a dir of that name too: two stats, no walk)
    reserved = [n for n in kept if n in tree.entries or (top is not None and os.path.lexists(top / n))]
    if not reserved:
        return None
    return (
        f"the dataset {src} has an entry named {reserved[0]} at its top, a name gpuonboard keeps"
        f" for itself on the host; rename it, then rerun ({NOTHING_SENT})"
    )


def partial_dir_entry(src: Path, tree: transfer.SourceTree) -> str | None:
    """The failure sentence when the dataset has a directory named like rsync's partial dir
    (rsync would never send it, and listings leave it out), else None."""
    mark = transfer.PARTIAL_DIR  # (the substring test first: 50,000 splits took 6 ms of every plan;
    # then on the scan's path buffer at once: no path decoded unless one holds it)
    partial = None
    if mark.encode() in tree.columns.names:
        partial = next((rel for rel in tree.entries if mark in rel and mark in rel.split("/")[:-1]), None)
    if partial is None:  # (an empty one: never made on the host, so never up to date)
        partial = next((d for d in sorted(tree.empty_dirs) if mark in d and mark in d.split("/")), None)
    if partial is None:
        return None
    return (
        f"the dataset {src} has a directory named {transfer.PARTIAL_DIR} (e.g. {partial!r}), a"
        f" name gpuonboard keeps for rsync's partial files; rename it, then rerun ({NOTHING_SENT})"
    )


def local_notes(tree: transfer.SourceTree, links: bool = True) -> str:
    """Pure: every message's notes on what the scan found that is not uploaded as it is here:
    fifos, sockets and device nodes (not at all), sparse files (whole, holes as zeros) and
    others far longer than their allocation (whole); and, where the mode uploads symlinks
    (`links`), those that lead out of the dataset (the link travels, what it points to not)."""
    return _specials_note(tree) + _sparse_note(tree) + (_links_out_note(tree) if links else "")


def links_out(tree: transfer.SourceTree) -> list[tuple[str, str]]:
    """Pure: (path, target) of each symlink of the dataset whose target is not in it: an
    absolute one to a path outside it (a path of this machine, which on the host names the
    host's), or a relative one that climbs out of the dataset's top (`../../blobs/ab12`, a
    Hugging Face snapshot's files), even to come back into it by its top's name (`../ds/f`:
    on the host that name is the copy's, or another's); path order."""
    return sorted(link for link, where in _links_by_place(tree) if where == "out")


def links_absolute_in(tree: transfer.SourceTree) -> list[tuple[str, str]]:
    """Pure: (path, target) of each absolute symlink to a path in the dataset (`a/f ->
    /home/u/ds/c/f`): its target is sent, but the link names this machine's path, which on the
    host leads to whatever is there, not to the copy; path order."""
    return sorted(link for link, where in _links_by_place(tree) if where == "absolute in")


def _links_by_place(tree: transfer.SourceTree) -> list[tuple[tuple[str, str], str]]:
    """Pure: each symlink of the dataset, and where it leads: "in" the dataset (relative, and
    never above its top at any step), "absolute in" it, or "out" of it. A relative one that
    climbs out and back in (`x -> ../ds/c/f`, `../../u/ds/c/f`) leads out: on the host it goes
    through the copy's parent dirs, named as --name and --dest name them, not as here."""
    c = tree.columns
    top = os.path.abspath(tree.root)
    tops = {top, os.path.realpath(top)}  # (a dataset given through a link to its folder)
    found = []
    for i, target in c.targets.items():
        rel = c.rel(i)
        if target.startswith("/"):
            lands = posixpath.normpath(target)
            inside = any(lands == t or lands.startswith(t.rstrip("/") + "/") for t in tops)
            found.append(((rel, target), "absolute in" if inside else "out"))
        else:
            found.append(((rel, target), "in" if _stays_in(posixpath.dirname(rel), target) else "out"))
    return found


def _stays_in(where: str, target: str) -> bool:
    """Pure: whether the relative link `target` in the dataset's dir `where` resolves without
    climbing above the dataset's top at any step."""
    depth = 0
    for part in (where + "/" + target).split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def _links_out_note(tree: transfer.SourceTree) -> str:
    """Pure: the notes on symlinks that lead out of the dataset, and on absolute ones into it,
    or "". rsync -a (and a shard) carries the link, not what it points to: a snapshot of Hugging
    Face's cache, all links to ../../blobs/, went as links alone, said as "verified by sha256",
    and the host had no model."""
    out = _links_note(
        links_out(tree),
        ("leads out of it", "it is uploaded as a link, what it points to"),
        ("lead out of it", "they are uploaded as links, what they point to"),
    )
    if out:
        out += (
            " is not sent (on the host a link leads to whatever is at that path there, if"
            " anything); to send that, copy it into the dataset (cp -rL) and rerun"
        )
    absolute = _links_note(
        links_absolute_in(tree),
        ("is an absolute link into it", "what it points to is sent, but on the host it leads"),
        ("are absolute links into it", "what they point to is sent, but on the host they lead"),
    )
    if absolute:
        absolute += (
            " to that path there, not into the copy (dangling, or to another file); make it"
            " relative (ln -sfr TARGET LINK) and rerun"
        )
    return out + absolute


def _links_note(found: list[tuple[str, str]], one_says: tuple[str, str], many_say: tuple[str, str]) -> str:
    """Pure: the start of a note on the symlinks `found` (what they are, the first as an
    example, what it means), in the words for one or for many; "" for none."""
    if not found:
        return ""
    rel, target = found[0]
    count, (what, means) = (
        ("1 symlink", one_says) if len(found) == 1 else (f"{len(found)} symlinks", many_say)
    )
    return f"; {count} of the dataset {what} (e.g. {rel!r} -> {target!r}): {means}"


def _sparse_note(tree: transfer.SourceTree) -> str:
    """Pure: the notes on files far longer than what their file system reports they take on this
    machine's disk (a 100 GiB sparse image holding 1 MiB went as 100 GiB of zeros, and took
    100 GiB there, unsaid), or "". Holes are named only where the file system reported them
    (SEEK_HOLE); a file it reports none in is compressed, counted its own way (a FUSE file
    system), or on a file system that cannot say: said as its report, no more."""
    holey = [s for s in tree.sparse if s[3]]
    other = [s for s in tree.sparse if not s[3]]
    return _gap_note(holey, True) + _gap_note(other, False)


def _gap_note(files: list[tuple[str, int, int, bool]], holes: bool) -> str:
    """Pure: _sparse_note's sentence on files with holes reported (`holes`) or on the others."""
    if not files:
        return ""
    rel, size, allocated, _ = min(files)
    length, on_disk = format_bytes(size, binary=True), format_bytes(allocated, binary=True)
    gap = format_bytes(sum(s - a for _, s, a, _ in files), binary=True)
    if holes:
        if len(files) == 1:
            return (
                f"; {rel!r} is {length} long but takes {on_disk} on this machine's disk (sparse):"
                f" it is sent and stored on the host whole, {length}, its holes as zeros"
            )
        return (
            f"; {len(files)} sparse files are {gap} longer than what they take on this machine's"
            f" disk (e.g. {rel!r}: {length}, {on_disk} on disk): they are sent and stored on the"
            " host whole, their holes as zeros"
        )
    why = "compressed, or counted its own way; no holes reported"
    if len(files) == 1:
        return (
            f"; {rel!r} is {length} long but its file system reports {on_disk} on disk for it ({why}):"
            f" it is sent and stored on the host whole, {length}"
        )
    return (
        f"; {len(files)} files are {gap} longer than what their file system reports on disk for"
        f" them ({why}; e.g. {rel!r}: {length}, {on_disk}): they are sent and stored on the host whole"
    )


def _specials_note(tree: transfer.SourceTree) -> str:
    """Pure: the note on the dataset's fifos, sockets and device nodes, which no mode uploads
    (rsync -a made them on the host unannounced: as root a device node, and a job reading every
    file of the copy hung on a fifo), or ""."""
    if not tree.specials:
        return ""
    n = len(tree.specials)
    what = (
        "fifo, socket or device node of the dataset is"
        if n == 1
        else "fifos, sockets or device nodes of the dataset are"
    )
    hold = "it holds" if n == 1 else "they hold"
    return f"; {n} {what} not uploaded, as {hold} no data to copy (e.g. {min(tree.specials)!r})"


def known_hashes(tree: transfer.SourceTree, hashes: hashcache.HashCache) -> hashcache.HashCache:
    """Fill in the sha256 of each file the hash cache still vouches for (same size, mtime and
    inode); the others keep "" for a later pass. Returns the cache. (A cache bound to this scan
    filled them in as it was read; else each is set in the scan's columns in place.)"""
    if hashes.columns is tree.columns:
        return hashes
    columns = tree.columns
    for i, e in enumerate(columns.entries()):
        if e.kind == "f" and not e.sha256:
            known = hashes.get(e)
            if known:
                columns.set_sha(i, known)
    return hashes


def dir_members(empty_dirs: Iterable[str]) -> list[transfer.Entry]:
    """Pure: the dataset's empty directories as shard members (a directory with something in it
    is a header before its first member), so an unpacked tree has them too."""
    return [transfer.Entry(rel, "d", 0, 0, "") for rel in sorted(empty_dirs)]


def changed_since_scan(tree: transfer.SourceTree, rel: str) -> bool:
    """Whether a dataset file's size, mtime or inode is not what the scan saw (written to
    meanwhile, or replaced: an editor's save renames a new file over it)."""
    e = tree.entries.get(rel)
    try:
        st = os.lstat(tree.path(rel))
        if e is not None and e.kind == "l":  # (the scan keeps a link's target, not its stat)
            return os.readlink(tree.path(rel)) != e.target
    except OSError:
        return True
    if e is None or (st.st_size, st.st_mtime_ns) != (e.size, e.mtime_ns):
        return True
    return bool(e.ino) and st.st_ino != e.ino


def changed_during(tree: transfer.SourceTree, rels: Iterable[str]) -> str | None:
    """The failure sentence when any of `rels` (files the upload verified on the host) changed on
    this machine since the scan, else None: the host holds what was sent, which is not the
    dataset as it is now (a label fixed while a big file was still on its way)."""
    moved = [rel for rel in rels if changed_since_scan(tree, rel)]
    if not moved:
        return None
    return (
        f"{_named(moved)} changed on this machine while the upload ran (the host holds it as it was"
        " sent); rerun to send it as it is now: what is unchanged is not sent again"
    )


def changed_before_sent(tree: transfer.SourceTree, rels: Iterable[str]) -> str | None:
    """The failure sentence for an rsync that could not send some of `rels` (exit 23 or 24:
    `link_stat ... No such file or directory`, `file has vanished`) when any of them changed on
    this machine since the scan, else None (rsync's own failure is then the one to say)."""
    moved = [rel for rel in rels if changed_since_scan(tree, rel)]
    if not moved:
        return None
    return (
        f"{_named(moved)} changed on this machine since the scan (deleted, replaced or written"
        " to): rerun to send the dataset as it is now"
    )


def _named(rels: Sequence[str]) -> str:
    """Pure: up to 5 of `rels`, quoted, and how many more."""
    return ", ".join(repr(r) for r in rels[:5]) + (f" (+{len(rels) - 5} more)" if len(rels) > 5 else "")
