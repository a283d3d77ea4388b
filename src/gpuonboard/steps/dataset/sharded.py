"""Planning shard mode (`--shards`, `--unpack`, or auto above shard_threshold files): the
dataset's files packed into tar shards of shard_size, found unchanged by member key (file
hashes from the hash cache: only changed files are read) or recognised on the host by hashing,
compared with the listing of <dest>/<name>.shards; with --unpack also the unpacked tree on the
host (its marker, its drift, files no upload put there, the shards whose files it holds: taken
from it, not sent, when the shards are not kept), and the room an unpack takes."""

from __future__ import annotations

import contextlib
import itertools
import posixpath
from pathlib import Path

from gpuonboard import shell, transfer
from gpuonboard.steps.base import Plan, StepArgsError, StepContext
from gpuonboard.steps.dataset import shardverify
from gpuonboard.steps.dataset.common import (
    NOTHING_SENT,
    count,
    empty_dirs,
    only_dirs,
    parent_dirs,
    shown,
    transfer_size,
    unreadable,
)
from gpuonboard.steps.dataset.encryption import load_encryption
from gpuonboard.steps.dataset.hostdirs import left_plaintext, listing, other_copy
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.preflight import decrypt_dir_room, no_room
from gpuonboard.steps.dataset.scan import known_hashes, local_notes
from gpuonboard.steps.dataset.shardstore import (
    cipher_path,
    discard,
    manifest_digest,
    note_packed,
    readable_manifest,
    remote_name,
    shard_root,
    stored_digest,
)
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import hashcache, scanstore, shards, shardstream
from gpuonboard.units import format_bytes


def plan_shards(ctx: StepContext, opts: DatasetOptions, label: str, src: Path, work: Work) -> Plan:
    """Shard mode: assign files to shards; when shards were packed before, find the unchanged
    ones by member key (file hashes from the local hash cache: only changed files are read);
    compare their names with the listing of <dest>/<name>.shards. A first run hashes nothing
    here: packing hashes each file as it streams it."""
    work.target = opts.shards_target
    work.unpack = opts.unpack or opts.decrypt_on_host
    try:
        work.keep_shards = not work.unpack or opts.keeps_shards(ctx)
    except StepArgsError as exc:
        return Plan(False, f"{exc} (vars.keep_shards or the step's keep_shards)", failed=True)
    early = _prechecks(ctx, opts, src, work)
    if early is not None:
        return early
    size = int(transfer_size(opts.setting(ctx, "shard_size", shards.DEFAULT_SIZE)))
    cache = opts.hash_cache_dir(ctx, work.tree.root)
    index = shards.Index(cache)
    remote = listing(ctx, opts, opts.shards_target)
    if (blocked := _in_the_way(ctx, opts, remote)) is not None:
        return blocked
    work.codec = shardstream.pick_codec(remote.zstd)
    work.index, work.hashes = index, hashcache.HashCache(cache, work.tree.columns, work.tree.path)
    found, unread = _group(ctx, opts, label, work, remote, size)
    if unread is not None:
        return Plan(False, unreadable(unread, src, NOTHING_SENT), failed=True)
    _compare(ctx, opts, work, remote)
    checked = shardverify.rehash_shards(ctx, opts, work) if shardverify.verifying(opts) else ""
    where = f"{ctx.host.name}:{opts.shards_target}"
    total, counted = _totals(work)
    # whole: every shard there, none left over, and the host's manifest is this one (a shard
    # of a deleted file alone, or an emptied manifest, leaves the rest as it was)
    # (with nothing to send the shards are final: apply reuses this manifest)
    # shards an earlier --unpack removed once their tree was verified: the marker of this very
    # manifest vouches for them (unless the tree drifted since: then they are sent again)
    resend = _unpacked_and_removed(ctx, opts, work, remote, size)
    _drop_partials(work)
    digest = "" if work.send_idx else manifest_digest(work, size)
    stored = stored_digest(opts.cache_dir(ctx), work, digest) if digest else ""
    complete = bool(stored) and not work.stale and remote.manifest_sha == stored
    plain = listing(ctx, opts, opts.plain_target) if work.unpack else None
    unpacked, redo = True, ""
    if plain is not None and complete and shardverify.verifying(opts):  # (else unpacked anyway)
        checked += shardverify.rehash_tree(ctx, opts, work, plain)
    if plain is not None:
        unpacked, redo, foreign = _unpacked_tree(ctx, opts, work, remote, plain, digest, complete)
        if foreign:
            return Plan(False, _foreign_sentence(ctx, opts, foreign), failed=True)
    if resend and not (complete and unpacked):  # (nothing on the host to unpack them from)
        work.send_idx, work.need = sorted(work.send_idx + resend[0]), work.need + resend[1]
        complete, unpacked = False, False
        redo = redo.replace(": unpacked again", ": rebuilt (the shards are not kept on the host)")
    if plain is not None and not work.keep_shards and not (complete and unpacked):
        _from_tree(work, plain, size)
        _drop_partials(work)
    work.shard_size = size
    recognised = (
        f"; {count(found, 'shard')} already on the host recognised by hashing here (this machine's"
        " shard index did not list them)"
        if found
        else ""
    )
    note = work.kept = left_plaintext(ctx, opts) + _older_note(ctx, opts, work) + recognised
    note = work.kept = note + local_notes(work.tree) + checked
    if complete and unpacked:
        return Plan(False, f"dataset up to date at {where} ({total}); nothing sent{note}", diff={"sent": 0})
    short = _room_problem(ctx, opts, work, remote, plain)
    if short is not None:
        return short
    work.manifest_behind, work.redo = remote.manifest_sha != stored, redo
    return _send_plan(ctx, opts, src, work, where, counted, note)


