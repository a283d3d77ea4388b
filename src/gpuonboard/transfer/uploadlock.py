"""One upload per host copy of a dataset at a time: a lock on this machine, a lease on the host.

Two `invoke sync` runs writing the same dataset to the same host at once would overwrite each
other's half-received shards and unpack dirs on the host (each run then fails verification and
asks for a rerun: nothing silent, but both uploads, and the link time they cost, are wasted).

This machine: an upload takes an exclusive advisory lock (flock) on a small file under the
project's `.gpuonboard/locks/`, named by the host address, port, login user and remote path, and
keeps it until the step's run on that host ends. The kernel drops the lock when the holding
process exits for any reason (killed, crashed, Ctrl-C), so a stale lock never blocks a rerun.
The file says who holds it (pid, start time) for the message of the run that is turned away.

The host: other machines (or other project dirs) are turned away by a LEASE file beside the
dataset's copy, `<data_dir>/.<name>.gpuonboard-upload`, holding a random token, the owner (this
project on this machine), its pid and who holds it. The upload refreshes its mtime every
HEARTBEAT_S seconds (a refresh that finds another token says the lease was lost: the upload stops
before verifying or swapping); a lease not refreshed for STALE_S seconds (by the clock of the
file system it is on: an NFS server's, not the host's `date`) is dead and is taken over. A
session whose link dropped cannot hold the host for hours this way: its lease goes stale
within STALE_S, and a rerun from the same project takes it over at once when the pid written
in it has ended on this machine. Taking is atomic when no lease exists
(the shell's noclobber create, O_EXCL); two runs taking over the same STALE lease in the same
instant could both win (then both fail verification, as before this lease existed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import socket
import subprocess
import threading
import time
from collections.abc import Container, Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuonboard import machine, sh, shell
from gpuonboard.transfer.rsync import PARTIAL_DIR

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no lock there
    fcntl = None  # type: ignore[assignment]


class UploadBusy(Exception):
    """Another process of this machine holds the lock; str() is the holder ("pid 123 since ...")."""


def lock_name(address: str, port: int, user: str, remote_path: str) -> str:
    """Pure: the lock file's name for one remote path of one host."""
    key = "\0".join([address.lower(), str(port), user, remote_path.rstrip("/") or "/"])
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".lock"


@dataclass
class UploadLock:
    """A held lock; `release()` (idempotent) frees it."""

    path: Path
    fd: int | None

    def release(self) -> None:
        """Unlock and close (the file stays: unlinking it would race with the next taker)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor drops the flock


def acquire(lock_dir: Path, name: str) -> UploadLock:
    """Take the lock `name` under lock_dir without waiting; UploadBusy when it is held.
    OSError when the lock file cannot be created (the caller reports it)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if fcntl is None:  # pragma: no cover
        return UploadLock(path, fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        os.close(fd)
        raise UploadBusy(holder) from None
    except OSError:
        os.close(fd)
        raise
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} since {stamp}\n".encode(), 0)
    return UploadLock(path, fd)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "pid unknown"


# ---------------------------------------------------------------- the lease on the host

# in a --decrypt-to plaintext dir: the copy (resolved `<data_dir>/<name>`) it belongs to
COPY_MARK = ".gpuonboard-copy"
LEASE_IN_COPY = ".gpuonboard-upload"  # the lease's place inside the copy (data dir not writable)
HEARTBEAT_S = 15  # the upload refreshes its lease this often
STALE_S = 60  # a lease not refreshed for this long (host clock) belongs to a run that has ended

