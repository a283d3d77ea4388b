"""A minimal cron for one simulated server: runs the entries of that host's cron dir.

A simulated server's inventory points `vars.cron_dir` into its own dir (no real /etc/cron.d is
touched), so no real cron ever reads what `invoke autostop` installs there. This runner does,
as cron would: at each minute's start it runs every entry (`/etc/cron.d` format: five time
fields, a user, a command) whose time fields match, with `/bin/sh -c COMMAND` and cron's
environment (SHELL=/bin/sh, PATH=/usr/bin:/bin, HOME, LOGNAME, and the file's NAME=value lines).

It names its process `cron` (prctl), so the product's "is a cron daemon running" probe finds it:
it is one. Never a real power-off: `shutdown`, `poweroff`, `halt`, `reboot`, `systemctl`,
`init` and `telinit` stand-ins come first on the entries' PATH (they only log and touch
`shutdown-ran` in the host dir), and sim.up's inventory sets the autostop shutdown command to a
`touch` of that file.

Run: ``python -m gpuonboard.testing.cronrunner HOST_DIR CRON_DIR [--once]``.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import getpass
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PID_FILE = "cron.pid"
LOG_FILE = "cron.log"
STANDINS_DIR = "cron-standins"
CRON_PATH = "/usr/bin:/bin"
# commands that power a machine off: on a simulated server (this very machine) only stand-ins
POWER_COMMANDS = ("shutdown", "poweroff", "halt", "reboot", "systemctl", "init", "telinit")
ENTRY_TIMEOUT_S = 600
START_TIMEOUT_S = 10
_ENV_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


@dataclass(frozen=True)
class CronEntry:
    """One `/etc/cron.d` line: its time fields, user and command, and the file's env lines."""

    fields: tuple[str, ...]
    user: str
    command: str
    env: tuple[tuple[str, str], ...]
    source: str


def field_matches(spec: str, value: int, low: int, high: int) -> bool:
    """Pure: whether one cron time field (`*`, `5`, `1-5`, `*/15`, `1,30`) matches `value`."""
    for part in spec.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdecimal() else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            if not (a.isdecimal() and b.isdecimal()):
                return False
            start, end = int(a), int(b)
        elif base.isdecimal():
            start = int(base)
            end = high if step_text else start
        else:
            return False  # (names such as `mon`, `@reboot`: not used by gpuonboard's entries)
        if start <= value <= end and (value - start) % step == 0:
            return True
    return False


def entry_due(fields: Sequence[str], when: dt.datetime) -> bool:
    """Pure: whether an entry's five time fields match `when` (minute resolution; Sunday is
    0 or 7; when both day-of-month and day-of-week are restricted, either matches, as in cron)."""
    minute, hour, dom, month, dow = fields
    weekday = when.isoweekday() % 7
    if not (field_matches(minute, when.minute, *_RANGES[0]) and field_matches(hour, when.hour, *_RANGES[1])):
        return False
    if not field_matches(month, when.month, *_RANGES[3]):
        return False
    dom_ok = field_matches(dom, when.day, *_RANGES[2])
    dow_ok = field_matches(dow, weekday, *_RANGES[4]) or (weekday == 0 and field_matches(dow, 7, *_RANGES[4]))
    if dom != "*" and dow != "*":
        return dom_ok or dow_ok
    return dom_ok and dow_ok


def parse_cron_file(text: str, source: str) -> list[CronEntry]:
    """Pure: the entries of one `/etc/cron.d` file (comments and blank lines skipped; a
    NAME=value line sets the environment of the entries below it)."""
    env: list[tuple[str, str]] = []
    entries = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ENV_LINE.match(line)
        if m and len(line.split(None, 6)) < 7:
            env.append((m.group(1), m.group(2).strip().strip("\"'")))
            continue
        fields = line.split(None, 6)
        if len(fields) == 7:
            entries.append(CronEntry(tuple(fields[:5]), fields[5], fields[6], tuple(env), source))
    return entries


def cron_entries(cron_dir: Path) -> list[CronEntry]:
    """Every entry of the files in `cron_dir`, as cron reads /etc/cron.d (names with a dot or
    a `~` are skipped, as Debian's cron does)."""
    if not cron_dir.is_dir():
        return []
    out: list[CronEntry] = []
    for path in sorted(cron_dir.iterdir()):
        if not path.is_file() or "." in path.name or path.name.endswith("~"):
            continue
        with contextlib.suppress(OSError, UnicodeDecodeError):
            out += parse_cron_file(path.read_text(), str(path))
    return out


def standin_text(command: str, marker: Path) -> str:
    """Pure: a power command's stand-in: it says it is one, records the call, touches `marker`."""
    return (
        "#!/bin/sh\n"
        f"# {command}: simulated server stand-in (gpuonboard.testing.cronrunner); never powers off\n"
        f"echo \"simulated server: '{command} $*' not run (a stand-in)\"\n"
        f"touch '{marker}'\n"
    )


def write_standins(host_dir: Path) -> Path:
    """The stand-ins dir of a host (first on its cron entries' PATH)."""
    from gpuonboard.testing.toolbox import add_executable

    where = host_dir / STANDINS_DIR
    for command in POWER_COMMANDS:
        add_executable(where, command, standin_text(command, host_dir / "shutdown-ran"))
    return where