def _in_the_way(ctx: StepContext, opts: DatasetOptions, remote: transfer.RemoteState) -> Plan | None:
    """A directory on the host where a shard, the manifest or a marker goes (one is renamed to
    its name: it would go into it): a failed plan naming it; None when there is none."""
    in_way = sorted(
        d
        for d in remote.dirs
        if "/" not in d and (d.endswith((".tar", ".age", ".json")) or d.startswith(shards.MARKER_PREFIX))
    )
    if not in_way:
        return None
    return Plan(
        False,
        f"{ctx.host.name}:{shown(posixpath.join(opts.shards_target, in_way[0]))} is a"
        " directory where a shard, the manifest or a marker goes; move it away (or delete it) there,"
        f" then rerun ({NOTHING_SENT})",
        failed=True,
    )


def _totals(work: Work) -> tuple[str, str]:
    """('12 entries in 3 shards', '12 entries'): the dataset's entries as the plan says them (a
    dataset of only empty dirs: those, not '0 entries')."""
    n = len(work.tree.entries)
    total = f"{n} {'entry' if n == 1 else 'entries'} in {count(len(work.groups), 'shard')}"
    counted = f"{n} entries"
    if not n and work.tree.empty_dirs:
        counted = empty_dirs(len(work.tree.empty_dirs))
        total = f"{counted} in {count(len(work.groups), 'shard')}"
    return total, counted


def _unpacked_and_removed(
    ctx: StepContext, opts: DatasetOptions, work: Work, remote: transfer.RemoteState, size: int
) -> tuple[list[int], int] | None:
    """Shards an --unpack removed (unless this run keeps them): when every shard to send is one
    whose group is known, and the host's manifest is this run's and its tree is marked unpacked
    from it, the shards are not missing: an earlier run unpacked them, verified the tree by
    sha256 and removed them. They are taken off the send list (-> what was taken off, and its
    bytes, should the plan find the tree drifted and send them again after all; None when this
    does not apply)."""
    if not (work.send_idx and remote.manifest_sha) or (work.unpack and work.keep_shards):
        return None  # (a --shards run without --unpack: the unpacked tree holds them, nothing to send)
    if any(work.built[i] is None for i in work.send_idx):
        return None
    digest = manifest_digest(work, size)
    if stored_digest(opts.cache_dir(ctx), work, digest) != remote.manifest_sha:
        return None
    if shards.marker_name(digest, opts.plain_target) not in remote.files:
        return None
    taken = list(work.send_idx)
    need = sum(s.size for i in taken if (s := work.built[i]) is not None)
    work.send_idx, work.need = [], work.need - need
    return taken, need


