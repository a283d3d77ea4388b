"""Dataset upload building blocks: local scan + sha256 manifest, remote listing, rsync over the
host's own SSH settings, live progress from `--info=progress2`, verification on arrival.

Pure parts (parsers, command builders) are separate from the two that do I/O (`scan_source`
reads local files, `run_rsync` runs the local rsync), so they are unit-tested on real output.
Remote command texts are built with `gpuonboard.shell` only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import operator
import os
import posixpath
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from gpuonboard import children, shell
from gpuonboard.transfer.crypto import sha256_file
from gpuonboard.transfer.uploadlock import COPY_MARK, LEASE_IN_COPY

if TYPE_CHECKING:
    pass

# relative: rsync keeps it inside each destination directory, and excludes that name at any depth
# (so listings prune it everywhere); not rsync's usual `.rsync-partial`, which users' own rsync
# runs leave in their trees: an unpack's swap then dropped a job's files under it unseen
PARTIAL_DIR = ".gpuonboard-rsync-partial"
_LIST_MARK = "##gpuonboard-dataset "
# rsync --timeout: the host's receiver gives up a link that moved nothing for this long (and
# keeps what arrived as a partial file). Its sshd never hears a link that drops without a FIN or
# RST (ClientAliveInterval is the host's setting, off by default): without it, the receiver of a
# cut upload lived on for hours holding its temp file. Twice ssh's own keepalive window
# (ServerAliveInterval 15 x 4, see openssh.py), so that this side's clearer message comes first.
RSYNC_TIMEOUT_S = 120
# rsync's temp file beside the file it receives: `.<name>.XXXXXX`, mkstemp's six random letters
# and digits; six of one class only (`.notes.backup`, `.log.202401`) are taken for a user's name
# (about 1 % of rsync's are: those are left alone, and said as kept)
_RSYNC_TEMP = re.compile(r"\.(.+)\.([A-Za-z0-9]{6})")


# ---------------------------------------------------------------- local source


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    """One file or symlink of the dataset (directories are implied by paths). Treat as
    immutable (`dataclasses.replace`); not frozen only because a frozen dataclass's __init__
    sets each field through object.__setattr__: 35 ms more per 50,000 files, on the upload's
    critical path (the scan before the first byte)."""

    rel: str  # path relative to the dataset root, '/'-separated
    kind: str  # 'f' regular file, 'l' symlink
    size: int
    mtime: int  # whole seconds, as rsync -t sets them
    sha256: str  # of the content (file) or of the link target + '\n' (symlink)
    target: str = ""  # symlink target
    mtime_ns: int = 0  # for the local hash cache (shard mode)
    ino: int = 0


@dataclass
class SourceTree:
    """The dataset on this machine: root, entries by relative path, totals."""

    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)
    empty_dirs: set[str] = field(default_factory=set)  # directories with nothing in them (rel)

    @property
    def files(self) -> list[Entry]:
        """Regular files only."""
        return [e for e in self.entries.values() if e.kind == "f"]

    @property
    def total_bytes(self) -> int:
        """Sum of regular file sizes."""
        return sum(e.size for e in self.files)

    @functools.cached_property
    def _root_is_dir(self) -> bool:
        return self.root.is_dir()

    def landing(self, target: str) -> str:
        """Where the dataset lands in the copy dir `target`: the dir, or for a one-file dataset
        the file in it (`--dataset x.bin` lands at `<target>/x.bin`)."""
        if self._root_is_dir or len(self.entries) != 1:
            return target
        return f"{target.rstrip('/')}/{next(iter(self.entries))}"

    def path(self, rel: str) -> Path:
        """The local path of an entry (the root itself when the dataset is one file)."""
        return self.root / rel if self._root_is_dir else self.root


def link_hash(target: str) -> str:
    """What the remote computes for a symlink: sha256 of `readlink` output (target + newline)."""
    import hashlib

    return hashlib.sha256(target.encode("utf-8", "surrogateescape") + b"\n").hexdigest()


def scan_source(root: Path, hashes: bool = True) -> SourceTree:
    """Walk the dataset (a directory, or one file) and hash every regular file (with
    `hashes=False` files get sha256 "" and `hash_tree` fills them in later, e.g. while rsync runs).
    One fstatat per entry, relative to its directory's fd (os.scandir on an fd: the kernel
    resolves one name, not the whole path); directories in sorted order."""
    tree = SourceTree(root)
    if root.is_file() and not root.is_symlink():
        st = root.stat()
        sha = sha256_file(root) if hashes else ""
        tree.entries[root.name] = Entry(
            root.name, "f", st.st_size, int(st.st_mtime), sha, "", st.st_mtime_ns, st.st_ino
        )
        return tree
    entries = tree.entries
    base = str(root)

    def walk(dfd: int, prefix: str) -> None:
        try:
            walk_dir(dfd, prefix)
        except OSError as exc:  # name the path in full (the calls are relative to a dir fd)
            name = exc.filename
            if isinstance(name, int) or (name is not None and not os.path.isabs(os.fsdecode(name))):
                full = os.path.join(base, prefix + ("" if isinstance(name, int) else os.fsdecode(name)))
                raise OSError(exc.errno, exc.strerror, full.rstrip("/")) from None
            raise

    def walk_dir(dfd: int, prefix: str) -> None:
        with os.scandir(dfd) as it:
            items = list(it)
        if not items and prefix:
            tree.empty_dirs.add(prefix[:-1])
        items.sort(key=_NAME)
        subdirs = []
        for d in items:
            if d.is_file(follow_symlinks=False):
                st = d.stat(follow_symlinks=False)
                rel = prefix + d.name
                sha = sha256_file(Path(base, rel)) if hashes else ""
                mtime = int(st.st_mtime)
                entries[rel] = Entry(rel, "f", st.st_size, mtime, sha, "", st.st_mtime_ns, st.st_ino)
            elif d.is_symlink():
                rel = prefix + d.name
                target = os.readlink(d.name, dir_fd=dfd)
                st = d.stat(follow_symlinks=False)
                entries[rel] = Entry(rel, "l", 0, int(st.st_mtime), link_hash(target), target)
            elif d.is_dir(follow_symlinks=False):
                subdirs.append(d.name)
        for name in subdirs:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
            try:
                walk(fd, prefix + name + "/")
            finally:
                os.close(fd)

    top = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _gc_paused():  # entries hold no cycles; the collector's passes cost 20-70 ms per 50,000
            walk(top, "")
    finally:
        os.close(top)
    return tree


_GC_PAUSE = threading.Lock()
_gc_pausers = [0, False]  # scans pausing the cyclic GC now; whether it was on before the first


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Cyclic GC off while any scan runs (scans of several hosts may overlap: counted)."""
    with _GC_PAUSE:
        if _gc_pausers[0] == 0:
            _gc_pausers[1] = gc.isenabled()
            gc.disable()
        _gc_pausers[0] += 1
    try:
        yield
    finally:
        with _GC_PAUSE:
            _gc_pausers[0] -= 1
            if _gc_pausers[0] == 0 and _gc_pausers[1]:
                gc.enable()


