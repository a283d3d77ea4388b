"""Plain mode (and plain encrypted mode): rsync's quick check (size and mtime) against the
host's listing plans what to send, with the room it takes and what interrupted uploads left;
apply sends it with rsync over the upload's master connection (encrypted: cached age
ciphertexts, encrypted batch by batch while the previous batch is sent), hashing the files
here meanwhile; then the host hashes what arrived, mismatches are re-sent once, and with
--decrypt-on-host the host decrypts it."""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from gpuonboard import transfer
from gpuonboard.steps.base import Plan, StepContext
from gpuonboard.steps.dataset import growing
from gpuonboard.steps.dataset.common import (
    LOCAL_KEPT,
    NOTHING_SENT,
    LocalWriteError,
    bare_dirs,
    count,
    empty_dirs,
    made,
    parent_dirs,
    shown,
    unreadable,
)
from gpuonboard.steps.dataset.decrypt import decrypt, decrypt_temp, remove_decrypt_temps
from gpuonboard.steps.dataset.encryption import Batch, encrypted_batches, load_encryption
from gpuonboard.steps.dataset.hostdirs import left_plaintext, listing, other_copy, written
from gpuonboard.steps.dataset.lease import LEASE_LOST, lost
from gpuonboard.steps.dataset.leftovers import (
    interrupted,
    kept_on_host,
    leftovers_note,
    replaced_newer,
    resumed_note,
)
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.preflight import decrypt_dir_room, no_room, old_size, room, rsync_progress
from gpuonboard.steps.dataset.scan import (
    changed_before_sent,
    changed_during,
    changed_since_scan,
    known_hashes,
    local_notes,
)
from gpuonboard.steps.dataset.verify import (
    damaged_ciphertexts,
    expected,
    mismatches,
    rehash_on_host,
    rehash_plaintext,
    temps_left,
    unmark_unpacked,
    unverified,
)
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import follow, hashcache, shards
from gpuonboard.units import format_bytes


class _Sizes(NamedTuple):
    """What a plain upload adds to the host's disk."""

    send: int  # bytes of the files to send
    resumed: int  # of those, already on the host as partial files
    need: int  # room it needs on the data dir's disk
    counted: int  # bytes already on the host that were counted (partial files, old versions)
    basis: dict[str, int]  # rel -> bytes it resumes from


# ------------------------------------------------------------------ plan