# shell functions the lease scripts share. `fsnow F`: the time now by the clock of the file
# system F is on (F made and removed; on NFS the mtime is the server's, not the host's `date`),
# `date` when F cannot be made. `live F NOW STALE [TOKEN]`: F is a lease (a token line; one
# without is a create cut short) refreshed less than STALE s before NOW and not TOKEN's: prints
# "busy <age s>" and its lines.
LEASE_FNS = "\n" + sh.load("upload_lease_fns")
# $1 target dir (made first), $2 lease file, $3 token, $4 owner, $5 holder text, $6 stale
# seconds, $7 this run's pid, $8 the pid of a same-owner holder known to have ended (or "").
# Prints "took <lease file>" (its path with symlinks resolved), or "busy <age s>" and the lease's
# lines. A data dir this login may not write (root's /data holding the user's own copy; a
# read-only mount: root passes `test -w` there) keeps the lease inside the copy's dir. A
# lease without a token line (a create cut short by a full disk) is no lease; one of this same
# owner is taken over only when its pid ($8) was seen to have ended on this machine.
# where each upload's copy (or its store alone) and plaintext tree are recorded on the host,
# NUL-terminated paths (in the login's gpuonboard cache dir, which teardown removes last): teardown
# finds uploads under another --dest and --decrypt-to plaintext there, not only in the data dir.
# One record per machine, `uploads.<its host name>`: a home shared between machines (NFS on a
# cluster) holds each node's record, and teardown of one node reads only its own (another node's
# uploads are not this node's to remove, and its record is not this node's to lose).
RECORD_PREFIX = "uploads."
# sh: this machine's name for its record: its host name and the first 12 hex digits of its
# /etc/machine-id, `gpu-node@3d1219c7c4c5` (only [A-Za-z0-9._-@], never a `/`). Two machines
# given one host name (nodes cloned from one image, named alike) shared one record before: the
# teardown of one removed a copy the other's job was reading in a dir they share, and deleted the
# other's record, so its uploads (a decrypted plaintext too) were never found again. A machine
# without a machine id keeps the host name alone; a record of the host name alone written before
# (`uploads.gpu-node`) stays this machine's while it has none of the new name (its uploads are
# still found and removed), and is no longer used once a record of the new name exists.
# A machine id that changes (a transient one per boot: systemd with an empty or read-only
# /etc/machine-id; a container recreated with the same host name and a persistent home) would
# make the record of its earlier uploads another machine's, never removed. Where no record of
# the current name (nor of the host name alone) exists, a record `uploads.<host>@<other id>` is
# adopted ONLY when it cannot be another live machine's: it and every recorded path that exists
# are on a local filesystem of an allowlist (ext2/3/4, xfs, btrfs, zfs, tmpfs: never an overlay,
# a bind mount's unknown, a cluster or host-share one), and it was last written before this boot
# (/proc/stat's btime; a second machine named alike syncing now writes after it booted). It is
# adopted once, by renaming it and its `written.` lists to the current id, so later uploads
# append to that one record. A `.stale` marker, or a record marked stale, is never adopted. The
# rename is atomic and never replaces a record: a hard link to the current id's name (which fails
# where one exists) then the old name removed, as two evaluations right after boot (two uploads,
# an upload and teardown) can both pass the checks: a plain `mv` of a second old record replaced
# the one the first had just adopted or written to (its uploads never found by teardown again);
# the `written.` dir by `mv -T` (rename(2): it replaces an empty dir that a concurrent write made,
# never moves into one), else list by list by hard link where the current one holds lists already.
_LOCAL_SH = (
    'loc() { case $(stat -f -c %T -- "$1" 2>/dev/null) in ext2/ext3 | ext2 | ext3 | ext4 | xfs | btrfs'
    " | zfs | tmpfs) return 0 ;; esac; return 1; };"
)
MACHINE_SH = (
    "$(n=$(uname -n | tr -cd 'A-Za-z0-9._-');"
    " m=$(dd if=/etc/machine-id bs=64 count=1 2>/dev/null | tr -cd 0-9a-f | cut -c1-12);"
    " c=${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard;"
    + _LOCAL_SH
    + ' if [ -n "$m" ] && ! [ -e "$c/uploads.$n@$m" ] && ! [ -e "$c/uploads.$n" ] && loc "$c"; then'
    " b=$(awk '/^btime / { print $2 }' /proc/stat 2>/dev/null);"
    ' for o in "$c/uploads.$n@"*; do case $o in *.stale) continue ;; esac;'
    ' [ -f "$o" ] && ! [ -e "$o.stale" ] && [ -n "$b" ] || continue;'
    ' t=$(stat -c %Y -- "$o" 2>/dev/null) && [ "$t" -lt "$b" ] 2>/dev/null || continue;'
    " tr '\\0' '\\n' < \"$o\" | { while IFS= read -r x; do [ -e \"$x\" ] || continue;"
    ' loc "$x" || exit 1; done; } || continue;'
    ' ln -- "$o" "$c/uploads.$n@$m" 2>/dev/null || continue; rm -f -- "$o"; i=${o##*@};'
    ' if [ -d "$c/written.$n@$i" ]; then mv -T -- "$c/written.$n@$i" "$c/written.$n@$m" 2>/dev/null'
    ' || for l in "$c/written.$n@$i"/*; do [ -f "$l" ] || continue;'
    ' ln -- "$l" "$c/written.$n@$m/${l##*/}" 2>/dev/null && rm -f -- "$l"; done; fi;'
    " break; done; fi;"
    ' if [ -n "$m" ] && { [ -e "$c/uploads.$n@$m" ] || ! [ -e "$c/uploads.$n" ]; };'
    ' then printf \'%s@%s\' "$n" "$m"; else printf \'%s\' "$n"; fi)'
)
UPLOADS_RECORD = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard/" + RECORD_PREFIX + MACHINE_SH
# sh: `shared PATH` succeeds where PATH may be seen by other machines (a network or cluster
# filesystem, `stat -f -c %T`: nfs, nfs4, cifs, smb2, lustre, gpfs, BeeGFS (`fhgfs` as stat names
# it), ceph, glusterfs, afs, coda, gfs/gfs2, ocfs2, acfs, snfs, ibrix, novell, a FUSE one such as
# sshfs, 9p, virtiofs, vboxsf, vmhgfs or prl_fs host shares; a type coreutils does not know or that
# cannot be read counts too: never taken for local on a guess): only there is another machine's
# record of an upload its own, while on a local disk it is a stale one (a cloned image's, a machine
# whose `uname -n` changed). `sharedfs TYPE` is the same test of a type name.
SHARED_FS_FN = (
    "sharedfs() { case $1 in nfs* | cifs | smb* | lustre | gpfs | beegfs | fhgfs | ceph | glusterfs"
    " | afs | k-afs | coda | gfs | gfs2 | ocfs2 | acfs | snfs | ibrix | novell | fuse* | 9p | v9fs"
    " | virtiofs | vboxsf | vmhgfs | prl_fs | panfs | '' | UNKNOWN*) return 0 ;; esac; return 1; }\n"
    'shared() { sharedfs "$(stat -f -c %T -- "$1" 2>/dev/null)"; }\n'
)
# sh: `record PATH...` appends each path not recorded yet (best effort: an upload never fails on it)
RECORD_FN = (
    "record() { c=${XDG_CACHE_HOME:-$HOME/.cache}; case $c in /*) ;; *) return 0 ;; esac;"
    ' mkdir -p -- "$c/gpuonboard" 2>/dev/null && chmod 700 -- "$c/gpuonboard" 2>/dev/null || return 0;'
    f' u="$c/gpuonboard/{RECORD_PREFIX}{MACHINE_SH}";'
    ' for x in "$@"; do case $x in "" | *"\n"*) continue ;; esac;'
    ' grep -qzxF -- "$x" "$u" 2>/dev/null'
    """ || printf '%s\\0' "$x" >> "$u" 2>/dev/null; done; return 0; }
"""
)