_NAME = operator.attrgetter("name")


_PRESCANS: dict[Path, tuple[threading.Thread, list[SourceTree], float]] = {}
_PRESCANS_LOCK = threading.Lock()


def prescan(root: Path) -> None:
    """Start `scan_source(root, hashes=False)` in the background (once per root) so that it
    overlaps the login; `take_prescan` collects it. Errors are left to the real scan."""
    with _PRESCANS_LOCK:
        if root in _PRESCANS:
            return
        found: list[SourceTree] = []

        def scan() -> None:
            with contextlib.suppress(Exception):  # the caller scans again and reports it
                found.append(scan_source(root, hashes=False))

        job = threading.Thread(target=scan, name="gpuonboard-prescan", daemon=True)
        _PRESCANS[root] = (job, found, time.monotonic())
    job.start()


def take_prescan(root: Path, max_age: float = 30.0) -> SourceTree | None:
    """The tree `prescan(root)` found (waiting for it), once; None when none ran, it failed, or
    it started more than `max_age` seconds ago (the caller scans afresh)."""
    with _PRESCANS_LOCK:
        started = _PRESCANS.pop(root, None)
    if started is None or time.monotonic() - started[2] > max_age:
        return None
    started[0].join()
    return started[1][0] if started[1] else None


def hash_tree(tree: SourceTree, stop: threading.Event | None = None) -> None:
    """Fill in the sha256 of every regular file scanned with `hashes=False` (in place); ends
    early once `stop` is set (the upload failed or was interrupted: nobody waits for them)."""
    for rel, e in list(tree.entries.items()):
        if stop is not None and stop.is_set():
            return
        if e.kind == "f" and not e.sha256:
            tree.entries[rel] = dataclasses.replace(e, sha256=sha256_file(tree.path(rel)))


