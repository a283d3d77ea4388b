"""`sync --verify` in shard mode: what the host kept is re-hashed there, and the digests come
back to be compared here: each shard the plan would not send (its sha256 is its name; encrypted,
the sha256 of the ciphertext cached here, which the upload sent), and with --unpack every file of
the unpacked tree against the dataset's own sha256. A shard that differs is sent again; a tree
file that differs counts as drift, so the tree is unpacked again (from the kept shards, or from
shards sent again where they are not kept). Before, --verify was refused in shard mode."""

from __future__ import annotations

from gpuonboard import transfer
from gpuonboard.steps.base import StepContext, truthy
from gpuonboard.steps.dataset.common import count, shown
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.shardstore import cipher_path, remote_name
from gpuonboard.steps.dataset.verify import mismatches
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto


def verifying(opts: DatasetOptions) -> bool:
    """Whether this run is a `sync --verify`."""
    return truthy(opts.args.get("verify", False), "verify")


def rehash_shards(ctx: StepContext, opts: DatasetOptions, work: Work) -> str:
    """The shards on the host that the plan does not send (work.send_idx), hashed there; those
    that differ join work.send_idx (sent again: the stream replaces the file). -> the note."""
    expect: dict[str, tuple[int, str]] = {}  # name on the host -> (group, sha256 it must have)
    unchecked = 0
    sending = set(work.send_idx)
    for i, shard in enumerate(work.built):
        if shard is None or i in sending:
            continue
        digest = shard.sha256
        if work.enc is not None:  # (age encrypts afresh: the ciphertext the upload sent is cached here)
            cipher = cipher_path(opts.cache_dir(ctx), work, shard)
            if not cipher.is_file():
                unchecked += 1
                continue
            digest = crypto.ciphertext_sha256(cipher)
        expect[remote_name(work, shard)] = (i, digest)
    bad = mismatches(ctx, opts.shards_target, {n: d for n, (_, d) in expect.items()})
    for name in bad:
        i = expect[name][0]
        work.send_idx.append(i)
        built = work.built[i]
        work.need += built.size if built is not None else 0
    work.send_idx.sort()
    if not expect:  # (nothing checked: no match of any; review revF)
        if unchecked:
            return (
                f"; --verify: not verified: none of the {count(unchecked, 'shard')} already on the"
                " host could be checked (their ciphertext, which the upload sent, is not cached"
                " here: age encrypts afresh, so there is nothing to compare with)"
            )
        return "; --verify: not verified: no shard on the host that this run does not send"
    n = f"{count(len(expect), 'shard')} already on the host"
    if unchecked:
        n += f" whose ciphertext is cached here ({count(unchecked, 'shard')} not checked: not cached here)"
    if not bad:
        return f"; --verify: the {n} match their sha256"
    listed = ", ".join(shown(b) for b in sorted(bad)[:3]) + (" ..." if len(bad) > 3 else "")
    return f"; --verify: {len(bad)} of the {n} differ from their sha256, sent again: {listed}"


def rehash_tree(ctx: StepContext, opts: DatasetOptions, work: Work, plain: transfer.RemoteState) -> str:
    """--unpack: every dataset file of the unpacked tree on the host that its listing holds, hashed
    there against the dataset's sha256; those that differ are taken out of `plain` (as missing:
    the plan counts them as drift and unpacks again). -> the note."""
    transfer.hash_tree(work.tree)  # (the local sha256, from the hash cache where it holds them)
    expect = {
        e.rel: e.sha256
        for e in work.tree.files
        if (got := plain.files.get(e.rel)) is not None and got[0] == "f" and got[1] == e.size
    }
    bad = sorted(mismatches(ctx, opts.plain_target, expect))
    for rel in bad:
        del plain.files[rel]
    n = f"{count(len(expect), 'file')} of the unpacked tree {shown(opts.plain_target)}"
    if not bad:
        return f"; --verify: the {n} match the dataset (sha256)"
    listed = ", ".join(shown(r) for r in bad[:3]) + (" ..." if len(bad) > 3 else "")
    return f"; --verify: {len(bad)} of the {n} differ from the dataset (sha256): {listed}"
