"""`invoke teardown`: pull the results back (verified), then remove what provisioning placed.

Runs `playbooks/teardown.yml` through the normal runner (one connection per host, the
batched probe, check mode, journal, reports, exit codes) after setting the pull, force and
keep-image arguments from the command line. No Invoke imports here.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuonboard import api
from gpuonboard.api.options import TeardownOptions
from gpuonboard.errors import UsageError
from gpuonboard.jinjatext import literal
from gpuonboard.runner import playbook as playbook_mod
from gpuonboard.runner.playbook import Playbook
from gpuonboard.steps.teardown import copy_path, path_problem


def build_playbook(
    book: Playbook, opts: TeardownOptions, settings: api.Settings, inventory: Path
) -> Playbook:
    """The teardown playbook with the command line's choices in its steps' arguments."""
    if opts.results and not opts.results.startswith("/"):
        raise UsageError(f"--results must be an absolute path on the host, not {opts.results!r}.")
    why = path_problem(opts.results) if opts.results else None
    if why:  # `/`, `/etc`: refused before anything is pulled (a pull of `/` is the whole disk)
        raise UsageError(
            f"--results {opts.results} is {why}, which teardown never pulls nor deletes; give the"
            " directory your job writes its results into."
        )
    root = settings.state_root()
    pull_dest = next((s.args.get("dest") for s in book.steps if s.kind == "teardown_pull"), None)
    # the dirs the files step removes: a symlink in the results into one of them loses its data
    files = next((s for s in book.steps if s.kind == "teardown_files"), None)
    removed = files.args.get("paths") if files is not None else None
    emptied = files.args.get("emptied") if files is not None else None
    if isinstance(removed, list) and isinstance(emptied, list):
        # (the dirs emptied of what uploads wrote: a link to an uploaded file there loses its data)
        removed = [*removed, *emptied]
    if files is not None and isinstance(removed, list) and files.args.get("uploads_in"):
        # (the uploads in the data dir go too: a link into the data dir counts as one into them)
        removed = [*removed, files.args["uploads_in"]]
    dest = literal(str(Path(os.path.expanduser(opts.dest)))) if opts.dest else pull_dest
    specs = []
    for spec in book.steps:
        args: dict[str, Any] = dict(spec.args)
        if spec.kind == "teardown_pull":
            if opts.results:
                args["results"] = literal(opts.results)
            if dest:
                args["dest"] = dest
            args["force"] = opts.force
            if removed is not None and "removed" not in args:
                args["removed"] = removed
            args["known_hosts"] = str(settings.known_hosts or root / "known_hosts")
            args["inventory"] = str(inventory)
        elif spec.kind == "teardown_files":
            # the same local copy: its record says what the pull verified
            if opts.results:
                args["results"] = literal(opts.results)
            if dest and "dest" not in args:
                args["dest"] = dest
            if opts.force:
                args["force"] = True
        elif spec.kind == "teardown_containers":
            if opts.keep_image:  # (else the step reads its own argument: steps.base.truthy)
                args["keep_image"] = True
        elif spec.kind == "teardown_cost":
            args["state_dir"] = str(settings.state_dir or root / "state")
        specs.append(replace(spec, args=args))
    return Playbook(path=book.path, name=book.name, steps=tuple(specs))


def check_dest(raw: str, names: list[str], project: Path, create: bool) -> None:
    """--dest must be (or become) a directory on this machine: a file on its path, or a place
    where it cannot be created (`/proc/x`), is a usage error before any host is touched."""
    for name in names:
        path = Path(os.path.expanduser(raw.replace("{host}", name)))
        path = path if path.is_absolute() else project / path
        base = path
        for part in (path, *path.parents):
            if part.is_dir():
                base = part
                break
            if part.exists() or part.is_symlink():
                what = "a file" if part.is_file() else "not a directory"
                raise UsageError(
                    f"--dest {raw}: {part} is {what}; give a directory (it is created when missing)."
                )
        try:
            if create:
                path.mkdir(parents=True, exist_ok=True)
            elif base != path:  # check mode: a probe dir made and removed at once (`/proc/x`)
                os.rmdir(tempfile.mkdtemp(prefix=".gpuonboard-check-", dir=base))
        except OSError as exc:
            raise UsageError(
                f"--dest {raw}: cannot create {path} ({exc.strerror or exc}); give a directory on this"
                " machine you can write to."
            ) from None


def shared_dest(dests: dict[str, str], project: Path) -> str | None:
    """Pure: the usage error when two hosts' vars.results_dest (by host name) name the same local
    dir: their pulls, run side by side, would write into one copy (rsync replaces files of the
    same names), or None."""
    seen: dict[str, str] = {}
    for name, raw in dests.items():
        # (a host without the var pulls into its default results/<host>, which another host's
        # vars.results_dest may name too)
        key = os.path.normpath(copy_path(raw, name, project))
        if key in seen:
            return (
                f"hosts {seen[key]} and {name} would pull their results into the same local dir {key}"
                f" (vars.results_dest), where one pull could overwrite the other's files; put {{host}} in"
                " vars.results_dest, or give --dest (each host then gets its own subdirectory), then rerun."
            )
        seen[key] = name
    return None


def teardown(selection: api.Selection, settings: api.Settings, opts: TeardownOptions) -> int:
    """Pull, verify, then clean each selected host (nothing deleted on an unverified pull)."""
    if not (selection.hosts or selection.group or selection.limit):
        raise UsageError(
            "teardown deletes data on the hosts it selects: name them with --host (or --group or"
            " --limit); it never takes every host of the inventory by default."
        )
    inv, hosts = api.load_hosts(selection, settings)
    if opts.dest and len(hosts) > 1 and "{host}" not in opts.dest:
        opts = replace(opts, dest=str(Path(opts.dest) / "{host}"))  # one copy per host, never mixed
    if not opts.dest:
        clash = shared_dest({h.name: str(h.vars.get("results_dest") or "") for h in hosts}, settings.project)
        if clash:
            raise UsageError(clash)
    book = build_playbook(
        playbook_mod.load(api.find_playbook(settings.project, "teardown")), opts, settings, inv.source
    )
    if opts.dest:
        check_dest(opts.dest, [h.name for h in hosts], settings.project, create=not opts.check)
    # teardown needs no hardware facts: one small probe per host
    return api.execute(
        inv, hosts, book, settings, check=opts.check, core_facts=False, show=api.print_step_lines
    )