# ---------------------------------------------------------------- remote probes


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
    excluded.
    """
    m = _LIST_MARK
    return (
        f"t={shell.quote(target)}; d={shell.quote(data_dir)}\n"
        f"printf '{m}rsync %s\\n' \"$(command -v rsync || echo absent)\"\n"
        f"printf '{m}zstd %s\\n' \"$(command -v zstd || echo absent)\"\n"
        'while [ ! -d "$d" ] && [ "$d" != / ]; do d=$(dirname -- "$d"); done\n'
        f"printf '{m}df\\n'; df -P -k -- \"$d\" 2>/dev/null | tail -n 1\n"
        # where this login cannot write: the nearest existing dir of data_dir (the lease, the
        # copy and an unpack's temp tree go in it), or target itself
        f'{{ [ -w "$d" ] && [ -x "$d" ]; }} || printf \'{m}nowrite %s\\n\' "$d"\n'
        f'[ -d "$t" ] && [ ! -L "$t" ] && {{ [ ! -w "$t" ] || [ ! -x "$t" ]; }}'
        f" && printf '{m}nowrite %s\\n' \"$t\"\n"
        f'{{ [ -e "$t" ] || [ -L "$t" ]; }} && [ ! -d "$t" ] && printf \'{m}notdir\\n\'\n'
        f'[ -L "$t" ] && printf \'{m}link %s\\n\' "$(readlink -- "$t")"\n'
        + (
            f"mf={shell.quote(manifest)}; [ -f \"$t/$mf\" ] && {{ {SHA256_FN}; printf '{m}manifest %s\\n'"
            ' "$(sha < "$t/$mf")"; }\n'
            if manifest
            else ""
        )
        + f'[ -f "$t/{COPY_MARK}" ] && printf \'{m}copy %s\\n\' "$(head -n 1 -- "$t/{COPY_MARK}")"\n'
        f"[ -d \"$t/{COPY_MARK}\" ] && printf '{m}markdir\\n'\n"
        f"printf '{m}list\\n'\n"
        '[ -d "$t" ] || exit 0\n'
        # (rsync's partial files as `P` records: what a resumed transfer starts from, which the
        # preflight counts as already there; the partial dir itself is no directory of the copy)
        f'cd -- "$t" && find . \\( -path ./{LEASE_IN_COPY} -o -path ./{COPY_MARK} \\) -prune'
        f" -o -path '*/{PARTIAL_DIR}/*' \\( -type f -printf 'P %s %T@ %P\\0' -o -prune \\)"
        f" -o -name {PARTIAL_DIR} -o -type d -empty -printf 'E %s %T@ %P\\0' -o -printf '%y %s %T@ %P\\0'\n"
        "exit 0"
    )


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
    for line in head.splitlines():
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
    for record in listing.split("\0") if sep else []:
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
            files[rel] = (kind, int(size), int(float(mtime)))
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


# `sha` reads stdin and prints "HASH ..." : OpenSSL when it works (SHA-NI: about 3x faster than
# coreutils sha256sum, which matters for a 1 GiB file checked after the upload), else sha256sum
SHA256_FN = (
    "if command -v openssl >/dev/null 2>&1 && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1;"
    " then sha() { openssl dgst -sha256 -r; }; else sha() { sha256sum; }; fi"
)

HASH_SCRIPT = (
    # one line per NUL-separated path read from stdin, in order: "L|F HASH" or "missing";
    # content goes through stdin redirection, so no file name is ever parsed back
    'cd -- "$1" || exit 3; xargs -0 sh -c \'' + SHA256_FN + '; for f; do if [ -L "$f" ]; then printf "L ";'
    ' readlink -- "$f" | sha; elif [ -f "$f" ]; then printf "F "; sha < "$f";'
    " else echo missing; fi; done' sh"
)


def hash_command(target: str) -> str:
    """Remote command computing the sha256 of each path given on stdin (NUL-separated)."""
    return shell.join(["sh", "-c", HASH_SCRIPT, "sh", target])


def hash_stdin(rels: Sequence[str]) -> bytes:
    """The stdin of hash_command: the relative paths, NUL-separated."""
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in rels)


# the paths on stdin (NUL-separated) get the epoch as mtime: they failed verification, and
# rsync's quick check (size + whole-second mtime) on the next run must not take them as sent
UNVERIFIED_SCRIPT = 'cd -- "$1" && xargs -0 -r touch -c -h -m -d @0 --'  # -h: a link itself


def unverified_command(target: str) -> str:
    """Remote command marking paths (stdin: hash_stdin) as not verified, so a rerun re-sends them."""
    return shell.join(["sh", "-c", UNVERIFIED_SCRIPT, "sh", target])


def parse_hashes(rels: Sequence[str], stdout: str) -> dict[str, str | None]:
    """Pure: hash_command's output -> rel -> sha256 (None when missing on the host)."""
    lines = stdout.splitlines()
    out: dict[str, str | None] = {}
    for i, rel in enumerate(rels):
        fields = lines[i].split() if i < len(lines) else []
        out[rel] = fields[1] if len(fields) >= 2 and re.fullmatch(r"[0-9a-f]{64}", fields[1]) else None
    return out


