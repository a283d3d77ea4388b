"""The host's side of an upload before it starts: one read-only listing probe (rsync and zstd
present?, free space, where the login cannot write, the copy's mark, every entry of the copy
with rsync's partial files), its parser, and what rsync's quick check would send.

The probe's script is sh/transfer_listing.sh, its values set before it (quoted by shell.quote).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gpuonboard import sh, shell
from gpuonboard.transfer.rsync import PARTIAL_DIR
from gpuonboard.transfer.scanstore import listed_seconds
from gpuonboard.transfer.source import Entry
from gpuonboard.transfer.uploadlock import COPY_MARK, LEASE_IN_COPY
from gpuonboard.transfer.verify import SHA256_FN

_LIST_MARK = "##gpuonboard-dataset "


# what no listing of a copy shows (find's expression): rsync's partial dir, the lease and the
# copy mark kept in it; the plan's listing and the unpack's closing check must agree on it
LISTING_PRUNE = f"\\( -name {PARTIAL_DIR} -o -path ./{LEASE_IN_COPY} -o -path ./{COPY_MARK} \\) -prune"


def listing_command(target: str, data_dir: str, manifest: str = "") -> str:
    """Read-only probe: rsync present?, free space under data_dir, files under target (and
    whether target is something else than a directory; with `manifest`, the sha256 of that file
    in target, e.g. a shard store's manifest.json).

    The listing is `TYPE SIZE MTIME PATH\\0` records (GNU find -printf) of everything (files,
    symlinks, a fifo or socket a job made: an unpack must not drop them unasked; directories, kept
    apart by parse_listing: one where the dataset has a file stops the plan), the partial dir
    excluded. The script is sh/transfer_listing.sh.
    """
    values = {
        "t": target,
        "d": data_dir,
        "mf": manifest,
        "m": _LIST_MARK,
        "mark": COPY_MARK,
        "lease": LEASE_IN_COPY,
        "part": PARTIAL_DIR,
    }
    head = "; ".join(f"{k}={shell.quote(v)}" for k, v in values.items()) + "\n"
    if manifest:  # (`sha` is defined only where a manifest is there to hash)
        head += f"sha_fn() {{ {SHA256_FN}; }}\n"
    return head + sh.load("transfer_listing")


@dataclass(frozen=True)
class RemoteState:
    """What the listing probe found."""

    rsync: str | None  # path of the remote rsync, None when absent
    free_bytes: int | None
    files: dict[str, tuple[str, int, int]]  # rel -> (kind, size, mtime seconds)
    zstd: bool = False  # the zstd command is on the host (shard streams)
    copy: str | None = None  # the copy whose plaintext the dir holds (its COPY_MARK), if marked
    dirs: frozenset[str] = frozenset()  # the directories under it (rel)
    empty_dirs: frozenset[str] = frozenset()  # those of them that are empty
    not_dir: bool = False  # the target exists and is something else than a directory
    manifest_sha: str | None = None  # sha256 of the asked-for manifest file in it, when there
    mark_dir: bool = False  # its COPY_MARK is a directory (no mark gpuonboard wrote)
    not_writable: str | None = None  # a dir the upload writes in that this login cannot write
    link: str | None = None  # the target is a symlink (to this)
    # rsync's partial files (in PARTIAL_DIR beside the file they are of): file's rel -> bytes
    partials: Mapping[str, int] = field(default_factory=dict)


def parse_listing(text: str) -> RemoteState:
    """Pure: the listing probe's output -> RemoteState."""
    rsync: str | None = None
    free: int | None = None
    files: dict[str, tuple[str, int, int]] = {}
    dirs: set[str] = set()
    empty: set[str] = set()
    zstd = not_dir = mark_dir = False
    not_writable: str | None = None
    link: str | None = None
    manifest_sha: str | None = None
    copy: str | None = None
    partials: dict[str, int] = {}
    head, sep, listing = text.partition(f"{_LIST_MARK}list\n")
    section = ""
    for line in head.split("\n"):  # (\n alone: a path may hold \r, \v, U+2028, ...)
        if line.startswith(_LIST_MARK):
            kind, _, rest = line[len(_LIST_MARK) :].partition(" ")
            section = kind
            if kind == "rsync":
                rsync = None if rest.strip() in ("", "absent") else rest.strip()
            elif kind == "zstd":
                zstd = rest.strip() not in ("", "absent")
            elif kind == "copy":
                copy = rest
            elif kind == "notdir":
                not_dir = True
            elif kind == "markdir":
                mark_dir = True
            elif kind == "nowrite":
                not_writable = not_writable or rest
            elif kind == "link":
                link = rest
            elif kind == "manifest":
                manifest_sha = rest.split(" ", 1)[0].strip() or None
            continue
        if section == "df":
            fields = line.split()
            if len(fields) >= 4 and fields[3].isdecimal():
                free = int(fields[3]) * 1024
    for record in _records(listing) if sep else ():
        parts = record.split(" ", 3)
        if len(parts) != 4:
            continue
        kind, size, mtime, rel = parts
        if not size.isdecimal() or not rel:  # ("": the dir itself)
            continue
        if kind == "P":  # (`dir/PARTIAL_DIR/name`: the partial file of `dir/name`)
            where, _, name = rel.rpartition("/")
            if where.rpartition("/")[2] == PARTIAL_DIR and name:
                partials[posixpath.join(where.rpartition("/")[0], name)] = int(size)
            continue
        if kind in ("d", "E"):
            dirs.add(rel)
            if kind == "E":
                empty.add(rel)
        else:
            try:  # (as the local side takes it: scanstore.whole_seconds)
                files[rel] = (kind, int(size), listed_seconds(mtime))
            except ValueError:
                continue
    return RemoteState(
        rsync,
        free,
        files,
        zstd,
        copy,
        dirs=frozenset(dirs),
        empty_dirs=frozenset(empty),
        not_dir=not_dir,
        manifest_sha=manifest_sha,
        mark_dir=mark_dir,
        not_writable=not_writable,
        link=link,
        partials=partials,
    )


def _records(listing: str) -> Iterator[str]:
    """The listing's NUL-ended records one at a time (not a list of them all beside the dict
    they make: ~100 bytes a file of a 1,000,000-file copy)."""
    at = 0
    while True:
        end = listing.find("\0", at)
        if end < 0:
            yield listing[at:]
            return
        yield listing[at:end]
        at = end + 1


def to_send(entries: Iterable[Entry], remote: Mapping[str, tuple[str, int, int]]) -> list[Entry]:
    """Entries rsync's quick check would send: missing, or another kind, size or mtime (a
    symlink: its target's length, and its own mtime, which rsync -a sets: `ln -sfn` to another
    target makes a new link)."""
    return [e for e in entries if _differs(e, remote.get(e.rel))]


def _differs(e: Entry, have: tuple[str, int, int] | None) -> bool:
    if have is None or have[0] != e.kind:
        return True
    size = e.size if e.kind == "f" else len(e.target.encode("utf-8", "surrogateescape"))
    return e.kind in ("f", "l") and (have[1] != size or have[2] != e.mtime)
