"""The host's side before an upload: the read-only probes the dataset step adds to the batched
fact probe (listings of the copy, its stores and the plaintext dir with their free space; a
live lease of another run), what they found, and whether this copy may write into the dirs it
names (not a file, writable, not another copy's plaintext; --decrypt-to claimed as its own)."""

from __future__ import annotations

import contextlib
import hashlib
import posixpath
from collections.abc import Container

from gpuonboard import machine, transfer
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.dataset.common import NOTHING_SENT, count, shown
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.transfer import shards, uploadlock


def probe(opts: DatasetOptions, target: str) -> Probe:
    """The listing of `target` with the free space where it lives."""
    # free space where the target lives: the data dir, or --decrypt-to's dir (a tmpfs)
    where = opts.decrypt_dir if opts.decrypt_dir and target == opts.plain_target else opts.dest
    key = f"{target}\0{where}"
    manifest = shards.MANIFEST if target == opts.shards_target else ""
    return Probe(
        "dataset:" + hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:10],
        transfer.listing_command(target, where, manifest),
    )


def probes(opts: DatasetOptions) -> list[Probe]:
    """rsync present, free space, and the remote listing (plus the plaintext one when decrypting)."""
    if not opts.dest:
        return []
    out = [probe(opts, opts.target)]
    if opts.decrypt_on_host:
        out.append(probe(opts, opts.plain_target))
    if opts.shards is not False:
        out.append(probe(opts, opts.shards_target))
    if opts.decrypt_dir:  # plaintext an earlier run without --decrypt-to left on the data disk
        out.append(probe(opts, opts.copy))
    if not (opts.encrypt or opts.shards or opts.unpack):  # (where plain mode can run: rsync
        out.append(written_probe(opts.target))  # replaces the copy's files; shard mode never reads it)
    out.append(lease_probe(opts))
    return out