# ---------------------------------------------------------------- rsync over our ssh settings


def rsync_argv(
    src_dir: Path,
    target: str,
    config_path: Path,
    alias: str,
    bwlimit: str | None = None,
    files_from: Path | None = None,
    dry_run: bool = False,
    ssh_options: Sequence[str] = (),
    marker: str = "",
) -> list[str]:
    """The local rsync command line (argv, no shell): archive, resume, progress, stats.
    `ssh_options` go to ssh (e.g. the shared master connection); `marker` (uploadlock.mark())
    goes into the environment of the host's rsync, so that a rerun holding the upload's lease
    can find it should this run's link drop (see uploadlock.STOP_FN)."""
    argv = [
        "rsync",
        "-a",
        "-s",  # --protect-args: remote paths travel inside the protocol, never through a shell
        "--partial",
        f"--partial-dir={PARTIAL_DIR}",
        f"--timeout={RSYNC_TIMEOUT_S}",  # (the host's end too: rsync passes it on)
        "--info=progress2",
        "--stats",
        "--no-inc-recursive",  # progress2's total is known from the start
        "-e",
        shell.join(["ssh", "-F", str(config_path), *ssh_options]),
    ]
    if bwlimit:
        argv.append(f"--bwlimit={bwlimit}")
    if files_from is not None:
        argv += ["--from0", f"--files-from={files_from}"]
    if dry_run:
        argv.append("--dry-run")
    # the destination reaches the host as `.` in a dir the remote shell entered (a quoted path):
    # with -s the remote rsync expands wildcards in the paths it gets, so a dataset named `[a]`
    # or `g*` wrote into another copy's `a/` or `g1/` (the upload's first command made the dir)
    remote = shell.join(["env", marker, "rsync"]) if marker else "rsync"
    argv.append("--rsync-path=" + shell.join(["cd", "--", target.rstrip("/") or "/"]) + " && " + remote)
    argv += [str(src_dir) + "/", f"{alias}:./"]
    return argv


def rsync_temp_of(rel: str) -> str | None:
    """Pure: the file (its rel) that rel is rsync's temp file of (`d/.name.XXXXXX` -> `d/name`),
    else None."""
    m = _RSYNC_TEMP.fullmatch(posixpath.basename(rel))
    if m is None or sum(any(f(c) for c in m[2]) for f in (str.islower, str.isupper, str.isdigit)) < 2:
        return None
    return posixpath.join(posixpath.dirname(rel), m[1])