# what the uploads wrote in each recorded plaintext tree (a copy, an unpacked or decrypted tree):
# `written.<machine>/<sha256 of the tree's recorded path>`, NUL-terminated `F SIZE MTIME REL` /
# `l 0 REL` (the dataset's files, with the whole-second mtime each has on the host once written,
# and symlinks). Teardown removes a tree whole only while everything in it is listed there
# (CURRENT_LISTING_FN): a job's output written into the copy, a file of the user's own, or a
# dataset file a job rewrote in place (a new mtime, even at the same size) keeps it on the host,
# named. A record of a gpuonboard from before mtimes were kept holds `f SIZE REL` entries, which
# no current listing matches: such a tree stays (OLD_FILE).
WRITTEN_DIR = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard/written." + MACHINE_SH
OLD_FILE = "f"  # the kind of a file entry in an older record (size only, no mtime)
# sh: `written PATH` prints the file holding what uploads wrote in the tree PATH
WRITTEN_FN = 'written() { printf \'%s/%s\' "$w" "$(printf \'%s\' "$1" | sha256sum | cut -c1-64)"; }'
# the name of a file `fsnow` (LEASE_FNS) makes beside a lease or mark and removes at once, left
# by a shell killed between the two: `.gpuonboard-upload.now.XXXXXX` (teardown's listing),
# `.gpuonboard-upload.<token>.now.XXXXXX` (take), `.gpuonboard-copy.<pid>.now.XXXXXX` (claim)
FSNOW_LEFT = ".gpuonboard-*.now.??????"
# sed -z: `F SIZE MTIME REL` with find's %T@ (`1700000000.9999999500`) cut to whole seconds: the
# second before the dot is tv_sec, the floor (find prints -0.5 s as `-1.5000000000`), as the
# upload's listing takes it (scanstore.host_seconds)
MTIME_CUT = "sed -z 's/^\\(F [0-9]* -\\{0,1\\}[0-9]*\\)\\.[0-9]* /\\1 /'"
# sh: `current DIR` prints DIR's files and symlinks as WRITE_LISTING_SCRIPT lists them, sorted
# (LC_ALL=C), leaving out what gpuonboard keeps there itself (its copy mark, a lease kept in the
# copy and what reading its clock left, FSNOW_LEFT, rsync's partial dirs); an entry `? 0 ?` when
# part of it could not be read
CURRENT_LISTING_FN = (
    "current() { ( cd -- \"$1\" 2>/dev/null || { printf '? 0 ?\\0'; exit 0; };"
    f" find . -mindepth 1 \\( -path ./{COPY_MARK} -o -path ./{LEASE_IN_COPY} -o \\( -path"
    f" './{FSNOW_LEFT}' ! -path './*/*' -type f \\) -o -name {PARTIAL_DIR} \\) -prune -o \\( -type f -printf"
    " 'F %s %T@ %P\\0' \\) -o \\( -type l -printf 'l 0 %P\\0' \\) 2>/dev/null"
    f" || printf '? 0 ?\\0' ) | {MTIME_CUT} | LC_ALL=C sort -z; }}"
)
# the record of $1 (a tree's recorded path) is replaced whole (sorted and unique) by what the
# command between these two adds to it; a write that fails (a full disk, a cut one) removes it,
# as the old list no longer says what the tree holds (the next run finds no list): exit 1. An
# old list that cannot be removed (an immutable file) is marked stale beside it (`$f.stale`,
# read as no list; the next write that succeeds removes it), exit 1; RECORD_STUCK where not
# even that could be written (its dir not writable): it stays, and says too little
RECORD_STUCK = 3
_RECORD_OPEN = (
    f'w="{WRITTEN_DIR}"; {WRITTEN_FN}; mkdir -p -- "$w" 2>/dev/null || exit 0;'
    ' f=$(written "$1"); i="$f.in.$$";'
)
_RECORD_CLOSE = (
    ' | LC_ALL=C sort -zu > "$f.$$" && mv -f -- "$f.$$" "$f" && { rm -f -- "$f.stale" "$i"; exit 0; };'
    ' rm -f -- "$f.$$" "$f" "$i" 2>/dev/null; [ -e "$f" ] || exit 1;'
    f' ( : > "$f.stale" ) 2>/dev/null && exit 1; exit {RECORD_STUCK}'
)
# the last record of write_listing_command's stdin (listing_stdin()): an input without it was
# cut short (a link dropped, a sender killed mid-write) and is never committed as a shorter list
LISTING_END = "end"
# sh, $1 the tree's recorded path, stdin the entries this upload writes there, ending with
# LISTING_END: they replace its list, with those entries of the old list still true of the tree
# now (files an earlier upload wrote that this one leaves as they are, or writes only later):
# never a copy more per rerun (a rerun of an unpack lists every file anew, with its own stamp),
# nor an entry no file matches. A cut input (no LISTING_END last) is a failed write (exit 1)
WRITE_LISTING_SCRIPT = (
    f"{_RECORD_OPEN} {CURRENT_LISTING_FN};"
    f' cat > "$i" && [ "$(sed -z -n \'$p\' -- "$i" | tr -d \'\\000\')" = {LISTING_END} ] &&'
    ' { [ -e "$f.stale" ] || current "$1" | LC_ALL=C comm -z -12 -- "$f" - 2>/dev/null;'
    " sed -z '$d' -- \"$i\"; }" + _RECORD_CLOSE
)
# sh, $1 the tree's recorded path, $2 an unpack dir: the files there that a seed hard-linked from
# the tree (more than one link; sha256-checked against the dataset before this runs) are added
# to its list as they stand there (`F SIZE MTIME REL`): they keep the mtime they had in the old
# tree (an older gpuonboard's unpack time, or an earlier run's stamp), not this run's stamp
SEEDED_LISTING_SCRIPT = (
    f"{_RECORD_OPEN}"
    ' { [ -e "$f.stale" ] || cat -- "$f" 2>/dev/null;'
    ' ( cd -- "$2" && find . -mindepth 1 -type f -links +1 -printf'
    f" 'F %s %T@ %P\\0' ) | {MTIME_CUT}; }}" + _RECORD_CLOSE
)


