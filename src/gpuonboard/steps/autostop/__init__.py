"""`autostop` (install or remove the idle-shutdown watcher) and `autostop_status`.

The watcher is a POSIX sh script (templates/remote/autostop.sh.j2) that cron runs every
minute; ALL decision logic lives in that script (tested directly with a controllable clock).
This step only renders the script, a shell-sourceable config and the cron entry, compares
their sha256 with what the ONE batched fact probe found, and writes the difference in one
remote command (temp file + rename each; the cron entry last, so cron never runs a
half-installed watcher). Paths come from args (host vars in the CLI) so tests on loopback
hosts write into temp dirs.
"""

from __future__ import annotations

import hashlib
import math
import posixpath
import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpuonboard import shell, termtext
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, truthy
from gpuonboard.units import parse_duration

if TYPE_CHECKING:
    from gpuonboard.inventory import Host

SCRIPT = "autostop.sh"
CONF = "autostop.conf"
CRON_NAME = "gpuonboard-autostop"
CRON_MARKER = "# gpuonboard-autostop (managed by gpuonboard; remove with: invoke autostop --cancel)"
# Everything the watcher or this step may create inside the autostop dir (--cancel removes these).
OWNED_FILES = (
    SCRIPT,
    CONF,
    "state",
    "state.tmp",
    "lease",
    "lease_up",
    "installed_at",
    "max_since",
    "autostop.log",
    "autostop.log.1",
)
DEFAULT_ROOT_DIR = "/var/lib/gpuonboard/autostop"
# Is a cron daemon running? Its process (Debian's cron, cronie's/busybox's crond, fcron), or,
# where /proc hides other users' processes from a non-root login, systemd's word for it.
CRON_DAEMON_PROBE = (
    "if command -v pgrep >/dev/null 2>&1 && pgrep -x 'cron|crond|fcron' >/dev/null 2>&1;"
    ' then echo "crond yes"; elif command -v systemctl >/dev/null 2>&1 &&'
    " { systemctl is-active --quiet cron || systemctl is-active --quiet crond; } 2>/dev/null;"
    ' then echo "crond yes"; elif command -v pgrep >/dev/null 2>&1; then echo "crond no"; fi'
)
NO_CRON_DAEMON = "cron daemon: NOT RUNNING (no cron or crond process): the watcher never runs; start cron"
# Commands that power a box off, which only root may run (a non-root watcher needs sudo).
POWER_COMMANDS = frozenset({"shutdown", "poweroff", "halt", "reboot", "init", "telinit", "systemctl"})
DEFAULT_USER_DIR = "$HOME/.local/state/gpuonboard/autostop"  # expanded by the remote shell
DEFAULT_CRON_DIR = "/etc/cron.d"
CRON_MODES = ("auto", "cron.d", "crontab")

DURATION_ARGS = {
    "idle": "30m",
    "grace": "5m",
    "heartbeat": "0",
    "margin": "5m",
    "before_timeout": "10m",
}
MAX_DURATION = 366 * 86400  # any duration flag: at most 366d (shell arithmetic stays far from overflow)
MIN_HEARTBEAT = 300  # a heartbeat shorter than 5m is a typo (`--heartbeat 6` is 6 seconds)
MIN_MAX_HOURS, MAX_MAX_HOURS = 0.25, 8760.0
PID_MAX = 4194304  # Linux's PID_MAX_LIMIT
BILLING_UNITS = ("second", "minute", "hour")  # as a vendor profile's `billing.unit` takes them


def _probe_name(kind: str, key: str) -> str:
    return f"{kind}:{hashlib.sha1(key.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def _seconds(value: Any, name: str) -> int:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise StepArgsError(f"argument {name!r}: {exc}") from None
    if not seconds <= MAX_DURATION:  # also catches inf/nan from a number with hundreds of digits
        raise StepArgsError(f"argument {name!r} must be at most 366d, not {value!r}")
    return int(round(seconds))


def _check_path(value: str, name: str) -> str:
    if not value:
        return value
    if not posixpath.isabs(value):
        raise StepArgsError(f"argument {name!r} must be an absolute path, not {value!r}")
    # cron reads '%' as a newline in a command, and a newline would end the entry
    if any(c in value for c in "%\n\r"):
        raise StepArgsError(f"argument {name!r} must not contain '%' or a line break: {value!r}")
    return posixpath.normpath(value)


# Host vars the autostop steps take (see autostop.HOST_PATHS), and what each must be.
TEXT_VARS = ("autostop_dir", "cron_dir", "autostop_cron")


def check_vars(host_vars: Mapping[str, Any], shutdown: bool) -> None:
    """The host's autostop vars are texts (a YAML `key:` with no value is null, which the
    playbook renders as the text 'None': a shutdown command 'None' never shut anything down),
    and the shutdown command a non-blank line; the error names the var."""
    names = TEXT_VARS + (("autostop_shutdown_command",) if shutdown else ())
    for name in names:
        if name not in host_vars:
            continue
        value = host_vars[name]
        if not isinstance(value, str):
            what = _kind_of(value)
            raise StepArgsError(f"vars.{name} must be a text, not {what}; set it or remove it")
        if name == "autostop_shutdown_command" and not value.strip():
            raise StepArgsError(
                f"vars.{name} is blank; give the command that powers the box off, or remove it to use"
                " the vendor's shutdown_command"
            )
    if shutdown and "autostop_billing_anchor" in host_vars:
        anchor = host_vars["autostop_billing_anchor"]
        if _whole(anchor) is None:
            raise StepArgsError(
                f"vars.autostop_billing_anchor must be epoch seconds (a whole number), not {anchor!r}"
            )