# NUL-terminated paths (relative to $1) of the files named like rsync's temp files, the partial
# dirs left out (`find -name`'s `?` is one character, any byte: the caller matches the names)
TEMPS_SCRIPT = (
    f'cd -- "$1" 2>/dev/null || exit 0; find . -name {PARTIAL_DIR} -prune -o -type f'
    " -name '.?*.??????' -printf '%P\\0'"
)


def temps_command(target: str) -> str:
    """Remote command listing the files under target named like rsync's temp files."""
    return shell.join(["sh", "-c", TEMPS_SCRIPT, "sh", target])


def parse_temps(stdout: str, files: Iterable[str]) -> list[str]:
    """Pure: temps_command's output -> the temp files (rels) of `files` among them, sorted."""
    wanted = set(files)
    return sorted(r for r in stdout.split("\0") if r and r not in wanted and rsync_temp_of(r) in wanted)


@dataclass(frozen=True)
class ProgressUpdate:
    """One `--info=progress2` line: overall bytes so far, percent, rate, ETA or elapsed."""

    bytes: int
    percent: int
    rate: str
    eta: str


_PROGRESS_RE = re.compile(r"^\s*([\d,]+)\s+(\d+)%\s+(\S+/s)\s+(\d+:\d\d:\d\d)")


def parse_progress(line: str) -> ProgressUpdate | None:
    """Pure: one progress2 update (rsync separates them with CR) -> ProgressUpdate, or None."""
    m = _PROGRESS_RE.match(line)
    if not m:
        return None
    return ProgressUpdate(int(m.group(1).replace(",", "")), int(m.group(2)), m.group(3), m.group(4))


_RATE_RE = re.compile(r"^([\d.]+)([kMGT]?)B/s$")


def upload_eta(done: int, total: int, rate: str) -> str:
    """Pure: `ETA 19 min` for the whole upload, bytes left over rsync's rate (`12.34MB/s`,
    1024-based as rsync prints it); '' when the total or the rate is not known yet. The time
    field of `--info=progress2` counted down per file (`0:00:01` with hours to go)."""
    m = _RATE_RE.match(rate)
    if not m or total <= 0:
        return ""
    per_second = float(m.group(1)) * 1024 ** " kMGT".index(m.group(2) or " ")
    if per_second <= 0:
        return ""
    return f"ETA {format_duration(max(0, total - done) / per_second)}"


@dataclass(frozen=True)
class RsyncStats:
    """The numbers of rsync's --stats that say what was sent."""

    files_transferred: int = 0
    created: int = 0
    literal_bytes: int = 0
    bytes_sent: int = 0
    total_size: int = 0


def parse_stats(text: str) -> RsyncStats:
    """Pure: rsync --stats output -> RsyncStats (missing numbers are 0)."""

    def number(label: str) -> int:
        m = re.search(rf"^{re.escape(label)}:\s*([\d,]+)", text, re.MULTILINE)
        return int(m.group(1).replace(",", "")) if m else 0

    return RsyncStats(
        files_transferred=number("Number of regular files transferred"),
        created=number("Number of created files"),
        literal_bytes=number("Literal data"),
        bytes_sent=number("Total bytes sent"),
        total_size=number("Total file size"),
    )


@dataclass
class RsyncRun:
    """How one rsync run ended."""

    exit_code: int
    stats: RsyncStats
    stderr: str
    pid: int = 0


