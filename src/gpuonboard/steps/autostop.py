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
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import shell
from ..facts.probe import Probe
from ..units import parse_duration
from .base import Plan, Step, StepArgsError, StepContext

SCRIPT = "autostop.sh"
CONF = "autostop.conf"
CRON_NAME = "gpuonboard-autostop"
CRON_MARKER = "# gpuonboard-autostop (managed by gpuonboard; remove with: invoke autostop --cancel)"
# Everything the watcher or this step may create inside the autostop dir (--cancel removes these).
OWNED_FILES = (SCRIPT, CONF, "state", "state.tmp", "lease", "installed_at", "autostop.log", "autostop.log.1")
DEFAULT_ROOT_DIR = "/var/lib/gpuonboard/autostop"
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


def _probe_name(kind: str, key: str) -> str:
    return f"{kind}:{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def _truthy(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise StepArgsError(f"argument {name!r} must be true or false, not {value!r}")


def _seconds(value: Any, name: str) -> int:
    try:
        return int(round(parse_duration(value)))
    except ValueError as exc:
        raise StepArgsError(f"argument {name!r}: {exc}") from None


def _check_path(value: str, name: str) -> str:
    if not value:
        return value
    if not posixpath.isabs(value):
        raise StepArgsError(f"argument {name!r} must be an absolute path, not {value!r}")
    # cron reads '%' as a newline in a command, and a newline would end the entry
    if any(c in value for c in "%\n\r"):
        raise StepArgsError(f"argument {name!r} must not contain '%' or a line break: {value!r}")
    return posixpath.normpath(value)


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
            ("GPU_THRESHOLD", self.gpu_threshold),
            ("SSH_SESSIONS", int(self.ssh_sessions)),
            ("SHUTDOWN_COMMAND", self.shutdown_command),
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
    try:
        max_hours = float(args.get("max_hours") or 0)
    except (TypeError, ValueError):
        raise StepArgsError(
            f"argument 'max_hours' must be a number of hours, not {args['max_hours']!r}"
        ) from None
    if max_hours < 0:
        raise StepArgsError(f"argument 'max_hours' must not be negative, not {max_hours}")
    pid = str(args.get("pid") or "")
    if pid and not pid.isdigit():
        raise StepArgsError(f"argument 'pid' must be a process id (digits), not {pid!r}")
    job, container = str(args.get("job") or ""), str(args.get("container") or "")
    if sum(bool(x) for x in (job, pid, container)) > 1:
        raise StepArgsError("give only one of the arguments 'job', 'pid' and 'container'")
    try:
        raw_threshold = args.get("gpu_threshold")
        threshold = int(raw_threshold if raw_threshold not in (None, "") else 5)
        anchor = int(args.get("billing_anchor") or 0)
    except (TypeError, ValueError):
        raise StepArgsError("arguments 'gpu_threshold' and 'billing_anchor' must be integers") from None
    if not 0 <= threshold <= 100:
        raise StepArgsError(f"argument 'gpu_threshold' must be a percentage 0..100, not {threshold}")
    billing = str(args.get("billing_aware", "auto")).strip().lower()
    if billing == "auto":
        billing_aware = str(args.get("billing_unit") or "").strip() == "hour"
    else:
        billing_aware = _truthy(billing, "billing_aware")
    shutdown_command = str(args.get("shutdown_command") or "shutdown -h now")
    if "\n" in shutdown_command:
        raise StepArgsError("argument 'shutdown_command' must be one line")
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
        force=_truthy(args.get("force", False), "force"),
        billing_aware=billing_aware,
        billing_anchor=anchor,
        gpu_threshold=threshold,
        ssh_sessions=_truthy(args.get("ssh_sessions", False), "ssh_sessions"),
        shutdown_command=shutdown_command,
    )


def render_script(project: Any, host: str, directory: str) -> str:
    """The watcher script for one host and install directory."""
    from ..templating import render_file

    return render_file(project, "remote/autostop.sh.j2", host=host, dir_q=shell.quote(directory))


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
    dir: str = ""
    mode: str = ""
    files: dict[str, tuple[str, str]] | None = None  # name -> (mode, sha256)
    present: tuple[str, ...] = ()
    cron_file: tuple[str, str] | None = None
    crontab: tuple[str, ...] = ()
    crontab_bin: bool = False


def _parse_probe(text: str) -> _Remote:
    r = _Remote(files={})
    present: list[str] = []
    crontab: list[str] = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "uid":
            r.uid = rest
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
    r.present, r.crontab = tuple(present), tuple(crontab)
    return r


