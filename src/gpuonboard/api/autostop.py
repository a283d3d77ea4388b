"""`invoke autostop`: install, inspect or remove the idle-shutdown watcher on hosts.

A playbook-less run: one `autostop` (or `autostop_status`) step through the normal runner,
so connections, the batched probe, check mode, journal, reports and exit codes behave
exactly like `provision`. Host vars choose where things go (`autostop_dir`, `cron_dir`,
`autostop_cron`), and `autostop_shutdown_command` overrides the vendor's shutdown command.
No Invoke imports here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuonboard import api
from gpuonboard.api.options import AutostopOptions
from gpuonboard.errors import UsageError
from gpuonboard.jinjatext import literal
from gpuonboard.results import HostResult
from gpuonboard.runner.playbook import Playbook, StepSpec
from gpuonboard.steps.autostop import parse_settings
from gpuonboard.steps.base import StepArgsError

# Per-host values, rendered by the playbook machinery from each host's vars and vendor.
HOST_PATHS = {
    "dir": "{{ vars.autostop_dir | default('') }}",
    "cron_dir": "{{ vars.cron_dir | default('/etc/cron.d') }}",
    "cron": "{{ vars.autostop_cron | default('auto') }}",
}
VENDOR_SHUTDOWN = (
    "{{ vars.autostop_shutdown_command | default(vendor.shutdown_command if vendor else 'shutdown -h now') }}"
)


FLAG_OF_ARG = {
    "idle": "--idle",
    "grace": "--grace",
    "heartbeat": "--heartbeat",
    "margin": "--margin",
    "before_timeout": "--before-timeout",
    "max_hours": "--max-hours",
    "pid": "--pid",
    "gpu_threshold": "--gpu-threshold",
}


def build_spec(opts: AutostopOptions) -> StepSpec:
    """The one step of this run; bad flags raise UsageError (exit 2) naming the flag."""
    if opts.billing_aware and opts.no_billing_aware:
        raise UsageError("give either --billing-aware or --no-billing-aware, not both.")
    modes = [name for name, on in (("--status", opts.status), ("--cancel", opts.cancel)) if on]
    if len(modes) > 1:
        raise UsageError("give either --status or --cancel, not both.")
    if opts.status:
        return StepSpec("autostop_status", "autostop-status", dict(HOST_PATHS), None)
    if opts.cancel:
        return StepSpec("autostop", "autostop-cancel", {"state": "absent", **HOST_PATHS}, None)
    args: dict[str, Any] = {
        "state": "present",
        "idle": opts.idle,
        "grace": opts.grace,
        "job": opts.job,
        "pid": opts.pid,
        "container": opts.container,
        "max_hours": opts.max_hours,
        "heartbeat": opts.heartbeat or "0",
        "before_shutdown": opts.before_shutdown,
        "before_timeout": opts.before_timeout,
        "force": opts.force,
        "billing_aware": True if opts.billing_aware else (False if opts.no_billing_aware else "auto"),
        "margin": opts.margin,
        "gpu_threshold": opts.gpu_threshold,
        "ssh_sessions": opts.ssh_sessions,
        "gpu_processes": opts.gpu_processes,
    }
    if opts.shutdown_command and not opts.shutdown_command.strip():
        raise UsageError("autostop: --shutdown-command must be a command, not blank.")
    try:
        parse_settings(args)  # validate once, before any connection
    except StepArgsError as exc:
        message = str(exc)
        for arg, flag in FLAG_OF_ARG.items():
            message = message.replace(f"argument {arg!r}", flag)
        if "only one of" in message:
            message = "give only one of --job, --pid and --container"
        raise UsageError(f"autostop: {message}.") from None
    args = {k: literal(v) if isinstance(v, str) else v for k, v in args.items()}
    args["shutdown_command"] = literal(opts.shutdown_command) if opts.shutdown_command else VENDOR_SHUTDOWN
    # only a unit the vendor profile names: without one, billing-aware mode is off (an assumed
    # hourly billing kept an idle box up to ~55 min past idle + grace)
    args["billing_unit"] = "{{ vendor.billing.unit if vendor and vendor.billing.unit_given else '' }}"
    args["billing_vendor"] = "{{ vendor.id if vendor else '' }}"
    args["billing_after_poweroff"] = "{{ vendor.billing.after_poweroff if vendor else '' }}"
    args["billing_anchor"] = "{{ vars.autostop_billing_anchor | default(0) }}"
    args.update(HOST_PATHS)
    return StepSpec("autostop", "autostop", args, None)


def autostop(selection: api.Selection, settings: api.Settings, opts: AutostopOptions) -> int:
    """Install/update (default), show (--status) or remove (--cancel) the watcher; exit code."""
    spec = build_spec(opts)
    inv, hosts = api.load_hosts(selection, settings)
    book = Playbook(path=Path(spec.label), name=spec.label, steps=(spec,))
    show = _show_status if opts.status else api.print_step_lines
    # the watcher needs no hardware facts: one small probe per host
    return api.execute(
        inv, hosts, book, settings, check=opts.check and not opts.status, core_facts=False, show=show
    )


def _show_status(results: Sequence[HostResult], con: Any) -> None:
    """What the watcher's own `status` printed on each host."""
    for r in results:
        raw = r.facts.raw if r.facts else {}
        texts = [out.stdout for name, out in raw.items() if name.startswith("autostop_status:")]
        if texts:
            con.out(f"== {r.host.name} ==", highlight=False)
            con.out(texts[0].rstrip("\n"), highlight=False)