def dies_with_us(argv: Sequence[str]) -> list[str]:
    """argv run so that it gets SIGTERM when this process dies, even by SIGKILL (`setpriv
    --pdeathsig`, util-linux, where present): a killed CLI's rsync kept writing into the copy
    after a rerun had taken the lease over, and renamed the old content over the verified new."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)


def run_rsync(
    argv: Sequence[str],
    on_progress: Callable[[ProgressUpdate], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RsyncRun:
    """Run the local rsync, feeding each progress2 update to on_progress; collect stats."""
    proc = children.track(
        subprocess.Popen(
            dies_with_us(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "LC_ALL": "C"},
        )
    )
    if on_start is not None:
        on_start(proc.pid)
    assert proc.stdout is not None and proc.stderr is not None
    import threading

    err_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    text: list[str] = []
    pending = b""
    last = 0.0
    try:
        while chunk := proc.stdout.read1(1 << 14):  # type: ignore[attr-defined]
            pending += chunk
            *done, pending = re.split(rb"[\r\n]", pending)
            for raw in done:
                line = raw.decode("utf-8", "replace")
                text.append(line)
                update = parse_progress(line)
                now = time.monotonic()
                if update and on_progress and (now - last > 0.2 or update.percent == 100):
                    last = now
                    on_progress(update)
    except BaseException:  # Ctrl-C, SIGTERM: rsync stops with us (it would go on sending alone)
        children.stop([proc])
        raise
    text.append(pending.decode("utf-8", "replace"))
    code = proc.wait()
    reader.join()
    return RsyncRun(
        code, parse_stats("\n".join(text)), b"".join(err_chunks).decode("utf-8", "replace"), proc.pid
    )


RSYNC_EXIT = {
    11: "error in file I/O (the remote disk may be full)",
    12: "error in the rsync protocol data stream (the link dropped or the remote disk is full)",
    20: "interrupted",
    23: "some files could not be transferred",
    30: "timeout in data send/receive",
    35: "timeout waiting for the daemon connection",
    255: "the SSH connection failed or dropped",
}


def disk_full_line(lines: Sequence[str]) -> str:
    """Pure: the first line that says a disk is full ("" when none does)."""
    return next((x for x in lines if "no space left" in x.lower() or "disk quota" in x.lower()), "")


# rsync's lines when an entry of one kind on the host stands where the dataset has another
_CONFLICT = re.compile(
    r"(?:cannot delete non-empty directory|could not make way for new (?:regular file|symlink)): (.+)$"
)


def rsync_conflict(run: RsyncRun) -> str | None:
    """The sentence for a directory on the host where the dataset now has a file or symlink
    (rsync exit 23, which a rerun alone never clears), else None."""
    for line in run.stderr.splitlines():
        m = _CONFLICT.search(line.strip())
        if m:
            return (
                f"{m[1]} is a directory on the host where the dataset now has a file or symlink;"
                " move it away (or delete it) there, then rerun"
            )
    return None


def explain_rsync_failure(run: RsyncRun) -> str:
    """One sentence for a failed rsync run (exit code meaning + its last stderr line that is not
    rsync's closing summary)."""
    lines = [x.strip() for x in run.stderr.strip().splitlines() if x.strip()]
    told = [x for x in lines if not x.startswith("rsync error:")] or lines
    detail = told[-1] if told else ""
    full = " ".join(lines).lower()
    meaning = RSYNC_EXIT.get(run.exit_code, f"exit code {run.exit_code}")
    full_disk = disk_full_line(lines)
    if full_disk:
        meaning, detail = "the remote disk is full", full_disk
    if "host key verification failed" in full:
        meaning = "host key verification failed against .gpuonboard/known_hosts"
    return f"rsync failed: {meaning}" + (f" ({detail})" if detail else "")


# ---------------------------------------------------------------- shared OpenSSH master connection


def master_options(control_dir: Path) -> list[str]:
    """ssh options that reuse the master connection whose socket lives in control_dir (a private
    0700 dir); with no master there, ssh connects directly. [] when the socket path would be too
    long for a unix socket, or cannot be written for ssh (a `"` or a `${` in $TMPDIR).

    ssh reads the value as a config line (a space splits it: quoted) and %-expands it (a `%` in
    $TMPDIR is written `%%`): else the master never started, or put its socket elsewhere."""
    raw = str(control_dir)
    if len(raw) + 1 + 40 > 100 or '"' in raw or "${" in raw or "\n" in raw:
        return []
    path = raw.replace("%", "%%") + "/%C"
    if shell.quote(raw) != raw:  # (as plain as before where nothing needs it)
        path = f'"{path}"'
    return ["-o", "ControlMaster=no", "-o", f"ControlPath={path}"]


def start_master(config_path: Path, alias: str, control_dir: Path, persist: int = 60) -> list[str]:
    """Open ONE OpenSSH master connection (same config: strict host keys) that every later rsync
    and ssh of this run multiplexes over: one handshake, a warm TCP window. Returns the ssh
    options for the clients ([] when it could not start: they then connect on their own).
    ControlPersist closes it `persist` seconds after the last client if `stop_master` never runs."""
    opts = master_options(control_dir)
    if not opts:
        return []
    control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(control_dir, 0o700)
    try:
        r = subprocess.run(
            ["ssh", "-F", str(config_path), "-o", "ControlMaster=yes", "-o", opts[-1]]
            + ["-o", f"ControlPersist={persist}", "-N", "-f", alias],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return opts if r.returncode == 0 else []


CONTROL_PREFIX = "gpob-cm-"


def sweep_control_dirs(parent: Path, keep: Path | None = None, max_age: float = 600.0) -> int:
    """Remove this user's empty `gpob-cm-*` dirs under `parent` (the temp dir) older than
    `max_age` seconds: what a run killed with SIGKILL left (its master, under ControlPersist,
    is gone by then and took its socket along; a dir with a socket in it is never touched).
    Returns how many went."""
    gone = 0
    now = time.time()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(CONTROL_PREFIX)]
    except OSError:
        return 0
    for name in names:
        path = parent / name
        if path == keep:
            continue
        try:
            st = path.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < max_age:
                continue
            path.rmdir()  # (only an empty one: ENOTEMPTY otherwise)
            gone += 1
        except OSError:
            continue
    return gone


def stop_master(config_path: Path, alias: str, opts: Sequence[str]) -> None:
    """`ssh -O exit` the master started by start_master (nothing when opts is empty)."""
    if not opts:
        return
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            ["ssh", "-F", str(config_path), *opts, "-O", "exit", alias],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )


