"""What gpuonboard's dataset uploads left on a host: the probe of the data dir and of the uploads
`sync` recorded there (uploadlock.UPLOADS_RECORD), and the pure classification of each entry as
an upload's (removed by `teardown_files`) or the user's (left, and said)."""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuonboard import sh, shell
from gpuonboard.steps.teardown.common import shown_names
from gpuonboard.transfer import uploadlock

# the data dir's entries that gpuonboard's dataset upload made (sync reserves these names)
COPY_MARK = uploadlock.COPY_MARK  # in a plaintext copy that a decryption or unpack marked


STORE_SUFFIXES = (".encrypted", ".shards")  # <name>.encrypted (ciphertexts), <name>.shards


LEASE_SUFFIX = ".gpuonboard-upload"  # .<name>.gpuonboard-upload: an upload's lease


LEASE_IN_COPY = uploadlock.LEASE_IN_COPY  # <name>/.gpuonboard-upload: one kept inside the copy


UNPACK_INFIX = ".gpuonboard-unpack-"  # .<name>.gpuonboard-unpack-*: an interrupted unpack's dir


FS_ENTRIES = ("lost+found",)  # the file system's own, never the user's data nor said


# sh, with `$d` set: the listing of the dir $d (sh/teardown_uploads_listing.sh, its names set
# before it) that uploads_probe_command and recorded_probe_command print
_LISTING = (
    f"mark={shell.quote(COPY_MARK)}; lease={shell.quote(LEASE_SUFFIX)};"
    f' inlease={shell.quote(LEASE_IN_COPY)}; w="{uploadlock.WRITTEN_DIR}"\n'
    f"{uploadlock.WRITTEN_FN}\n{uploadlock.CURRENT_LISTING_FN}{uploadlock.LEASE_FNS}\n"
    + sh.load("teardown_uploads_listing")
)
# in check mode the listing writes nothing: a lease's age by the host's `date` (`lease AGE host`),
# not by its file system's clock (fsnow makes a file beside the lease to read it)
_CHECK = "chk=1; "

# a lease read by the host's clock (check mode) this near the limit (uploadlock.STALE_S) or under
# it may read otherwise by its file system's clock, which the real teardown reads (NFS: the
# server's clock may be minutes off the host's)
CLOCK_SLACK_S = 300


def uploads_probe_command(data_dir: str, check: bool = False) -> str:
    """sh: the data dir resolved (`dir PATH`), this login's uid (`uid N`), then each entry in it
    as `KIND MARK UID NAME`, every record NUL-terminated (a name may hold a line break). KIND: d
    (dir), l (symlink), f (other); MARK of a dir: c (holds a .gpuonboard-copy file: its first
    line follows as a record `mark LINE`), s (holds manifest.json), u (and manifest.unpacked.json:
    a shard store a tree was unpacked from), i (a `*.shards` dir an interrupted upload left: no
    manifest, an `.incoming-N`, nothing but a store's own names), else -; a record `age` follows
    a `*.shards` dir holding age ciphertexts. `none` when the data dir is not a directory.
    `check`: writes nothing on the host (a lease's age by the host's clock)."""
    return f"d={shell.quote(data_dir)}; {_CHECK if check else ''}{_LISTING}"


