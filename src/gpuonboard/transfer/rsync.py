"""rsync over the host's own SSH settings, both ways: the one builder of the local rsync's
command line for the upload (push) and for teardown's pull, running it (progress, stats, stopped
with us), and what its exit and its leftovers on the host mean.

The two directions share everything but what differs by direction: a push reports progress and
stats and may be limited, resent or dry-run; a pull receives data, not privileges
(RECEIVE_SAFELY). Pure parts (command lines, parsers) are unit-tested on real output.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpuonboard import children, shell
from gpuonboard.transfer.preflight import format_duration

Direction = Literal["push", "pull"]

# relative: rsync keeps it inside each destination directory, and excludes that name at any depth
# (so listings prune it everywhere); not rsync's usual `.rsync-partial`, which users' own rsync
# runs leave in their trees: an unpack's swap then dropped a job's files under it unseen
PARTIAL_DIR = ".gpuonboard-rsync-partial"


# rsync --timeout: the host's receiver gives up a link that moved nothing for this long (and
# keeps what arrived as a partial file). Its sshd never hears a link that drops without a FIN or
# RST (ClientAliveInterval is the host's setting, off by default): without it, the receiver of a
# cut upload lived on for hours holding its temp file. Twice ssh's own keepalive window
# (ServerAliveInterval 15 x 4, see openssh.py), so that this side's clearer message comes first.
RSYNC_TIMEOUT_S = 120


# What the receiving rsync (on this machine) must not take from the host as it is: `-a` keeps
# device nodes, fifos and sockets (as root: a raw-disk node a compromised host chose), owners
# and groups (as root: a file owned by anyone), and setuid/setgid/sticky bits and group/other
# write (a setuid-root binary in the results). Contents, mtimes and the owner's bits stay.
RECEIVE_SAFELY = (
    "--no-devices",
    "--no-specials",
    "--no-owner",
    "--no-group",
    "--chmod=ugo-st,go-w",
)
# what a push never makes on the host: the dataset's fifos, sockets and device nodes (its scan
# names them as not uploaded; as root, `-a` made a device node of this machine's numbers there)
NO_SPECIAL_FILES = ("--no-devices", "--no-specials")
# what a push reports: overall progress (its total known from the start) and the closing stats
PUSH_REPORTS = ("--info=progress2", "--stats", "--no-inc-recursive")


def rsync_command(
    direction: Direction,
    local: Path,
    remote_dir: str,
    config_path: Path,
    alias: str,
    options: Sequence[str] = (),
    ssh_options: Sequence[str] = (),
    marker: str = "",
    append: bool = False,
) -> list[str]:
    """The local rsync's command line (argv, run without a shell) that moves the contents of
    `local` into the host's `remote_dir` (push) or those of `remote_dir` into `local` (pull):
    archive, resumable (partial files in PARTIAL_DIR), a silent link given up after
    RSYNC_TIMEOUT_S on both ends, through `ssh -F config_path` (see connection.openssh: same key,
    port, jumps, strict host keys) with `ssh_options` (e.g. the shared master connection).

    By direction: a push reports progress and stats (PUSH_REPORTS) and takes `options` (a
    bandwidth limit, a file list, a dry run); a pull receives data, not privileges
    (RECEIVE_SAFELY). `marker` (uploadlock.mark()) goes into the environment of the host's
    rsync, so that a rerun holding the upload's lease can find it should this run's link drop
    (see uploadlock.STOP_FN). `append`: rsync's --append in place of the partial dir (which
    rsync refuses beside it): a file the host holds a prefix of gets only the rest, written in
    place, with no delta search over it (a file still growing here, growing.py)."""
    argv = [
        "rsync",
        "-a",
        "--protect-args",  # remote paths travel inside the protocol, never through a shell
        *(("--append",) if append else ("--partial", f"--partial-dir={PARTIAL_DIR}")),
        *(RECEIVE_SAFELY if direction == "pull" else ()),
        # the host's end gives a silent link up by itself too (rsync passes it on): a link
        # dropped without FIN/RST left the host's receiver (or sender) running for hours
        f"--timeout={RSYNC_TIMEOUT_S}",
        *((*NO_SPECIAL_FILES, *PUSH_REPORTS) if direction == "push" else ()),
        "-e",
        shell.join(["ssh", "-F", str(config_path), *ssh_options]),
        *options,
    ]
    # the remote dir reaches the host as `.` in a dir the remote shell entered (a quoted path):
    # with --protect-args the host's rsync expands wildcards in the paths it gets, so a dataset
    # named `[a]` or `g*` wrote into another copy's `a/` or `g1/` (and a pull read others). The
    # text goes through the login shell wrapper as every command does (a `!` in the path under
    # csh), and the words rsync puts after it (` --server ARGS . .`) reach the host's rsync
    remote = shell.join(["env", marker, "rsync"]) if marker else "rsync"
    cd = shell.join(["cd", "--", remote_dir.rstrip("/") or "/"])
    argv.append("--rsync-path=" + shell.login_neutral_prefix(f'{cd} && {remote} "$@"'))
    here, there = f"{local}/", f"{alias}:./"
    return argv + ([here, there] if direction == "push" else [there, here])


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
    append: bool = False,
) -> list[str]:
    """The upload's rsync command line (rsync_command, push) of src_dir's contents into the
    host's `target`: `bwlimit`, `files_from` (NUL-separated rels), `dry_run` and `append` as
    rsync's own."""
    options = [f"--bwlimit={bwlimit}"] if bwlimit else []
    if files_from is not None:
        options += ["--from0", f"--files-from={files_from}"]
    if dry_run:
        options.append("--dry-run")
    return rsync_command("push", src_dir, target, config_path, alias, options, ssh_options, marker, append)


def pull_argv(alias: str, config_path: Path, remote_dir: str, dest: Path) -> list[str]:
    """Teardown's rsync command line (rsync_command, pull): a resumable pull of the host's
    remote_dir's contents into dest, receiving data, not privileges (RECEIVE_SAFELY)."""
    return rsync_command("pull", dest, remote_dir, config_path, alias)


# ---------------------------------------------------------------- rsync's temp files on the host

# rsync's temp file beside the file it receives: `.<name>.XXXXXX`, mkstemp's six random letters
# and digits; six of one class only (`.notes.backup`, `.log.202401`) are taken for a user's name
# (about 1 % of rsync's are: those are left alone, and said as kept)
_RSYNC_TEMP = re.compile(r"\.(.+)\.([A-Za-z0-9]{6})")


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


# ---------------------------------------------------------------- running rsync, reading its output


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