# ---------------------------------------------------------------- preflight: throughput probe, ETA

# constant (nothing of ours is interpolated): read a byte count, swallow exactly that many
# bytes, say "got"; the client times each round from its first byte to that answer, so bytes
# still sitting in local buffers are never counted as sent
PROBE_COMMAND = (
    "echo ready && while read -r n; do case $n in ''|*[!0-9]*) exit 1 ;; esac;"
    ' head -c "$n" > /dev/null || exit 1; echo got; done'
)
PROBE_MAX_BYTES = 16 * 1024 * 1024
PROBE_MAX_SECONDS = 2.0
PROBE_FIRST_BYTES = 256 * 1024  # round 1; a link slow enough to need 1.5 s for it stops there
PROBE_ROUND_TIMEOUT = 15.0
DEFAULT_MBIT = 100.0  # vars.upload_mbit when nothing was measured


def parse_rate_mbit(value: object) -> float | None:
    """Pure: a rate -> Mbit/s. `93`, `93mbit`, `1gbit`, `500kbit`; rsync --bwlimit style `5m`/`500k`
    (bytes per second in units of 1024, as rsync reads them). None when empty or unreadable."""
    if value in (None, "", False):
        return None
    text = str(value).strip().lower().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit|k|m|g|b)?(?:/s|ps)?", text)
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2) or "mbit"
    bits = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}.get(unit)
    if bits is not None:
        return number * bits / 1e6
    scale = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]
    return number * scale * 8 / 1e6


def eta_seconds(nbytes: int, mbit: float) -> float:
    """Pure: seconds to move nbytes at mbit Mbit/s."""
    return nbytes * 8 / (mbit * 1e6) if mbit > 0 else float("inf")


def format_duration(seconds: float) -> str:
    """Pure: `45 s`, `19 min`, `2 h 05 min`."""
    if seconds == float("inf"):
        return "unknown time"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def format_eta(nbytes: int, mbit: float) -> str:
    """Pure: `12.4 GiB at 93 Mbit/s ≈ 19 min`."""
    from gpuonboard.units import format_bytes

    rate = f"{mbit:.0f}" if mbit >= 10 else f"{mbit:.1f}" if mbit >= 1 else f"{mbit:.2g}"
    return (
        f"{format_bytes(nbytes, binary=True)} at {rate} Mbit/s ≈ {format_duration(eta_seconds(nbytes, mbit))}"
    )


