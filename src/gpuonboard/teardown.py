"""`invoke teardown`: pull the results back (verified), then remove what provisioning placed.

Runs `playbooks/teardown.yml` through the normal runner (one connection per host, the
batched probe, check mode, journal, reports, exit codes) after setting the pull, force and
keep-image arguments from the command line. No Invoke imports here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import api
from . import inventory as inventory_mod
from . import playbook as playbook_mod
from .connection import ConnectOptions, Preconnect
from .errors import UsageError
from .playbook import Playbook
from .report import terminal
from .runlog import RunLog
from .runner import RunOptions, exit_code, new_run_id, run


@dataclass
class TeardownOptions:
    """The command line of `invoke teardown`."""

    results: str = ""
    dest: str = ""
    keep_image: bool = False
    force: bool = False
    check: bool = False


def _literal(value: str) -> str:
    """Keep a user's text out of Jinja rendering."""
    if any(tag in value for tag in ("{{", "{%", "{#")):
        if "endraw" in value:
            raise UsageError(f"the value {value!r} cannot contain both '{{{{' and 'endraw'.")
        return "{% raw %}" + value + "{% endraw %}"
    return value


def build_playbook(
    book: Playbook, opts: TeardownOptions, settings: api.Settings, inventory: Path
) -> Playbook:
    """The teardown playbook with the command line's choices in its steps' arguments."""
    if opts.results and not opts.results.startswith("/"):
        raise UsageError(f"--results must be an absolute path on the host, not {opts.results!r}.")
    root = settings.state_root()
    specs = []
    for spec in book.steps:
        args: dict[str, Any] = dict(spec.args)
        if spec.kind == "teardown_pull":
            if opts.results:
                args["results"] = _literal(opts.results)
            if opts.dest:
                args["dest"] = _literal(str(Path(os.path.expanduser(opts.dest))))
            args["force"] = opts.force
            args["known_hosts"] = str(settings.known_hosts or root / "known_hosts")
            args["inventory"] = str(inventory)
        elif spec.kind == "teardown_files" and opts.results:
            args["results"] = _literal(opts.results)
        elif spec.kind == "teardown_containers":
            args["keep_image"] = opts.keep_image or bool(args.get("keep_image", False))
        elif spec.kind == "teardown_cost":
            args["state_dir"] = str(settings.state_dir or root / "state")
        specs.append(replace(spec, args=args))
    return Playbook(path=book.path, name=book.name, steps=tuple(specs))


def teardown(selection: api.Selection, settings: api.Settings, opts: TeardownOptions) -> int:
    """Pull, verify, then clean each selected host (nothing deleted on an unverified pull)."""
    project = settings.project
    inv_path = Path(os.path.expanduser(selection.inventory))
    inv_path = inv_path if inv_path.is_absolute() else project / inv_path
    inv = inventory_mod.load(inv_path)
    hosts = inv.select(api.split_names(selection.hosts), selection.group, selection.limit)
    if opts.dest and len(hosts) > 1 and "{host}" not in opts.dest:
        opts = replace(opts, dest=str(Path(opts.dest) / "{host}"))  # one copy per host, never mixed
    book = build_playbook(
        playbook_mod.load(api.find_playbook(project, "teardown")), opts, settings, inv.source
    )
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
        core_facts=False,  # teardown needs no hardware facts: one small probe per host
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