def _kind_of(value: Any) -> str:
    """A YAML value's kind, as the user wrote it."""
    if value is None:
        return "null (a key with no value)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a yes/no)"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    return "a list" if isinstance(value, list | tuple) else repr(value)


def _resolve_dir(dir_arg: str) -> str:
    """sh snippet that sets $d: the configured dir, or the default for root / other users."""
    if dir_arg:
        return f"d={shell.quote(dir_arg)}"
    return f'if [ "$(id -u)" = 0 ]; then d={DEFAULT_ROOT_DIR}; else d="{DEFAULT_USER_DIR}"; fi'


def _cron_mode_sh(mode: str) -> str:
    """sh snippet that sets $m to cron.d or crontab."""
    if mode == "auto":
        return 'if [ "$(id -u)" = 0 ]; then m=cron.d; else m=crontab; fi'
    return f"m={mode}"


@dataclass(frozen=True)
class AutostopSettings:
    """Validated watcher settings (seconds as ints)."""

    idle: int
    grace: int
    heartbeat: int
    margin: int
    before_timeout: int
    max_seconds: int
    job: str
    pid: str
    container: str
    before_shutdown: str
    force: bool
    billing_aware: bool
    billing_anchor: int
    gpu_threshold: int
    ssh_sessions: bool
    shutdown_command: str
    gpu_processes: bool = False
    # why billing-aware is on or off, for `status` (see billing_mode): "auto" (from the vendor's
    # billing unit), "on" or "off" (asked for); the unit ("" where the profile names none) and
    # the vendor profile it came from
    billing_set: str = "auto"
    billing_unit: str = ""
    billing_vendor: str = ""
    # where the installing login found these (cron's PATH may lack their directories); "" when not
    nvidia_smi: str = ""
    docker: str = ""

    def conf_text(self) -> str:
        """The shell-sourceable config file; every value quoted."""
        values: list[tuple[str, object]] = [
            ("IDLE", self.idle),
            ("GRACE", self.grace),
            ("HEARTBEAT", self.heartbeat),
            ("MARGIN", self.margin),
            ("BEFORE_TIMEOUT", self.before_timeout),
            ("MAX_SECONDS", self.max_seconds),
            ("JOB", self.job),
            ("PID", self.pid),
            ("CONTAINER", self.container),
            ("BEFORE_SHUTDOWN", self.before_shutdown),
            ("FORCE", int(self.force)),
            ("BILLING_AWARE", int(self.billing_aware)),
            ("BILLING_ANCHOR", self.billing_anchor),
            ("BILLING_SET", self.billing_set),
            ("BILLING_UNIT", self.billing_unit),
            ("BILLING_VENDOR", self.billing_vendor),
            ("GPU_THRESHOLD", self.gpu_threshold),
            ("SSH_SESSIONS", int(self.ssh_sessions)),
            ("GPU_PROCESSES", int(self.gpu_processes)),
            ("SHUTDOWN_COMMAND", self.shutdown_command),
            ("NVIDIA_SMI", self.nvidia_smi),
            ("DOCKER", self.docker),
        ]
        lines = ["# gpuonboard autostop settings (written by `invoke autostop`; rerun it to change them)"]
        lines += [f"{k}={shell.quote(v)}" for k, v in values]
        return "\n".join(lines) + "\n"


def parse_settings(args: Mapping[str, Any]) -> AutostopSettings:
    """Validate the watcher arguments; each error names the argument."""
    secs = {k: _seconds(args.get(k, d) or d, k) for k, d in DURATION_ARGS.items()}
    if secs["idle"] < 60:
        raise StepArgsError(
            f"argument 'idle' must be at least 1m (cron checks once a minute), not {args['idle']!r}"
        )
    if secs["margin"] >= 3600:
        raise StepArgsError(f"argument 'margin' must be less than an hour, not {args['margin']!r}")
    if secs["before_timeout"] < 1:  # (`timeout 0 CMD` means no limit at all)
        raise StepArgsError(
            "argument 'before_timeout' must be at least 1s (0 would mean no limit),"
            f" not {args['before_timeout']!r}"
        )
    if 0 < secs["heartbeat"] < MIN_HEARTBEAT:
        raise StepArgsError(
            "argument 'heartbeat' must be at least 5m (a bare number counts as seconds: write 6h"
            f" for six hours), not {args['heartbeat']!r}"
        )
    max_hours = _max_hours(args.get("max_hours"))
    pid = str(args.get("pid") or "")
    if pid and not pid.isdecimal():
        raise StepArgsError(f"argument 'pid' must be a process id (digits), not {pid!r}")
    if pid and not 2 <= int(pid) <= PID_MAX:
        raise StepArgsError(
            f"argument 'pid' must be a process id from 2 to {PID_MAX} (0 and 1 are always alive,"
            f" so the box would never count as idle), not {pid!r}"
        )
    job, container = str(args.get("job") or ""), str(args.get("container") or "")
    if sum(bool(x) for x in (job, pid, container)) > 1:
        raise StepArgsError("give only one of the arguments 'job', 'pid' and 'container'")
    raw_threshold = args.get("gpu_threshold")
    threshold = _whole(raw_threshold if raw_threshold not in (None, "") else 5)
    if threshold is None or not 0 <= threshold <= 100:
        raise StepArgsError(
            f"argument 'gpu_threshold' must be a whole percentage from 0 to 100, not {raw_threshold!r}"
        )
    raw_anchor = args.get("billing_anchor") or 0
    anchor = _whole(raw_anchor)
    if anchor is None:
        raise StepArgsError(f"argument 'billing_anchor' must be epoch seconds (digits), not {raw_anchor!r}")
    _check_grace(secs, max_hours, args)
    billing_set, billing_unit = billing_mode(args)
    billing_aware = billing_set == "on" or (billing_set == "auto" and billing_unit == "hour")
    shutdown_command = str(args.get("shutdown_command") or "shutdown -h now")
    if "\n" in shutdown_command or "\r" in shutdown_command:
        raise StepArgsError("argument 'shutdown_command' must be one line")
    if not shutdown_command.strip():
        # `sh -c "  "` succeeds: the watcher would log a shutdown and the box would keep running
        raise StepArgsError("argument 'shutdown_command' must be a command, not blank")
    return AutostopSettings(
        idle=secs["idle"],
        grace=secs["grace"],
        heartbeat=secs["heartbeat"],
        margin=secs["margin"],
        before_timeout=max(1, secs["before_timeout"]),
        max_seconds=int(round(max_hours * 3600)),
        job=job,
        pid=pid,
        container=container,
        before_shutdown=str(args.get("before_shutdown") or ""),
        force=truthy(args.get("force", False), "force"),
        billing_aware=billing_aware,
        billing_anchor=anchor,
        billing_set=billing_set,
        billing_unit=billing_unit,
        # (a vendor id is a file name: one line of printable text in the config and `status`)
        billing_vendor=termtext.for_terminal(str(args.get("billing_vendor") or ""), keep=""),
        gpu_threshold=threshold,
        ssh_sessions=truthy(args.get("ssh_sessions", False), "ssh_sessions"),
        shutdown_command=shutdown_command,
        gpu_processes=truthy(args.get("gpu_processes", False), "gpu_processes"),
    )