def plan_plain(
    ctx: StepContext, opts: DatasetOptions, src: Path, work: Work, remote: transfer.RemoteState
) -> Plan:
    """Plain and encrypted mode: what differs from the host's copy (rsync's quick check), in
    the way of it, left by interrupted uploads; the room it takes; the message."""
    tree = work.tree
    entries = list(tree.entries.values())
    if opts.encrypt and not tree.files:  # symlinks (and empty dirs) only: no ciphertext to make
        return _no_regular_file(ctx, opts, src, tree)
    taken = other_copy(ctx, opts, [opts.target] + ([opts.plain_target] if opts.decrypt_on_host else []))
    if taken:
        return Plan(False, taken, failed=True)
    if opts.encrypt:
        ciphers = _cipher_entries(ctx, opts, src, work)
        if isinstance(ciphers, Plan):
            return ciphers
        entries = ciphers
    work.send = transfer.to_send(entries, remote.files)
    verified = rehash_on_host(ctx, opts, work, entries)  # (not in shard mode: step.py)
    plain, unpacked, in_way = _to_decrypt(ctx, opts, work, remote)
    if in_way:  # (rsync would not delete a non-empty dir; a rerun alone never clears it)
        there, e = in_way[0]
        more = f" (and {count(len(in_way) - 1, 'other')})" if len(in_way) > 1 else ""
        return Plan(
            False,
            f"{ctx.host.name}:{shown(posixpath.join(there, e.rel))} is a directory where the"
            f" dataset now has a {'symlink' if e.kind == 'l' else 'file'}{more}; move it away (or"
            f" delete it) there, then rerun ({NOTHING_SENT})",
            failed=True,
        )
    sizes = _sizes(opts, work, remote, entries)
    where = f"{ctx.host.name}:{shown(opts.target if opts.encrypt else tree.landing(opts.target))}"
    n = len(tree.entries)
    total = f"{n} {'entry' if n == 1 else 'entries'}, {format_bytes(tree.total_bytes, binary=True)}"
    if not n and tree.empty_dirs:  # (plain mode only: encrypted mode returned above)
        total = f"{empty_dirs(len(tree.empty_dirs))}, no files"
    kept = work.kept = _kept_notes(ctx, opts, work, remote, plain, entries) + verified + work.plain_verified
    # empty directories (rsync -a makes them; with nothing else to send it never ran)
    work.mkdirs = [] if opts.encrypt else sorted(d for d in tree.empty_dirs if d not in remote.dirs)
    if not work.send and not work.decrypt and not work.mkdirs and not work.dec_temps:
        if work.leftovers:  # (a later run said "up to date" and never mentioned them)
            return Plan(
                True,
                f"dataset up to date at {where} ({total}); remove {leftovers_note(work.leftovers)}{kept}",
                diff={"target": opts.target, "send": [], "bytes": 0, "remove": work.leftovers},
                data=work,
            )
        return Plan(False, f"dataset up to date at {where} ({total}); nothing sent{kept}", diff={"sent": 0})
    if opts.decrypt_dir and work.decrypt and plain is not None:  # the plaintext's own disk (a tmpfs)
        short = decrypt_dir_room(
            ctx, opts, plain.free_bytes, sum(e.size for e in work.decrypt), "the plaintext"
        )
        if short is not None:
            return short
    if remote.free_bytes is not None and remote.free_bytes < sizes.need:
        there = (
            f", {format_bytes(sizes.counted, binary=True)} already there counted" if sizes.counted > 0 else ""
        )
        return no_room(ctx, opts, remote.free_bytes, sizes.need, f"for {len(work.send)} files{there}")
    return _send_plan(ctx, opts, src, work, entries, sizes, where, unpacked)


def _no_regular_file(ctx: StepContext, opts: DatasetOptions, src: Path, tree: transfer.SourceTree) -> Plan:
    """Encrypted mode, a dataset of symlinks (and empty dirs) only: nothing to send ("up to date
    at" would name an .encrypted copy the host does not have)."""
    n_links = sum(1 for e in tree.entries.values() if e.kind == "l")
    and_dirs = " and its empty directories" if tree.empty_dirs else ""
    return Plan(
        False,
        f"the dataset {src} holds no regular file, the only kind plain encrypted mode uploads"
        f" (its {count(n_links, 'symlink')}{and_dirs} are not; --shards carries them); nothing sent"
        f" (what {ctx.host.name}:{opts.target} holds is left as it is)",
        diff={"sent": 0},
    )