def written_probe(tree: str) -> Probe:
    """Read only: the host's list of what uploads wrote in `tree` (uploadlock.WRITTEN_DIR)."""
    key = hashlib.sha1(tree.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return Probe(f"dataset-written:{key}", uploadlock.read_listing_command(tree))


def written(
    ctx: StepContext, tree: str, wanted: Container[str] | None = None
) -> dict[str, set[tuple[int, int]]] | None:
    """What the host's list says uploads wrote in `tree` (written_probe; of the files `wanted`,
    where given), or None without one."""
    raw = ctx.facts.raw.get(written_probe(tree).name)
    return uploadlock.parse_written(raw.stdout, wanted) if raw is not None and raw.exit_code == 0 else None


def lease_probe(opts: DatasetOptions) -> Probe:
    """Read only: a live lease of another run on this copy (check mode says so)."""
    path = uploadlock.lease_path(opts.dest, opts.dirname)
    copies = [opts.target] + ([opts.shards_target] if opts.shards is not False else [])
    key = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return Probe(f"dataset-lease:{key}", uploadlock.peek_command(path, copies))


def lease_busy(ctx: StepContext, opts: DatasetOptions) -> str | None:
    """Check mode: the sentence a real run would be turned away with (a live lease of
    another run on the host), else None."""
    raw = ctx.facts.raw.get(lease_probe(opts).name)
    got = uploadlock.parse_peek(raw.stdout) if raw is not None else None
    if got is None:
        return None
    owner = uploadlock.owner_id(ctx.project / ".gpuonboard" / "locks")
    if got.owner == owner and machine.process_ended(got.pid):
        return None  # this project's own ended run: a real run takes it over
    return got.sentence(f"{ctx.host.name}:{opts.copy}")


def listing(ctx: StepContext, opts: DatasetOptions, target: str) -> transfer.RemoteState:
    """What the fact probe found at `target` (see probes)."""
    return transfer.parse_listing(ctx.facts.raw[probe(opts, target).name].stdout)


def other_copy(ctx: StepContext, opts: DatasetOptions, dirs: list[str]) -> str | None:
    """The failure sentence when one of `dirs` (those this run writes into, each probed by
    probes()) is not a directory on the host, or is another copy's --decrypt-to plaintext
    (its COPY_MARK names another `<data_dir>/<name>`), else None."""
    for d in dirs:
        found = listing(ctx, opts, d)
        if found.not_dir:
            return (
                f"{ctx.host.name}:{shown(d)} is there and is not a directory (this upload's copy goes"
                f" there); move it away (or delete it) there, then rerun ({NOTHING_SENT})"
            )
        if found.not_writable:  # (every rerun failed there, each saying "rerun to resume")
            who = ctx.host.user or "this login"
            return (
                f"{ctx.host.name}:{shown(found.not_writable)} is not writable by {who} (this"
                " upload's lease, copy and temp files go there); make it writable there (e.g."
                f" sudo chown {who} {shown(found.not_writable)}), or pick another --dest, then"
                f" rerun ({NOTHING_SENT})"
            )
    there = listing(ctx, opts, opts.plain_target) if opts.decrypt_dir and opts.plain_target in dirs else None
    if there is not None and there.mark_dir:
        mark = posixpath.join(opts.plain_target, uploadlock.COPY_MARK)  # (as the claim says it)
        return (
            f"on {ctx.host.name}, {shown(mark)} is a directory, not gpuonboard's mark; remove it, then rerun"
        )
    if there is not None and not there.copy and there.files:  # what the claim refuses, said ahead
        return unmarked_sentence(ctx, opts)
    own = posixpath.normpath(opts.copy)
    marked = [(d, m) for d in dirs if (m := listing(ctx, opts, d).copy) not in (None, "", own)]
    if not marked:
        return None
    r = ctx.runner.run(uploadlock.resolve_command(opts.dest, opts.dirname))
    resolved = r.stdout.strip() if r.ok else own
    for where, mark in marked:
        if mark != resolved:
            return taken_sentence(ctx, where, str(mark))
    return None


def taken_sentence(ctx: StepContext, where: str, mark: str) -> str:
    """`where` holds the plaintext of the copy `mark`, not this one."""
    return (
        f"{ctx.host.name}:{where} holds the plaintext of another upload (of the copy {mark}), and"
        " this run would write into it; pick another --decrypt-to, --dest or dataset name, or"
        f" remove {where} if nothing uses it any more, then rerun"
    )


def unmarked_sentence(ctx: StepContext, opts: DatasetOptions) -> str:
    """The plaintext dir holds files no upload marked as its own."""
    return (
        f"{ctx.host.name}:{opts.plain_target} holds files that no gpuonboard upload marked as its"
        " plaintext (another copy of a dataset with this name, or plaintext an older gpuonboard"
        " left); remove it if nothing uses it (the rerun decrypts it again from the copy on the"
        " data disk: nothing is sent again), or pick another --decrypt-to, then rerun"
    )


def claim_plain_dir(ctx: StepContext, opts: DatasetOptions, lease: uploadlock.Lease | None) -> str | None:
    """--decrypt-to: mark the plaintext dir as this copy's before writing into it (atomic:
    of two uploads from different data dirs, one gets it). The failure sentence, or None."""
    token = lease.token if lease is not None else ""
    r = ctx.runner.run(uploadlock.claim_command(opts.dest, opts.dirname, opts.plain_target, token))
    word, _, copy = r.stdout.strip().partition(" ")
    if r.ok and word == "ours":
        return None
    if r.ok and word == "other":
        return taken_sentence(ctx, opts.plain_target, copy)
    if r.ok and word == "unmarked":
        return unmarked_sentence(ctx, opts)
    if r.ok and word == "busy":
        with contextlib.suppress(ValueError):
            busy = uploadlock.parse_take(r.stdout)
            if isinstance(busy, uploadlock.LeaseBusy):
                return busy.sentence(f"{ctx.host.name}:{opts.plain_target}")
    why = (r.stderr.strip().splitlines() or [f"exit {r.exit_code}"])[-1]
    if r.exit_code == 3:
        return f"on {ctx.host.name}, {why}, then rerun"
    return f"cannot create {opts.plain_target} on the host: {why}"


def same_dir_as_dest(ctx: StepContext, opts: DatasetOptions) -> None:
    """--decrypt-to spelt through a symlink to the data dir counts as no --decrypt-to, as the
    data dir spelt plainly does (its plaintext was called "an earlier run's, delete it", and
    refused as unmarked). One command per dir, only with --decrypt-to."""
    if not opts.decrypt_dir or not opts.dest:
        return
    where = [
        ctx.runner.run(uploadlock.resolve_command(d, opts.dirname)) for d in (opts.dest, opts.decrypt_dir)
    ]
    missing = "/" + opts.dirname  # (what the script prints for a dir it cannot enter)
    if (
        all(r.ok and r.stdout.strip() not in ("", missing) for r in where)
        and where[0].stdout == where[1].stdout
    ):
        opts.decrypt_dir, opts.plain_target = "", opts.copy  # (the copy's own listing is probed)


def left_plaintext(ctx: StepContext, opts: DatasetOptions) -> str:
    """The message's note on plaintext still in the data dir while --decrypt-to puts it
    elsewhere (a tmpfs, so that it never rests on disk): said, never deleted unasked."""
    if not opts.decrypt_dir:
        return ""
    base = posixpath.join(opts.dest, opts.dirname)
    left = listing(ctx, opts, base).files
    if not left:
        return ""
    one = len(left) == 1
    return (
        f"; {count(len(left), 'plaintext file')} of an earlier run without --decrypt-to"
        f" {'is' if one else 'are'} still at {base} on the data disk: delete {'it' if one else 'them'}"
        f" if the plaintext should live only under {opts.decrypt_dir}"
    )