def billing_mode(args: Mapping[str, Any]) -> tuple[str, str]:
    """("auto" | "on" | "off", the billing unit or ""): billing-aware is asked for (on/off), or
    follows the vendor's billing unit (auto). The unit is "" where the vendor profile names none:
    an unknown unit is never taken for hourly billing (which would keep an idle box up to the end
    of an hour that may not be paid at all)."""
    unit = str(args.get("billing_unit") or "").strip()
    if unit not in ("", *BILLING_UNITS):
        raise StepArgsError(
            f"argument 'billing_unit' must be one of {', '.join(BILLING_UNITS)}, not {unit!r}"
        )
    billing = str(args.get("billing_aware", "auto")).strip().lower()
    if billing == "auto":
        return "auto", unit
    return ("on" if truthy(billing, "billing_aware") else "off"), unit


def _whole(value: Any) -> int | None:
    """A whole number written in ASCII digits (int() also takes '1_0', ' 7 ' and other scripts' digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


def _check_grace(secs: Mapping[str, int], max_hours: float, args: Mapping[str, Any]) -> None:
    """A hard trigger warns `grace` before its deadline and acts at it: a grace as long as the
    deadline itself would put the shutdown later than the install message says (and a grace of
    366d would disable max-hours)."""
    grace = secs["grace"]
    limits = (("max_hours", int(round(max_hours * 3600))), ("heartbeat", secs["heartbeat"]))
    for name, limit in limits:
        if limit > 0 and grace >= limit:
            raise StepArgsError(
                f"argument 'grace' must be shorter than argument {name!r} ({_fmt_span(limit)}), not"
                f" {args.get('grace') or DURATION_ARGS['grace']!r}: the warning goes out one grace period"
                " before that deadline"
            )


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.I)


def _max_hours(value: Any) -> float:
    """`max_hours` as a float: 0 (off) or a finite number of hours in the allowed range."""
    text = str(value if value is not None else "").strip()
    try:
        if text and not _NUMBER.fullmatch(text):  # float() also takes '1_0' (10) and other digits
            raise ValueError(text)
        hours = float(text or 0)
    except (TypeError, ValueError):
        raise StepArgsError(f"argument 'max_hours' must be a number of hours, not {value!r}") from None
    if hours == 0:
        return 0.0
    if not (math.isfinite(hours) and MIN_MAX_HOURS <= hours <= MAX_MAX_HOURS):
        raise StepArgsError(
            f"argument 'max_hours' must be a number of hours from {MIN_MAX_HOURS:g} to {MAX_MAX_HOURS:g}"
            f" (or 0 for no deadline), not {text!r}"
        )
    return hours


def comment_label(text: str) -> str:
    """`text` as one shell word that stays on its line: every character that is not printable
    (a newline, a carriage return, U+2028, an escape) written as its Python escape (`\\n`).
    A host name in the script's comment line must never start a line of its own (cron runs
    the script as root every minute); the inventory refuses such names, this is the second wall."""
    return shell.quote(termtext.for_terminal(text, keep=""))


def render_script(project: Any, host: str, directory: str) -> str:
    """The watcher script for one host and install directory (`host_label`: the host name for
    the comment line, see comment_label; `dir_q`: the directory as one shell word)."""
    from gpuonboard.templating import render_file

    return render_file(
        project,
        "remote/autostop.sh.j2",
        host=host,
        host_label=comment_label(host),
        dir_q=shell.quote(directory),
    )


def cron_file_text(directory: str) -> str:
    """/etc/cron.d format: minute hour dom month dow USER command."""
    return f"{CRON_MARKER}\n* * * * * root {_cron_command(directory)}\n"


def _cron_command(directory: str) -> str:
    script = shell.quote(posixpath.join(directory, SCRIPT))
    log = shell.quote(posixpath.join(directory, "autostop.log"))
    return f"/bin/sh {script} tick >>{log} 2>&1"


def crontab_lines(directory: str) -> list[str]:
    """The marker and entry in a user's crontab (no user field)."""
    return [CRON_MARKER, f"* * * * * {_cron_command(directory)}"]