def recorded_probe_command(check: bool = False) -> str:
    """sh: the uploads `sync` recorded on the host (uploadlock.UPLOADS_RECORD): `none` when there
    is no record, else `record`, then `theirs NAME PATH` per path another machine's record holds
    (parse_theirs), `rec PATH` per recorded path, then per dir holding any of them
    `section DIR` and uploads_probe_command's listing of DIR; every record NUL-terminated.
    `check`: writes nothing on the host (as uploads_probe_command's)."""
    paths = (
        "tr '\\0' '\\n' < \"$r\" | while IFS= read -r x; do"
        " case $x in /?*) printf '%s\\n' \"$x\" ;; esac; done"
    )
    listing = (_CHECK if check else "") + _LISTING
    # the paths other machines sharing this home recorded (`theirs NAME PATH`, NAME their record's
    # suffix, their host name): a copy in a dir they share (a network filesystem: `shared`) is
    # theirs too; a record marked `.stale`, or of a path on a local disk (a cloned image's old
    # record, a machine whose `uname -n` changed), is no other machine's upload
    theirs = (
        'for o in "${r%/*}"/'
        + uploadlock.RECORD_PREFIX
        + '*; do { [ "$o" != "$r" ] && [ -f "$o" ] && ! [ -e "$o.stale" ]; } || continue;'
        " case $o in *.stale) continue ;; esac;"
        f" n=${{o##*/{uploadlock.RECORD_PREFIX}}}; tr '\\0' '\\n' < \"$o\" | while IFS= read -r x; do"
        ' case $x in /?*) shared "$x" && printf \'theirs %s %s\\0\' "$n" "$x" ;; esac; done; done; '
    )
    return (
        uploadlock.SHARED_FS_FN
        + f'r="{uploadlock.UPLOADS_RECORD}"; [ -f "$r" ] || {{ printf \'none\\0\'; exit 0; }}; '
        "printf 'record\\0'; "
        + theirs
        + f"{paths} | while IFS= read -r x; do printf 'rec %s\\0' \"$x\"; done; "
        # (each path's dir by expansion, not a `dirname` per path: thousands of recorded uploads)
        f"{paths} | while IFS= read -r x; do x=${{x%/*}}; printf '%s\\n' \"${{x:-/}}\"; done | sort -u | "
        f"while IFS= read -r d; do printf 'section %s\\0' \"$d\"; ( {listing} ); done; true"
    )


def parse_recorded(output: str) -> tuple[dict[str, set[str]], dict[str, str]] | None:
    """Pure: recorded_probe_command's output -> ({dir: names recorded in it}, {dir: its
    listing, for classify_uploads}); None when the host holds no record."""
    records = output.split("\0")
    if records[0] != "record":  # (`none`: no record; nothing: the probe did not run)
        return None
    names: dict[str, set[str]] = {}
    listings: dict[str, list[str]] = {}
    current: list[str] | None = None
    for rec in records:
        if rec.startswith("rec ") and current is None:
            parent, name = posixpath.split(rec[4:])
            if name:
                names.setdefault(parent, set()).add(name)
        elif rec.startswith("section "):
            current = listings.setdefault(rec[8:], [])
        elif current is not None:
            current.append(rec)
    return names, {d: "\0".join(r) for d, r in listings.items()}


def parse_theirs(output: str) -> dict[str, tuple[str, ...]]:
    """Pure: recorded_probe_command's output -> {path: the other machines (their host names)
    whose record of uploads holds it}, the machines that share this home (NFS) and a dir there."""
    found: dict[str, set[str]] = {}
    for rec in output.split("\0"):
        if rec.startswith("theirs "):
            name, _, path = rec[7:].partition(" ")
            if path.startswith("/"):
                found.setdefault(posixpath.normpath(path), set()).add(name)
    return {path: tuple(sorted(names)) for path, names in found.items()}


def theirs_of(theirs: Mapping[str, Sequence[str]], *paths: str) -> tuple[str, ...]:
    """The machines whose record holds any of `paths` or the copy one of them is a store of
    (`X.encrypted`, `X.shards`: the copy `X`'s own); () when none."""
    for path in paths:
        for stem in (path, *(path[: -len(x)] for x in STORE_SUFFIXES if path.endswith(x))):
            machines = theirs.get(posixpath.normpath(stem))
            if machines:
                return tuple(machines)
    return ()


@dataclass(frozen=True)
class Uploads:
    """What the data dir holds: the entries gpuonboard's upload made (`ours`, removed) and the
    rest (`others`, left on the host and said), as names in `root` (resolved on the host)."""

    root: str
    ours: tuple[str, ...]
    others: tuple[str, ...]
    # the stores of age ciphertexts (`X.encrypted`, encrypted `X.shards`), ours or not: their
    # plaintext may have been decrypted outside the data dir (`sync --decrypt-to`)
    ciphertexts: tuple[str, ...] = dataclasses.field(default=(), compare=False)
    # upload leases refreshed less than uploadlock.STALE_S ago: an upload runs there now
    live_leases: tuple[str, ...] = dataclasses.field(default=(), compare=False)
    # plaintext trees of ours removed only while their listing still has this sha256 (the
    # removal compares it again): everything in them is what uploads wrote there
    guards: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)
    # trees that would be ours but hold what no upload wrote there (why: `e.g. 'a', 'b'`), that
    # no upload listed what it wrote in (why: ''), or whose list an older gpuonboard wrote, without
    # mtimes (why: OLDER_RECORD): (name, why), left on the host and named
    kept: tuple[tuple[str, str], ...] = dataclasses.field(default=(), compare=False)
    # leases whose age (name, s) was read by the host's clock (check mode: nothing written) under
    # STALE_S + CLOCK_SLACK_S: the real teardown, by the file system's clock, may read otherwise
    by_host_clock: tuple[tuple[str, int], ...] = dataclasses.field(default=(), compare=False)


