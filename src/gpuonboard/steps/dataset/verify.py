"""Checking what arrived: the sha256 each file should have on the host, the host's own hashes
of them (one command), marking the ones that differ so that the next run re-sends them, rsync
temp files of another writer left in the copy, and cached ciphertexts damaged on this machine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from gpuonboard import shell, transfer
from gpuonboard.steps.base import StepContext, truthy
from gpuonboard.steps.dataset.common import count, shown
from gpuonboard.steps.dataset.hostdirs import listing
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto, shards

UNMARK_SCRIPT = 'cd -- "$1" 2>/dev/null && rm -f -- unpacked-*'


def expected(work: Work) -> dict[str, str]:
    """The sha256 each file sent should have in the target (rel there -> digest)."""
    if work.enc is None:
        return {e.rel: e.sha256 for e in work.tree.entries.values()}
    return {e.rel + ".age": crypto.ciphertext_sha256(work.cipher[e.rel]) for e in work.tree.files}


# files per host hashing command: its output is held whole here (67 bytes a file), so memory
# stays flat in the number of files (the runner itself reads the output while it writes a large
# stdin: one command of 200,000 files hung before it did)
HASH_BATCH = 20_000


def mismatches(ctx: StepContext, target: str, expect: Mapping[str, str]) -> list[str]:
    """The files under `target` whose sha256 on the host is not the expected one (hashed there
    HASH_BATCH files per command: memory here stays flat in the number of files)."""
    rels = list(expect)
    bad: list[str] = []
    for at in range(0, len(rels), HASH_BATCH):
        part = rels[at : at + HASH_BATCH]
        r = ctx.runner.run(transfer.hash_command(target), stdin=transfer.hash_stdin(part), timeout=3600)
        bad += transfer.differing(part, expect, r.stdout)
    return bad


def rehash_on_host(
    ctx: StepContext, opts: DatasetOptions, work: Work, entries: Sequence[transfer.Entry]
) -> str:
    """`sync --verify` (plain and encrypted mode; in encrypted mode each ciphertext against the one
    cached here): the host hashes every dataset file of its copy that rsync's
    quick check (size, mtime) passes, by the sha256 the upload verifies with (HASH_BATCH files a
    command, one line a file back); those that differ join work.send and work.reverify (apply
    moves their mtime first, so rsync sends them). -> the message's note ('' without --verify).
    A byte flipped on the host at the same size and mtime was "up to date ... nothing sent"."""
    if not truthy(opts.args.get("verify", False), "verify"):
        return ""
    sending = {e.rel for e in work.send}
    if work.enc is None:
        transfer.hash_tree(work.tree)  # (the local sha256, from the hash cache where it holds them)
        expect = {r: h for r, h in expected(work).items() if r not in sending}
    else:  # encrypted mode: each ciphertext on the host against the one cached here, which sent it
        expect = {
            e.rel + ".age": crypto.ciphertext_sha256(work.cipher[e.rel])
            for e in work.tree.files
            if e.rel + ".age" not in sending and e.rel in work.cipher and work.cipher[e.rel].is_file()
        }
    # (encrypted mode: a file whose ciphertext is not cached here, nor sent, cannot be compared:
    # said, never counted among those that match)
    seen = sending | set(expect)
    left = [] if work.enc is None else [e for e in work.tree.files if e.rel + ".age" not in seen]
    bad = set(mismatches(ctx, work.target, expect))
    work.reverify = sorted(bad)
    work.send = [*work.send, *(e for e in entries if e.rel in bad)]
    n = f"{len(expect)} file{'' if len(expect) == 1 else 's'} and symlinks"
    if left:
        n += (
            f" whose ciphertext is cached on this machine ({count(len(left), 'file')} already there"
            f" not checked, their ciphertexts not cached here, e.g. {shown(left[0].rel + '.age')!r})"
        )
    if not bad:
        return f"; --verify: the {n} already on the host match the dataset (sha256)"
    shown_bad = ", ".join(shown(r) for r in work.reverify[:3]) + (" ..." if len(bad) > 3 else "")
    return (
        f"; --verify: {len(bad)} of the {n} already on the host differ from the dataset (sha256),"
        f" sent again: {shown_bad}"
    )


def rehash_plaintext(ctx: StepContext, opts: DatasetOptions, work: Work) -> str:
    """`sync --verify --decrypt-on-host`: the host hashes every plaintext file it decrypted that
    rsync's quick check passes (work.decrypt holds the others); the digests come back and are
    compared here with the dataset's own sha256 (nothing of the plaintext, its digest or the key
    is sent for it). Those that differ join work.decrypt: decrypted again from the ciphertext
    there (itself re-hashed by rehash_on_host, and sent again first where it differs).
    -> the message's note ('' without --verify)."""
    if not truthy(opts.args.get("verify", False), "verify"):
        return ""
    pending = {e.rel for e in work.decrypt}
    files = [e for e in work.tree.files if e.rel not in pending]
    transfer.hash_tree(work.tree)  # (the local sha256, from the hash cache where it holds them)
    expect = {e.rel: work.tree.entries[e.rel].sha256 for e in files}
    bad = set(mismatches(ctx, opts.plain_target, expect))
    work.decrypt = [*work.decrypt, *(e for e in files if e.rel in bad)]
    n = f"{count(len(expect), 'decrypted file')} already in {shown(work.tree.landing(opts.plain_target))}"
    if not bad:
        return f"; --verify: the {n} match the dataset (sha256)"
    again = sorted(bad)
    listed = ", ".join(shown(r) for r in again[:3]) + (" ..." if len(bad) > 3 else "")
    return f"; --verify: {len(bad)} of the {n} differ from the dataset (sha256), decrypted again: {listed}"


