"""Applying shard mode (`ShardUpload`): with --unpack, the files of unchanged shards the host
no longer keeps are first hard-linked from its current tree into the new one (hashed there:
one that differs sends its shard after all); each shard to send is streamed (pack -> compress
[-> encrypt] -> ssh -> the host stores it as .incoming-*, unpacking on the fly when asked),
the next shard's stream opening while this one is fed so the link never idles; then one
closing command on the host renames the verified shards, writes the manifest, unpacks the
rest, removes stale shards and swaps the unpacked tree in."""

from __future__ import annotations

import contextlib
import os
import posixpath
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from gpuonboard import children, shell, transfer
from gpuonboard.steps.base import Plan, StepContext
from gpuonboard.steps.dataset.common import DISK_FULL, count, local_write_failure, shown, unreadable_source
from gpuonboard.steps.dataset.lease import LEASE_LOST, lost
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.preflight import stream_progress
from gpuonboard.steps.dataset.shardstore import (
    cipher_path,
    manifest_bytes,
    note_packed,
    remote_name,
    shard_root,
)
from gpuonboard.steps.dataset.verify import mismatches, unmark_unpacked
from gpuonboard.steps.dataset.work import Master, Work
from gpuonboard.transfer import crypto, shards, shardstream, uploadlock
from gpuonboard.units import format_bytes

CACHE_SAVE_SHARE = 20  # shard mode saves its caches while uploading, at most 1/20 of the time

CIPHER_WAIT_S = 60  # an interrupted upload waits this long for the ciphertext made ahead (local work)

# (produce, codec for the local pipeline or None, temp ciphertext made ahead, whether produce can
# run twice: a resume packs the first bytes again to check them)
Producer = tuple[Any, str | None, Path | None, bool]
Arrived = tuple[str, str, str]  # (the part's temp name on the host, its sha256, its final name)


def stream_failure(res: shardstream.StreamResult) -> str:
    """One sentence for a shard stream that failed (disk full, link dropped, missing tool)."""
    lines = [x.strip() for x in res.stderr.strip().splitlines() if x.strip()]
    full = " ".join(lines).lower()
    detail = lines[-1] if lines else ""
    full_disk = transfer.disk_full_line(lines)
    age = next((x for x in lines if "age:" in x), "")  # age's own line, not tar's after it
    if full_disk:
        why, detail = "the remote disk is full", full_disk
    elif age:
        why, detail = "the host could not decrypt the stream (wrong identity, or damaged on the way)", age
    elif "writing" in full and "failed" in full:
        why = "writing on the host failed"
    elif not res.ok and not detail:
        why = "the SSH connection failed or dropped"
    elif res.ok:
        why = f"sha256 mismatch on the host (got {res.remote_sha[:12] or 'nothing'})"
    else:
        why = "the shard stream failed"
    return f"upload failed: {why}" + (f" ({detail})" if detail else "")


def _tar_sha256(packed: shards.Packed) -> str:
    """The sha256 of the tar `shards.pack` wrote (its stream's bytes, as the host stores them)."""
    return packed.sha256


