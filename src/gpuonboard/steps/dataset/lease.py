"""The upload's lease on the host's copy (see transfer/uploadlock.py): taken once apply starts
(stopping what earlier runs of this copy left running there, and keeping or removing their
temp files), given back at the end, and noticed when another run took it over."""

from __future__ import annotations

import contextlib
import os
import secrets
import time

from gpuonboard import children, machine
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.dataset.common import shown
from gpuonboard.steps.dataset.hostdirs import taken_sentence
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import uploadlock
from gpuonboard.transfer.scanstore import host_seconds

LEASE_LOST = (
    "another run took over this upload's lease on the host while this one was not heard from for"
    f" over {uploadlock.STALE_S} s (a suspended machine, or a stalled link); stopped before changing"
    " more there: rerun once that one has finished"
)


def take_lease(
    ctx: StepContext, opts: DatasetOptions, work: Work, plain: str
) -> tuple[uploadlock.Lease | None, str]:
    """Make the copy's dir and take the host's lease on it, in one command (see
    uploadlock): (the lease, "") or (None, the failure sentence). A fresh lease of this same
    project is taken over (a second command) only when its pid has ended on this machine.
    Once it is held, what earlier runs of this copy still run on the host is stopped (a
    dropped link's receiver: it keeps what arrived as a partial file), and the rsync temp
    files they left are kept as partial files to resume from or removed (work.stopped)."""
    tidy = uploadlock.tidy_stdin(work.resume, work.leftovers)
    token = secrets.token_hex(8)
    path = uploadlock.lease_path(opts.dest, opts.dirname)
    owner = uploadlock.owner_id(ctx.project / ".gpuonboard" / "locks")
    holder = uploadlock.holder_text()
    # (an interrupt while the take command runs: its lease may be written on the host already,
    # this run not told yet; the host's earlier runs' processes it stops get a grace first, so the
    # window is seconds: give back the lease of this token, which removes none but ours)
    pending = uploadlock.Lease(path, token)
    key = children.on_interrupt(lambda: give_back_lease(ctx, pending, timeout=5))
    try:
        return _take(ctx, opts, work, plain, pending, owner, holder, tidy)
    finally:
        children.done(key)


def _take(
    ctx: StepContext,
    opts: DatasetOptions,
    work: Work,
    plain: str,
    pending: uploadlock.Lease,
    owner: str,
    holder: str,
    tidy: bytes,
) -> tuple[uploadlock.Lease | None, str]:
    """take_lease's commands: (the lease, "") or (None, the failure sentence)."""
    target, path, token, ended = work.target, pending.path, pending.token, 0
    while True:
        take = uploadlock.take_command(
            target,
            uploadlock.Lease(path, token),
            owner,
            holder,
            os.getpid(),
            ended,
            plain,
            opts.dirname,
            opts.copy_tag(),
            opts.unpack_token,
        )
        res = ctx.runner.run(take, stdin=tidy)
        why = (res.stderr.strip().splitlines() or [f"exit {res.exit_code}"])[-1]
        if res.exit_code == 2:
            return None, f"cannot create {target} on the host: {why}"
        try:
            got = uploadlock.parse_take(res.stdout) if res.ok else None
        except ValueError:
            got = None
        if isinstance(got, str):
            work.stopped = uploadlock.parse_stopped(res.stdout)
            _list_written(ctx, work, res.stdout)
            return uploadlock.Lease(got, token), ""
        if isinstance(got, uploadlock.OtherCopy):
            return None, taken_sentence(ctx, plain, got.copy)
        if got is None and why.endswith("remove it"):
            return None, f"on {ctx.host.name}, {why}, then rerun"
        if got is None:
            check = "its permissions" if "ermission" in why else "that disk"
            return None, f"cannot write the upload lease {path} on the host: {why}; check {check}"
        if not ended and got.owner == owner and machine.process_ended(got.pid):
            ended = got.pid  # this project's own earlier run, killed or cut off: take it over
            continue
        return None, got.sentence(f"{ctx.host.name}:{opts.copy}")


def _list_written(ctx: StepContext, work: Work, took: str) -> None:
    """List what this run writes in its plaintext tree as the host's list for that tree (see
    uploadlock.WRITTEN_DIR), when the take command said the record holds the tree (`tree PATH`).
    Best effort, as the record: without it teardown keeps the tree on the host, and names it."""
    trees = [line[5:] for line in took.split("\n") if line.startswith("tree /")]
    work.listed = trees
    if trees:
        # each file's mtime as it will stand on the host: the dataset file's (rsync -a, a
        # decryption's touch), or in shard mode the stamp the closing command gives what it
        # unpacked (the shards' members are normalised to mtime 0; the files a seed links from
        # the old tree are listed as they stand there: ShardUpload._seed)
        if work.groups and not work.stamp:
            work.stamp = int(time.time())
        stamp = work.stamp if work.groups else 0
        stdin = uploadlock.listing_stdin(
            (e.kind, e.rel, e.size, stamp or host_seconds(e)) for e in work.tree.entries.values()
        )
        for tree in trees:
            res = ctx.runner.run(uploadlock.write_listing_command(tree), stdin=stdin)
            if res.exit_code == uploadlock.RECORD_STUCK:  # (any other failure removed the list)
                work.kept += stuck_list_note(tree)


def stuck_list_note(tree: str) -> str:
    """Pure: the note on a host's list of what uploads wrote in `tree` that this run could
    neither update nor remove (its dir or file not writable): it says too little from now on."""
    return (
        f"; the host's list of what uploads wrote in {shown(tree)} could not be updated nor removed"
        " (check ~/.cache/gpuonboard there): until it is, a later --check"
        " may name files this upload wrote as changed there since"
    )


def give_back_lease(ctx: StepContext, lease: uploadlock.Lease, timeout: float = 15) -> None:
    """Remove the host's lease (still ours). Best effort: over a dropped link it goes stale
    by itself, and a rerun from here takes it over at once."""
    with contextlib.suppress(Exception):
        ctx.runner.run(uploadlock.release_command(lease), timeout=timeout)


def lost(work: Work, ctx: StepContext | None = None) -> bool:
    """Whether the host's lease was taken over: the heartbeat's last word, or (with ctx) the
    host's own answer now (one refresh: exit 1 when the token there is not ours)."""
    if work.beat is not None and work.beat.lost:
        return True
    if ctx is None or work.lease is None:
        return False
    return ctx.runner.run(uploadlock.touch_command(work.lease)).exit_code == 1
