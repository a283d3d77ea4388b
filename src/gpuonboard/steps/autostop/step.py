"""The autostop steps: `autostop` (install, update or remove the idle-shutdown watcher: plan
from the state probe, apply in one remote command, verify the sha256 it printed) and
`autostop_status` (what the watcher's own `status` says, from one probe).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpuonboard import sh, shell
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.autostop.install import (
    billing_note,
    cron_d_note,
    hidden_processes_note,
    install_problem,
    install_script,
    max_hours_anchor,
    max_hours_sentence,
    never_idle,
    no_gpu_note,
    pid_ended_note,
    remove_script,
    shutdown_programs,
    sudo_check,
    sudo_note,
    with_tools,
)
from gpuonboard.steps.autostop.probe import (
    CRON_DAEMON_FN,
    NO_CRON_DAEMON,
    _cron_mode_sh,
    _parse_probe,
    _probe_name,
    _Remote,
    _resolve_dir,
    state_probe_command,
)
from gpuonboard.steps.autostop.render import (
    CONF,
    CRON_MARKER,
    CRON_NAME,
    DEFAULT_CRON_DIR,
    SCRIPT,
    _sha,
    cron_file_text,
    crontab_lines,
    render_script,
)
from gpuonboard.steps.autostop.settings import CRON_MODES, _check_path, check_vars, parse_settings
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext

if TYPE_CHECKING:
    from gpuonboard.inventory import Host

_STATUS = (
    sh.load("autostop_status")
    .replace("__SCRIPT__", SCRIPT)
    .replace("__CRON_NAME__", CRON_NAME)
    .replace("__MARKER__", shell.quote(CRON_MARKER))
    .replace("__NO_CRON_DAEMON__", shell.quote(NO_CRON_DAEMON))
)


def status_command(dir_arg: str, cron_dir: str, cron_mode: str, lines: int) -> str:
    """The status probe: the values autostop_status.sh reads (d, m, c, n), the function it
    calls, then it."""
    values = f"{_resolve_dir(dir_arg)}\n{_cron_mode_sh(cron_mode, cron_dir)}\nn={lines}"
    return f"{CRON_DAEMON_FN}\n{values}\n{_STATUS}"


def _no_crontab(host: str, r: _Remote) -> str:
    """Why a watcher that goes into the login's crontab cannot be installed (no crontab command)."""
    if r.uid == "0":
        unread = r.cron_d_unread or "autostop_cron is crontab"
        return (
            f"host {host}: {unread} and it has no crontab command, so cron would never run the watcher;"
            " install cron there"
        )
    return (
        f"host {host} runs as a non-root user and has no crontab command;"
        " install cron there or connect as root"
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
        "billing_after_poweroff": (
            "whether the vendor stops billing a box its OS powered off (stops | continues; empty: not said)"
        ),
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
        sudo = sudo_check(self.settings.shutdown_command) if self.settings else None
        program = shutdown_programs(self.settings.shutdown_command) if self.settings else ""
        pid = self.settings.pid if self.settings else ""
        command = state_probe_command(self.dir_arg, self.cron_dir, self.cron_mode, sudo, program, pid)
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
            return Plan(False, _no_crontab(ctx.host.name, r), failed=True)
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
        why = never_idle(r)
        if why:  # (refused above without a hard trigger)
            deadline += (
                f"; {why}, so the box is never found idle: only --max-hours or --heartbeat shuts it down"
            )
        notes = (
            cron_d_note(r),
            pid_ended_note(self.settings, r),
            no_gpu_note(self.settings, r),
            hidden_processes_note(self.settings, r),
            sudo_note(self.settings, r),
            billing_note(self.settings),
        )
        for note in notes:
            deadline += f"; {note}" if note else ""
        if not cron_ok:
            changed.append(where)
        # an earlier install's entry in the other place (cron.d, the crontab): cron ran both
        # watchers, the earlier with its old settings; the install removes it
        earlier = r.crontab if r.mode == "cron.d" else r.cron_file is not None
        if earlier:
            there = "the user's crontab" if r.mode == "cron.d" else f"{self.cron_dir}/{CRON_NAME}"
            changed.append(f"{there} (an earlier install's entry, removed: cron ran both watchers)")
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
            r = plan.data[0]
            cron_file = posixpath.join(self.cron_dir, CRON_NAME) if r.cron_file is not None else ""
            return ctx.runner.run(shell.sh_c(remove_script(r.dir, cron_file, bool(r.crontab))))
        r, script, conf, cron_text, _, anchor = plan.data
        assert self.settings is not None
        text = install_script(
            r.dir, script, conf, anchor, self.settings.heartbeat > 0, r.mode, self.cron_dir, cron_text
        )
        # on sh's stdin, not in its arguments: the config holds --before-shutdown's command (it may
        # carry a token: the file is 0600 for it), and a command line is visible to every user
        # of the host (`ps`) while it runs
        return ctx.runner.run("sh -s", stdin=text.encode("utf-8", "surrogateescape"))

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
        command = status_command(dir_arg, cron_dir, mode, lines)
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
        # a shutdown that was decided but did not happen (its command or before_shutdown fails),
        # and a dir the watcher cannot write (a full disk): the box runs on, billed
        overdue = act.startswith(("would act: OVERDUE", "would act: NEVER"))
        unwritable = next((ln for ln in text.splitlines() if ln.startswith("state: CANNOT WRITE")), "")
        if unwritable:
            msg += f"; {unwritable}"
        return Plan(False, msg, data=text, failed=missing or no_daemon or overdue or bool(unwritable))