def temps_left(ctx: StepContext, target: str, files: Iterable[str]) -> str | None:
    """The failure sentence when rsync temp files of the dataset's files are in the target
    after the upload (this run stopped earlier runs' receivers and kept or removed their temp
    files first, and its own rsync leaves none): another process writes there, which a later
    run's "up to date" would never mention."""
    r = ctx.runner.run(transfer.temps_command(target))
    left = transfer.parse_temps(r.stdout, files) if r.ok else []
    if not left:
        return None
    return (
        f"the upload arrived verified, but {count(len(left), 'rsync temp file')} not of this run"
        f" {'is' if len(left) == 1 else 'are'} in {ctx.host.name}:{shown(target)} (e.g."
        f" {shown(left[0])!r}): another rsync is writing there (or was killed there); stop it,"
        " then rerun (a rerun removes what it left)"
    )


def unmark_unpacked(ctx: StepContext, opts: DatasetOptions) -> None:
    """Plain mode writes into the tree an --unpack made: the shards dir's "unpacked"
    markers no longer describe it (a same-size edit would pass the listing check), so a
    later --unpack run checks and unpacks again. Best effort."""
    if opts.shards is False:
        return
    if any(n.startswith(shards.MARKER_PREFIX) for n in listing(ctx, opts, opts.shards_target).files):
        with contextlib.suppress(Exception):
            ctx.runner.run(shell.join(["sh", "-c", UNMARK_SCRIPT, "sh", opts.shards_target]))


def unverified(ctx: StepContext, target: str, rels: Sequence[str]) -> None:
    """Files whose host sha256 differs: mtime to the epoch, so that the next run's quick
    check re-sends them (size and whole-second mtime can match a torn copy: a file written
    to during the upload). Best effort: the run fails anyway."""
    if rels:
        with contextlib.suppress(Exception):
            ctx.runner.run(transfer.unverified_command(target), stdin=transfer.hash_stdin(rels))


def damaged_ciphertexts(paths: list[Path]) -> set[Path]:
    """Cached ciphertexts whose content no longer matches the sha256 noted when they were made;
    they (and their sidecars) are removed so the next run re-encrypts."""
    out = set()
    for path in paths:
        try:
            noted = crypto.sidecar(path).read_text().strip()
        except OSError:
            continue
        if len(noted) == 64 and crypto.sha256_file(path) != noted:
            path.unlink(missing_ok=True)
            crypto.sidecar(path).unlink(missing_ok=True)
            out.add(path)
    return out