def _state_probe_command(dir_arg: str, cron_dir: str, cron_mode: str) -> str:
    owned = " ".join(shell.quote(f) for f in OWNED_FILES)
    marker = shell.quote(CRON_MARKER)
    return (
        f"{_resolve_dir(dir_arg)}; {_cron_mode_sh(cron_mode)}; c={shell.quote(cron_dir)}; "
        'echo "uid $(id -u)"; echo "dir $d"; echo "mode $m"; '
        f'for f in {SCRIPT} {CONF}; do [ -f "$d/$f" ] && echo "file $f $(stat -c %a "$d/$f")'
        ' $(sha256sum < "$d/$f" | cut -c1-64)"; done; '
        f'for f in {owned} lock; do [ -e "$d/$f" ] && echo "present $f"; done; '
        f'[ -f "$c/{CRON_NAME}" ] && echo "cronfile $(stat -c %a "$c/{CRON_NAME}")'
        f' $(sha256sum < "$c/{CRON_NAME}" | cut -c1-64)"; '
        'if command -v crontab >/dev/null 2>&1; then echo "crontab_bin yes"; '
        f"crontab -l 2>/dev/null | awk -v m={marker} "
        '\'f{print "crontab " $0; f=0; next} $0==m{print "crontab " $0; f=1}\'; '
        'else echo "crontab_bin no"; fi; true'
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _write_file_sh(content: str, dest_var: str, name: str, mode: str) -> str:
    """sh: write content to a temp file beside $dest_var/name (O_EXCL), chmod, rename."""
    tmp = f'"${dest_var}/.{name}.$$.tmp"'
    return (
        f"rm -f {tmp}; printf %s {shell.quote(content)} > {tmp}; chmod {mode} {tmp}; "
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
        "job": "busy while a process matching this (pgrep -f), or a tmux/screen session of this name, runs",
        "pid": "busy while this process id is alive",
        "container": "busy while this docker container is running",
        "max_hours": "hard deadline in hours after install, whatever the activity (0: off)",
        "heartbeat": "shut down when the lease is not renewed for this long, e.g. 6h (0: off)",
        "before_shutdown": "command run before shutting down (e.g. upload the last checkpoint)",
        "before_timeout": "time limit for before_shutdown (default 10m)",
        "force": "shut down even when before_shutdown fails",
        "billing_aware": "auto (on when billed per started hour), true or false",
        "billing_unit": "the vendor's billing unit (second | minute | hour)",
        "billing_anchor": "epoch seconds when billing started (default: boot time)",
        "margin": "billing-aware: act within this much of the end of a paid hour (default 5m)",
        "gpu_threshold": "a GPU above this utilisation percentage is busy (default 5)",
        "ssh_sessions": "busy while any user is logged in",
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
        script = render_script(ctx.project, ctx.host.name, r.dir)
        conf = self.settings.conf_text()
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
        if not cron_ok:
            changed.append(where)
        renew = self.settings.heartbeat > 0
        if not changed and not renew:
            return Plan(False, f"autostop watcher in {r.dir} is up to date ({where})")
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
        return Plan(True, " and ".join(parts), diff=diff, data=(r, script, conf, cron_text, want))

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
        r, script, conf, cron_text, _ = plan.data
        assert self.settings is not None
        steps = [
            "set -e; umask 077",
            f"d={shell.quote(r.dir)}",
            'mkdir -p "$d"; chmod 700 "$d"',
            _write_file_sh(script, "d", SCRIPT, "755"),
            _write_file_sh(conf, "d", CONF, "600"),
            '[ -f "$d/installed_at" ] || date +%s > "$d/installed_at"',
        ]
        if self.settings.heartbeat > 0:
            steps.append('date +%s > "$d/.lease.tmp"; mv -f "$d/.lease.tmp" "$d/lease"')
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
        return ctx.runner.run(shell.sh_c("\n".join(steps)))

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
        # only the files we own: a mistaken autostop_dir never loses anything else
        lines += [f"rm -f {owned}", 'rm -rf "$d/lock"', 'rmdir "$d" 2>/dev/null || true']
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
            f'sh "$d/{SCRIPT}" status; echo "last log lines:"; '
            f'tail -n {lines} "$d/autostop.log" 2>/dev/null | sed "s/^/  /"; fi; true'
        )
        self.probe = Probe(_probe_name("autostop_status", command), command)

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
        msg = f"autostop is installed; {act}" + ("; its cron entry is MISSING" if missing else "")
        return Plan(False, msg, data=text, failed=missing)