@dataclass(frozen=True)
class _Entry:
    kind: str
    mark: str
    owner: str
    name: str
    mark_text: str = ""
    age: bool = False
    lease_age: int | None = None  # seconds since an upload lease was refreshed
    lease_by_host: bool = False  # lease_age read by the host's clock (check mode), not the fs's
    manifest: str = ""  # a shard store's manifest.json: 'own' (gpuonboard's format), 'sealed' (age)
    written: str = ""  # sha256 of the listing of a tree uploads listed what they wrote in
    extras: tuple[str, ...] = ()  # entries in it no upload wrote (`F SIZE MTIME REL`, `l 0 REL`; up to 3)
    older: bool = False  # its list is an older gpuonboard's alone (no mtimes: nothing matches it)


def _upload_entries(records: Sequence[str]) -> list[_Entry]:
    """The probe's entry records (a `mark` record belongs to the entry before it)."""
    entries: list[_Entry] = []
    for rec in records:
        if rec.startswith("mark ") and entries and entries[-1].mark == "c":
            entries[-1] = dataclasses.replace(entries[-1], mark_text=rec[5:])
            continue
        if rec == "age" and entries:
            entries[-1] = dataclasses.replace(entries[-1], age=True)
            continue
        if rec in ("own", "sealed") and entries:
            entries[-1] = dataclasses.replace(entries[-1], manifest=rec)
            continue
        if rec.startswith("written ") and entries and re.fullmatch(r"[0-9a-f]{64}", rec[8:]):
            entries[-1] = dataclasses.replace(entries[-1], written=rec[8:])
            continue
        if rec.startswith("extra ") and entries and entries[-1].written:
            entries[-1] = dataclasses.replace(entries[-1], extras=(*entries[-1].extras, rec[6:]))
            continue
        if rec == "older" and entries and entries[-1].written:
            entries[-1] = dataclasses.replace(entries[-1], older=True)
            continue
        # (ASCII digits only: str.isdecimal() passes `²` and a lstrip passes `--5`, which int() refuses)
        lease = re.fullmatch(r"lease (-?[0-9]+)( host)?", rec)
        if lease and entries:
            age, by_host = int(lease[1]), bool(lease[2])
            entries[-1] = dataclasses.replace(entries[-1], lease_age=age, lease_by_host=by_host)
            continue
        kind, mark, owner, name = (rec.split(" ", 3) + ["", "", ""])[:4]
        if name and kind in ("d", "l", "f"):
            entries.append(_Entry(kind, mark, owner, name))
    return entries