def write_listing_command(tree: str) -> str:
    """The command listing stdin (listing_stdin()) as what uploads wrote in the recorded `tree`
    (with what the old list holds that is still true of it)."""
    return shell.join(["sh", "-c", WRITE_LISTING_SCRIPT, "sh", tree])


# the most of a list of what uploads wrote that the sync plan reads (about 250,000 files): a
# longer one is not read at all (`cut`), as none (a cut one would miss the files it lists last)
READ_LISTING_MAX = 16 << 20
# sh, $1 a tree's path as the upload spells it: `record` and its list of what uploads wrote
# there (the path resolved as the take command records it), `cut` where it is longer than
# READ_LISTING_MAX bytes, or nothing without one; read only
READ_LISTING_SCRIPT = (
    f'w="{WRITTEN_DIR}"; {WRITTEN_FN}; t=$(realpath -m -- "$(dirname -- "$1")" 2>/dev/null) || exit 0;'
    ' f=$(written "${t%/}/${1##*/}"); [ -f "$f" ] && [ ! -e "$f.stale" ] || exit 0;'
    f' [ "$(wc -c < "$f")" -le {READ_LISTING_MAX} ] || {{ echo cut; exit 0; }};'
    f" printf 'record\\n'; head -c {READ_LISTING_MAX} -- \"$f\"; exit 0"
)


