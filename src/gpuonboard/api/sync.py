"""`invoke sync`: upload the dataset to hosts (one `dataset` step through the normal runner).

Connections, the batched probe, check mode, journal, reports and exit codes behave exactly
like `provision`; flags override the inventory (`vars.dataset`, the host's `data_dir`).
No Invoke imports here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from gpuonboard import api, transfer
from gpuonboard.api.options import SyncOptions
from gpuonboard.errors import UsageError
from gpuonboard.jinjatext import literal
from gpuonboard.runner.playbook import Playbook, StepSpec, instantiate


def _dataset_path(opts: SyncOptions) -> str:
    """--dataset as an absolute path ("" when not given)."""
    return opts.dataset and os.path.abspath(os.path.expanduser(opts.dataset))


def build_spec(opts: SyncOptions) -> StepSpec:
    """The one `dataset` step of this run, args from flags or the host's inventory."""
    if opts.decrypt_on_host and not opts.encrypt:
        raise UsageError("--decrypt-on-host needs --encrypt.")
    if opts.decrypt_to and not opts.decrypt_on_host:
        raise UsageError("--decrypt-to needs --decrypt-on-host.")
    if opts.decrypt_to and not opts.decrypt_to.startswith("/"):
        raise UsageError(f"--decrypt-to must be an absolute path on the host, not {opts.decrypt_to!r}.")
    dataset = _dataset_path(opts)
    args: dict[str, Any] = {
        "source": literal(dataset) if dataset else "{{ vars.dataset | default('') }}",
        "dest": literal(opts.dest) if opts.dest else "{{ host.data_dir or '' }}",
        "encrypt": opts.encrypt,
        "decrypt_on_host": opts.decrypt_on_host,
    }
    if opts.bwlimit:
        args["bwlimit"] = literal(opts.bwlimit)
    if opts.shards:
        args["shards"] = True
    if opts.unpack:
        args["unpack"] = True
    if opts.keep_shards:
        args["keep_shards"] = True
    if opts.verify:
        args["verify"] = True
    if opts.decrypt_to:
        args["decrypt_dir"] = literal(opts.decrypt_to)
    if opts.name:
        args["name"] = literal(opts.name)
    return StepSpec("dataset", "dataset", args, None)


def check_keys(hosts: Any, decrypt_on_host: bool) -> None:
    """`sync --encrypt`: each host's age keys, before any connection (exit 2, naming the host,
    with a recipe when none is configured): a missing key failed only after connecting."""
    from gpuonboard.transfer import crypto

    for host in hosts:
        try:
            crypto.check_upload_keys(host.vars, decrypt_on_host)
        except crypto.CryptoError as exc:
            message = exc.message.rstrip(".")
            recipe = f"; {crypto.KEY_RECIPE}" if crypto.missing_keys(exc.message) else ""
            raise UsageError(f"{host.name}: {message}{recipe}.") from None


# the kernel's own trees: files of no fixed size (an upload of /proc never ends)
PSEUDO_TREES = ("/proc", "/sys", "/dev")


def check_dataset(path: Path) -> None:
    """--dataset is an existing directory or regular file outside the kernel's pseudo file
    systems, before any connection: a FIFO waited for a writer, /dev/zero or /proc never
    ended, and a missing path was found only after connecting to every host."""
    real = os.path.realpath(path)
    top = next((t for t in PSEUDO_TREES if real == t or real.startswith(t + "/")), None)
    if top is not None:
        raise UsageError(
            f"--dataset {path} is in {top}, the kernel's own files, not a dataset; name a directory"
            " or a file of your data."
        )
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:  # (before connecting to every host to say so from each)
        raise UsageError(f"--dataset {path} does not exist; check the path.") from None
    except OSError:  # (unreadable: the dataset step says so, for every host)
        return
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise UsageError(
            f"--dataset {path} is not a directory or a regular file (a FIFO, a device or a socket);"
            " name a directory or a file of your data."
        )


def sync(selection: api.Selection, settings: api.Settings, opts: SyncOptions) -> int:
    """Upload (or, with check, report what would be sent); exit code like provision."""
    spec = build_spec(opts)
    if opts.dataset:  # the local scan needs no inventory or connection: start it first
        check_dataset(Path(_dataset_path(opts)))
        transfer.prescan(Path(_dataset_path(opts)))
    inv, hosts = api.load_hosts(selection, settings)
    book = Playbook(path=Path("sync"), name="sync", steps=(spec,))
    if opts.encrypt:
        for host in hosts:  # a flag's bad value is named first (the step checks its arguments)
            instantiate(book, spec, host)
        check_keys(hosts, opts.decrypt_on_host)
    # no hardware facts needed: one small probe per host; the scan and the plan want this
    # machine's CPU before the first byte: the report's code is loaded when it is written
    return api.execute(
        inv,
        hosts,
        book,
        settings,
        check=opts.check,
        core_facts=False,
        show=api.print_step_lines,
        warm_report=False,
    )