def _from_tree(work: Work, plain: transfer.RemoteState, size: int) -> None:
    """--unpack: the shards to send whose files the host's current tree already holds (each
    group packed before by this machine, so its members' sha256s are known here, and every
    member there with its kind and size) are not sent: apply hard-links their files from that
    tree into the new one and hashes them there first (what differs is sent after all). A
    group holding an empty directory, or a file new or changed since, is sent. (Not with
    keep_shards: the shards are a cache there, and a missing one is sent to complete it.)"""
    reuse = [
        i
        for i in work.send_idx
        if work.built[i] is not None
        and all(
            e.kind in ("f", "l")
            and e.sha256
            and (got := plain.files.get(e.rel)) is not None
            and got[0] == e.kind
            and (e.kind != "f" or got[1] == e.size)
            for e in work.groups[i]
        )
    ]
    if not reuse:
        return
    taken = set(reuse)
    work.reuse = reuse
    work.send_idx = [i for i in work.send_idx if i not in taken]
    work.need -= sum(s.size for i in reuse if (s := work.built[i]) is not None)


def _drop_partials(work: Work) -> None:
    """The partials of shards the plan no longer sends (their files are on the host already)
    are stale: removed by the closing command, not resumed from."""
    parts = {work.part(i) for i in work.send_idx}
    for name in [n for n in work.partials if n not in parts]:
        del work.partials[name]
        work.stale.append(name)


def _prechecks(ctx: StepContext, opts: DatasetOptions, src: Path, work: Work) -> Plan | None:
    """The plan when the dirs this run writes are not its own, the plaintext dir is a symlink,
    the dataset gives no shard to make, or the encryption settings do not fit; else None."""
    taken = other_copy(ctx, opts, [opts.shards_target] + ([opts.plain_target] if work.unpack else []))
    if taken:
        return Plan(False, taken, failed=True)
    link = listing(ctx, opts, opts.plain_target).link if work.unpack else None
    if link is not None:  # (the swap renames the link away and leaves the old copy at its target)
        return Plan(
            False,
            f"{ctx.host.name}:{shown(opts.plain_target)} is a symlink (to {shown(link)}); an unpack"
            " replaces the tree by a rename, which would replace the link and leave the old copy"
            " where it points: name the real directory with --dest and --name, or remove the link,"
            f" then rerun ({NOTHING_SENT})",
            failed=True,
        )
    earlier = listing(ctx, opts, opts.shards_target).files
    if not work.tree.entries and (not work.tree.empty_dirs or earlier):
        # (no shard to make. Empty dirs alone are members of a first upload's shard, but never
        # mirror away an earlier upload: a dataset whose mounts are missing looks like this)
        tree = work.tree
        what = f"holds {only_dirs(tree.empty_dirs, tree.specials)}" if tree.empty_dirs else "is empty"
        return Plan(
            False,
            f"the dataset {src} {what}; nothing sent (what {ctx.host.name}:{opts.shards_target} holds"
            " is left as it is)",
            diff={"sent": 0},
        )
    if opts.encrypt:
        problem = load_encryption(ctx, opts, work)
        if problem:
            return Plan(False, problem, failed=True)
        if work.unpack and work.identity is None:
            return Plan(False, "unpacking encrypted shards needs --decrypt-on-host", failed=True)
    return None


def _group(
    ctx: StepContext, opts: DatasetOptions, label: str, work: Work, remote: transfer.RemoteState, size: int
) -> tuple[int, OSError | None]:
    """Assign the dataset's members to shards, and find which were packed before (by member
    key, from the shard index; shards on the host the index does not name, by hashing here).
    -> (how many groups hashing recognised on the host, the error reading the dataset or None)."""
    index, hashes = work.index, work.hashes
    assert index is not None and hashes is not None
    if index.data:
        known_hashes(work.tree, hashes)
        try:
            transfer.hash_tree(work.tree)
        except OSError as exc:
            return 0, exc
    root = shard_root(work)
    work.groups = list(shards.assign_members(work.tree.members(), size))
    if index.data:
        work.keys = [shards.member_key(root, g) for g in work.groups]
        work.built = [index.get(k) for k in work.keys]
    else:
        work.keys = [""] * len(work.groups)
        work.built = [None] * len(work.groups)
    if work.enc is None:
        try:
            return _recognise_host_shards(ctx, opts, label, work, remote, root), None
        except OSError as exc:
            return 0, exc
    return 0, None


