"""`invoke sync`: upload the dataset to hosts (one `dataset` step through the normal runner).

Connections, the batched probe, check mode, journal, reports and exit codes behave exactly
like `provision`; flags override the inventory (`vars.dataset`, the host's `data_dir`).
No Invoke imports here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import api
from . import inventory as inventory_mod
from .connection import ConnectOptions, Preconnect
from .errors import UsageError
from .playbook import Playbook, StepSpec
from .report import terminal
from .runlog import RunLog
from .runner import RunOptions, exit_code, new_run_id, run


@dataclass
class SyncOptions:
    """The command line of `invoke sync`."""

    dataset: str = ""
    dest: str = ""
    encrypt: bool = False
    decrypt_on_host: bool = False
    bwlimit: str = ""
    check: bool = False


def _literal(value: str) -> str:
    """Keep a user's text out of Jinja rendering."""
    if "endraw" in value:
        raise UsageError(f"the value {value!r} cannot contain 'endraw'.")
    return "{% raw %}" + value + "{% endraw %}"


def build_spec(opts: SyncOptions) -> StepSpec:
    """The one `dataset` step of this run, args from flags or the host's inventory."""
    if opts.decrypt_on_host and not opts.encrypt:
        raise UsageError("--decrypt-on-host needs --encrypt.")
    dataset = opts.dataset and os.path.abspath(os.path.expanduser(opts.dataset))
    args: dict[str, Any] = {
        "source": _literal(dataset) if dataset else "{{ vars.dataset | default('') }}",
        "dest": _literal(opts.dest) if opts.dest else "{{ host.data_dir or '' }}",
        "encrypt": opts.encrypt,
        "decrypt_on_host": opts.decrypt_on_host,
    }
    if opts.bwlimit:
        args["bwlimit"] = _literal(opts.bwlimit)
    return StepSpec("dataset", "dataset", args, None)


def sync(selection: api.Selection, settings: api.Settings, opts: SyncOptions) -> int:
    """Upload (or, with check, report what would be sent); exit code like provision."""
    spec = build_spec(opts)
    project = settings.project
    inv_path = Path(os.path.expanduser(selection.inventory))
    inv = inventory_mod.load(inv_path if inv_path.is_absolute() else project / inv_path)
    hosts = inv.select(api.split_names(selection.hosts), selection.group, selection.limit)
    book = Playbook(path=Path("sync"), name="sync", steps=(spec,))
    early = Preconnect(hosts)
    run_id = new_run_id()
    root = settings.state_root()
    options = RunOptions(
        check=opts.check,
        forks=settings.forks,
        state_dir=settings.state_dir or root / "state",
        project=project,
        connect=ConnectOptions(
            known_hosts=settings.known_hosts or root / "known_hosts",
            trust_new_hosts=settings.trust_new_hosts,
            retries=settings.connect_retries,
            preconnect=early,
        ),
        run_id=run_id,
        log=RunLog(root / "logs" / f"{run_id}.log"),
        core_facts=False,  # no hardware facts needed: one small probe per host
    )
    started = time.time()
    progress = terminal.Progress([h.name for h in hosts], enabled=settings.progress and not settings.quiet)
    options.on_event = progress.event
    try:
        with progress:
            results = run(hosts, book, inv, options)
    finally:
        early.close()
        assert options.log is not None
        options.log.close()
    code = exit_code(results)
    meta = {
        "run_id": run_id,
        "playbook": book.name,
        "playbook_path": str(book.path),
        "inventory": str(inv.source),
        "check_mode": opts.check,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "duration": round(time.time() - started, 3),
        "exit_code": int(code),
    }
    out_dir = api.write_reports(results, meta, settings.reports_dir or project / "reports", run_id)
    if not settings.quiet:
        con = terminal.console()
        for r in results:
            for step in r.steps:
                con.out(f"{r.host.name}: {step.step}: {step.status}: {step.msg}", highlight=False)
        terminal.print_results(results, con, rules=False)
        con.print(f"reports: {out_dir}  log: {options.log.path}")
    return int(code)