def _cipher_entries(
    ctx: StepContext, opts: DatasetOptions, src: Path, work: Work
) -> list[transfer.Entry] | Plan:
    """Encrypted mode: the entries rsync compares, one `<rel>.age` per regular file (its cached
    ciphertext's size, or unknown when not encrypted yet); or the failed plan."""
    tree = work.tree
    dirs = parent_dirs(tree.entries)
    clash = sorted(e.rel for e in tree.files if e.rel + ".age" in dirs)
    if clash:  # the ciphertext `a.age` of the file `a` is where the directory `a.age` goes
        return Plan(
            False,
            f"the dataset {src} has both {clash[0]!r} and a directory {clash[0] + '.age'!r}: in"
            " encrypted mode the first one's ciphertext takes the second one's name; rename one,"
            f" then rerun ({NOTHING_SENT})",
            failed=True,
        )
    # plaintext hashes from the hash cache (unchanged size, mtime, inode); the rest are
    # hashed while they are encrypted, in one pass, during the upload
    hashes = hashcache.HashCache(opts.hash_cache_dir(ctx, tree.root), locate=tree.path)
    work.hashes = known_hashes(tree, hashes)
    problem = load_encryption(ctx, opts, work)
    if problem or work.enc is None:
        return Plan(False, problem or "no encryption settings", failed=True)
    cache = opts.cache_dir(ctx)
    entries = []
    for e in tree.files:  # symlinks are not uploaded in encrypted mode
        path = cache / f"{work.enc.cache_key(e.sha256)}.age" if e.sha256 else None
        if path is not None:
            work.cipher[e.rel] = path
        if path is not None and path.is_file():
            st = path.stat()
            entries.append(transfer.Entry(e.rel + ".age", "f", st.st_size, int(st.st_mtime), ""))
        else:  # not encrypted yet: certainly to send; size estimated (age adds ~0.03 %)
            entries.append(transfer.Entry(e.rel + ".age", "f", -1, 0, ""))
    return entries


def _to_decrypt(
    ctx: StepContext, opts: DatasetOptions, work: Work, remote: transfer.RemoteState
) -> tuple[transfer.RemoteState | None, str, list[tuple[str, transfer.Entry]]]:
    """With --decrypt-on-host, what to decrypt (work.decrypt) and the temp files a cut-short
    decryption left (work.dec_temps). -> (the plaintext dir's listing or None, the note on
    why all is decrypted again, the (dir, entry) pairs a directory on the host is in the way of)."""
    tree = work.tree
    # (an empty directory is no obstacle: rsync, and the decryption, replace it)
    blocking = remote.dirs - remote.empty_dirs  # (once: not a set difference per file)
    in_way = [(opts.target, e) for e in work.send if e.rel in blocking]
    if not opts.decrypt_on_host:
        return None, "", in_way
    unpacked = ""
    plain = listing(ctx, opts, opts.plain_target)
    work.decrypt = transfer.to_send(tree.files, plain.files)
    store = listing(ctx, opts, opts.shards_target).files if opts.shards is not False else {}
    if work.decrypt != tree.files and any(n.startswith(shards.MARKER_PREFIX) for n in store):
        # the tree there was unpacked from shards: its mtimes are the unpack's, so a
        # size-and-mtime match says nothing (an edit made in that second stayed stale)
        work.decrypt = list(tree.files)
        unpacked = " (all: the tree there was unpacked from shards, so its mtimes prove nothing)"
    blocking = plain.dirs - plain.empty_dirs
    in_way += [(opts.plain_target, e) for e in work.decrypt if e.rel in blocking]
    work.dec_temps = sorted(rel for rel in plain.files if decrypt_temp(rel) and rel not in tree.entries)
    if not unpacked:  # (all is decrypted again anyway)
        work.plain_verified = rehash_plaintext(ctx, opts, work)
    return plain, unpacked, in_way


def _unpacked(ctx: StepContext, opts: DatasetOptions) -> bool:
    """Whether the copy on the host was unpacked from shards (the store's unpack marker): its
    files carry the unpack's mtime, which says nothing of an edit."""
    if opts.shards is False:
        return False
    return any(n.startswith(shards.MARKER_PREFIX) for n in listing(ctx, opts, opts.shards_target).files)