def read_listing_command(tree: str) -> str:
    """Read only: the list of what uploads wrote in the tree `tree` (parse_written())."""
    return shell.join(["sh", "-c", READ_LISTING_SCRIPT, "sh", tree])


def parse_written(
    stdout: str, wanted: Container[str] | None = None
) -> dict[str, set[tuple[int, int]]] | None:
    """Pure: read_listing_command's output -> each file an upload wrote (of `wanted`, where
    given) -> the (size, whole-second mtime) it had once written (a file an earlier upload wrote
    and a later one writes again has both); None without a record, or one too long to read
    (`cut`, or cut short). Symlinks and an older record's size-only entries are left out."""
    head, sep, body = stdout.partition("record\n")
    if not sep or head.strip() or not body.endswith("\0") and body:
        return None  # (no record, or one cut short: grown past the cap while read)
    out: dict[str, set[tuple[int, int]]] = {}
    for entry in body.split("\0"):
        kind, size, mtime, rel = (entry.split(" ", 3) + ["", "", ""])[:4]
        if wanted is not None and rel not in wanted:
            continue
        if kind == "F" and size.isdecimal() and mtime.lstrip("-").isdecimal() and rel:
            out.setdefault(rel, set()).add((int(size), int(mtime)))
    return out


def seeded_listing_command(tree: str, unpack_dir: str) -> str:
    """The command adding the files a seed hard-linked into `unpack_dir` from the recorded
    `tree`, as they stand there, to what uploads wrote in that tree (SEEDED_LISTING_SCRIPT)."""
    return shell.join(["sh", "-c", SEEDED_LISTING_SCRIPT, "sh", tree, unpack_dir])