def classify_uploads(
    output: str,
    dataset_name: str = "",
    skip: Iterable[str] = (),
    recorded: Mapping[str, Iterable[str]] | None = None,
    only_recorded: bool = False,
) -> Uploads | None:
    """Pure: uploads_probe_command's output -> Uploads (None when the data dir is not there).

    Ours, each on evidence of its own and only when this login owns it (another user cannot
    make an entry this login owns): the configured dataset's copy `N` and its stores
    `N.encrypted`, `N.shards`; a dir whose .gpuonboard-copy mark names that very dir (a `cp -a`
    of a copy carries a mark naming the original), with its stores; a shard store (`X.shards`
    holding its manifest.json), and the tree `X` beside one a tree was unpacked from (its
    manifest.unpacked.json); leases (`.X.gpuonboard-upload`) and interrupted unpack dirs. Never
    a symlink (its target is not ours to judge), nor a sibling on a store's word alone (a tree
    beside a store nothing was unpacked from stays, named). `skip`: names removed by another
    path. `recorded`: names `sync` recorded as its copies, by dir (see parse_recorded): each is
    a copy as the configured dataset's is. `only_recorded`: a dir that is not the data dir (one
    holding a recorded upload: /dev/shm, a --dest under the home dir): a shard store, and a tree
    beside one, count only as a recorded copy's (the user's own `ckpt.shards/manifest.json`
    there is no upload's)."""
    records = output.split("\0")
    if len(records) < 2 or not records[0].startswith("dir ") or not records[1].startswith("uid "):
        return None
    root, uid = records[0][4:], records[1][4:]
    entries = [e for e in _upload_entries(records[2:]) if e.name not in FS_ENTRIES and e.name not in skip]
    here = root.rstrip("/")
    stems = {dataset_name} if dataset_name else set()
    stems |= set((recorded or {}).get(root.rstrip("/") or "/", ()))
    stems |= {
        e.name for e in entries if e.kind == "d" and e.mark == "c" and e.mark_text == f"{here}/{e.name}"
    }
    family = {stem + suffix for stem in stems for suffix in ("", *STORE_SUFFIXES)}
    rec = set((recorded or {}).get(here or "/", ()))

    def store(e: _Entry) -> bool:
        # a shard store: recorded by sync, or its manifest in gpuonboard's own format, or what an
        # interrupted upload left (nothing but a store's own names); never on the name alone
        # (other tools write `X.shards/manifest.json` too)
        return e.kind == "d" and (e.name in rec or e.manifest == "own" or e.mark == "i")

    stores = {
        e.name: e
        for e in entries
        if e.kind == "d" and e.mark in ("s", "u", "i") and e.name.endswith(".shards") and store(e)
    }
    unpacked = {n[: -len(".shards")] for n, e in stores.items() if e.mark == "u" and e.owner == uid}

    def ours(e: _Entry) -> bool:
        if e.owner != uid:
            return False
        if e.kind == "f":
            return e.name.startswith(".") and e.name.endswith(LEASE_SUFFIX)
        if e.kind != "d":
            return False
        if e.name.endswith(".shards") and not store(e):
            return False
        return (
            e.name in family
            or (not only_recorded and (e.name in stores or e.name in unpacked))
            or (e.name.startswith(".") and UNPACK_INFIX in e.name)
        )

    return _uploads(root, entries, [e for e in entries if ours(e)])


def _uploads(root: str, entries: list[_Entry], found: list[_Entry]) -> Uploads:
    """The Uploads of data dir `root` listing `entries`, of which `found` are ours."""
    kept = tuple((e.name, _extras(e)) for e in found if _unlisted(e))
    mine = tuple(sorted(e.name for e in found if not any(e.name == k for k, _ in kept)))
    rest = tuple(sorted(e.name for e in entries if e.name not in mine))
    guards = {e.name: e.written for e in found if e.name in mine and e.written}
    sealed = tuple(
        sorted(e.name for e in entries if e.kind == "d" and (e.age or e.name.endswith(".encrypted")))
    )
    from gpuonboard.transfer.uploadlock import STALE_S

    live = tuple(sorted(e.name for e in entries if e.lease_age is not None and e.lease_age < STALE_S))
    near = tuple(
        sorted(
            (e.name, e.lease_age)
            for e in entries
            if e.lease_by_host and e.lease_age is not None and e.lease_age < STALE_S + CLOCK_SLACK_S
        )
    )
    return Uploads(root, mine, rest, sealed, live, guards, kept, near)


def _unlisted(e: _Entry) -> bool:
    """Pure: whether a dir taken for an upload's plaintext tree (a copy, an unpacked or decrypted
    tree) is not removed whole: no upload listed what it wrote there, or it holds more (never a
    store nor an unpack dir)."""
    if e.kind != "d" or e.name.endswith(STORE_SUFFIXES) or UNPACK_INFIX in e.name:
        return False
    return not e.written or bool(e.extras)