def _recognise_host_shards(
    ctx: StepContext, opts: DatasetOptions, label: str, work: Work, remote: transfer.RemoteState, root: Path
) -> int:
    """Shards on the host that this machine's shard index does not name (another clone of
    the project, a teammate's upload, a deleted cache): pack each group of unknown content
    whose tar would have the size of one of them, hashing only (nothing is written), and note
    what it is; the plan then finds it on the host like any known shard instead of sending
    it again. Returns how many groups it packed that the host has."""
    assert work.index is not None
    known = {str(v.get("name")) for v in work.index.data.values()}
    todo = shards.worth_hashing(work.groups, work.built, remote.files, known)
    found = 0
    for n, i in enumerate(todo):
        if ctx.progress:
            ctx.progress(
                f"step {label}: {opts.shards_target} on the host holds shards this machine has"
                f" not packed: hashing shard {n + 1} of {len(todo)} here to recognise them"
            )
        try:
            packed = shards.pack(root, work.groups[i], discard)
        except shards.ChangedWhilePacking:
            continue  # (sent, and checked again, as any changed shard)
        note_packed(work, i, packed)
        have = remote.files.get(packed.name)
        found += have is not None and have[:2] == ("f", packed.size)
    if todo and not ctx.check:  # known from now on, even when nothing is sent (a cache only)
        assert work.index is not None and work.hashes is not None
        with contextlib.suppress(OSError):
            work.index.save({k for k in work.keys if k})
        with contextlib.suppress(OSError):
            work.hashes.save(work.tree.entries)
    return found


def _compare(ctx: StepContext, opts: DatasetOptions, work: Work, remote: transfer.RemoteState) -> None:
    """Which groups to (build and) send (work.send_idx, work.need), the names of the known
    ones on the host (work.remote_names), and old or partial shards there (work.stale)."""
    for i, (group, shard) in enumerate(zip(work.groups, work.built, strict=True)):
        if shard is None:
            work.send_idx.append(i)
            work.need += scanstore.payload(group)
            continue
        name = remote_name(work, shard)
        work.remote_names.append(name)
        have = remote.files.get(name)
        want = shard.size
        if work.enc is not None:
            cipher = cipher_path(opts.cache_dir(ctx), work, shard)
            want = cipher.stat().st_size if cipher.is_file() else -1
        if have is None or have[0] != "f" or have[1] != want:
            work.send_idx.append(i)
            work.need += shard.size
    # the partial an interrupted stream left of a shard to send is resumed from (its bytes are
    # checked by sha256 then); any other is stale
    parts = {work.part(i) for i in work.send_idx}
    work.partials = {
        n: size for n, (kind, size, _) in remote.files.items() if n in parts and kind == "f" and size > 0
    }
    work.stale = [
        n
        for n, (kind, _, _) in remote.files.items()
        if "/" not in n
        and kind == "f"
        and n not in work.remote_names
        and n not in work.partials
        and (n.endswith((".tar", ".age")) or n.startswith(shardstream.INCOMING))
    ]


def _unpacked_tree(
    ctx: StepContext,
    opts: DatasetOptions,
    work: Work,
    remote: transfer.RemoteState,
    plain: transfer.RemoteState,
    digest: str,
    complete: bool,
) -> tuple[bool, str, list[str]]:
    """--unpack: (whether the host's tree is this manifest's, unpacked whole; the note on why
    it is unpacked again; files in it no upload put there, which the swap would lose). Sets
    work.drop when there are none."""
    unpacked, redo = True, ""
    drift, first, extra = shards.drift_summary(work.tree.entries, plain.files)
    dirs_gone = sorted(d for d in work.tree.empty_dirs if d not in plain.dirs)
    drift += len(dirs_gone)
    first = first if first is not None else (dirs_gone[0] if dirs_gone else None)
    if complete:  # the marker says which manifest was unpacked; the listing, that it is whole
        marked = shards.marker_name(digest, opts.plain_target) in remote.files
        unpacked = marked and not drift
        if marked and drift:
            redo = (
                f"; the unpacked tree {opts.plain_target} differs from the dataset"
                f" ({drift} missing or changed, e.g. {first!r}): unpacked again"
            )
    foreign = _foreign_files(ctx, opts, extra, work) if extra and not (complete and unpacked) else []
    if foreign:
        return unpacked, redo, foreign
    # what the swap drops: listed paths that are neither in the dataset nor a dir of it
    # (an empty one too: a file that became one is replaced, not dropped, by the swap)
    empty = work.tree.empty_dirs
    dirs = parent_dirs(itertools.chain(work.tree.entries, empty)) | empty if extra else set()
    work.drop = shardstream.dropped_digest([rel for rel in extra if rel not in dirs])
    return unpacked, redo, []