def _sizes(
    opts: DatasetOptions, work: Work, remote: transfer.RemoteState, entries: list[transfer.Entry]
) -> _Sizes:
    """What interrupted uploads left (a dropped link's temp files, partial files: resumed from,
    or removed: work.resume, work.leftovers), and the room on the host's disk, counting what is
    already there."""
    tree = work.tree
    sending = {e.rel for e in work.send}
    work.resume, work.leftovers, basis, freed = interrupted(remote, {e.rel for e in entries}, sending)
    if opts.encrypt:  # (plaintext sizes: a ciphertext not made yet has none; age adds ~0.03 %)
        sizes = [tree.entries[e.rel[: -len(".age")]].size for e in work.send]
    else:
        sizes = [max(e.size, 0) for e in work.send]
    send = sum(sizes)
    resumed = sum(min(basis.get(e.rel, 0), size) for e, size in zip(work.send, sizes, strict=True))
    peak, grown = room(
        [
            (size, basis.get(e.rel, 0) + old_size(remote.files.get(e.rel)))
            for e, size in zip(work.send, sizes, strict=True)
        ]
    )
    # on the host's disk: what is sent, and with decryption the plaintext too (--decrypt-to:
    # the plaintext lands on another disk)
    decrypted = sum(e.size for e in work.decrypt) if opts.encrypt and not opts.decrypt_dir else 0
    need = max(peak, grown + decrypted) - freed
    work.room = (max(need, 0), max(grown + decrypted - freed, 0))  # (the preflight line states them)
    counted = send + decrypted - need  # (already on the host: partial files, old versions)
    return _Sizes(send, resumed, need, counted, basis)


def _kept_notes(
    ctx: StepContext,
    opts: DatasetOptions,
    work: Work,
    remote: transfer.RemoteState,
    plain: transfer.RemoteState | None,
    entries: list[transfer.Entry],
) -> str:
    """The message's notes on what stays on the host (files the dataset lost, old plaintext)
    and what is not uploaded (in encrypted mode symlinks and empty directories; fifos...)."""
    tree = work.tree
    kept = kept_on_host(remote.files, {e.rel for e in entries})
    if not opts.encrypt:  # (encrypted: the host holds ciphertexts, each only ever the upload's)
        there = {e.rel for e in work.send if e.rel in remote.files}  # (the list's only use)
        wrote = written(ctx, opts.target, there) if there else None
        kept += replaced_newer(remote.files, work.send, wrote, _unpacked(ctx, opts))
    if plain is not None:  # the plaintext dir keeps what the dataset dropped too
        # (not the temp files of a cut-short decryption: this run removes them)
        temps = set(work.dec_temps)
        theirs = {rel: v for rel, v in plain.files.items() if rel not in temps}
        kept += kept_on_host(theirs, {e.rel for e in tree.files}, opts.plain_target)
    links = sorted(e.rel for e in tree.entries.values() if e.kind == "l") if opts.encrypt else []
    if links:  # (age encrypts file contents; a symlink has none)
        verb = "is" if len(links) == 1 else "are"
        kept += f"; {count(len(links), 'symlink')} of the dataset {verb} not uploaded in encrypted mode"
        kept += f" (e.g. {links[0]!r})"
    if opts.encrypt and tree.empty_dirs:  # (each file's ciphertext travels: a dir with none, not)
        gone = sorted(tree.empty_dirs)
        verb = "is" if len(gone) == 1 else "are"
        kept += (
            f"; {bare_dirs(gone, tree.specials, ' of the dataset')} {verb} not uploaded in encrypted mode"
            f" (e.g. {gone[0]!r}; --shards carries them)"
        )
    return kept + left_plaintext(ctx, opts) + local_notes(tree, links=not opts.encrypt)