class ShardUpload:
    """One shard-mode upload in apply: its streams, what arrived, the caches it keeps saved."""

    def __init__(
        self,
        ctx: StepContext,
        opts: DatasetOptions,
        label: str,
        work: Work,
        first: shardstream.Stream | None,
        spawn_stream: Callable[[Master, int], shardstream.Stream],
    ) -> None:
        assert work.index is not None and work.hashes is not None and work.master is not None
        self.ctx, self.opts, self.work, self.label = ctx, opts, work, label
        self.root = shard_root(work)
        self.cache = opts.cache_dir(ctx)
        self.unpack_dir = opts.unpack_dir() if work.unpack else ""
        encrypted = work.enc is not None
        self.prefix = (
            shardstream.identity_prefix(work.identity.reveal()) if encrypted and work.unpack else b""
        )
        self.master: Master = work.master
        self.first = first  # shard 0's stream, opened ahead while planning (or None)
        self.spawn_stream = spawn_stream
        self.progress, self.state = stream_progress(ctx, opts, label, work.need, len(work.send_idx))
        self.arrived: list[Arrived] = []
        # groups whose files the host hashed in the unpacked tree as they landed, equal to the
        # dataset's (shardstream.tree_digest): not hashed again at the end
        self.proven: set[int] = set()
        self.renamed: list[Arrived] = []  # the last shard: renamed by the closing command
        self.sent_bytes = 0
        self.resumed = [0, 0]  # shards resumed from the partial an interrupted stream left, its bytes
        self.restarted = 0  # shards whose partial on the host did not match: sent from the start
        # encrypted shards made ahead of the link (temp ciphertext -> (group, its maker))
        self.aheads: dict[Path, tuple[int, shardstream.Ahead]] = {}
        self.opened: list[shardstream.Stream] = [first] if first is not None else []
        self.nxt: list[shardstream.Stream] = []  # shard n+1's stream, once shard n is under way
        self.saved = [time.monotonic(), 0.0]  # when the caches were last saved, how long that took
        self.saving: Future[None] | None = None
        self.helpers = ThreadPoolExecutor(max_workers=2)
        self.manifest_job: Future[tuple[str, bytearray]] | None = None

    def run(self, plan: Plan, eta: str) -> Any:
        """Stream each shard to send, then the closing command: None, or the failure sentence."""
        work = self.work
        try:
            problem = self._seed() if work.reuse else None  # (may add shards to send)
            if not (problem or work.send_idx):
                self.manifest_job = self.helpers.submit(manifest_bytes, self.cache, work)
            problem = problem or self._send_all()
            if problem:
                return problem
        finally:
            shardstream.end_all(self.opened)  # (cut short: what is in flight still lands on the host)
            self._keep_ciphers()
            if self.saving is None:
                self.saving = self.helpers.submit(self._save_caches)
        if lost(work):  # (the host is asked too: by the closing command, before it changes anything)
            return LEASE_LOST
        try:
            return self._finish(plan, eta)
        finally:
            self.saving.result()
            self.helpers.shutdown()

    def _seed(self) -> str | None:
        """Before the first stream: the files of the shards the plan takes from the host's
        current tree are hard-linked (or copied) into the new tree and hashed there; a group
        with a file that differs from the dataset (or is gone) has its files removed from the
        new tree and its shard sent after all. -> the failure (LEASE_LOST, or the new tree could not
        be cleared of them), or None."""
        ctx, opts, work = self.ctx, self.opts, self.work
        if lost(work):
            return LEASE_LOST
        expect = {e.rel: e.sha256 for i in work.reuse for e in work.groups[i]}
        rels = list(expect)
        command = (
            shell.join(["env", opts.marker()])
            + " "
            + shardstream.seed_command(self.unpack_dir, opts.plain_target)
        )
        r = ctx.runner.run(command, stdin=shardstream.seed_stdin(rels), timeout=3600)
        bad = set(transfer.differing(rels, expect, r.stdout) if r.ok else rels)
        failed = [i for i in work.reuse if any(e.rel in bad for e in work.groups[i])]
        if not failed:
            self._list_seeded()
            return None
        gone = [e.rel for i in failed for e in work.groups[i]]
        drop = shardstream.seed_drop_command(self.unpack_dir)
        d = ctx.runner.run(drop, stdin=shardstream.seed_stdin(gone))
        if not d.ok:  # (never unpack a shard over links into the current tree)
            return self._resumable(f"upload failed: {d.stderr.strip()[-200:] or 'cannot clear the new tree'}")
        self._list_seeded()
        work.reuse = [i for i in work.reuse if i not in failed]
        work.send_idx = sorted(work.send_idx + failed)
        work.need += sum(s.size for i in failed if (s := work.built[i]) is not None)
        e_g = sorted(bad)[0]
        why = (
            f"the tree on the host differed from the dataset ({count(len(bad), 'file')}, e.g. {e_g!r})"
            if r.ok
            else f"taking their files from the tree on the host failed ({r.stderr.strip()[-200:]})"
        )
        work.kept += f"; {count(len(failed), 'shard')} sent after all: {why}"
        self.progress, self.state = stream_progress(ctx, opts, self.label, work.need, len(work.send_idx))
        return None

    def _list_seeded(self) -> None:
        """Add the files the seed hard-linked into the new tree, sha256-checked, to the host's
        list of what uploads wrote in the tree as they stand there (their mtime is the old tree's:
        an older gpuonboard's unpack time, an earlier run's stamp; the closing command stamps only
        the files it unpacked or copied): without this, teardown would keep the tree as holding
        what no upload wrote. Best effort, as the list (uploadlock.SEEDED_LISTING_SCRIPT)."""
        for tree in self.work.listed:
            self.ctx.runner.run(uploadlock.seeded_listing_command(tree, self.unpack_dir), timeout=3600)

    def _kept(self) -> str:
        # (a shard cut off resumes from the bytes the host kept: said by the rerun)
        return f"{len(self.arrived)} of {len(self.work.send_idx)} shards arrived, only the rest is sent"

    def _keep_ciphers(self) -> None:
        """A stream cut off (or failed): the ciphertext of its shard, made ahead of the link, is
        kept in the cache once whole (waited for: local work) and noted, so the rerun resumes
        from the bytes the host kept; one that is not whole is removed."""
        for tmp, (i, ahead) in list(self.aheads.items()):
            del self.aheads[tmp]
            packed = ahead.finished(CIPHER_WAIT_S)
            if not isinstance(packed, shards.Packed):
                tmp.unlink(missing_ok=True)
                continue
            note_packed(self.work, i, packed)
            done = self.work.built[i]
            assert done is not None
            with contextlib.suppress(OSError):
                os.replace(tmp, cipher_path(self.cache, self.work, done))

    def _resumable(self, why: str) -> str:
        return f"{why}; rerun to resume ({self._kept()})"

    def _spawn(self, n: int) -> shardstream.Stream:
        first = self.first
        if n == 0 and first is not None and first.ssh.poll() is None:
            return first  # opened ahead, while planning
        stream = self.spawn_stream(self.master, n)
        self.opened.append(stream)
        return stream

    def _on_bytes(self, k: int) -> None:
        self.progress(k)
        n = self.state[1]
        # shard n+1's stream (ssh session, host shell) opens once shard n's first piece was
        # handed on: not at the same moment as shard n's, when both compete for the CPU
        if not self.nxt and n + 1 < len(self.work.send_idx) and self.state[3] > 0:
            self.nxt.append(self._spawn(n + 1))

    def _send_all(self) -> str | None:
        """Feed each shard to send into its stream; shard n+1's ssh starts while shard n is fed;
        shard n is settled (waited for, renamed) once shard n+1's bytes flow, so the link never
        idles between shards. -> the failure sentence, or None."""
        work = self.work
        pending: tuple[int, shardstream.Stream, Path | None, Any] | None = None
        for n, i in enumerate(work.send_idx):
            if lost(work):
                return LEASE_LOST
            self.state[1], self.state[3] = n, 0
            cur = self.nxt.pop() if self.nxt else self._spawn(n)
            try:  # (its temp ciphertext is made in the cache: a full or read-only one fails here)
                produce, codec, tmp_cipher, again = self._producer(i)
            except OSError as exc:
                return local_write_failure(
                    exc, f"the encrypted copy of shard {n + 1}", self.cache, self._kept()
                )
            part = self.work.part(i)
            ask = again and part in work.partials  # (else the host drops a partial there)
            self.restarted += part in work.partials and not again
            header = shardstream.stream_header(work.codec, part, ask, work.unpack) + self.prefix
            try:
                # (a tar packed here: packing hashed it as it wrote it, the stream need not)
                digest = _tar_sha256 if codec is not None else None
                packed = cur.feed(produce, codec, header, self._on_bytes, resume=ask, digest=digest)
            except (OSError, crypto.CryptoError) as exc:
                if isinstance(exc, OSError) and exc.errno in DISK_FULL:
                    what = f"the encrypted copy of shard {n + 1}"
                    return local_write_failure(exc, what, self.cache, self._kept())
                unreadable = unreadable_source(exc, self.root, self._kept())
                return unreadable or self._resumable(f"packing or encrypting shard {n + 1} failed: {exc}")
            # what packing shard i found (file hashes, shard name) is true whether or not the
            # upload then succeeds: note it at once (the index and the manifest use it)
            if isinstance(packed, shards.Packed):
                note_packed(work, i, packed)
            if n == len(work.send_idx) - 1:  # every shard is known now: the manifest is built
                # and the caches saved while the last shard drains (the Python work holds the
                # GIL; done later, it delayed the closing command's channel by ~0.1 s)
                self.manifest_job = self.helpers.submit(manifest_bytes, self.cache, work)
                self.saving = self.helpers.submit(self._save_caches)
            if pending is not None:
                problem = self._settle(*pending)
                if problem:
                    return problem
            pending = (n, cur, tmp_cipher, packed)
        if pending is not None:
            return self._settle(*pending, last=True)
        return None

    def _producer(self, i: int) -> Producer:
        """-> (produce, codec for the local pipeline, temp ciphertext made ahead, whether
        produce writes the same bytes when run again)."""
        work, root = self.work, self.root
        group = work.groups[i]

        def pack(write: Any) -> shards.Packed:
            return shards.pack(root, group, write)

        if work.enc is None:
            return pack, work.codec, None, True
        shard = work.built[i]
        cached = cipher_path(self.cache, work, shard) if shard is not None else None
        if cached is not None and cached.is_file():

            def copy(write: Any) -> None:
                with cached.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        write(chunk)

            return copy, None, None, True
        enc = work.enc

        def encrypt(source: Any, sink: Any) -> None:
            crypto.encrypt_stream(source, sink, enc)

        tmp = shardstream.temp_cipher_path(self.cache)
        ahead = shardstream.Ahead(pack, work.codec, encrypt, tmp)
        self.aheads[tmp] = (i, ahead)
        return ahead.follow, None, tmp, False

    def _settle(
        self, n: int, stream: shardstream.Stream, tmp_cipher: Path | None, packed: Any, last: bool = False
    ) -> str | None:
        """Wait for shard n's host side, then give it its real name (the last one: in the
        closing command). `packed`: what its producer returned (shards.Packed when it packed)."""
        work = self.work
        i = work.send_idx[n]
        part = self.work.part(i)
        # what the host's hashes of the unpacked files must give (packing computed it; a cached
        # ciphertext sent as it is: from the group's hashes)
        want = None
        if work.unpack:
            packing = isinstance(packed, shards.Packed)
            want = packed.tree if packing else shardstream.tree_digest(work.groups[i])
        res = stream.wait()
        self.sent_bytes += res.sent
        self.restarted += res.restarted
        if not res.ok or res.remote_sha != res.local_sha:
            return self._resumable(stream_failure(res))
        if res.resumed:
            self.resumed[0] += 1
            self.resumed[1] += res.resumed
        if res.tree and res.tree == want:
            self.proven.add(i)
        done = work.built[i]
        assert done is not None
        if tmp_cipher is not None:
            self.aheads.pop(tmp_cipher, None)
            os.replace(tmp_cipher, cipher_path(self.cache, work, done))
        final = remote_name(work, done)
        if last:
            self.renamed.append((part, res.local_sha, final))
            self.arrived.append((part, res.local_sha, final))
            return None
        mv = self.ctx.runner.run(shardstream.rename_command(work.target, part, res.local_sha, final))
        if not mv.ok:
            return self._resumable(f"upload failed: {mv.stderr.strip() or 'cannot rename ' + part}")
        self.arrived.append((part, res.local_sha, final))
        if self.saving is None and time.monotonic() - self.saved[0] > CACHE_SAVE_SHARE * self.saved[1]:
            # what arrived is known after a SIGKILL or a power cut too (the caches were saved
            # only at the end: the rerun then re-sent every shard); between shards, on this
            # thread (it alone changes them), at most 1/CACHE_SAVE_SHARE of the time
            began = time.monotonic()
            self._save_caches()
            self.saved[:] = [time.monotonic(), time.monotonic() - began]
        return None

    def _save_caches(self) -> None:
        # an optimisation only: when this machine's disk is full the upload still counts,
        # and the next run re-reads the files (the previous caches stay whole)
        index, hashes = self.work.index, self.work.hashes
        assert index is not None and hashes is not None
        with contextlib.suppress(OSError):
            index.save({k for k in self.work.keys if k})
        with contextlib.suppress(OSError):
            hashes.save(self.work.tree.entries)

    def _finish(self, plan: Plan, eta: str) -> Any:
        """The closing command: manifest, unpack of shards already there, stale removal, swap."""
        ctx, opts, work, last = self.ctx, self.opts, self.work, self.renamed
        encrypted = work.enc is not None
        assert self.manifest_job is not None
        try:
            digest, packed_manifest = self.manifest_job.result()
        except OSError as exc:  # its ciphertext, made in the cache (full, or not writable)
            whole = len(self.arrived) - len(last)  # (the last one gets its name from the closing command)
            kept = f"{whole} of {len(work.send_idx)} shards arrived, only the rest is sent"
            return local_write_failure(exc, "the encrypted manifest", self.cache, kept)
        marker = shards.marker_name(digest, opts.plain_target)
        names = [remote_name(work, s) for s in work.built if s is not None]
        streamed = {final for _, _, final in self.arrived}
        linked = set(work.reuse)  # (their files are in the new tree already, no shard)
        extract = [
            (remote_name(work, sh), "-" if encrypted else sh.sha256)
            for i, sh in enumerate(work.built)
            if sh is not None and remote_name(work, sh) not in streamed and i not in linked
        ]
        stale = [nm for nm in work.stale if nm not in names]
        # every file proven as it landed: the closing command removes the shards itself
        dropping = work.unpack and not work.keep_shards and not self._unproven()
        lists = shardstream.finish_lists(extract if work.unpack else [], stale, names if dropping else ())
        end = last[0] if last else None
        held = (work.lease.path, work.lease.token) if work.lease else ("", "")
        closing = shardstream.finish_command(
            work.target,
            self.unpack_dir,
            opts.plain_target,
            encrypted,
            work.codec,
            marker,
            end,
            held,
            work.drop,
            work.stamp,
        )
        if work.on_interrupt is not None:  # (from here on the host's closing work holds the lease)
            children.done(work.on_interrupt)
            work.on_interrupt = None
        try:
            # (in place: an encrypted manifest, ~50 MB at 1,000,000 files, is not copied; either
            # runner takes a bytearray)
            packed_manifest[:0] = self.prefix + lists
            r = ctx.runner.run(closing, stdin=cast(bytes, packed_manifest), timeout=3600)
        except BaseException:
            # cut off while the host unpacks and swaps: that goes on without us, so the lease
            # stays (the host keeps it fresh until done) instead of admitting another upload
            work.lease = None
            raise
        if r.exit_code == shardstream.LEASE_TAKEN_EXIT:
            work.lease = None  # (another run's now: never released by this one)
            return LEASE_LOST
        if not r.ok:
            return self._closing_failure(r.stderr, r.exit_code)
        if work.unpack and not work.keep_shards and not dropping:
            problem = self._drop_shards()
            if problem:
                return problem
        self._finished(plan, eta, stale)
        return None

    def _unproven(self) -> dict[str, str]:
        """The sha256 of each file and symlink of the dataset that no stream of this run proved
        on the host as it landed (`proven`), by path."""
        return {
            e.rel: e.sha256
            for i, g in enumerate(self.work.groups)
            if i not in self.proven
            for e in g
            if e.kind in ("f", "l")
        }

    def _drop_shards(self) -> str | None:
        """--unpack without keep_shards, once the tree is swapped in: every file of it hashed on
        the host against the dataset's sha256s (of the files this machine read), then the
        shards, and what an interrupted attempt left in the store, removed: only the tree, the
        manifest and its marker stay. The files of a shard streamed this run were hashed in the
        unpacked tree as they landed (`proven`); the others (unpacked by the closing command,
        hard-linked from the old tree) are hashed now. (When every file was proven, the closing
        command removed the shards: this is not run.) A file that differs keeps the shards and
        drops the marker, so the rerun unpacks again from them (nothing re-sent). -> the
        failure, or None."""
        ctx, opts, work = self.ctx, self.opts, self.work
        expect = self._unproven()
        if not all(expect.values()):  # (a hash this run never learnt: nothing is removed unverified)
            return None
        bad = mismatches(ctx, opts.plain_target, expect) if expect else []
        if bad:
            unmark_unpacked(ctx, opts)
            return (
                f"the tree unpacked into {ctx.host.name}:{shown(opts.plain_target)} differs from the"
                f" dataset after the unpack ({count(len(bad), 'file')}, e.g. {bad[0]!r}: written to"
                " meanwhile, or a failing disk); the shards are kept on the host: rerun to unpack it again"
            )
        names = [remote_name(work, s) for s in work.built if s is not None]
        r = ctx.runner.run(shardstream.drop_command(work.target), stdin=shardstream.drop_stdin(names))
        if not r.ok:  # (the upload itself is complete and verified: the next run removes them)
            self.work.kept += f"; the shards could not be removed from the host ({r.stderr.strip()[-200:]})"
        return None

    def _closing_failure(self, stderr: str, status: int) -> str:
        """The sentence for a closing command that failed on the host."""
        opts, work = self.opts, self.work
        lines = [x.strip() for x in stderr.strip().splitlines() if x.strip()]
        why = (lines or [f"exit code {status}"])[-1]
        full = transfer.disk_full_line(lines)
        if full:  # tar's last line would only say "Exiting with failure status"
            # (tar writes the unpacked tree: with --decrypt-to, on that disk, not the data dir's)
            untar = full.startswith("tar:") and bool(opts.decrypt_dir) and work.unpack
            where = posixpath.dirname(opts.plain_target) if untar else opts.dest
            return (
                f"finishing the upload on the host failed: the remote disk is full ({full}); free"
                f" space under {shown(where)}, then rerun: the {count(len(work.groups), 'shard')}"
                f" there {'is' if len(work.groups) == 1 else 'are'} kept"
            )
        if "damaged" in why or status == 5:
            return why
        hint = " (wrong identity, or a tampered or truncated shard)" if "age:" in why else ""
        if "sha256 mismatch" in why:
            hint = "; rerun to re-send it"
        return f"finishing the upload on the host failed: {why}{hint}"

    def _finished(self, plan: Plan, eta: str, stale: Sequence[str]) -> None:
        """The step's message and diff once the upload is in place."""
        ctx, work, arrived = self.ctx, self.work, self.arrived
        data = format_bytes(self.sent_bytes, binary=True)
        msg = (
            f"sent {len(arrived)} of {len(work.groups)} shards ({data} of data)"
            f" to {ctx.host.name}:{work.target}; {count(len(arrived), 'shard')} verified by sha256"
            f" ({work.codec} stream); estimate was {eta}"
        )
        if not arrived:  # only the manifest, leftovers or the unpacked tree were behind
            done = ["manifest updated"] if work.manifest_behind else []
            if stale:
                done.append(f"{count(len(stale), 'old or partial shard')} removed")
            msg = f"all {len(work.groups)} shards were at {ctx.host.name}:{work.target} already; nothing sent"
            msg += "".join(f"; {d}" for d in done)
        if work.unpack:
            msg += f"; unpacked into {self.opts.plain_target}{work.redo}"
        if work.reuse:
            msg += (
                f"; the files of {count(len(work.reuse), 'other shard')} taken from the tree there"
                " (hard-linked, checked by sha256)"
            )
        msg += self._resumed_note()
        plan.msg = msg + work.kept
        plan.diff = {
            **(plan.diff or {}),
            "sent_files": len(arrived) + 1,
            "sent_shards": len(arrived),
            "literal_bytes": self.sent_bytes,
            "reused_shards": len(work.reuse),
            "resumed_shards": self.resumed[0],
            "resumed_bytes": self.resumed[1],
            "restarted_shards": self.restarted,
        }

    def _resumed_note(self) -> str:
        """The message's note on shards resumed from what interrupted streams left on the host."""
        note = ""
        if self.resumed[0]:
            kept = format_bytes(self.resumed[1], binary=True)
            note += (
                f"; {count(self.resumed[0], 'shard')} resumed from the {kept} an interrupted upload"
                " left on the host (checked by sha256; not sent again)"
            )
        if self.restarted:
            note += (
                f"; {count(self.restarted, 'shard')} sent from the start: the partial an interrupted"
                " upload left on the host did not match it"
            )
        return note