def _foreign_files(ctx: StepContext, opts: DatasetOptions, extra: list[str], work: Work) -> list[str]:
    """Of the files in the unpacked tree that the dataset does not have, those no earlier
    upload put there (not in the host's manifest): the user's own (a checkpoint written
    into the dataset dir). An unpack swaps the whole tree, so they would be lost."""
    shipped: set[str] = set()
    for name in (shards.MANIFEST, shards.UNPACKED_MANIFEST):  # (a --shards run since may
        # have replaced the first: the second is the one the tree was last unpacked from)
        r = ctx.runner.run(shell.join(["cat", "--", posixpath.join(opts.shards_target, name)]))
        shipped |= shards.manifest_paths(readable_manifest(r.stdout, work)) if r.ok else set()
    return [rel for rel in extra if rel not in shipped]


def _foreign_sentence(ctx: StepContext, opts: DatasetOptions, foreign: list[str]) -> str:
    """The failure sentence for files in the unpacked tree that an unpack would lose."""
    n = len(foreign)
    what = (
        f"a file that is in neither the dataset nor a shard upload's manifest ({foreign[0]!r})"
        if n == 1
        else f"{n} files that are in neither the dataset nor a shard upload's manifest (e.g. {foreign[0]!r})"
    )
    them = "it" if n == 1 else "them"
    return (
        f"{ctx.host.name}:{opts.plain_target} holds {what}: a job's output, or left by a plain-mode"
        f" upload; --unpack replaces that directory whole, so move {them} out first (or delete"
        f" {them} if unwanted, or unpack elsewhere with --dest), then rerun"
    )


def _older_note(ctx: StepContext, opts: DatasetOptions, work: Work) -> str:
    """The message's note on an earlier --unpack's tree in the copy, which this run without
    --unpack leaves as it was (not another copy's plaintext there)."""
    there = listing(ctx, opts, opts.target) if not work.unpack and not opts.encrypt else None
    if there is None or there.copy not in (None, "", posixpath.normpath(opts.copy)):
        return ""
    left = there.files
    drift, _, extra = shards.drift_summary(work.tree.entries, left) if left else (0, None, [])
    if left and work.send_idx:
        return (
            f"; the unpacked tree {opts.target} ({count(len(left), 'file')}) is not updated"
            " without --unpack and will be older than the dataset"
        )
    if drift or extra:
        return (
            f"; the unpacked tree {opts.target} differs from the dataset"
            f" ({count(drift + len(extra), 'path')}): --unpack updates it"
        )
    return ""


def _room_problem(
    ctx: StepContext,
    opts: DatasetOptions,
    work: Work,
    remote: transfer.RemoteState,
    plain: transfer.RemoteState | None,
) -> Plan | None:
    """The failed plan when the data dir's disk (or --decrypt-to's) lacks room for the shards
    and the tree an unpack rebuilds; else None."""
    # an unpack rebuilds the WHOLE tree beside the current one (swapped in at the end), in
    # file system blocks: a 1-byte file takes 4 KiB
    # (files taken from the current tree are hard links: no room, unless on another disk)
    tree_room = _tree_room(work) if work.unpack else 0
    apart = bool(opts.decrypt_dir) and work.unpack  # the tree goes to --decrypt-to's disk
    room = work.need + (0 if apart else tree_room)
    work.room_note = _room_note(opts, work, room, tree_room, apart)
    if remote.free_bytes is not None and remote.free_bytes < room:
        unpacked_too = " (the shards, and the whole tree unpacked beside the current one)"
        what = f"for {len(work.send_idx)} shards{unpacked_too if tree_room and not apart else ''}"
        return no_room(ctx, opts, remote.free_bytes, room, what)
    if apart and plain is not None:
        return decrypt_dir_room(ctx, opts, plain.free_bytes, tree_room, "the unpacked tree")
    return None