@dataclass
class _Remote:
    """What the probe found on the host."""

    uid: str = ""
    user: str = ""
    dir: str = ""
    unsafe: tuple[str, str] | None = None  # (path, why): the dir or one above it others could use
    cron_daemon: str = ""  # "yes", "no", or "" (could not tell: no pgrep)
    mode: str = ""
    files: dict[str, tuple[str, str]] | None = None  # name -> (mode, sha256)
    present: tuple[str, ...] = ()
    cron_file: tuple[str, str] | None = None
    crontab: tuple[str, ...] = ()
    crontab_bin: bool = False
    now: int | None = None  # the host's clock when probed
    old_max: int | None = None  # MAX_SECONDS in the installed config
    max_since: int | None = None  # when the installed --max-hours was set
    installed_at: int | None = None
    tools: dict[str, str] = field(default_factory=dict)  # nvidia-smi/docker -> the login's path
    pgrep: bool = True  # the probe found pgrep (False: none, so a --job could never be seen)
    ps: bool = True  # the probe found ps (False: none, so --ssh-sessions could never see a session)


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdecimal() and len(text) <= 12 else None


def _parse_probe(text: str) -> _Remote:
    r = _Remote(files={})
    present: list[str] = []
    crontab: list[str] = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "uid":
            r.uid = rest
        elif kind == "user":
            r.user = rest
        elif kind == "dirunsafe":
            path, _, why = rest.partition("\t")
            r.unsafe = (path, why)
        elif kind == "crond":
            r.cron_daemon = rest
        elif kind == "dir":
            r.dir = rest
        elif kind == "mode":
            r.mode = rest
        elif kind == "file":
            name, mode, sha = (rest.split() + ["", "", ""])[:3]
            assert r.files is not None
            r.files[name] = (mode, sha)
        elif kind == "present":
            present.append(rest)
        elif kind == "cronfile":
            mode, sha = (rest.split() + ["", ""])[:2]
            r.cron_file = (mode, sha)
        elif kind == "crontab":
            crontab.append(rest)
        elif kind == "crontab_bin":
            r.crontab_bin = rest == "yes"
        elif kind == "now":
            r.now = _int_or_none(rest)
        elif kind == "oldmax":
            r.old_max = _int_or_none(rest.strip("'\""))
        elif kind == "maxsince":
            r.max_since = _int_or_none(rest)
        elif kind == "installedat":
            r.installed_at = _int_or_none(rest)
        elif kind == "tool":
            name, _, path = rest.partition(" ")
            if name in WATCHED_TOOLS and _tool_path(path):
                r.tools[name] = path
        elif kind == "pgrep":
            r.pgrep = rest != "no"
        elif kind == "ps":
            r.ps = rest != "no"
    r.present, r.crontab = tuple(present), tuple(crontab)
    return r


# sh: `unsafe DIR` prints `PATH<TAB>WHY` for the first of DIR and the directories above it that
# another user could use to change what root's cron runs from DIR (a symbolic link, another
# user's, or writable by group/other; above DIR a sticky dir such as /tmp is fine), and
# returns 1 when there is none (as OpenSSH's StrictModes judges a key file's dirs). DIR itself
# may not exist yet (mkdir -p makes it 0700).
UNSAFE_DIR_FN = (
    "unsafe() { u=$(id -u); x=$1; top=1; "
    "while :; do "
    'if [ -L "$x" ]; then printf \'%s\\tis a symbolic link\\n\' "$x"; return 0; fi; '
    'if [ -e "$x" ]; then o=$(stat -c %u -- "$x"); a=$(stat -c %a -- "$x"); '
    'if [ "$o" != 0 ] && [ "$o" != "$u" ]; then '
    'printf \'%s\\tis owned by another user (uid %s)\\n\' "$x" "$o"; return 0; fi; '
    "if [ $((0$a & 022)) -ne 0 ] && { [ $top = 1 ] || [ $((0$a & 01000)) -eq 0 ]; }; then "
    'printf \'%s\\tis writable by other users (mode %s)\\n\' "$x" "$a"; return 0; fi; fi; top=0; '
    '[ "$x" = / ] && return 1; x=$(dirname -- "$x"); done; }'
)


# Commands the watcher runs that may live outside cron's PATH (/usr/bin:/bin): the install
# records where the login finds them, and the watcher runs them from there (see conf_text).
WATCHED_TOOLS = ("nvidia-smi", "docker")


def _tool_path(path: str) -> bool:
    """An absolute path of a command, as `command -v` prints it (not an alias or a function)."""
    return path.startswith("/") and not path.endswith("/") and path.isprintable()