def gone_advice(paths: Sequence[str], machines: Sequence[str], prefix: str) -> str:
    """What to do where the machines that recorded `paths` are gone (a clone's or a renamed
    machine's record outlives it): their record files (`prefix` + host name, in gpuonboard's cache
    dir) and the command that removes the copies."""
    names = sorted(set(machines))
    records = ", ".join(f"~/.cache/gpuonboard/{prefix}{n}" for n in names)
    command = "rm -rf -- " + " ".join(shell.quote(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
    return (
        f"; where {'that machine is' if len(names) == 1 else 'those machines are'} gone, its record"
        f" ({records}, or under $XDG_CACHE_HOME) keeps it: remove the copy with `{command}` and"
        " that record"
    )


OLDER_RECORD = "older"  # Uploads.kept's why of a tree whose list an older gpuonboard wrote
# Uploads.kept's why of an upload other machines recorded too (THEIRS + their names, comma-separated)
THEIRS = "theirs: "


def _extras(e: _Entry) -> str:
    """Pure: `e.g. 'a', 'b'` of what no upload wrote in a tree ('' when none listed it,
    OLDER_RECORD when only an older gpuonboard did, without mtimes)."""
    if not e.written:
        return ""
    if e.older:
        return OLDER_RECORD
    # (`F SIZE MTIME REL`, `l 0 REL`, `? 0 ?`: the path is what follows the kind's fields)
    return "e.g. " + ", ".join(repr(x.split(" ", 3 if x.startswith("F ") else 2)[-1]) for x in e.extras)


def kept_note(kept: Sequence[tuple[str, str]]) -> str:
    """Pure: what the message says of the upload trees left whole on the host ((path, why) as
    Uploads.kept, the path in full)."""
    unlisted = [p for p, why in kept if not why]
    older = [p for p, why in kept if why == OLDER_RECORD]
    shared = [f"{p} ({why[len(THEIRS) :]})" for p, why in kept if why.startswith(THEIRS)]
    extra = [f"{p} ({why})" for p, why in kept if why and why != OLDER_RECORD and not why.startswith(THEIRS)]
    note = ""
    if shared:
        note += (
            f"; left on the host: {shown_names(shared)}, recorded as an upload"
            " by other machines sharing this home as well (a dir they share, such as NFS): in use there"
            " maybe, so the teardown of the last machine that recorded it removes it"
            + gone_advice(
                [p for p, why in kept if why.startswith(THEIRS)],
                [n for _, why in kept if why.startswith(THEIRS) for n in why[len(THEIRS) :].split(", ")],
                uploadlock.RECORD_PREFIX,
            )
        )
    if extra:
        note += (
            f"; left on the host: {shown_names(extra)}, gpuonboard's upload{'s' if len(extra) > 1 else ''}"
            " holding what no upload wrote there (a job's output, a file of yours, or a dataset file"
            " changed since): pull what you need, then delete it yourself"
        )
    if unlisted:
        note += (
            f"; left on the host: {shown_names(unlisted)}, named or marked as an upload's copy, but no"
            " upload listed what it wrote there (a dir of yours that an upload merged into, or one an"
            " older gpuonboard uploaded): delete it yourself once nothing there is needed"
        )
    if older:
        note += (
            f"; left on the host: {shown_names(older)}, uploaded by an older gpuonboard whose list of"
            " what it wrote there holds sizes but no modification times, so a dataset file a job"
            " rewrote there at the same size cannot be told from the upload's: pull what you need,"
            " then delete it yourself"
        )
    return note


def host_clock_note(where: str, leases: Sequence[tuple[str, int]]) -> str:
    """Pure: what check mode says of the upload leases in `where` whose age it read by the host's
    clock (Uploads.by_host_clock) near the limit: the real teardown may read them otherwise."""
    if not leases:
        return ""
    here = where.rstrip("/")
    beside = [(name.startswith(".") and name.endswith(LEASE_SUFFIX), name, age) for name, age in leases]
    said = [f"{here}/{name if b else name + '/' + LEASE_IN_COPY} ({age} s)" for b, name, age in beside]
    one = len(said) == 1
    return (
        f" (check mode read the age of the upload lease{'' if one else 's'} {shown_names(said)} by the"
        " host's clock, as it writes nothing on the host; teardown itself reads it by the clock of the"
        " lease's file system, which on NFS may be minutes off the host's, and may find otherwise)"
    )


def plaintext_note(data_dir: str, ciphertexts: Sequence[str]) -> str:
    """Pure: what the message says of the plaintext of encrypted uploads, which `sync
    --decrypt-to DIR` put in DIR/<name> outside the data dir, where teardown cannot find it."""
    if not ciphertexts:
        return ""
    held = shown_names([f"{data_dir}/{c}" for c in ciphertexts])
    return (
        f"; the data dir held age ciphertexts ({held}): plaintext"
        " that `sync --decrypt-on-host --decrypt-to DIR` put in DIR/<name> is not looked for and stays"
        " on the host unless vars.decrypted_dir names it: delete it there yourself (e.g. rm -rf"
        " /dev/shm/<name>)"
    )