def entry_env(entry: CronEntry, host_dir: Path) -> dict[str, str]:
    """cron's environment for an entry on this simulated host (its HOME is the host's home)."""
    env = {
        "SHELL": "/bin/sh",
        "PATH": f"{host_dir / STANDINS_DIR}:{CRON_PATH}",
        "HOME": str(host_dir / "home"),
        "LOGNAME": entry.user,
        "USER": entry.user,
        "GPUONBOARD_TESTHOST": host_dir.name,
        "LANG": "C",
    }
    env.update(entry.env)
    if "PATH" in dict(entry.env):
        env["PATH"] = f"{host_dir / STANDINS_DIR}:{env['PATH']}"  # (the stand-ins stay first)
    return env


def run_due(host_dir: Path, cron_dir: Path, when: dt.datetime | None = None) -> list[str]:
    """Run the entries due at `when` (None: every entry, once: `sim.cron`); one log line each."""
    write_standins(host_dir)
    me = getpass.getuser()
    lines = []
    for entry in cron_entries(cron_dir):
        if when is not None and not entry_due(entry.fields, when):
            continue
        if entry.user != me:
            lines.append(f"{entry.source}: skipped (user {entry.user}; this simulator runs as {me})")
            continue
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", entry.command],
                env=entry_env(entry, host_dir),
                cwd=host_dir / "home",
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=ENTRY_TIMEOUT_S,
                check=False,
            )
            lines.append(f"{entry.source}: ran {entry.command!r} (exit {done.returncode})")
        except subprocess.TimeoutExpired:
            lines.append(f"{entry.source}: {entry.command!r} ran past {ENTRY_TIMEOUT_S} s; killed")
    return lines


def log(host_dir: Path, lines: Sequence[str]) -> None:
    """Append to the host's cron.log (what ran, when)."""
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    with (host_dir / LOG_FILE).open("a") as fh:
        fh.writelines(f"{stamp} {line}\n" for line in lines)


def minutes() -> Iterator[dt.datetime]:
    """Each minute's start from now on (sleeps until it)."""
    while True:
        now = time.time()
        time.sleep(60 - now % 60 + 0.05)
        yield dt.datetime.now().replace(second=0, microsecond=0)


def name_process(name: bytes) -> None:
    """Set this process's name (what `pgrep -x` matches); Linux only, silently elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(15, name, 0, 0, 0)  # PR_SET_NAME


def _exit_unnamed(*_: object) -> None:
    """Exit on SIGTERM under another name: where nothing reaps this orphan (a container whose
    PID 1 does not), its zombie named `cron` would pass later `pgrep -x cron` checks."""
    name_process(b"sim-cron-ended")
    sys.exit(0)


def main(argv: Sequence[str]) -> int:
    """`HOST_DIR CRON_DIR [--once]`: run due entries each minute (or every entry once)."""
    host_dir, cron_dir = Path(argv[0]).resolve(), Path(argv[1])
    if "--once" in argv[2:]:
        lines = run_due(host_dir, cron_dir)
        log(host_dir, lines or ["(no cron entry)"])
        print("\n".join(lines or [f"no cron entry in {cron_dir}"]))
        return 0
    name_process(b"cron")
    signal.signal(signal.SIGTERM, _exit_unnamed)
    log(host_dir, [f"simulated cron started: reads {cron_dir} each minute"])
    for when in minutes():
        log(host_dir, run_due(host_dir, cron_dir, when))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def runner_of(pid: int, host_dir: Path) -> bool:
    """True only when `pid` is this host's cron runner (its command line names this module and
    exactly that host dir): sim.down stops nothing else."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return False
    return b"gpuonboard.testing.cronrunner" in argv and str(host_dir).encode() in argv


def start(host_dir: Path, cron_dir: Path) -> int:
    """Start this host's runner (detached, own session; its pid in HOST_DIR/cron.pid) unless
    it runs; its pid."""
    running = running_pid(host_dir)
    if running is not None:
        return running
    write_standins(host_dir)
    with open(os.devnull, "rb") as null, (host_dir / LOG_FILE).open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpuonboard.testing.cronrunner", str(host_dir), str(cron_dir)],
            stdin=null,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    (host_dir / PID_FILE).write_text(f"{proc.pid}\n")
    # named `cron` only once Python has started: wait for it, so that a command run right after
    # sim.up (`invoke autostop` asks whether a cron daemon runs) finds it
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "cron":
                break
        time.sleep(0.02)
    return proc.pid


def running_pid(host_dir: Path) -> int | None:
    """The pid of this host's runner while it runs, else None."""
    from gpuonboard.testing.hosts import process_alive

    try:
        pid = int((host_dir / PID_FILE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if runner_of(pid, host_dir) and process_alive(pid) else None


def stop(host_dir: Path) -> bool:
    """Stop this host's runner by its pid (only when it is this host's runner); True if it ran."""
    from gpuonboard.testing.hosts import process_alive

    pid = running_pid(host_dir)
    (host_dir / PID_FILE).unlink(missing_ok=True)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return True
