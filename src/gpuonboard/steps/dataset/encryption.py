"""Encrypted uploads on this machine: the age keys of the upload (recipients or a passphrase,
and with --decrypt-on-host the identity the host gets), and plain encrypted mode's batches,
which encrypt each file into the ciphertext cache (hashing its plaintext on the way) and
stage it for rsync while the previous batch is sent."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuonboard import transfer
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.dataset import growing
from gpuonboard.steps.dataset.common import (
    LOCAL_KEPT,
    NOTHING_SENT,
    LocalWriteError,
    local_write_failure,
    shown,
    unreadable_source,
)
from gpuonboard.steps.dataset.growing import GROW_MIN, Growing
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto


def load_encryption(ctx: StepContext, opts: DatasetOptions, work: Work) -> str | None:
    """Load the host's age settings into `work` (enc, and the identity for --decrypt-on-host);
    the failure sentence when they are missing, wrong or do not fit together, else None."""
    try:
        work.enc = crypto.load_encryption(
            ctx.host.vars.get("age_recipients"), ctx.host.vars.get("age_passphrase_env")
        )
        if opts.decrypt_on_host:
            if work.enc.passphrase is not None:
                return (
                    "--decrypt-on-host needs vars.age_recipients and their identity"
                    " (vars.age_identity_file or vars.age_identity_env), not a passphrase"
                    " (vars.age_passphrase_env, which is never sent to the host): use recipients,"
                    f" or upload without --decrypt-on-host ({NOTHING_SENT})"
                )
            work.identity = crypto.load_identity(
                ctx.host.vars.get("age_identity_env"), ctx.host.vars.get("age_identity_file")
            )
            if not crypto.identity_matches(work.identity, work.enc.recipients):
                env = ctx.host.vars.get("age_identity_env")
                where = "vars.age_identity_env" if env else "vars.age_identity_file"
                return (
                    f"wrong identity: the age key in {where} is not one of vars.age_recipients, so"
                    " the host could not decrypt what would be sent; fix one of them, then rerun"
                    " (nothing was sent)"
                )
    except crypto.CryptoError as exc:
        return str(exc)
    return None


def changed_while_encrypting(rel: str) -> str:
    """Pure: the sentence for a dataset file written to while it was being encrypted."""
    return (
        f"{shown(rel)} changed on this machine while it was being encrypted (its ciphertext would"
        f" be part old, part new, so it was not sent); rerun to send it as it is now: {LOCAL_KEPT}"
    )


@dataclass
class Batch:
    """One batch of plain encrypted mode: its names in the stage; a big file sent while it is
    encrypted (alone in its batch) and `complete`, which waits for its whole ciphertext and
    records it (raising LocalWriteError as a producer does)."""

    names: list[str]
    growing: Growing | None = None
    complete: Callable[[], None] = lambda: None


def _alone(counts: list[int], big: list[bool]) -> list[int]:
    """Pure: batch_sizes' counts split so that each item marked big is a batch of its own."""
    out: list[int] = []
    i = 0
    for n in counts:
        run = 0
        for b in big[i : i + n]:
            if b:
                out += [run, 1] if run else [1]
                run = 0
            else:
                run += 1
        out += [run] if run else []
        i += n
    return out


def encrypted_batches(cache: Path, work: Work, stage: Path) -> list[Callable[[], Batch]]:
    """Plain encrypted mode: batches of work.send; each producer encrypts (cache misses, into
    `cache`) and hard-links its files into the stage; a big file not cached (GROW_MIN) is a
    batch of its own, its producer returning as soon as the first of its ciphertext exists."""
    return _Producers(cache, work, stage).batches()


class _Producers:
    """encrypted_batches' producers, run one at a time by the upload's pipeline: `current` is
    the file being encrypted, `ahead` the big file last started (the next producer waits)."""

    def __init__(self, cache: Path, work: Work, stage: Path) -> None:
        assert work.enc is not None and work.hashes is not None
        self.cache, self.work, self.stage = cache, work, stage
        self.enc, self.hashes = work.enc, work.hashes
        self.current = ""
        self.ahead: list[Growing] = []

    def batches(self) -> list[Callable[[], Batch]]:
        work = self.work
        rels = [e.rel[: -len(".age")] for e in work.send]
        cached = {r for r in rels if r in work.cipher and work.cipher[r].is_file()}
        rels.sort(key=lambda r: r in cached, reverse=True)  # cached ones go first
        sizes = [work.tree.entries[r].size for r in rels]
        big = [s >= GROW_MIN and r not in cached for r, s in zip(rels, sizes, strict=True)]
        out, i = [], 0
        for n in _alone(transfer.batch_sizes(sizes), big):
            out.append(self._make(rels[i : i + n], big[i]))
            i += n
        return out

    def _record(self, rel: str, plain: str, path: Path) -> None:
        notes, noting = self.work.notes
        noting.append(notes.submit(crypto.note_sha256, path))  # while rsync sends
        entry = dataclasses.replace(self.work.tree.entries[rel], sha256=plain)
        self.work.tree.entries[rel] = entry
        self.hashes.put(entry, plain)
        self.work.cipher[rel] = path

    def _encrypt_and_stage(self, chunk: list[str]) -> list[str]:
        for rel in chunk:
            self.current = rel
            path = self.work.cipher.get(rel)
            if path is None or not path.is_file():
                plain, path = crypto.encrypt_to_cache(self.work.tree.path(rel), self.enc, self.cache)
                self._record(rel, plain, path)
            link = self.stage / (rel + ".age")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.unlink(missing_ok=True)
            try:
                os.link(path, link)
            except OSError:
                shutil.copy2(path, link)
        self.hashes.save(self.work.tree.entries)
        return [rel + ".age" for rel in chunk]

    def _failure(self, exc: OSError) -> LocalWriteError:
        if isinstance(exc, crypto.ChangedWhileEncrypting):
            return LocalWriteError(changed_while_encrypting(self.current))
        # (any error reading a dataset file: a vanished one too, unlike shard mode's generic
        # message, since here the alternative would blame the cache)
        why = unreadable_source(exc, self.work.tree.root, LOCAL_KEPT, errnos=None) or local_write_failure(
            exc, f"the encrypted copy of {self.current}", self.cache
        )
        return LocalWriteError(why)

    def _grow(self, rel: str) -> Batch:
        self.current = rel

        def made(plain: str, path: Path) -> None:  # (on the encrypting thread: the next
            self._record(rel, plain, path)  # producer waits for it, so one writes the caches at a time)
            self.hashes.save(self.work.tree.entries)

        g = growing.start(
            self.work.tree.path(rel), self.enc, self.cache, rel, self.stage / (rel + ".age"), made
        )
        self.ahead[:] = [g]

        def complete() -> None:
            try:
                growing.finish(g)
            except OSError as exc:
                self.current = rel
                raise self._failure(exc) from None

        return Batch([rel + ".age"], g, complete)

    def _make(self, chunk: list[str], is_big: bool) -> Callable[[], Batch]:
        def produce() -> Batch:
            for g in self.ahead:  # (one encryption at a time: the cores also run rsync and ssh)
                g.done.wait()
            if is_big:
                return self._grow(chunk[0])
            try:
                return Batch(self._encrypt_and_stage(chunk))
            except OSError as exc:
                raise self._failure(exc) from None

        return produce