def _send_plan(
    ctx: StepContext,
    opts: DatasetOptions,
    src: Path,
    work: Work,
    entries: list[transfer.Entry],
    sizes: _Sizes,
    where: str,
    unpacked: str,
) -> Plan:
    """The plan that sends the files, with its message and diff."""
    names = ", ".join(shown(e.rel) for e in work.send[:3]) + (" ..." if len(work.send) > 3 else "")
    msg = (
        f"send {len(work.send)} of {len(entries)} files ({format_bytes(sizes.send, binary=True)}) to {where}"
    )
    if names:
        msg += f": {names}"
    if work.mkdirs and not entries:  # (nothing else: "send 0 of 0 files (0 B)" said nothing)
        msg = f"make {made(work.mkdirs)} at {where}; the dataset has no files to send"
    elif work.mkdirs:
        msg += f"; make {made(work.mkdirs)}"
    if work.decrypt:
        into = work.tree.landing(opts.plain_target)
        msg += f"; decrypt {len(work.decrypt)} on the host into {into}{unpacked}"
    if work.dec_temps:
        msg += (
            f"; remove {count(len(work.dec_temps), 'temp file')} a decryption cut short on the host"
            f" left in {shown(opts.plain_target)} (e.g. {work.dec_temps[0]!r})"
        )
    work.resumed = (sum(1 for e in work.send if sizes.basis.get(e.rel)), sizes.resumed)
    msg += resumed_note(work.resumed, "resume")
    if work.leftovers:
        msg += f"; remove {leftovers_note(work.leftovers)}"
    msg += work.kept
    send = sizes.send - sizes.resumed  # (what travels: rsync sends the rest of a partial file)
    if entries:  # (no file: nothing to estimate)
        msg += f"; estimate {transfer.format_eta(send, opts.link_mbit(ctx))}"
    work.need = send  # the upload's size: its ETA and whether to measure the link first
    diff = {"target": opts.target, "send": [e.rel for e in work.send], "bytes": send, "source": str(src)}
    return Plan(True, msg, diff=diff, data=work)


# ------------------------------------------------------------------ apply


def rsync_argv(
    opts: DatasetOptions,
    work: Work,
    stage: Path,
    cfg: Path,
    alias: str,
    files_from: Path | None,
    target: str = "",
    append: bool = False,
) -> list[str]:
    """This upload's rsync command line: `stage` (the names listed in `files_from`, or all of
    it) into work.target (or `target`), over the master connection, its processes marked as
    this run's (`append`: transfer.rsync_command's)."""
    return transfer.rsync_argv(
        stage,
        target or work.target,
        cfg,
        alias,
        opts.bwlimit,
        files_from=files_from,
        ssh_options=work.ssh_opts,
        marker=opts.marker(),
        append=append,
    )


def apply_plain(
    ctx: StepContext,
    opts: DatasetOptions,
    label: str,
    plan: Plan,
    work: Work,
    cfg: Path,
    alias: str,
    eta: str,
) -> Any:
    """Plain (and encrypted) mode: rsync, verify by sha256 on the host, re-send mismatches once."""
    unmark_unpacked(ctx, opts)
    unverified(ctx, work.target, work.reverify)  # (`sync --verify`: rsync's quick check sends them)
    if work.enc is None:
        root = work.tree.root
        stage, only = (
            (root, None)
            if root.is_dir()
            else (root.parent, cfg.parent / f"{cfg.stem}.{opts.unpack_token}.one")
        )
        if only is not None:  # one file: that file, never the rest of its directory
            only.write_bytes(root.name.encode("utf-8", "surrogateescape") + b"\0")
            work.temps.append(only)
        big = follow.biggest((e.rel, e.size) for e in work.send if e.kind == "f")
        files = [follow.entry(work.target, rel, size) for rel, size in big]
        with follow.following(work.followed, work.ssh_argv(cfg, alias), files) as landed:
            run = _rsync_hashing(ctx, opts, label, work, rsync_argv(opts, work, stage, cfg, alias, only))
            if not isinstance(run, str) and run.exit_code == 0:
                landed()
        if isinstance(run, str):
            return run
        bad_run = run if run.exit_code != 0 else None
        sent, literal = run.stats.files_transferred, run.stats.literal_bytes
    else:
        stage = stage_dir(ctx, work, "encrypted")
        batches = encrypted_batches(opts.cache_dir(ctx), work, stage)
        try:
            bad_run, sent, literal = _rsync_batches(ctx, opts, label, stage, cfg, alias, batches, work)
        except LocalWriteError as exc:
            return str(exc)
    if bad_run is not None:
        return (
            transfer.rsync_conflict(bad_run)
            or _vanished(work, bad_run, (e.rel for e in work.send))
            or (transfer.explain_rsync_failure(bad_run) + "; rerun to resume (partial files are kept)")
        )
    if lost(work, ctx):  # (asked of the host: verification re-sends and decrypts)
        return LEASE_LOST
    # verification: the host hashes what arrived
    for job in work.notes[1]:
        job.result()
    work.notes[0].shutdown()
    expect = expected(work)
    # (the files the host hashed while they arrived, as expected, need no second read)
    rest = {r: h for r, h in expect.items() if work.followed.get(r) != h}
    bad = mismatches(ctx, work.target, rest)
    if bad:
        problem, more, more_bytes = _resend(ctx, opts, label, work, stage, cfg, alias, bad, expect)
        if problem:
            return problem
        sent, literal = sent + more, literal + more_bytes
    stray = temps_left(ctx, work.target, expect)
    if stray:
        return stray
    moved = changed_during(work.tree, expect) if work.enc is None else None
    if moved:  # (verified: the host's copy is what was sent, not the file now)
        return moved
    msg = _sent_message(ctx, work, sent, literal, expect, eta)
    problem, note = _on_host_after(ctx, opts, work, sent)
    if problem:
        return problem
    plan.msg = msg + note + work.kept
    plan.diff = {
        **(plan.diff or {}),
        "sent_files": sent,
        "literal_bytes": literal,
        "hashed_arriving": len(expect) - len(rest),  # (verified by the host's hash as they arrived)
    }
    return None