def _tree_room(work: Work) -> int:
    """The file system blocks (4 KiB) of the dataset's regular files but those taken from the
    host's current tree (hard links): what an unpack's new tree takes."""
    linked = {e.rel for i in work.reuse for e in work.groups[i]}
    if linked:
        return sum(-(-max(e.size, 0) // 4096) * 4096 for e in work.tree.iter_files() if e.rel not in linked)
    c, f_kind = work.tree.columns, ord("f")
    return sum(
        -(-max(size, 0) // 4096) * 4096 for size, kind in zip(c.sizes, c.kinds, strict=True) if kind == f_kind
    )


def _room_note(opts: DatasetOptions, work: Work, room: int, tree_room: int, apart: bool) -> str:
    """The preflight's sentence on the host space this upload needs: at its peak (the shards
    sent, and an unpack's whole new tree beside the current one until the swap), and what
    stays once it is done (the shards removed, unless kept)."""
    fmt = lambda n: format_bytes(n, binary=True)  # noqa: E731
    shards_part = f"{count(len(work.send_idx), 'shard')} ({fmt(work.need)})"
    if not work.unpack:
        return f"host space: {fmt(room)} under {opts.dest} for {shards_part}, kept there as the upload"
    where = f" under {opts.decrypt_dir}" if apart else ""
    tree = f"the tree ({fmt(tree_room)}{where}) unpacked beside the current one until it is swapped in"
    if work.reuse:
        tree += f" (the files of {count(len(work.reuse), 'shard')} hard-linked from the current one)"
    after = (
        "the shards stay (keep_shards)"
        if work.keep_shards
        else "then the shards are removed once the tree is verified: the tree and a small manifest stay"
    )
    return f"host space: {fmt(room)} under {opts.dest} at the peak: {shards_part} and {tree}; {after}"


def _send_plan(
    ctx: StepContext, opts: DatasetOptions, src: Path, work: Work, where: str, counted: str, note: str
) -> Plan:
    """The plan that sends the shards (or only updates the manifest, removes leftovers,
    unpacks), with its message and diff."""
    # shards to pack now: every one sent, but encrypted ones whose ciphertext is cached
    build = sum(
        1
        for i in work.send_idx
        if work.enc is None
        or (shard := work.built[i]) is None
        or not cipher_path(opts.cache_dir(ctx), work, shard).is_file()
    )
    msg = (
        f"send {len(work.send_idx)} of {len(work.groups)} shards ({format_bytes(work.need, binary=True)};"
        f" {build} to build) of {counted} to {where}"
    )
    reused = (
        f"; the files of {count(len(work.reuse), 'other shard')} taken from the tree there"
        " (hard-linked, each checked by sha256 first: one that differs is sent)"
        if work.reuse
        else ""
    )
    if work.partials:
        kept = format_bytes(sum(work.partials.values()), binary=True)
        msg += (
            f"; {count(len(work.partials), 'shard')} to resume from the {kept} an interrupted"
            " upload left on the host (checked by sha256 first)"
        )
    if work.send_idx:
        if work.unpack:
            msg += f"; unpack into {opts.plain_target}{work.redo}{reused}"
        msg += f"{note}; estimate {transfer.format_eta(work.need, opts.link_mbit(ctx))}"
    else:  # only the manifest, leftovers or the unpacked tree are behind
        todo = ["update the manifest"] if work.manifest_behind else []
        if work.stale:
            todo.append(f"remove {count(len(work.stale), 'old or partial shard')}")
        if work.unpack:
            todo.append(f"unpack into {opts.plain_target}{work.redo}{reused}")
        msg = (
            f"{'; '.join(todo)}: all {len(work.groups)} shards of {counted}"
            f" are at {where}{' or in the tree there' if work.reuse else ''} already, nothing to send{note}"
        )
    diff = {
        "target": opts.shards_target,
        "shards": len(work.groups),
        "send_shards": len(work.send_idx),
        "reused_shards": len(work.reuse),
        "bytes": work.need,
        "source": str(src),
    }
    return Plan(True, msg, diff=diff, data=work)