def listing_stdin(entries: Iterable[tuple[str, str, int, int]]) -> bytes:
    """Pure: (kind 'f'/'l', rel, size, mtime) of the files and symlinks an upload writes in its
    tree, mtime in whole seconds as the file will have it on the host -> write_listing_command's
    stdin (a symlink's size and mtime are not compared: `l 0 REL`), ended by LISTING_END."""
    out = [
        (f"F {size} {mtime} {rel}" if k == "f" else f"l 0 {rel}").encode("utf-8", "surrogateescape")
        for k, rel, size, mtime in entries
        if k in ("f", "l")
    ]
    return b"".join(e + b"\0" for e in [*out, LISTING_END.encode()])


# the environment variable that marks what an upload runs on the host (its rsync, its shard
# streams): `<copy tag>-<run token>` (both hex). A rerun that holds the copy's lease stops the
# marked processes of every other run of that copy: they are stale (the lease says no other
# upload of it is live), e.g. the receiver of a run whose link dropped without a FIN or RST,
# which the host's sshd never hears of, and which held its temp file instead of a partial one
UPLOAD_ENV = "GPUONBOARD_UPLOAD"
STOP_WAIT_S = 10  # how long stopped processes get to end (rsync keeps its partial file) before SIGKILL
STOP_GRACE_S = 3  # how long an earlier run's processes get to end on their own before they are stopped
# `stop TAG RUN`: SIGTERM the process groups holding this login's processes marked `TAG-<other
# run>` (one per remote command: an rsync, a shard stream), wait for them, SIGKILL what is left;
# prints "stopped <groups>". `tidy DIR`: stdin holds
# NUL-terminated records, `A<temp>` (an rsync temp file of a file to send: kept as that file's
# partial, resumed from, unless a bigger partial is there) or `R<path>` (a temp or partial of a
# file not to send: removed), relative to DIR; prints "tidied A|R" per file it moved or removed.
STOP_FN = "\n" + sh.load("upload_stop_fns").replace("__ENV__", UPLOAD_ENV).replace(
    "__WAIT__", str(STOP_WAIT_S)
).replace("__GRACE__", str(STOP_GRACE_S)).replace("__PARTIAL__", ".gpuonboard-rsync-partial")


def mark(tag: str, run: str) -> str:
    """Pure: the environment assignment (UPLOAD_ENV) that marks a run's processes on the host
    for the copy whose unpack_tag() is `tag`; `run` is the run's own token (hex)."""
    return f"{UPLOAD_ENV}={tag}-{run}"


def record_name(machine: str, machine_id: str = "") -> str:
    """Pure: the record's file name on a machine whose `uname -n` is `machine` and whose
    /etc/machine-id is `machine_id` ("" where it has none), as MACHINE_SH names it."""
    name = "".join(c for c in machine if c.isascii() and (c.isalnum() or c in "._-"))
    mid = "".join(c for c in machine_id[:64] if c in "0123456789abcdef")[:12]
    return RECORD_PREFIX + name + (f"@{mid}" if mid else "")


TAKE_SCRIPT = LEASE_FNS + RECORD_FN + STOP_FN + "\n" + sh.load("upload_take")
# $1 stale seconds, then the places a lease of this copy may be (beside it, or inside it):
# read only (check mode). Prints "busy <age s>" and the lease's lines for a live one, else nothing.
PEEK_SCRIPT = LEASE_FNS + "\n" + sh.load("upload_peek")
# $1 lease file, $2 token: refresh (touch) or remove it only while it is still ours
TOUCH_SCRIPT = 'grep -qxF "token $2" -- "$1" 2>/dev/null || exit 1; touch -c -- "$1"'  # 1: lost
RELEASE_SCRIPT = 'grep -qxF "token $2" -- "$1" 2>/dev/null && rm -f -- "$1"; exit 0'


@dataclass(frozen=True)
class Lease:
    """A lease this run holds on the host (its file and token)."""

    path: str
    token: str