def _staged_size(stage: Path, rel: str) -> int:
    """The size of a staged ciphertext, as the host will have it (-1: not known)."""
    try:
        return os.stat(stage / rel).st_size
    except OSError:
        return -1


def _rsync_hashing(
    ctx: StepContext, opts: DatasetOptions, label: str, work: Work, argv: list[str]
) -> transfer.RsyncRun | str:
    """Plain mode: run rsync while the local sha256 of the dataset is computed beside it (it
    was a serial pass before the upload). -> the rsync run, or the sentence for a dataset
    file that could not be read."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        hashing = pool.submit(transfer.hash_tree, work.tree, stop)
        try:
            run: transfer.RsyncRun | None = transfer.run_rsync(argv, rsync_progress(label, ctx))
        except BaseException:
            stop.set()  # (leaving this block waits for the hashing: cut it short)
            raise
        if run is not None and (run.exit_code == 20 or run.exit_code < 0):
            stop.set()  # rsync was stopped (an interrupt on another thread): nothing to verify
        try:
            hashing.result()
        except OSError as exc:
            return _gone_since_scan(exc, work.tree) or unreadable(exc, work.tree.root, LOCAL_KEPT)
    assert run is not None
    return run


def _gone_since_scan(exc: OSError, tree: transfer.SourceTree) -> str | None:
    """The sentence for a dataset file the hashing beside rsync found deleted or replaced since
    the scan (the same one rsync's own `link_stat ... No such file` gets, whichever of the two
    reached the file first), else None."""
    if exc.filename is None or exc.errno not in (errno.ENOENT, errno.ENOTDIR):
        return None
    path, base = Path(os.fsdecode(exc.filename)), tree.root if tree.root.is_dir() else tree.root.parent
    if not path.is_relative_to(base):
        return None
    return changed_before_sent(tree, [path.relative_to(base).as_posix()])


def stage_dir(ctx: StepContext, work: Work, kind: str) -> Path:
    """A fresh local dir that holds (hard links to) what rsync sends from, per host and dataset."""
    key = hashlib.sha256(
        f"{ctx.host.name}\0{work.tree.root}\0{kind}".encode("utf-8", "surrogateescape")
    ).hexdigest()[:16]
    stage = ctx.project / ".gpuonboard" / "cache" / "staging" / key
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    return stage


def _rsync_batches(
    ctx: StepContext,
    opts: DatasetOptions,
    label: str,
    stage: Path,
    cfg: Path,
    alias: str,
    batches: Sequence[Callable[[], Batch]],
    work: Work,
) -> tuple[transfer.RsyncRun | None, int, int]:
    """Send each batch (a producer returning stage-relative names) with rsync --files-from
    while the next batch is produced (a big file: while it is encrypted, growing.py);
    -> (failed run or None, files sent, literal bytes)."""
    base = [0]
    sent = [0, 0]
    failed: list[transfer.RsyncRun] = []
    # this run's own list (two runs to other copies on one host shared `<host>.batch`)
    fd, name = tempfile.mkstemp(dir=cfg.parent, prefix=f".{cfg.stem}.", suffix=".batch")
    os.close(fd)
    files = Path(name)
    work.temps.append(files)  # (removed when apply ends)
    shown = [0]  # the bytes the progress line showed in this batch (a growing file's runs restart at 0)
    progress = growing.monotone(rsync_progress(label, ctx, base, work.need), shown)

    def argv(src: Path, target: str, names: Path, append: bool = False) -> list[str]:
        return rsync_argv(opts, work, src, cfg, alias, names, target, append)

    def remote(command: str) -> bool:
        return ctx.runner.run(command).ok

    ssh = work.ssh_argv(cfg, alias)
    sender = growing.Sender(
        remote, work.target, argv, lambda a: transfer.run_rsync(a, progress), files, ssh, work.followed
    )

    def send(batch: Batch) -> bool:
        shown[0] = 0
        if batch.growing is not None:
            grown = growing.send_growing(batch.growing, sender, batch.complete)
            sent[1] += grown.literal
            if grown.failed is not None:
                failed.append(grown.failed)
                return False
            if grown.landed:  # (a batch of that one file)
                sent[0] += 1
                base[0] += batch.growing.size()
                return True
        if not batch.names:
            return True
        files.write_bytes(b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in batch.names))
        big = follow.biggest((n, work.tree.entries[n[: -len(".age")]].size) for n in batch.names)
        # (chosen by the plaintexts' sizes; the follower is told the staged ciphertexts')
        hashed = [follow.entry(work.target, n, _staged_size(stage, n)) for n, _size in big]
        with follow.following(work.followed, ssh, hashed) as landed:
            run = transfer.run_rsync(argv(stage, work.target, files), progress)
            if run.exit_code != 0:
                failed.append(run)
                return False
            landed()
        sent[0] += run.stats.files_transferred
        sent[1] += run.stats.literal_bytes
        base[0] += run.stats.total_size
        return True

    transfer.pipelined(batches, send)
    return (failed[0] if failed else None), sent[0], sent[1]


def _resend(
    ctx: StepContext,
    opts: DatasetOptions,
    label: str,
    work: Work,
    stage: Path,
    cfg: Path,
    alias: str,
    bad: list[str],
    expect: dict[str, str],
) -> tuple[str | None, int, int]:
    """Files whose sha256 on the host differs: re-sent once (--ignore-times), then checked
    again. -> (the failure sentence or None, files and literal bytes the re-send sent)."""
    if work.enc is not None:
        damaged = damaged_ciphertexts([work.cipher[r[: -len(".age")]] for r in bad])
        if damaged:
            names = ", ".join(r for r in bad if work.cipher[r[: -len(".age")]] in damaged)
            return (
                (
                    f"the cached ciphertext of {names} was damaged on this machine (its sha256 differs"
                    " from when it was made); it was removed: rerun to encrypt and send it again"
                ),
                0,
                0,
            )
    unverified(ctx, work.target, bad)  # until the re-send below verifies
    if work.enc is not None:  # the stage holds only this run's files: link the rest
        for rel in bad:
            link = stage / rel
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.link(work.cipher[rel[: -len(".age")]], link)
    files = cfg.parent / f"{cfg.stem}.files"
    files.write_bytes(b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in bad))
    resend = rsync_argv(opts, work, stage, cfg, alias, files)
    resend.insert(1, "--ignore-times")
    again = transfer.run_rsync(resend, rsync_progress(label, ctx))
    if again.exit_code != 0:
        return _vanished(work, again, bad) or transfer.explain_rsync_failure(again), 0, 0
    still = mismatches(ctx, work.target, {r: expect[r] for r in bad})
    unverified(ctx, work.target, still)
    moved = [r for r in still if work.enc is None and changed_since_scan(work.tree, r)]
    if moved:
        return (
            (
                f"{', '.join(moved[:5])} changed on this machine during the upload (what arrived is"
                " neither the old nor surely the new content); rerun to send it as it is now"
            ),
            0,
            0,
        )
    if still:
        return f"sha256 mismatch on the host after re-sending: {', '.join(still[:5])}", 0, 0
    return None, again.stats.files_transferred, again.stats.literal_bytes


# rsync's exits when some files could not be sent (one gone since its listing, or before: link_stat)
_SOME_NOT_SENT = (23, 24)


def _vanished(work: Work, run: transfer.RsyncRun, rels: Iterable[str]) -> str | None:
    """The sentence naming the dataset files of `rels` (being sent) that changed on this machine
    since the scan, when rsync could not send some files (exit 23, 24) in plain mode; else None."""
    if work.enc is not None or run.exit_code not in _SOME_NOT_SENT:
        return None
    return changed_before_sent(work.tree, rels)


def _sent_message(
    ctx: StepContext, work: Work, sent: int, literal: int, expect: dict[str, str], eta: str
) -> str:
    """The step's message for what arrived verified (before the host's decryption)."""
    size = format_bytes(literal, binary=True)
    links = sum(1 for e in work.send if e.kind == "l")  # (rsync's count is of regular files)
    also = f" and {count(links, 'symlink')}" if links else ""
    landed = work.target if work.enc is not None else work.tree.landing(work.target)
    msg = f"sent {count(sent, 'file')}{also} ({size} of data) to {ctx.host.name}:{landed}"
    checked = sum(1 for r in expect if (e := work.tree.entries.get(r)) is not None and e.kind == "l")
    also = f" and {count(checked, 'symlink')}" if checked else ""  # (its target's sha256)
    msg += f"; {count(len(expect) - checked, 'file')}{also} verified by sha256; estimate was {eta}"
    msg += resumed_note(work.resumed, "resumed")
    if work.leftovers:
        msg += f"; removed {leftovers_note(work.leftovers)}"
    if work.mkdirs and not expect:  # (rsync -a made them; "sent 0 files" said nothing of them)
        msg = f"made {made(work.mkdirs)} at {ctx.host.name}:{landed}; the dataset has no files to send"
    elif work.mkdirs:
        msg += f"; made {made(work.mkdirs)}"
    return msg


def _on_host_after(ctx: StepContext, opts: DatasetOptions, work: Work, sent: int) -> tuple[str | None, str]:
    """--decrypt-on-host, once the ciphertexts arrived: remove what a cut-short decryption left,
    then decrypt. -> (the failure sentence or None, the message's note)."""
    note = ""
    if work.dec_temps:  # (partial plaintext a killed decryption left: never a dataset file)
        problem = remove_decrypt_temps(ctx, opts, work)
        if problem:
            return problem, ""
        note += f"; removed {count(len(work.dec_temps), 'temp file')} a cut-short decryption left"
    if opts.decrypt_on_host and (work.decrypt or sent):
        problem = decrypt(ctx, opts, work)
        if problem:
            return problem, ""
        note += f"; decrypted {len(work.decrypt) or sent} into {work.tree.landing(opts.plain_target)}"
    return None, note