def probe_throughput(
    config_path: Path,
    alias: str,
    max_bytes: int = PROBE_MAX_BYTES,
    max_seconds: float = PROBE_MAX_SECONDS,
    timeout: float = PROBE_ROUND_TIMEOUT,
    ssh_opts: Sequence[str] = (),
) -> float | None:
    """Mbit/s of incompressible bytes pushed through OpenSSH (same config as rsync; `ssh_opts`:
    e.g. the run's master connection) into the host, which acknowledges each round once it has
    swallowed it all: round 1 sends 256 KiB; unless that took 1.5 s already (a slow link: its
    rate is the answer), round 2 sends what round 1's rate moves in `max_seconds` (1 MiB to
    `max_bytes`), and its rate is the answer. A round is given `timeout` s, after which ssh is
    killed (a stalled host never hangs the run). None when the probe could not run."""
    import select

    proc = subprocess.Popen(
        ["ssh", "-F", str(config_path), *ssh_opts, "-o", "Compression=no", alias, PROBE_COMMAND],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def answer(word: bytes, deadline: float) -> bool:
        line = b""
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(stdout.fileno(), 64) if ready else b""
            if not chunk:
                return False
            line += chunk
        return line.strip() == word

    def round_seconds(nbytes: int) -> float | None:
        block = os.urandom(min(nbytes, 256 * 1024))

        def send() -> None:
            with contextlib.suppress(OSError):
                stdin.write(b"%d\n" % nbytes)
                left = nbytes
                while left > 0:
                    stdin.write(block[: min(left, len(block))])
                    left -= min(left, len(block))
                stdin.flush()

        start = time.monotonic()
        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        if not answer(b"got", start + timeout):
            return None
        writer.join()
        return max(time.monotonic() - start, 1e-6)

    try:
        if not answer(b"ready", time.monotonic() + timeout):
            return None
        took = round_seconds(PROBE_FIRST_BYTES)
        if took is None:
            return None
        first = PROBE_FIRST_BYTES * 8 / took / 1e6
        if took >= 1.5:
            return first
        size = min(max_bytes, max(1 << 20, int(PROBE_FIRST_BYTES / took * max_seconds)))
        took = round_seconds(size)
        return size * 8 / took / 1e6 if took is not None else first
    except OSError:
        return None
    finally:
        if proc.poll() is None:
            proc.kill()  # also unblocks a writer stuck on a full pipe
            proc.wait()


# ---------------------------------------------------------------- pipelined production + upload

T = TypeVar("T")


def pipelined(batches: Iterable[Callable[[], T]], send: Callable[[T], bool]) -> bool:
    """Run each batch's producer (encrypting, packing) in a background thread ONE batch ahead of
    `send` (rsync of the previous batch), so wall time approaches the slower of the two and at most
    two batches are in flight (constant memory: producers write files, not buffers). Stops at the
    first send that returns False; a producer's exception is re-raised here."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        it = iter(batches)
        first = next(it, None)
        if first is None:
            return True
        pending = pool.submit(first)
        for producer in it:
            ready = pending.result()
            pending = pool.submit(producer)
            if not send(ready):
                pending.cancel()
                return False
        return send(pending.result())


def batch_sizes(
    sizes: Sequence[int], first: int = 8 * 1024 * 1024, cap: int = 1024**3, max_items: int = 20000
) -> list[int]:
    """Pure: split items (in order) into batches whose byte sizes start small (the upload starts
    early) and double up to `cap` (few rsync runs); returns the item count of each batch."""
    out: list[int] = []
    limit, n, acc = first, 0, 0
    for s in sizes:
        n += 1
        acc += max(s, 0)
        if acc >= limit or n >= max_items:
            out.append(n)
            n, acc, limit = 0, 0, min(cap, limit * 2)
    if n:
        out.append(n)
    return out