@dataclass(frozen=True)
class LeaseBusy:
    """Another live upload holds the host's lease: who, seconds since it was refreshed, and its
    owner and pid (a same-owner holder that has ended here is taken over at once)."""

    holder: str
    age: int
    owner: str = ""
    pid: int = 0

    def sentence(self, where: str) -> str:
        wait = max(1, STALE_S - self.age)
        return (
            f"another gpuonboard upload to {where} is running from {self.holder} (last heard from"
            f" {self.age} s ago); wait for it to finish, or if that run was stopped, rerun in {wait} s"
        )


def lease_path(dest: str, name: str) -> str:
    """Pure: the lease file of the copy `<dest>/<name>` (beside it, in the data dir)."""
    return posixpath.join(dest, f".{name}.gpuonboard-upload")


def owner_id(lock_dir: Path) -> str:
    """This project on this machine: the same value for every run from here (machine-id and the
    lock dir), so a rerun recognises a lease its own earlier, ended run left behind."""
    return machine.tag(str(lock_dir.resolve()), length=16)


def holder_text() -> str:
    """Pure but for the clock: who this run is, for the message of a run turned away."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    host = "".join(c for c in socket.gethostname() if c.isprintable() and c != "\n") or "unknown host"
    return f"{host}, pid {os.getpid()}, started {stamp}"


def take_command(
    target: str,
    lease: Lease,
    owner: str,
    holder: str,
    pid: int,
    ended: int = 0,
    plain: str = "",
    name: str = "",
    tag: str = "",
    run: str = "",
) -> str:
    """The one command that makes the copy's dir and takes the lease (see TAKE_SCRIPT);
    `plain` = the plaintext tree the run writes and `name` the dataset's: a --decrypt-to mark of
    another copy there gives the lease back at once ("other <copy>"); `tag` = unpack_tag() of
    this copy: its unpack dirs killed runs left are removed once the lease is held; with `run`
    (this run's token in mark()) the processes other runs of the copy left running are stopped
    (STOP_FN), and the rsync temp files on its stdin (tidy_stdin()) kept or removed."""
    argv = ["sh", "-c", TAKE_SCRIPT, "sh", target, lease.path, lease.token, owner, holder, STALE_S]
    argv += [pid, ended or "", plain, name, tag, run]
    return shell.join(argv)


def tidy_stdin(resume: Iterable[str], remove: Iterable[str]) -> bytes:
    """The take command's stdin: rsync temp files (rels in the target) to resume from, then
    temp and partial files to remove (see STOP_FN's tidy)."""
    records = [b"A" + _raw(r) for r in resume] + [b"R" + _raw(r) for r in remove]
    return b"".join(r + b"\0" for r in records)


def _raw(rel: str) -> bytes:
    return rel.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Stopped:
    """What the take command found of earlier runs: processes stopped, temp files resumed from
    (kept as partial files) and temp or partial files removed."""

    processes: int = 0
    resumed: int = 0
    removed: int = 0


def parse_stopped(stdout: str) -> Stopped:
    """Pure: the take command's lines about earlier runs' leftovers (STOP_FN)."""
    lines = stdout.splitlines()
    found = [int(x.split()[1]) for x in lines if x.startswith("stopped ") and x.split()[1].isdecimal()]
    return Stopped(sum(found), lines.count("tidied A"), lines.count("tidied R"))


def peek_command(lease_file: str, copies: list[str]) -> str:
    """Read-only: is a live lease held on this copy (see PEEK_SCRIPT)? `copies`: the copy dirs
    that may hold it inside (a data dir this login may not write)."""
    places = [lease_file] + [posixpath.join(c, LEASE_IN_COPY) for c in copies]
    return shell.join(["sh", "-c", PEEK_SCRIPT, "sh", STALE_S, *places])


def parse_peek(stdout: str) -> LeaseBusy | None:
    """Pure: who holds a live lease, from peek_command's output (None: nobody, or unreadable)."""
    if not stdout.startswith("busy "):
        return None
    try:
        got = parse_take(stdout)
    except ValueError:
        return None
    return got if isinstance(got, LeaseBusy) else None


# $1 the data dir, $2 the dataset's name, $3 the plaintext dir (--decrypt-to/<name>), $4 this
# run's lease token, $5 stale seconds: mark it as this copy's, or say why not. Prints "ours
# <copy>", "other <copy>" (marked for another), "unmarked" (files there that no mark vouches
# for), or "busy <age>" and the lease's lines (an upload of the copy that IS that dir runs now;
# with TAKE_SCRIPT's check of the mark after taking its lease, one of two racing runs loses).
# The mark is written whole before it appears (a temp file, then `ln`, which never replaces: a
# full disk leaves no empty mark); an empty one (cut short before this) counts as none.
CLAIM_SCRIPT = LEASE_FNS + "\n" + sh.load("upload_claim")
# $1 the data dir, $2 the name: this copy's one spelling (symlinks resolved), as CLAIM_SCRIPT
RESOLVE_SCRIPT = 'printf \'%s\\n\' "$(cd -- "$1" && pwd -P)/$2"'


def unpack_tag(copy: str) -> str:
    """Pure: the part of a copy's unpack dir names (`.<name>.gpuonboard-unpack-<tag>-<token>`)
    that tells it from another copy's of a dataset with the same name in the same dir (a
    --decrypt-to tree beside another data dir's copy): a sweep never removes another copy's."""
    return hashlib.sha256(posixpath.normpath(copy).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def claim_command(data_dir: str, name: str, plain_dir: str, token: str = "") -> str:
    """Mark a --decrypt-to plaintext dir as this copy's, unless another copy's, files no mark
    vouches for, or a live upload of a copy that is that dir (CLAIM_SCRIPT); `token`: this
    run's lease (when --decrypt-to is the data dir itself, its lease is beside the dir)."""
    return shell.join(["sh", "-c", CLAIM_SCRIPT, "sh", data_dir, name, plain_dir, token, STALE_S])


def resolve_command(data_dir: str, name: str) -> str:
    return shell.join(["sh", "-c", RESOLVE_SCRIPT, "sh", data_dir, name])


@dataclass(frozen=True)
class OtherCopy:
    """The plaintext tree a run would write is marked as another copy's (its `<data_dir>/<name>`)."""

    copy: str


def parse_take(stdout: str) -> str | LeaseBusy | OtherCopy:
    """Pure: the lease file when it was taken, else who holds it. ValueError on other output."""
    lines = stdout.strip("\n").split("\n")  # (\n alone: a path may hold \r, \v, U+2028, ...)
    if lines and lines[-1].startswith("took /"):
        return lines[-1][len("took ") :]
    if lines and lines[-1].startswith("other "):
        return OtherCopy(lines[-1][len("other ") :])
    if lines and lines[0].startswith("busy "):
        fields = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
        holder = "".join(c for c in fields.get("holder", "") if c.isprintable())[:200]
        pid = fields.get("pid", "")
        return LeaseBusy(
            holder or "another machine",
            max(0, int(lines[0].split()[1])),  # (a clock behind the file's: not negative)
            fields.get("owner", ""),
            int(pid) if pid.isdecimal() else 0,
        )
    raise ValueError(f"unexpected answer {stdout.strip()[:200]!r}")


def touch_command(lease: Lease) -> str:
    return shell.join(["sh", "-c", TOUCH_SCRIPT, "sh", lease.path, lease.token])


def release_command(lease: Lease) -> str:
    return shell.join(["sh", "-c", RELEASE_SCRIPT, "sh", lease.path, lease.token])


class Heartbeat:
    """Run `argv` (the lease's refresh over the master connection) every HEARTBEAT_S seconds
    until stop(). Exit 1 means the lease is gone (taken over while this run was not heard from,
    e.g. a suspended laptop): `lost` is set, and the upload stops at its next step. Other
    failures are ignored (a lease that goes stale is the dropped link's case)."""

    def __init__(self, argv: list[str], every: float | None = None) -> None:
        self._every = HEARTBEAT_S if every is None else every
        self.lost = False  # another run took the lease over (this one was not heard from)
        self._argv = argv
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._every):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                r = subprocess.run(
                    self._argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=max(self._every, 5),
                    check=False,
                )
                if r.returncode == 1:  # the lease is not ours any more (ssh's own failures: 255)
                    self.lost = True

    def stop(self) -> None:
        """No refresh after this returns (one in flight over the master takes milliseconds)."""
        self._stopped.set()
        self._thread.join(timeout=5)