def _state_probe_command(dir_arg: str, cron_dir: str, cron_mode: str) -> str:
    owned = " ".join(shell.quote(f) for f in OWNED_FILES)
    marker = shell.quote(CRON_MARKER)
    return (
        f"{_resolve_dir(dir_arg)}; {_cron_mode_sh(cron_mode)}; c={shell.quote(cron_dir)}; "
        'echo "uid $(id -u)"; echo "user $(id -un 2>/dev/null)"; echo "dir $d"; echo "mode $m"; '
        f'echo "now $(date +%s)"; {UNSAFE_DIR_FN}; if x=$(unsafe "$d"); then echo "dirunsafe $x"; fi; '
        f"{CRON_DAEMON_PROBE}; "
        f'[ -f "$d/{CONF}" ] && echo "oldmax $(sed -n "s/^MAX_SECONDS=//p" "$d/{CONF}" | head -n 1)"; '
        '[ -f "$d/max_since" ] && echo "maxsince $(head -c 20 "$d/max_since")"; '
        '[ -f "$d/installed_at" ] && echo "installedat $(head -c 20 "$d/installed_at")"; '
        f'for f in {SCRIPT} {CONF}; do [ -f "$d/$f" ] && echo "file $f $(stat -c %a "$d/$f")'
        ' $(sha256sum < "$d/$f" | cut -c1-64)"; done; '
        f'for f in {owned} lock; do [ -e "$d/$f" ] && echo "present $f"; done; '
        f'[ -f "$c/{CRON_NAME}" ] && echo "cronfile $(stat -c %a "$c/{CRON_NAME}")'
        f' $(sha256sum < "$c/{CRON_NAME}" | cut -c1-64)"; '
        'if command -v crontab >/dev/null 2>&1; then echo "crontab_bin yes"; '
        f"crontab -l 2>/dev/null | awk -v m={marker} "
        '\'f{print "crontab " $0; f=0; next} $0==m{print "crontab " $0; f=1}\'; '
        'else echo "crontab_bin no"; fi; '
        f"for t in {' '.join(WATCHED_TOOLS)}; do"
        ' p=$(command -v "$t" 2>/dev/null) && echo "tool $t $p"; done; '
        'command -v pgrep >/dev/null 2>&1 || echo "pgrep no"; '
        'command -v ps >/dev/null 2>&1 || echo "ps no"; true'
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _fmt_time(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _fmt_span(seconds: int) -> str:
    """1h02m03s, like the watcher's fmt_span."""
    s = max(0, seconds)
    h, m, r = s // 3600, s % 3600 // 60, s % 60
    if h:
        return f"{h}h{m:02d}m{r:02d}s"
    return f"{m}m{r:02d}s" if m else f"{r}s"


def max_hours_anchor(settings: AutostopSettings, r: _Remote) -> int | None:
    """When the max-hours deadline counts from: the time --max-hours got its current value.

    A rerun with the same value keeps the recorded time (idempotent); a new value, or
    max-hours added to a running watcher, counts from now (the host's clock). A watcher
    installed before this record existed keeps its old deadline (from its install).
    None when max-hours is off.
    """
    if settings.max_seconds == 0:
        return None
    now = r.now if r.now is not None else int(time.time())
    if r.old_max == settings.max_seconds:
        if r.max_since is not None:
            return r.max_since
        if r.installed_at is not None:
            return r.installed_at
    return now


def max_hours_sentence(settings: AutostopSettings, anchor: int, now: int) -> str:
    """When the max-hours deadline falls, or that it has passed and what happens then."""
    due = anchor + settings.max_seconds
    if due > now:
        return f"max-hours deadline {_fmt_time(due)} (in {_fmt_span(due - now)})"
    return (
        f"the max-hours deadline {_fmt_time(due)} has passed: the watcher warns at its next check"
        f" and shuts the box down {_fmt_span(settings.grace)} (the grace period) after that warning"
    )


def _power_command(command: str) -> bool:
    """Whether `command` starts with a power-off tool that only root may run (after any
    VAR=value words; `sudo ...` or a vendor's API call is not one)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    words = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
    return bool(words) and posixpath.basename(words[0]) in POWER_COMMANDS


def with_tools(settings: AutostopSettings, r: _Remote) -> AutostopSettings:
    """The settings plus where the login found nvidia-smi (and docker, for --container): cron
    runs the watcher with PATH=/usr/bin:/bin, which may not hold them."""
    docker = r.tools.get("docker", "") if settings.container else ""
    return replace(settings, nvidia_smi=r.tools.get("nvidia-smi", ""), docker=docker)


def install_problem(host: str, settings: AutostopSettings, r: _Remote) -> str | None:
    """Why a watcher installed as the probe found the host would never shut it down, or would
    let others run commands as this login; None when there is nothing in the way."""
    who = r.user or f"uid {r.uid}"
    if r.cron_daemon == "no":
        return (
            f"host {host}: no cron daemon runs there (no cron or crond process), so the watcher would"
            " never run and the box would never be shut down: start cron (systemctl enable --now cron,"
            " or service cron start where there is no systemd), then rerun"
        )
    if r.uid != "0" and _power_command(settings.shutdown_command):
        return (
            f"host {host}: the watcher would run as {who}, not root, which cannot run the shutdown"
            f" command {settings.shutdown_command!r}: pass --shutdown-command"
            f" {shell.quote('sudo -n ' + settings.shutdown_command)} (needs passwordless sudo for it),"
            " or connect as root"
        )
    if settings.job and not r.pgrep:
        return (
            f"host {host}: --job {settings.job!r} needs pgrep, which this host lacks, so the watcher"
            " could never see the job running: install procps (apt-get install procps), or watch"
            " the job by --pid or --container instead"
        )
    if settings.ssh_sessions and not r.ps:
        return (
            f"host {host}: --ssh-sessions needs ps, which this host lacks, so the watcher could never"
            " see an SSH session without a terminal (VS Code Remote, ssh -N tunnels) and would count"
            " the box busy for ever: install procps (apt-get install procps), or leave --ssh-sessions out"
        )
    if r.unsafe is not None:
        path, why = r.unsafe
        subject = f"the autostop directory {r.dir}"
        if posixpath.normpath(path) != posixpath.normpath(r.dir):
            subject += f" lies under {path}, which"
        return (
            f"host {host}: {subject} {why}, and cron runs the watcher from it as {who} every minute,"
            f" so another user could run commands as {who}: set vars.autostop_dir to a directory only"
            " this login can write (and the directories above it), or remove it to use the default"
        )
    return None


def _write_file_sh(content: str, dest_var: str, name: str, mode: str) -> str:
    """sh: write content to a temp file beside $dest_var/name (O_EXCL: noclobber, so a name
    planted there meanwhile, a symlink included, is never written through), chmod, rename."""
    tmp = f'"${dest_var}/.{name}.$$.tmp"'
    return (
        f"rm -f {tmp}; (set -C; printf %s {shell.quote(content)} > {tmp}); chmod {mode} {tmp}; "
        f'mv -f {tmp} "${dest_var}/{name}"'
    )


class AutostopStep(Step):
    """Install (`state: present`) or remove (`state: absent`) the idle-shutdown watcher."""

    name = "autostop"
    read_only = False
    ARGS = {
        "state": "present (install/update, default) or absent (remove everything it installed)",
        "idle": "idle time before acting, e.g. 30m",
        "grace": "time between the warning and acting, e.g. 5m",
        "job": "busy while a command line contains this (literally) or a tmux/screen session has this name",
        "pid": "busy while this process id is alive",
        "container": "busy while this docker container is running",
        "max_hours": "hard deadline in hours (0.25..8760) after it was set, whatever the activity (0: off)",
        "heartbeat": "shut down when the lease is not renewed for this long, e.g. 6h (at least 5m; 0: off)",
        "before_shutdown": "command run before shutting down (e.g. upload the last checkpoint)",
        "before_timeout": "time limit for before_shutdown (default 10m)",
        "force": "shut down even when before_shutdown fails",
        "billing_aware": "auto (on when the vendor profile says billing.unit: hour), true or false",
        "billing_unit": "the vendor's billing unit (second | minute | hour; empty: unknown, never hourly)",
        "billing_vendor": "the vendor profile the billing unit comes from (shown by status)",
        "billing_anchor": "epoch seconds when billing started (default: boot time)",
        "margin": "billing-aware: act within this much of the end of a paid hour (default 5m)",
        "gpu_threshold": "a GPU above this utilisation percentage is busy (default 5)",
        "ssh_sessions": "busy while any user is logged in",
        "gpu_processes": "busy while any process holds GPU memory (nvidia-smi --query-compute-apps)",
        "shutdown_command": "command that powers the box off (vendor profile's shutdown_command)",
        "dir": "remote directory for the script, config, state and log",
        "cron_dir": "cron.d directory (default /etc/cron.d)",
        "cron": "auto (cron.d as root, crontab otherwise), cron.d or crontab",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.state = str(self.args.get("state") or "present")
        if self.state not in ("present", "absent"):
            raise StepArgsError(f"argument 'state' must be present or absent, not {self.state!r}")
        self.settings = parse_settings(self.args) if self.state == "present" else None
        self.dir_arg = _check_path(str(self.args.get("dir") or ""), "dir")
        self.cron_dir = _check_path(str(self.args.get("cron_dir") or DEFAULT_CRON_DIR), "cron_dir")
        self.cron_mode = str(self.args.get("cron") or "auto")
        if self.cron_mode not in CRON_MODES:
            raise StepArgsError(
                f"argument 'cron' must be one of {', '.join(CRON_MODES)}, not {self.cron_mode!r}"
            )
        command = _state_probe_command(self.dir_arg, self.cron_dir, self.cron_mode)
        self.state_probe = Probe(_probe_name("autostop", command), command)

    def check_host(self, host: Host) -> None:
        """The host's autostop vars, named, before connecting."""
        check_vars(host.vars, shutdown=self.state == "present")

    def probes(self) -> list[Probe]:
        """Where the watcher lives and the sha256 of what is installed."""
        return [self.state_probe]

    def _remote(self, ctx: StepContext) -> _Remote:
        out = ctx.facts.raw[self.state_probe.name]
        r = _parse_probe(out.stdout)
        if not r.dir or r.mode not in ("cron.d", "crontab"):
            detail = (out.stderr.strip().splitlines() or [f"exit code {out.exit_code}"])[-1]
            raise StepArgsError(f"host {ctx.host.name}: could not inspect the autostop files ({detail})")
        if self.dir_arg == "" and "$" in r.dir:
            raise StepArgsError(f"host {ctx.host.name}: HOME is not set; set vars.autostop_dir")
        return r

    def plan(self, ctx: StepContext) -> Plan:
        """Compare rendered script/config/cron entry with the host's (absent: list what remains)."""
        r = self._remote(ctx)
        if self.state == "absent":
            return self._plan_absent(r)
        assert self.settings is not None
        if r.mode == "crontab" and not r.crontab_bin:
            return Plan(
                False,
                f"host {ctx.host.name} runs as a non-root user and has no crontab command;"
                " install cron there or connect as root",
                failed=True,
            )
        settings = with_tools(self.settings, r)
        problem = install_problem(ctx.host.name, settings, r)
        if problem:
            return Plan(False, problem, failed=True)
        script = render_script(ctx.project, ctx.host.name, r.dir)
        conf = settings.conf_text()
        assert r.files is not None
        want = {SCRIPT: ("755", _sha(script)), CONF: ("600", _sha(conf))}
        changed = [n for n, v in want.items() if r.files.get(n) != v]
        if r.mode == "cron.d":
            cron_text = cron_file_text(r.dir)
            cron_ok = r.cron_file == ("644", _sha(cron_text))
        else:
            cron_text = "\n".join(crontab_lines(r.dir))
            cron_ok = list(r.crontab) == crontab_lines(r.dir)
        where = f"{self.cron_dir}/{CRON_NAME}" if r.mode == "cron.d" else "the user's crontab"
        anchor = max_hours_anchor(self.settings, r)
        if anchor is not None and anchor != r.max_since:
            changed.insert(0, "max_since")  # written before the config
        deadline = ""
        if anchor is not None:
            now = r.now if r.now is not None else int(time.time())
            deadline = "; " + max_hours_sentence(self.settings, anchor, now)
        if not cron_ok:
            changed.append(where)
        renew = self.settings.heartbeat > 0
        if not changed and not renew:
            return Plan(False, f"autostop watcher in {r.dir} is up to date ({where}){deadline}")
        diff = {
            "dir": r.dir,
            "cron": where,
            "before": {n: r.files.get(n, (None, None))[1] for n in want},
            "after": {n: v[1] for n, v in want.items()},
            "changed": changed,
        }
        parts = []
        if changed:
            verb = "install" if not r.files and not r.cron_file and not r.crontab else "update"
            parts.append(f"{verb} the autostop watcher ({', '.join(changed)})")
        if renew:
            parts.append("renew the heartbeat lease")
        data = (r, script, conf, cron_text, want, anchor)
        return Plan(True, " and ".join(parts) + deadline, diff=diff, data=data)

    def _plan_absent(self, r: _Remote) -> Plan:
        leftovers = [f"{r.dir}/{f}" for f in r.present]
        if r.cron_file is not None:
            leftovers.append(f"{self.cron_dir}/{CRON_NAME}")
        if r.crontab:
            leftovers.append("the crontab entry")
        if not leftovers:
            return Plan(False, "autostop is not installed")
        return Plan(True, "remove " + ", ".join(leftovers), diff={"removed": leftovers}, data=(r,))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """One remote command: write (or remove) every file, the cron entry last (first on removal)."""
        if self.state == "absent":
            return ctx.runner.run(shell.sh_c(self._remove_script(plan.data[0])))
        r, script, conf, cron_text, _, anchor = plan.data
        assert self.settings is not None
        steps = [
            "set -e; umask 077",
            f"d={shell.quote(r.dir)}",
            # a directory that exists (a chosen autostop_dir such as /data) keeps its mode
            '[ -d "$d" ] || { mkdir -p "$d"; chmod 700 "$d"; }',
            # checked again where it is written (the probe ran before the other steps)
            UNSAFE_DIR_FN,
            'if x=$(unsafe "$d"); then printf \'the autostop directory is not safe any more: %s\\n\' "$x"'
            " >&2; exit 3; fi",
            # before the config, so a tick never pairs a new --max-hours with an old start
            _write_file_sh(f"{anchor}\n", "d", "max_since", "600")
            if anchor is not None
            else 'rm -f "$d/max_since"',
            _write_file_sh(script, "d", SCRIPT, "755"),
            _write_file_sh(conf, "d", CONF, "600"),
            '[ -f "$d/installed_at" ] || date +%s > "$d/installed_at"',
        ]
        if self.settings.heartbeat > 0:
            # lease_up: the same moment in seconds since boot, and the boot: the watcher counts
            # the lease's age on the uptime within that boot (a step of the wall clock does not
            # make it run out early); written first, it names the lease it belongs to
            steps.append(
                "l=$(date +%s); u=$(cut -d. -f1 /proc/uptime 2>/dev/null || true); "
                "b=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true); "
                'printf \'%s %s %s\\n\' "$l" "$u" "$b" > "$d/.lease_up.tmp"; '
                'mv -f "$d/.lease_up.tmp" "$d/lease_up"; '
                'echo "$l" > "$d/.lease.tmp"; mv -f "$d/.lease.tmp" "$d/lease"'
            )
        if r.mode == "cron.d":
            steps += [
                f"c={shell.quote(self.cron_dir)}",
                'mkdir -p "$c"',
                # a name with a dot is ignored by cron, so the temp file never runs
                _write_file_sh(cron_text, "c", CRON_NAME, "644"),
            ]
        else:
            steps.append(self._crontab_edit(crontab_lines(r.dir)))
        steps.append(f'cd "$d"; sha256sum {SCRIPT} {CONF}')
        # on sh's stdin, not in its arguments: the config holds --before-shutdown's command (it may
        # carry a token: the file is 0600 for it), and a command line is visible to every user
        # of the host (`ps`) while it runs
        return ctx.runner.run("sh -s", stdin="\n".join(steps).encode("utf-8", "surrogateescape") + b"\n")

    @staticmethod
    def _crontab_edit(add: list[str]) -> str:
        """sh: drop our marker line and the entry after it, then append `add` (may be empty)."""
        marker = shell.quote(CRON_MARKER)
        keep = (
            f"crontab -l 2>/dev/null | awk -v m={marker}"
            " 'skip{skip=0; next} $0==m{skip=1; next} {print}'"
        )
        if add:
            return f"( {keep}; printf '%s\\n' {shell.join(add)} ) | crontab -"
        return f"{keep} | crontab -"

    def _remove_script(self, r: _Remote) -> str:
        lines = ["set -e", f"d={shell.quote(r.dir)}"]
        if r.cron_file is not None:
            lines.append(f"rm -f {shell.quote(posixpath.join(self.cron_dir, CRON_NAME))}")
        if r.crontab:
            lines.append(self._crontab_edit([]))
        owned = " ".join(f'"$d"/{shell.quote(f)}' for f in OWNED_FILES)
        # A tick that is running (e.g. its before_shutdown, up to before_timeout) would shut
        # the box down after this cancel: stop it by the pid in its lock, after checking that
        # the pid still is an autostop.sh process (a stale lock's pid may belong to another
        # process now). Its before_shutdown command, if running, is left to finish. Its lock
        # is removed only once it is gone; a tick that survives finds its config missing
        # before acting and exits without shutting down (removing its lock and the dir).
        tick_alive = 'grep -aqF autostop.sh "/proc/$p/cmdline" 2>/dev/null'
        lines += [
            'p=$(cat "$d/lock/pid" 2>/dev/null || true)',
            'case "$p" in ""|*[!0-9]*) p="" ;; esac',
            f'if [ -n "$p" ] && {tick_alive}; then kill "$p" 2>/dev/null || true; i=0; '
            f'while [ "$i" -lt 50 ] && {tick_alive}; do sleep 0.1; i=$((i + 1)); done; fi',
            # only the files we own: a mistaken autostop_dir never loses anything else
            f"rm -f {owned}",
            f'if [ -z "$p" ] || ! {tick_alive}; then rm -rf "$d/lock"; fi',
            'rmdir "$d" 2>/dev/null || true',
        ]
        return "\n".join(lines)

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The command must succeed and the host must hold the rendered files."""
        if not applied.ok:
            err = (applied.stderr.strip().splitlines() or [f"exit code {applied.exit_code}"])[-1]
            return f"could not {'remove' if self.state == 'absent' else 'install'} autostop: {err}"
        if self.state == "absent":
            return None
        want = plan.data[4]
        rows = (ln.split() for ln in applied.stdout.splitlines())
        got = {parts[1]: parts[0] for parts in rows if len(parts) == 2}
        for name, (_, sha) in want.items():
            if got.get(name) != sha:
                return f"{plan.data[0].dir}/{name} does not hold the rendered content after writing"
        return None


class AutostopStatusStep(Step):
    """Read-only: what the watcher watches, idle-since, when it would act, last log lines."""

    name = "autostop_status"
    read_only = True
    ARGS = {
        "dir": AutostopStep.ARGS["dir"],
        "cron_dir": AutostopStep.ARGS["cron_dir"],
        "cron": AutostopStep.ARGS["cron"],
        "lines": "how many log lines to show (default 15)",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        dir_arg = _check_path(str(self.args.get("dir") or ""), "dir")
        cron_dir = _check_path(str(self.args.get("cron_dir") or DEFAULT_CRON_DIR), "cron_dir")
        mode = str(self.args.get("cron") or "auto")
        if mode not in CRON_MODES:
            raise StepArgsError(f"argument 'cron' must be one of {', '.join(CRON_MODES)}, not {mode!r}")
        try:
            lines = int(self.args.get("lines") or 15)
        except (TypeError, ValueError):
            raise StepArgsError(f"argument 'lines' must be a number, not {self.args['lines']!r}") from None
        marker = shell.quote(CRON_MARKER)
        command = (
            f"{_resolve_dir(dir_arg)}; {_cron_mode_sh(mode)}; c={shell.quote(cron_dir)}; "
            f'if [ ! -f "$d/{SCRIPT}" ]; then echo "autostop is not installed (no $d/{SCRIPT})"; '
            "else "
            f'if [ "$m" = cron.d ]; then [ -f "$c/{CRON_NAME}" ] && echo "cron: $c/{CRON_NAME}"'
            f' || echo "cron: MISSING ($c/{CRON_NAME})"; '
            f'else crontab -l 2>/dev/null | grep -qxF {marker} && echo "cron: the user\'s crontab"'
            ' || echo "cron: MISSING (the user\'s crontab)"; fi; '
            f'[ "$({CRON_DAEMON_PROBE})" = "crond no" ] && echo "{NO_CRON_DAEMON}"; '
            f'sh "$d/{SCRIPT}" status; echo "last log lines:"; '
            f'tail -n {lines} "$d/autostop.log" 2>/dev/null | sed "s/^/  /"; fi; true'
        )
        self.probe = Probe(_probe_name("autostop_status", command), command)

    def check_host(self, host: Host) -> None:
        """The host's autostop vars, named, before connecting."""
        check_vars(host.vars, shutdown=False)

    def probes(self) -> list[Probe]:
        """The whole status text comes from one probe."""
        return [self.probe]

    def plan(self, ctx: StepContext) -> Plan:
        """Summarise the status text in one sentence (the full text is printed by the CLI)."""
        text = ctx.facts.raw[self.probe.name].stdout
        first = text.strip().splitlines()[:1]
        if not first or first[0].startswith("autostop is not installed"):
            return Plan(False, first[0] if first else "autostop is not installed", data=text)
        act = next((ln for ln in text.splitlines() if ln.startswith("would act:")), "would act: unknown")
        missing = "cron: MISSING" in text
        no_daemon = NO_CRON_DAEMON in text
        msg = f"autostop is installed; {act}" + ("; its cron entry is MISSING" if missing else "")
        if no_daemon:
            msg += "; no cron daemon runs, so the watcher does not run"
        stuck = next((ln for ln in text.splitlines() if ln.startswith("tick: STUCK")), "")
        if stuck:
            msg += f"; {stuck}"
        return Plan(False, msg, data=text, failed=missing or no_daemon)
