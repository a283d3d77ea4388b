"""Step `dataset`: upload a local dataset to the host's data dir with rsync, resumable, verified.

Plan (pure, from ONE read-only probe in the batched fact probe plus the local scan): is rsync
on the host, free space under the data dir, and which files differ by size/mtime from the
source (rsync's quick check). Apply: rsync over the host's own SSH settings (our known_hosts,
strict), `--partial-dir` inside the destination so half files never look complete, live
progress; then the host computes the sha256 of what arrived (one command), mismatches are
re-sent once. With `encrypt`, files go as cached age ciphertexts (see crypto.py), and with
`decrypt_on_host` the host decrypts them with the identity streamed over the channel's stdin.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import gzip
import hashlib
import os
import posixpath
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard import children, machine, sh, shell, termtext, transfer
from gpuonboard.connection import openssh
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, Warm, last_line, truthy
from gpuonboard.transfer import crypto, shards, shardstream, uploadlock
from gpuonboard.units import format_bytes

if TYPE_CHECKING:
    from gpuonboard.inventory import Host, Inventory

ENCRYPTED_SUFFIX = ".encrypted"  # ciphertexts live in <data_dir>/<name>.encrypted/<rel>.age
# the preflight's throughput probe runs when the upload would take this long at the configured
# speed: its 2 s are then at most 1 % of the upload (a 1 GiB upload at 100 Mbit/s is not probed)
PROBE_WORTH_S = 200.0
PRESCAN_MAX_AGE = 30.0  # s: an older scan of the dataset (started before the login) is redone
SHARDS_SUFFIX = ".shards"  # shard mode: <data_dir>/<name>.shards/<sha>.tar[.age] + manifest.json


def transfer_size(value: Any) -> int:
    """A size setting: bytes, or text like 256MiB."""
    from gpuonboard.units import parse_size

    return parse_size(value)


@dataclass
class Work:
    """What apply needs: the scan, what to send, and the settings."""

    tree: transfer.SourceTree
    send: list[transfer.Entry]
    target: str
    enc: crypto.Encryption | None = None
    cipher: dict[str, Path] = field(default_factory=dict)  # rel -> cached ciphertext (encrypted mode)
    decrypt: list[transfer.Entry] = field(default_factory=list)
    identity: Any = None
    # shard mode
    groups: list[list[transfer.Entry]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    built: list[shards.Shard | None] = field(default_factory=list)
    send_idx: list[int] = field(default_factory=list)  # groups to (build and) send
    remote_names: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # names in <dest>/<name>.shards to remove
    # loaded once by plan, updated and saved by apply
    index: shards.Index | None = None
    hashes: shards.HashCache | None = None
    unpack: bool = False
    need: int = 0
    shard_size: int = 0
    codec: str = "gzip"  # shard streams: zstd when both ends have it
    manifest_behind: bool = False  # shard mode: the host's manifest is not this run's
    mkdirs: list[str] = field(default_factory=list)  # plain mode: empty dirs the host lacks
    redo: str = ""  # unpack: the plan's note on why an unpacked tree is unpacked again
    manifest: bytes = b""  # shard mode: the manifest the plan made when nothing was to be sent
    drop: str = ""  # unpack: digest of the host tree's files the swap drops (shardstream.dropped_digest)
    master: tuple[Path, str, Path, list[str]] | None = None  # opened while planning
    # plain encrypted mode: ciphertext sha256s noted in the background while rsync sends
    notes: tuple[ThreadPoolExecutor, list[Any]] = field(
        default_factory=lambda: (ThreadPoolExecutor(max_workers=1), [])
    )
    # apply: the shared OpenSSH master's client options
    ssh_opts: list[str] = field(default_factory=list)
    beat: uploadlock.Heartbeat | None = None  # keeps the host's lease fresh (and notices its loss)
    lease: uploadlock.Lease | None = None  # the host's lease this upload holds
    # children.on_interrupt key: an interrupt of several hosts gives the lease back from the
    # main thread (none while the host's closing work runs: that keeps the lease itself)
    on_interrupt: int | None = None
    kept: str = ""  # the plan's notes on what stays on the host (files the dataset lost, old plaintext)
    # decrypt-on-host: temp files (plaintext) a decryption cut short on the host left, removed first
    dec_temps: list[str] = field(default_factory=list)
    temps: list[Path] = field(default_factory=list)  # this run's local temp files, removed at the end
    # plain and encrypted mode: rsync temp files of files to send that an interrupted run left in
    # the target (kept as partial files: resumed from), and temp or partial files of files that
    # are not to be sent (removed); rels in the target. Done once the lease is held.
    resume: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    stopped: uploadlock.Stopped = field(default_factory=uploadlock.Stopped)  # what the lease found
    resumed: tuple[int, int] = (0, 0)  # files resumed from what interrupted uploads left, and its bytes


class DatasetStep(Step):
    """Upload `source` to `<dest>/<name>/` on the host (rsync, resumable, sha256-verified)."""

    name = "dataset"
    read_only = False
    ARGS = {
        "source": "local dataset path (default vars.dataset)",
        "dest": "remote data directory (default the host's data_dir)",
        "name": "directory name under dest (default the source's base name)",
        "encrypt": "upload age ciphertexts (recipients vars.age_recipients or vars.age_passphrase_env)",
        "decrypt_on_host": "decrypt on the host into <dest>/<name>/ (identity streamed over stdin)",
        "decrypt_dir": "decrypt into <decrypt_dir>/<name>/ instead, e.g. /dev/shm (tmpfs: RAM only)",
        "bwlimit": "rsync --bwlimit value, e.g. 5m",
        "cache_dir": "local cache of ciphertexts (default .gpuonboard/cache/encrypted)",
        "shards": "pack into tar shards: true, false, or auto (default: above shard_threshold files)",
        "shard_threshold": "auto: shard mode above this many files (default vars.shard_threshold, 10000)",
        "shard_size": "shard size (default vars.shard_size, 256MiB)",
        "unpack": "shard mode: unpack the shards into <dest>/<name>/ on the host (temp dir, then renamed)",
        "upload_mbit": "link speed for the ETA when no probe runs (default vars.upload_mbit, 100)",
        "upload_probe": "measure the upload speed for the ETA: auto (uploads of 200 s or more), true, false",
        "upload_probe_timeout": "seconds a round of the upload probe may take, then it gives up (default 15)",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self._masters: dict[str, tuple[Path, str, Path, list[str]]] = {}
        self._early_master: threading.Thread | None = None  # started by warm()
        self._first: shardstream.Stream | None = None  # shard mode's first stream, opened ahead
        self._lock = threading.Lock()  # _released vs. what warm()'s thread opens
        self._released = False
        self._upload_lock: uploadlock.UploadLock | None = None  # held from plan to the end of apply
        self._unpack_token = secrets.token_hex(6)
        self.source = str(self.args.get("source") or "")
        self.dest = str(self.args.get("dest") or "")
        if self.dest and not self.dest.startswith("/"):  # "~/x" would make a dir named "~"
            raise StepArgsError(
                f"dest (--dest or the host's data_dir) must be an absolute path on the host, like /data,"
                f" not {self.dest!r}"
            )
        if ".." in self.dest.split("/"):  # the host resolves it, a probe of a missing dir cannot
            raise StepArgsError(f"dest must be spelt without '..', not {self.dest!r}")
        # one spelling per dir (`/data//x`, `/data/x/.`): the unpack marker is keyed by the path
        self.dest = _one_spelling(self.dest)
        self.encrypt = truthy(self.args.get("encrypt"), "encrypt")
        self.decrypt_on_host = truthy(self.args.get("decrypt_on_host"), "decrypt_on_host")
        if self.decrypt_on_host and not self.encrypt:
            raise StepArgsError("decrypt_on_host needs encrypt")
        bw = self.args.get("bwlimit")
        self.bwlimit = str(bw) if bw not in (None, "") else None
        if self.bwlimit and not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,3})?[kKmMgG]?[bB]?", self.bwlimit):
            raise StepArgsError(f"bwlimit must be a rate like 500k or 5m, not {self.bwlimit!r}")
        mbit = transfer.parse_rate_mbit(self.bwlimit) if self.bwlimit else None
        if mbit is not None and 0 < mbit * 1e6 / 8 < 1024:  # (rsync refuses it, after connecting)
            raise StepArgsError(f"bwlimit must be at least 1k (1 KiB/s), or 0 for none, not {self.bwlimit!r}")
        name = self.args.get("name") or os.path.basename(self.source.rstrip("/")) or "dataset"
        if "/" in str(name) or str(name) in (".", ".."):
            raise StepArgsError(f"name must be one directory name, not {name!r}")
        for what, text in (("name", str(name)), ("dest", self.dest)):
            # (the host's replies are read line by line; a control character such as ESC would
            # reach the terminal in every message)
            if termtext.control_char(text):
                flag = "pick another with --name" if what == "name" else "pick another"
                raise StepArgsError(
                    f"{what} must not hold a line break or another control character (\\n, \\r, \\t,"
                    f" ESC, a Unicode line separator ...), not {text!r}; {flag}"
                )
        if _ours(str(name)):  # (a copy of that name would pass for a lease, mark or unpack dir)
            raise StepArgsError(
                f"name must not be one gpuonboard uses for its own files on the host (.gpuonboard-copy,"
                f" .<name>.gpuonboard-upload, .<name>.gpuonboard-unpack-*), not {name!r}; pick another"
                " with --name"
            )
        if str(name).endswith((ENCRYPTED_SUFFIX, SHARDS_SUFFIX)):  # another copy's store's name
            raise StepArgsError(
                f"name must not end in {ENCRYPTED_SUFFIX} or {SHARDS_SUFFIX} (where gpuonboard keeps the"
                f" ciphertexts and shards of the dataset named without it), not {name!r}; pick another"
                " with --name"
            )
        size = len(str(name).encode("utf-8", "surrogateescape"))
        if size > MAX_NAME:  # the unpack dir beside the copy adds up to 41 bytes to it
            raise StepArgsError(
                f"name must be at most {MAX_NAME} bytes (a host's file names hold 255, and gpuonboard"
                f" adds up to {255 - MAX_NAME} to it for its own files), not {size}; pick a shorter one"
                " with --name"
            )
        self.dirname = str(name)
        base = posixpath.join(self.dest, self.dirname) if self.dest else ""
        self.copy = base  # <dest>/<name>: this copy, as the messages name it
        self.target = base + (ENCRYPTED_SUFFIX if self.encrypt else "")
        self.shards_target = base + SHARDS_SUFFIX if self.dest else ""
        decrypt_dir = str(self.args.get("decrypt_dir") or "")
        if decrypt_dir and not self.decrypt_on_host:
            raise StepArgsError("decrypt_dir needs decrypt_on_host")
        if decrypt_dir and not decrypt_dir.startswith("/"):
            raise StepArgsError(f"decrypt_dir must be an absolute path on the host, not {decrypt_dir!r}")
        if ".." in decrypt_dir.split("/"):
            raise StepArgsError(f"decrypt_dir must be spelt without '..', not {decrypt_dir!r}")
        if termtext.control_char(decrypt_dir):  # (the host's replies and its record are read by line)
            raise StepArgsError(
                "decrypt_dir must not hold a line break or another control character (\\n, \\r, \\t,"
                f" ESC, a Unicode line separator ...), not {decrypt_dir!r}; pick another"
            )
        decrypt_dir = _one_spelling(decrypt_dir)
        if decrypt_dir and decrypt_dir == self.dest:  # (both in one spelling)
            decrypt_dir = ""  # the data dir itself: what decrypting there does anyway
        self.plain_target = posixpath.join(decrypt_dir, self.dirname) if decrypt_dir else base
        self.decrypt_dir = decrypt_dir
        mode = str(self.args.get("shards", "auto")).lower()
        self.shards: bool | None = (
            None if mode in ("auto", "none", "") else truthy(self.args.get("shards"), "shards")
        )
        self.unpack = truthy(self.args.get("unpack"), "unpack")
        if self.unpack and self.shards is False:
            raise StepArgsError("unpack needs shard mode")

    def _probe(self, target: str) -> Probe:
        # free space where the target lives: the data dir, or --decrypt-to's dir (a tmpfs)
        where = self.decrypt_dir if self.decrypt_dir and target == self.plain_target else self.dest
        key = f"{target}\0{where}"
        manifest = shards.MANIFEST if target == self.shards_target else ""
        return Probe(
            "dataset:" + hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:10],
            transfer.listing_command(target, where, manifest),
        )

    def probes(self) -> list[Probe]:
        """rsync present, free space, and the remote listing (plus the plaintext one when decrypting)."""
        if not self.dest:
            return []
        out = [self._probe(self.target)]
        if self.decrypt_on_host:
            out.append(self._probe(self.plain_target))
        if self.shards is not False:
            out.append(self._probe(self.shards_target))
        if self.decrypt_dir:  # plaintext an earlier run without --decrypt-to left on the data disk
            out.append(self._probe(self.copy))
        out.append(self._lease_probe())
        return out

    def _lease_probe(self) -> Probe:
        """Read only: a live lease of another run on this copy (check mode says so)."""
        path = uploadlock.lease_path(self.dest, self.dirname)
        copies = [self.target] + ([self.shards_target] if self.shards is not False else [])
        key = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:10]
        return Probe(f"dataset-lease:{key}", uploadlock.peek_command(path, copies))

    def _lease_busy(self, ctx: StepContext) -> str | None:
        """Check mode: the sentence a real run would be turned away with (a live lease of
        another run on the host), else None."""
        raw = ctx.facts.raw.get(self._lease_probe().name)
        got = uploadlock.parse_peek(raw.stdout) if raw is not None else None
        if got is None:
            return None
        owner = uploadlock.owner_id(ctx.project / ".gpuonboard" / "locks")
        if got.owner == owner and machine.process_ended(got.pid):
            return None  # this project's own ended run: a real run takes it over
        return got.sentence(f"{ctx.host.name}:{self.copy}")

    def _listing(self, ctx: StepContext, target: str) -> transfer.RemoteState:
        """What the fact probe found at `target` (see probes)."""
        return transfer.parse_listing(ctx.facts.raw[self._probe(target).name].stdout)

    def _other_copy(self, ctx: StepContext, dirs: list[str]) -> str | None:
        """The failure sentence when one of `dirs` (those this run writes into, each probed by
        probes()) is not a directory on the host, or is another copy's --decrypt-to plaintext
        (its COPY_MARK names another `<data_dir>/<name>`), else None."""
        for d in dirs:
            listing = self._listing(ctx, d)
            if listing.not_dir:
                return (
                    f"{ctx.host.name}:{_shown(d)} is there and is not a directory (this upload's copy goes"
                    f" there); move it away (or delete it) there, then rerun ({NOTHING_SENT})"
                )
            if listing.not_writable:  # (every rerun failed there, each saying "rerun to resume")
                who = ctx.host.user or "this login"
                return (
                    f"{ctx.host.name}:{_shown(listing.not_writable)} is not writable by {who} (this"
                    " upload's lease, copy and temp files go there); make it writable there (e.g."
                    f" sudo chown {who} {_shown(listing.not_writable)}), or pick another --dest, then"
                    f" rerun ({NOTHING_SENT})"
                )
        there = (
            self._listing(ctx, self.plain_target) if self.decrypt_dir and self.plain_target in dirs else None
        )
        if there is not None and there.mark_dir:
            mark = posixpath.join(self.plain_target, uploadlock.COPY_MARK)  # (as the claim says it)
            return (
                f"on {ctx.host.name}, {_shown(mark)} is a directory, not gpuonboard's mark; remove it,"
                " then rerun"
            )
        if there is not None and not there.copy and there.files:  # what the claim refuses, said ahead
            return self._unmarked_sentence(ctx)
        ours = posixpath.normpath(self.copy)
        marked = [(d, m) for d in dirs if (m := self._listing(ctx, d).copy) not in (None, "", ours)]
        if not marked:
            return None
        r = ctx.runner.run(uploadlock.resolve_command(self.dest, self.dirname))
        resolved = r.stdout.strip() if r.ok else ours
        for where, mark in marked:
            if mark != resolved:
                return self._taken_sentence(ctx, where, str(mark))
        return None

    @staticmethod
    def _taken_sentence(ctx: StepContext, where: str, mark: str) -> str:
        return (
            f"{ctx.host.name}:{where} holds the plaintext of another upload (of the copy {mark}), and"
            " this run would write into it; pick another --decrypt-to, --dest or dataset name, or"
            f" remove {where} if nothing uses it any more, then rerun"
        )

    def _unmarked_sentence(self, ctx: StepContext) -> str:
        return (
            f"{ctx.host.name}:{self.plain_target} holds files that no gpuonboard upload marked as its"
            " plaintext (another copy of a dataset with this name, or plaintext an older gpuonboard"
            " left); remove it if nothing uses it (the rerun decrypts it again from the copy on the"
            " data disk: nothing is sent again), or pick another --decrypt-to, then rerun"
        )

    def _claim_plain_dir(self, ctx: StepContext, lease: uploadlock.Lease | None) -> str | None:
        """--decrypt-to: mark the plaintext dir as this copy's before writing into it (atomic:
        of two uploads from different data dirs, one gets it). The failure sentence, or None."""
        token = lease.token if lease is not None else ""
        r = ctx.runner.run(uploadlock.claim_command(self.dest, self.dirname, self.plain_target, token))
        word, _, copy = r.stdout.strip().partition(" ")
        if r.ok and word == "ours":
            return None
        if r.ok and word == "other":
            return self._taken_sentence(ctx, self.plain_target, copy)
        if r.ok and word == "unmarked":
            return self._unmarked_sentence(ctx)
        if r.ok and word == "busy":
            with contextlib.suppress(ValueError):
                busy = uploadlock.parse_take(r.stdout)
                if isinstance(busy, uploadlock.LeaseBusy):
                    return busy.sentence(f"{ctx.host.name}:{self.plain_target}")
        why = (r.stderr.strip().splitlines() or [f"exit {r.exit_code}"])[-1]
        if r.exit_code == 3:
            return f"on {ctx.host.name}, {why}, then rerun"
        return f"cannot create {self.plain_target} on the host: {why}"

    def _decrypt_dir_room(self, ctx: StepContext, free: int | None, wanted: int, what: str) -> Plan | None:
        """The failed plan when --decrypt-to's own disk lacks room for `what`; else None."""
        if free is None or free >= wanted:
            return None
        return Plan(
            False,
            f"not enough space under {self.decrypt_dir} on {ctx.host.name} for {what}:"
            f" {format_bytes(free, binary=True)} free, {format_bytes(wanted, binary=True)} needed;"
            " free space there (or pick another --decrypt-to)",
            failed=True,
        )

    def _same_dir_as_dest(self, ctx: StepContext) -> None:
        """--decrypt-to spelt through a symlink to the data dir counts as no --decrypt-to, as the
        data dir spelt plainly does (its plaintext was called "an earlier run's, delete it", and
        refused as unmarked). One command per dir, only with --decrypt-to."""
        if not self.decrypt_dir or not self.dest:
            return
        where = [
            ctx.runner.run(uploadlock.resolve_command(d, self.dirname)) for d in (self.dest, self.decrypt_dir)
        ]
        missing = "/" + self.dirname  # (what the script prints for a dir it cannot enter)
        if (
            all(r.ok and r.stdout.strip() not in ("", missing) for r in where)
            and where[0].stdout == where[1].stdout
        ):
            self.decrypt_dir, self.plain_target = "", self.copy  # (the copy's own listing is probed)

    def _left_plaintext(self, ctx: StepContext) -> str:
        """The message's note on plaintext still in the data dir while --decrypt-to puts it
        elsewhere (a tmpfs, so that it never rests on disk): said, never deleted unasked."""
        if not self.decrypt_dir:
            return ""
        base = posixpath.join(self.dest, self.dirname)
        left = self._listing(ctx, base).files
        if not left:
            return ""
        one = len(left) == 1
        return (
            f"; {_count(len(left), 'plaintext file')} of an earlier run without --decrypt-to"
            f" {'is' if one else 'are'} still at {base} on the data disk: delete {'it' if one else 'them'}"
            f" if the plaintext should live only under {self.decrypt_dir}"
        )

    def _setting(self, ctx: StepContext, name: str, default: Any) -> Any:
        value = self.args.get(name)
        if value in (None, ""):
            value = ctx.host.vars.get(name)
        return default if value in (None, "") else value

    def _link_mbit(self, ctx: StepContext) -> float:
        mbit = transfer.parse_rate_mbit(self._setting(ctx, "upload_mbit", transfer.DEFAULT_MBIT))
        return self._cap(mbit or transfer.DEFAULT_MBIT)

    def _cap(self, mbit: float) -> float:
        limit = transfer.parse_rate_mbit(self.bwlimit) if self.bwlimit else None
        return min(mbit, limit) if limit else mbit

    def _cache_dir(self, ctx: StepContext) -> Path:
        custom = self.args.get("cache_dir")
        return Path(custom) if custom else ctx.project / ".gpuonboard" / "cache" / "encrypted"

    def _source_path(self, project: Path) -> Path | None:
        if not self.source:
            return None
        src = Path(os.path.expanduser(self.source))
        src = src if src.is_absolute() else project / src
        if src.is_symlink() and src.is_file():  # a link to one file: that file (its content)
            return src.resolve()
        return src

    def warm(self, warm: Warm) -> None:
        """Before the login: the local scan starts (it needs no connection), and outside check
        mode the upload's OpenSSH master connection starts at once when the host key is
        recorded already, else as soon as our login verified it (so both overlap the login and
        the fact probe instead of following them)."""
        src = self._source_path(warm.project)
        if src is not None:
            transfer.prescan(src)  # (`invoke sync --dataset` started it already)
        if not warm.check and self.source and self.dest:

            def open_master() -> None:
                # a host whose key is recorded already: at once (OpenSSH checks it strictly
                # against the same known_hosts); else once our login verified and recorded it
                if not warm.key_known():
                    warm.settled.wait()
                if warm.connected or not warm.settled.is_set():
                    self._open_master(warm.host, warm.inventory, warm.known_hosts, warm.project)
                    opened = self._masters.get(warm.host.name)
                    if opened is not None and opened[3] and self.shards is not False:
                        # shard mode's first stream too: it waits for its header (see
                        # shardstream.receive_command), so an unused one changes nothing
                        with contextlib.suppress(OSError):
                            self._first = self._spawn_stream(opened, 0)
                with self._lock:
                    late = self._released
                if late:  # the host's run ended meanwhile: close what was just opened
                    self.release()

            self._early_master = threading.Thread(target=open_master, daemon=True)
            self._early_master.start()

    def release(self) -> None:
        """Close a master connection (and first stream) no apply took over (the host failed
        before it, or there was nothing to send). Never waits for warm()'s thread: what it
        opens after this, it closes itself."""
        with self._lock:
            self._released = True
            first, self._first = self._first, None
            masters = [self._masters.pop(name) for name in list(self._masters)]
        self._unlock()
        if first is not None:
            first.close()
        for opened in masters:
            self._close_master(opened)

    def _take_lock(self, ctx: StepContext) -> str | None:
        """This machine's lock on the host's copy of the dataset (see uploadlock); the
        failure sentence when another run holds it."""
        base = posixpath.join(self.dest, self.dirname)
        name = uploadlock.lock_name(ctx.host.address, ctx.host.port, ctx.host.user, base)
        try:
            self._upload_lock = uploadlock.acquire(ctx.project / ".gpuonboard" / "locks", name)
        except uploadlock.UploadBusy as busy:
            return (
                f"another gpuonboard upload to {ctx.host.name}:{base} is running on this machine"
                f" ({busy}); wait for it to finish (or stop it), then rerun"
            )
        except OSError as exc:
            where = ctx.project / ".gpuonboard" / "locks"
            return f"cannot create the upload lock under {where}: {exc.strerror or exc}; check that directory"
        return None

    def _take_lease(self, ctx: StepContext, work: Work, plain: str) -> tuple[uploadlock.Lease | None, str]:
        """Make the copy's dir and take the host's lease on it, in one command (see
        uploadlock): (the lease, "") or (None, the failure sentence). A fresh lease of this same
        project is taken over (a second command) only when its pid has ended on this machine.
        Once it is held, what earlier runs of this copy still run on the host is stopped (a
        dropped link's receiver: it keeps what arrived as a partial file), and the rsync temp
        files they left are kept as partial files to resume from or removed (work.stopped)."""
        target = work.target
        tidy = uploadlock.tidy_stdin(work.resume, work.leftovers)
        token = secrets.token_hex(8)
        path = uploadlock.lease_path(self.dest, self.dirname)
        owner = uploadlock.owner_id(ctx.project / ".gpuonboard" / "locks")
        holder, ended = uploadlock.holder_text(), 0
        while True:
            take = uploadlock.take_command(
                target,
                uploadlock.Lease(path, token),
                owner,
                holder,
                os.getpid(),
                ended,
                plain,
                self.dirname,
                self._copy_tag(),
                self._unpack_token,
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
                return uploadlock.Lease(got, token), ""
            if isinstance(got, uploadlock.OtherCopy):
                return None, self._taken_sentence(ctx, plain, got.copy)
            if got is None and why.endswith("remove it"):
                return None, f"on {ctx.host.name}, {why}, then rerun"
            if got is None:
                check = "its permissions" if "ermission" in why else "that disk"
                return None, f"cannot write the upload lease {path} on the host: {why}; check {check}"
            if not ended and got.owner == owner and machine.process_ended(got.pid):
                ended = got.pid  # this project's own earlier run, killed or cut off: take it over
                continue
            return None, got.sentence(f"{ctx.host.name}:{self.copy}")

    @staticmethod
    def _give_back_lease(ctx: StepContext, lease: uploadlock.Lease, timeout: float = 15) -> None:
        """Remove the host's lease (still ours). Best effort: over a dropped link it goes stale
        by itself, and a rerun from here takes it over at once."""
        with contextlib.suppress(Exception):
            ctx.runner.run(uploadlock.release_command(lease), timeout=timeout)

    def _unlock(self) -> None:
        with self._lock:  # release() may run twice at once (the host's end, warm()'s late path)
            held, self._upload_lock = self._upload_lock, None
        if held is not None:
            held.release()

    def _drop_first(self) -> None:
        first, self._first = self._first, None
        if first is not None:
            first.close()

    def _unpack_dir(self) -> str:
        """The temp dir shard mode unpacks into, beside the plaintext target."""
        parent = posixpath.dirname(self.plain_target.rstrip("/")) or "/"
        # named after the dataset and its copy: a run sweeps only its own copy's leftovers (the
        # lease keeps other runs of this copy out), never another's live unpack in the same dir
        name = f".{self.dirname}.gpuonboard-unpack-{self._copy_tag()}-{self._unpack_token}"
        return posixpath.join(parent, name)

    def _copy_tag(self) -> str:
        return uploadlock.unpack_tag(self.copy)

    def _marker(self) -> str:
        """What this run's processes on the host carry in their environment (uploadlock.mark):
        a rerun holding the lease finds and stops them should this run's link drop."""
        return uploadlock.mark(self._copy_tag(), self._unpack_token)

    def _spawn_stream(self, master: tuple[Path, str, Path, list[str]], n: int) -> shardstream.Stream:
        """Open the n-th shard stream of this run over the master connection."""
        cfg, alias, _control, opts = master
        unpack_dir = self._unpack_dir() if self.unpack or self.decrypt_on_host else ""
        part = shardstream.part_name(n)
        command = shardstream.receive_command(self.shards_target, part, unpack_dir, self.encrypt, n == 0)
        command = shell.join(["env", self._marker()]) + " " + command
        return shardstream.Stream(["ssh", "-F", str(cfg), *opts, alias, command])

    @staticmethod
    def _scanned(src: Path) -> transfer.SourceTree:
        """The scan warm() started (when it began moments ago: not when earlier steps of a
        playbook ran for minutes, during which the dataset may have changed), else one now."""
        return transfer.take_prescan(src, PRESCAN_MAX_AGE) or transfer.scan_source(src, hashes=False)

    def plan(self, ctx: StepContext) -> Plan:
        """Plan; outside check mode the OpenSSH master connection of the upload is opened
        meanwhile (started by warm(); its handshake overlaps the login, probe and local scan),
        and closed again when there is nothing to send."""
        early, self._early_master = self._early_master, None
        if early is None and not ctx.check and self.source and self.dest:
            args = (ctx.host, ctx.inventory, ctx.known_hosts, ctx.project)
            early = threading.Thread(target=self._open_master, args=args, daemon=True)
            early.start()
        try:
            if not (self.source and self.dest):
                busy = None
            else:
                busy = self._lease_busy(ctx) if ctx.check else self._take_lock(ctx)
            result = Plan(False, busy, failed=True) if busy else self._plan(ctx)
        finally:  # (should _plan raise, what the thread opened waits in _masters for release())
            if early is not None:
                early.join()
        sending = result.changes and not result.failed
        if not sending:
            self._unlock()
        if not (sending and result.data.groups):
            self._drop_first()  # plain mode, or nothing to send
        if early is not None:
            opened = self._masters.pop(ctx.host.name, None)
            if opened is not None and sending:
                result.data.master = opened
            elif opened is not None:
                self._close_master(opened)
        return result

    def _open_master(
        self, host: Host, inventory: Inventory | None, known_hosts: Path | None, project: Path
    ) -> str | None:
        """Write the host's OpenSSH config and start the master (see transfer.start_master);
        -> why that cannot be done (one sentence), else None. (Run in a thread too: it never raises.)"""
        known = known_hosts or Path(".gpuonboard/known_hosts")
        config = openssh.write_for(host, inventory, known, project, "the upload")
        if isinstance(config, str):
            return config
        cfg, alias = config
        try:
            # the socket: a private 0700 temp dir with a SHORT path (a unix socket path holds
            # ~100 bytes; a socket under a deep project dir would not fit)
            control = Path(tempfile.mkdtemp(prefix=transfer.CONTROL_PREFIX))
            opts = transfer.start_master(cfg, alias, control)
        except Exception as exc:  # noqa: BLE001 - said by apply, never a thread's traceback
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return (
                f"cannot make a private directory for the upload's SSH connection in"
                f" {tempfile.gettempdir()} ({why}); free space there (or set TMPDIR to a writable"
                " directory), then rerun"
            )
        self._masters[host.name] = (cfg, alias, control, opts)
        return None

    @staticmethod
    def _close_master(opened: tuple[Path, str, Path, list[str]]) -> None:
        cfg, alias, control, opts = opened
        transfer.stop_master(cfg, alias, opts)
        shutil.rmtree(control, ignore_errors=True)
        transfer.sweep_control_dirs(control.parent)  # (what runs killed with SIGKILL left)

    def _plan(self, ctx: StepContext) -> Plan:
        """Source present -> rsync on host -> what differs -> free space -> send."""
        src = self._source_path(ctx.project)
        if src is None:
            return Plan(False, "no dataset given: set vars.dataset or pass --dataset PATH", failed=True)
        if not src.exists():
            return Plan(False, f"dataset source {src} does not exist", failed=True)
        try:
            self._probe_mode(ctx)
        except StepArgsError as exc:
            return Plan(False, f"{exc} (vars.upload_probe or the step's upload_probe)", failed=True)
        try:
            self._probe_timeout(ctx)
        except StepArgsError as exc:
            return Plan(
                False, f"{exc} (vars.upload_probe_timeout or the step's upload_probe_timeout)", failed=True
            )
        if not self.dest:
            return Plan(
                False,
                "no remote data dir: set data_dir for the host (or its vendor) or pass --dest",
                failed=True,
            )
        remote = self._listing(ctx, self.target)
        if remote.rsync is None:
            return Plan(
                False,
                "rsync is not installed on the host; install it (apt-get install rsync / dnf install rsync)",
                failed=True,
            )
        # plain mode needs no hash to plan (rsync's quick check): files are hashed during the upload
        try:
            tree = self._scanned(src)
        except OSError as exc:
            return Plan(False, _unreadable(exc, src, NOTHING_SENT), failed=True)
        ours = (uploadlock.COPY_MARK, uploadlock.LEASE_IN_COPY)
        top = tree.root if tree.root.is_dir() else None  # (a dir of that name too: two stats, no walk)
        reserved = [n for n in ours if n in tree.entries or (top is not None and os.path.lexists(top / n))]
        if reserved:
            return Plan(
                False,
                f"the dataset {src} has an entry named {reserved[0]} at its top, a name gpuonboard keeps"
                f" for itself on the host; rename it, then rerun ({NOTHING_SENT})",
                failed=True,
            )
        self._same_dir_as_dest(ctx)
        mark = transfer.PARTIAL_DIR  # (the substring test first: 50,000 splits took 6 ms of every plan)
        partial = next((rel for rel in tree.entries if mark in rel and mark in rel.split("/")[:-1]), None)
        if partial is None:  # (an empty one: never made on the host, so never up to date)
            partial = next((d for d in sorted(tree.empty_dirs) if mark in d and mark in d.split("/")), None)
        if partial is not None:  # (rsync would never send it, and listings leave it out)
            return Plan(
                False,
                f"the dataset {src} has a directory named {transfer.PARTIAL_DIR} (e.g. {partial!r}), a"
                f" name gpuonboard keeps for rsync's partial files; rename it, then rerun ({NOTHING_SENT})",
                failed=True,
            )
        work = Work(tree, [], self.target)
        entries = list(tree.entries.values())
        if not entries and (self.encrypt or not tree.empty_dirs) and not (self.shards or self.unpack):
            # (rsync never ran: "up to date at" named a copy that may not even exist there)
            where = self.target if self.encrypt else tree.landing(self.target)
            what = "is empty" if not tree.empty_dirs else _ONLY_EMPTY_DIRS
            return Plan(
                False,
                f"the dataset {src} {what}; nothing sent (what {ctx.host.name}:{where} holds is left"
                " as it is)",
                diff={"sent": 0},
            )
        threshold = int(self._setting(ctx, "shard_threshold", shards.DEFAULT_THRESHOLD))
        if self.shards or (self.shards is None and len(entries) > threshold) or self.unpack:
            return self._plan_shards(ctx, src, work)
        if self.encrypt and not tree.files:  # symlinks (and empty dirs) only: no ciphertext to make
            # ("up to date at" named an .encrypted copy the host does not have)
            n_links = sum(1 for e in entries if e.kind == "l")
            and_dirs = " and its empty directories" if tree.empty_dirs else ""
            return Plan(
                False,
                f"the dataset {src} holds no regular file, the only kind plain encrypted mode uploads"
                f" (its {_count(n_links, 'symlink')}{and_dirs} are not; --shards carries them); nothing sent"
                f" (what {ctx.host.name}:{self.target} holds is left as it is)",
                diff={"sent": 0},
            )
        taken = self._other_copy(ctx, [self.target] + ([self.plain_target] if self.decrypt_on_host else []))
        if taken:
            return Plan(False, taken, failed=True)
        if self.encrypt:
            dirs = _parent_dirs(tree.entries)
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
            work.hashes = _known_hashes(tree, shards.HashCache(self._hash_cache_dir(ctx, tree.root)))
            problem = self._load_enc(ctx, work)
            if problem or work.enc is None:
                return Plan(False, problem or "no encryption settings", failed=True)
            cache = self._cache_dir(ctx)
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
        work.send = transfer.to_send(entries, remote.files)
        # (an empty directory is no obstacle: rsync, and the decryption, replace it)
        blocking = remote.dirs - remote.empty_dirs  # (once: not a set difference per file)
        in_way = [(self.target, e) for e in work.send if e.rel in blocking]
        unpacked = ""
        if self.decrypt_on_host:
            plain = self._listing(ctx, self.plain_target)
            work.decrypt = transfer.to_send(tree.files, plain.files)
            store = self._listing(ctx, self.shards_target).files if self.shards is not False else {}
            if work.decrypt != tree.files and any(n.startswith(shards.MARKER_PREFIX) for n in store):
                # the tree there was unpacked from shards: its mtimes are the unpack's, so a
                # size-and-mtime match says nothing (an edit made in that second stayed stale)
                work.decrypt = list(tree.files)
                unpacked = " (all: the tree there was unpacked from shards, so its mtimes prove nothing)"
            blocking = plain.dirs - plain.empty_dirs
            in_way += [(self.plain_target, e) for e in work.decrypt if e.rel in blocking]
            work.dec_temps = sorted(
                rel for rel in plain.files if _decrypt_temp(rel) and rel not in tree.entries
            )
        if in_way:  # (rsync would not delete a non-empty dir; a rerun alone never clears it)
            there, e = in_way[0]
            more = f" (and {_count(len(in_way) - 1, 'other')})" if len(in_way) > 1 else ""
            return Plan(
                False,
                f"{ctx.host.name}:{_shown(posixpath.join(there, e.rel))} is a directory where the"
                f" dataset now has a {'symlink' if e.kind == 'l' else 'file'}{more}; move it away (or"
                f" delete it) there, then rerun ({NOTHING_SENT})",
                failed=True,
            )
        # what interrupted uploads left (a dropped link's temp files, partial files): resumed
        # from, or removed; and the room on the host's disk, counting what is already there
        sending = {e.rel for e in work.send}
        work.resume, work.leftovers, basis, freed = _interrupted(remote, {e.rel for e in entries}, sending)
        if self.encrypt:  # (plaintext sizes: a ciphertext not made yet has none; age adds ~0.03 %)
            sizes = [tree.entries[e.rel[: -len(".age")]].size for e in work.send]
        else:
            sizes = [max(e.size, 0) for e in work.send]
        send = sum(sizes)
        resumed = sum(min(basis.get(e.rel, 0), size) for e, size in zip(work.send, sizes, strict=True))
        peak, grown = _room(
            [
                (size, basis.get(e.rel, 0) + _old_size(remote.files.get(e.rel)))
                for e, size in zip(work.send, sizes, strict=True)
            ]
        )
        # on the host's disk: what is sent, and with decryption the plaintext too (--decrypt-to:
        # the plaintext lands on another disk)
        decrypted = sum(e.size for e in work.decrypt) if self.encrypt and not self.decrypt_dir else 0
        need = max(peak, grown + decrypted) - freed
        counted = send + decrypted - need  # (already on the host: partial files, old versions)
        where = f"{ctx.host.name}:{self.target if self.encrypt else tree.landing(self.target)}"
        n = len(tree.entries)
        total = f"{n} {'entry' if n == 1 else 'entries'}, {format_bytes(tree.total_bytes, binary=True)}"
        if not n and tree.empty_dirs:  # (plain mode only: encrypted mode returned above)
            total = f"{_empty_dirs(len(tree.empty_dirs))}, no files"
        kept = _kept_on_host(remote.files, {e.rel for e in entries})
        if self.decrypt_on_host:  # the plaintext dir keeps what the dataset dropped too
            # (not the temp files of a cut-short decryption: this run removes them)
            temps = set(work.dec_temps)
            theirs = {rel: v for rel, v in plain.files.items() if rel not in temps}
            kept += _kept_on_host(theirs, {e.rel for e in tree.files}, self.plain_target)
        links = sorted(e.rel for e in tree.entries.values() if e.kind == "l") if self.encrypt else []
        if links:  # (age encrypts file contents; a symlink has none)
            verb = "is" if len(links) == 1 else "are"
            kept += f"; {_count(len(links), 'symlink')} of the dataset {verb} not uploaded in encrypted mode"
            kept += f" (e.g. {links[0]!r})"
        if self.encrypt and tree.empty_dirs:  # (each file's ciphertext travels: a dir with none, not)
            gone = sorted(tree.empty_dirs)
            verb = "is" if len(gone) == 1 else "are"
            kept += (
                f"; {_empty_dirs(len(gone))} of the dataset {verb} not uploaded in encrypted mode"
                f" (e.g. {gone[0]!r}; --shards carries them)"
            )
        kept = work.kept = kept + self._left_plaintext(ctx)
        # empty directories (rsync -a makes them; with nothing else to send it never ran)
        work.mkdirs = [] if self.encrypt else sorted(d for d in tree.empty_dirs if d not in remote.dirs)
        if not work.send and not work.decrypt and not work.mkdirs and not work.dec_temps:
            if work.leftovers:  # (a later run said "up to date" and never mentioned them)
                return Plan(
                    True,
                    f"dataset up to date at {where} ({total}); remove {_leftovers(work.leftovers)}{kept}",
                    diff={"target": self.target, "send": [], "bytes": 0, "remove": work.leftovers},
                    data=work,
                )
            return Plan(
                False, f"dataset up to date at {where} ({total}); nothing sent{kept}", diff={"sent": 0}
            )
        if self.decrypt_dir and work.decrypt:  # the plaintext's own disk (a tmpfs)
            short = self._decrypt_dir_room(
                ctx, plain.free_bytes, sum(e.size for e in work.decrypt), "the plaintext"
            )
            if short is not None:
                return short
        if remote.free_bytes is not None and remote.free_bytes < need:
            there = f", {format_bytes(counted, binary=True)} already there counted" if counted > 0 else ""
            return Plan(
                False,
                f"not enough space under {self.dest} on {ctx.host.name}:"
                f" {format_bytes(remote.free_bytes, binary=True)} free,"
                f" {format_bytes(need, binary=True)} needed for {len(work.send)} files{there};"
                " free space first",
                failed=True,
            )
        names = ", ".join(e.rel for e in work.send[:3]) + (" ..." if len(work.send) > 3 else "")
        msg = f"send {len(work.send)} of {len(entries)} files ({format_bytes(send, binary=True)}) to {where}"
        if names:
            msg += f": {names}"
        if work.mkdirs and not entries:  # (nothing else: "send 0 of 0 files (0 B)" said nothing)
            msg = f"make {_made(work.mkdirs)} at {where}; the dataset has no files to send"
        elif work.mkdirs:
            msg += f"; make {_made(work.mkdirs)}"
        if work.decrypt:
            into = tree.landing(self.plain_target)
            msg += f"; decrypt {len(work.decrypt)} on the host into {into}{unpacked}"
        if work.dec_temps:
            msg += (
                f"; remove {_count(len(work.dec_temps), 'temp file')} a decryption cut short on the host"
                f" left in {_shown(self.plain_target)} (e.g. {work.dec_temps[0]!r})"
            )
        work.resumed = (sum(1 for e in work.send if basis.get(e.rel)), resumed)
        msg += _resumed_note(work.resumed, "resume")
        if work.leftovers:
            msg += f"; remove {_leftovers(work.leftovers)}"
        msg += kept
        send -= resumed  # (what travels: rsync sends the rest of a partial file)
        if entries:  # (no file: nothing to estimate)
            msg += f"; estimate {transfer.format_eta(send, self._link_mbit(ctx))}"
        work.need = send  # the upload's size: its ETA and whether to measure the link first
        diff = {"target": self.target, "send": [e.rel for e in work.send], "bytes": send, "source": str(src)}
        return Plan(True, msg, diff=diff, data=work)

    def _load_enc(self, ctx: StepContext, work: Work) -> str | None:
        try:
            work.enc = crypto.load_encryption(
                ctx.host.vars.get("age_recipients"), ctx.host.vars.get("age_passphrase_env")
            )
            if self.decrypt_on_host:
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

    @staticmethod
    def _hash_cache_dir(ctx: StepContext, root: Path) -> Path:
        """The dataset's local cache dir (hash cache, shard index)."""
        return ctx.project / ".gpuonboard" / "cache" / "shards" / shards.dataset_id(root)

    def _shard_root(self, work: Work) -> Path:
        return work.tree.root if work.tree.root.is_dir() else work.tree.root.parent

    def _remote_name(self, work: Work, shard: shards.Shard) -> str:
        """The shard's file name on the host: `<sha>.tar`, or `<sha>.tar.zst.age` encrypted."""
        if work.enc is None:
            return shard.name
        return shard.name[: -len(".tar")] + shardstream.ENCRYPTED_SUFFIX[work.codec]

    def _cipher_path(self, ctx: StepContext, work: Work, shard: shards.Shard) -> Path:
        assert work.enc is not None
        return self._cache_dir(ctx) / f"{work.enc.cache_key(f'{shard.sha256}:{work.codec}')}.age"

    def _recognise_host_shards(
        self, ctx: StepContext, work: Work, remote: transfer.RemoteState, root: Path
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
                    f"step {self.label}: {self.shards_target} on the host holds shards this machine has"
                    f" not packed: hashing shard {n + 1} of {len(todo)} here to recognise them"
                )
            try:
                packed = shards.pack(root, work.groups[i], _discard)
            except shards.ChangedWhilePacking:
                continue  # (sent, and checked again, as any changed shard)
            _note_packed(work, i, packed, root)
            have = remote.files.get(packed.name)
            found += have is not None and have[:2] == ("f", packed.size)
        if todo and not ctx.check:  # known from now on, even when nothing is sent (a cache only)
            assert work.index is not None and work.hashes is not None
            with contextlib.suppress(OSError):
                work.index.save({k for k in work.keys if k})
            with contextlib.suppress(OSError):
                work.hashes.save(work.tree.entries)
        return found

    def _plan_shards(self, ctx: StepContext, src: Path, work: Work) -> Plan:
        """Shard mode: assign files to shards; when shards were packed before, find the unchanged
        ones by member key (file hashes from the local hash cache: only changed files are read);
        compare their names with the listing of <dest>/<name>.shards. A first run hashes nothing
        here: packing hashes each file as it streams it."""
        work.target = self.shards_target
        work.unpack = self.unpack or self.decrypt_on_host
        taken = self._other_copy(ctx, [self.shards_target] + ([self.plain_target] if work.unpack else []))
        if taken:
            return Plan(False, taken, failed=True)
        link = self._listing(ctx, self.plain_target).link if work.unpack else None
        if link is not None:  # (the swap renames the link away and leaves the old copy at its target)
            return Plan(
                False,
                f"{ctx.host.name}:{_shown(self.plain_target)} is a symlink (to {_shown(link)}); an unpack"
                " replaces the tree by a rename, which would replace the link and leave the old copy"
                " where it points: name the real directory with --dest and --name, or remove the link,"
                f" then rerun ({NOTHING_SENT})",
                failed=True,
            )
        earlier = self._listing(ctx, self.shards_target).files
        if not work.tree.entries and (not work.tree.empty_dirs or earlier):
            # (no shard to make. Empty dirs alone are members of a first upload's shard, but never
            # mirror away an earlier upload: a dataset whose mounts are missing looks like this)
            what = "is empty" if not work.tree.empty_dirs else "holds only empty directories"
            return Plan(
                False,
                f"the dataset {src} {what}; nothing sent (what {ctx.host.name}:{self.shards_target} holds"
                " is left as it is)",
                diff={"sent": 0},
            )
        if self.encrypt:
            problem = self._load_enc(ctx, work)
            if problem:
                return Plan(False, problem, failed=True)
            if work.unpack and work.identity is None:
                return Plan(False, "unpacking encrypted shards needs --decrypt-on-host", failed=True)
        size = int(transfer_size(self._setting(ctx, "shard_size", shards.DEFAULT_SIZE)))
        root = self._shard_root(work)
        cache = self._hash_cache_dir(ctx, work.tree.root)
        index = shards.Index(cache)
        remote = self._listing(ctx, self.shards_target)
        in_way = sorted(
            d
            for d in remote.dirs
            if "/" not in d and (d.endswith((".tar", ".age", ".json")) or d.startswith(shards.MARKER_PREFIX))
        )
        if in_way:  # (a shard or the manifest is renamed to its name: it would go into it)
            return Plan(
                False,
                f"{ctx.host.name}:{_shown(posixpath.join(self.shards_target, in_way[0]))} is a"
                " directory where a shard, the manifest or a marker goes; move it away (or delete it) there,"
                f" then rerun ({NOTHING_SENT})",
                failed=True,
            )
        work.codec = shardstream.pick_codec(remote.zstd)
        work.index, work.hashes = index, shards.HashCache(cache)
        if index.data:
            _known_hashes(work.tree, work.hashes)
            try:
                transfer.hash_tree(work.tree)
            except OSError as exc:
                return Plan(False, _unreadable(exc, src, NOTHING_SENT), failed=True)
        members = list(work.tree.entries.values()) + _dir_members(work.tree.empty_dirs)
        work.groups = shards.assign(members, size)
        if index.data:
            work.keys = [shards.member_key(root, g) for g in work.groups]
            work.built = [index.get(k) for k in work.keys]
        else:
            work.keys = [""] * len(work.groups)
            work.built = [None] * len(work.groups)
        found = 0
        if work.enc is None:
            try:
                found = self._recognise_host_shards(ctx, work, remote, root)
            except OSError as exc:
                return Plan(False, _unreadable(exc, src, NOTHING_SENT), failed=True)
        for i, (group, shard) in enumerate(zip(work.groups, work.built, strict=True)):
            if shard is None:
                work.send_idx.append(i)
                work.need += sum(max(e.size, 0) + 512 for e in group)
                continue
            name = self._remote_name(work, shard)
            work.remote_names.append(name)
            have = remote.files.get(name)
            want = shard.size
            if work.enc is not None:
                cipher = self._cipher_path(ctx, work, shard)
                want = cipher.stat().st_size if cipher.is_file() else -1
            if have is None or have[0] != "f" or have[1] != want:
                work.send_idx.append(i)
                work.need += shard.size
        work.stale = [
            n
            for n, (kind, _, _) in remote.files.items()
            if "/" not in n
            and kind == "f"
            and n not in work.remote_names
            and (n.endswith((".tar", ".age")) or n.startswith(shardstream.INCOMING))
        ]
        where = f"{ctx.host.name}:{self.shards_target}"
        n = len(work.tree.entries)
        total = f"{n} {'entry' if n == 1 else 'entries'} in {_count(len(work.groups), 'shard')}"
        counted = f"{n} entries"  # (a dataset of only empty dirs: those, not "0 entries")
        if not n and work.tree.empty_dirs:
            counted = _empty_dirs(len(work.tree.empty_dirs))
            total = f"{counted} in {_count(len(work.groups), 'shard')}"
        # whole: every shard there, none left over, and the host's manifest is this one (a shard
        # of a deleted file alone, or an emptied manifest, leaves the rest as it was)
        # (with nothing to send the shards are final: apply reuses this manifest)
        work.manifest = b"" if work.send_idx else self._manifest(work, size)
        digest = hashlib.sha256(work.manifest).hexdigest() if work.manifest else ""
        stored = self._stored_digest(ctx, work, digest) if digest else ""
        complete = bool(stored) and not work.stale and remote.manifest_sha == stored
        unpacked, redo = True, ""
        plain = self._listing(ctx, self.plain_target) if work.unpack else None
        if plain is not None:
            drift, extra = shards.tree_drift(work.tree.entries, plain.files)
            drift += sorted(d for d in work.tree.empty_dirs if d not in plain.dirs)
            if complete:  # the marker says which manifest was unpacked; the listing, that it is whole
                marked = shards.marker_name(digest, self.plain_target) in remote.files
                unpacked = marked and not drift
                if marked and drift:
                    redo = (
                        f"; the unpacked tree {self.plain_target} differs from the dataset"
                        f" ({len(drift)} missing or changed, e.g. {drift[0]!r}): unpacked again"
                    )
            foreign = self._foreign_files(ctx, extra, work) if extra and not (complete and unpacked) else []
            if foreign:
                return Plan(False, self._foreign_sentence(ctx, foreign), failed=True)
            # what the swap drops: listed paths that are neither in the dataset nor a dir of it
            # (an empty one too: a file that became one is replaced, not dropped, by the swap)
            empty = work.tree.empty_dirs
            dirs = _parent_dirs([*work.tree.entries, *empty]) | empty
            work.drop = shardstream.dropped_digest([rel for rel in extra if rel not in dirs])
        work.shard_size = size
        older = ""
        # an earlier --unpack's tree is left as it was (not another copy's plaintext there): say so
        there = self._listing(ctx, self.target) if not work.unpack and not self.encrypt else None
        if there is not None and there.copy in (None, "", posixpath.normpath(self.copy)):
            left = there.files
            drift, extra = shards.tree_drift(work.tree.entries, left) if left else ([], [])
            if left and work.send_idx:
                older = (
                    f"; the unpacked tree {self.target} ({_count(len(left), 'file')}) is not updated"
                    " without --unpack and will be older than the dataset"
                )
            elif drift or extra:
                older = (
                    f"; the unpacked tree {self.target} differs from the dataset"
                    f" ({_count(len(drift) + len(extra), 'path')}): --unpack updates it"
                )
        recognised = (
            f"; {_count(found, 'shard')} already on the host recognised by hashing here (this machine's"
            " shard index did not list them)"
            if found
            else ""
        )
        note = work.kept = self._left_plaintext(ctx) + older + recognised
        if complete and unpacked:
            return Plan(
                False, f"dataset up to date at {where} ({total}); nothing sent{note}", diff={"sent": 0}
            )
        # an unpack rebuilds the WHOLE tree beside the current one (swapped in at the end), in
        # file system blocks: a 1-byte file takes 4 KiB
        tree_room = sum(-(-max(e.size, 0) // 4096) * 4096 for e in work.tree.files) if work.unpack else 0
        apart = bool(self.decrypt_dir) and work.unpack  # the tree goes to --decrypt-to's disk
        room = work.need + (0 if apart else tree_room)
        if remote.free_bytes is not None and remote.free_bytes < room:
            unpacked_too = " (the shards, and the whole tree unpacked beside the current one)"
            return Plan(
                False,
                f"not enough space under {self.dest} on {ctx.host.name}:"
                f" {format_bytes(remote.free_bytes, binary=True)} free,"
                f" {format_bytes(room, binary=True)} needed for {len(work.send_idx)} shards"
                f"{unpacked_too if tree_room and not apart else ''}; free space first",
                failed=True,
            )
        if apart and plain is not None:
            short = self._decrypt_dir_room(ctx, plain.free_bytes, tree_room, "the unpacked tree")
            if short is not None:
                return short
        # shards to pack now: every one sent, but encrypted ones whose ciphertext is cached
        build = sum(
            1
            for i in work.send_idx
            if work.enc is None
            or (shard := work.built[i]) is None
            or not self._cipher_path(ctx, work, shard).is_file()
        )
        msg = (
            f"send {len(work.send_idx)} of {len(work.groups)} shards ({format_bytes(work.need, binary=True)};"
            f" {build} to build) of {counted} to {where}"
        )
        work.manifest_behind, work.redo = remote.manifest_sha != stored, redo
        if work.send_idx:
            if work.unpack:
                msg += f"; unpack into {self.plain_target}{redo}"
            msg += f"{note}; estimate {transfer.format_eta(work.need, self._link_mbit(ctx))}"
        else:  # only the manifest, leftovers or the unpacked tree are behind
            todo = ["update the manifest"] if work.manifest_behind else []
            if work.stale:
                todo.append(f"remove {_count(len(work.stale), 'old or partial shard')}")
            if work.unpack:
                todo.append(f"unpack into {self.plain_target}{redo}")
            msg = (
                f"{'; '.join(todo)}: all {len(work.groups)} shards of {counted}"
                f" are at {where} already, nothing to send{note}"
            )
        diff = {
            "target": self.shards_target,
            "shards": len(work.groups),
            "send_shards": len(work.send_idx),
            "bytes": work.need,
            "source": str(src),
        }
        return Plan(True, msg, diff=diff, data=work)

    def _foreign_files(self, ctx: StepContext, extra: list[str], work: Work) -> list[str]:
        """Of the files in the unpacked tree that the dataset does not have, those no earlier
        upload put there (not in the host's manifest): the user's own (a checkpoint written
        into the dataset dir). An unpack swaps the whole tree, so they would be lost."""
        shipped: set[str] = set()
        for name in (shards.MANIFEST, shards.UNPACKED_MANIFEST):  # (a --shards run since may
            # have replaced the first: the second is the one the tree was last unpacked from)
            r = ctx.runner.run(shell.join(["cat", "--", posixpath.join(self.shards_target, name)]))
            shipped |= shards.manifest_paths(self._readable_manifest(r.stdout, work)) if r.ok else set()
        return [rel for rel in extra if rel not in shipped]

    @staticmethod
    def _readable_manifest(text: str, work: Work) -> str:
        """A host's manifest.json as JSON text: an encrypted one (age) decrypted with this run's
        identity or passphrase; '' when it cannot be (then it vouches for no file)."""
        data = text.encode("utf-8", "surrogateescape")
        if not data.startswith(b"age-encryption.org/"):
            return text  # (a plain-mode manifest, or one written before manifests were encrypted)
        passphrase = work.enc.passphrase if work.enc is not None else None
        if work.identity is None and passphrase is None:
            return ""
        try:
            return crypto.decrypt_bytes(data, work.identity, passphrase).decode("utf-8", "surrogateescape")
        except crypto.CryptoError:
            return ""

    def _foreign_sentence(self, ctx: StepContext, foreign: list[str]) -> str:
        n = len(foreign)
        what = (
            f"a file that is in neither the dataset nor a shard upload's manifest ({foreign[0]!r})"
            if n == 1
            else f"{n} files that are in neither the dataset nor a shard upload's manifest"
            f" (e.g. {foreign[0]!r})"
        )
        them = "it" if n == 1 else "them"
        return (
            f"{ctx.host.name}:{self.plain_target} holds {what}: a job's output, or left by a plain-mode"
            f" upload; --unpack replaces that directory whole, so move {them} out first (or delete"
            f" {them} if unwanted, or unpack elsewhere with --dest), then rerun"
        )

    def _manifest(self, work: Work, size: int) -> bytes:
        rows = []
        for group, shard in zip(work.groups, work.built, strict=True):
            assert shard is not None
            rows.append((self._remote_name(work, shard), shard.sha256, shard.size, group))
        return shards.manifest(rows, size)

    # ------------------------------------------------------------ apply

    def _progress(self, ctx: StepContext, base: list[int] | None = None, total: int = 0) -> Any:
        """Progress line; with `base` (bytes done by earlier batches) the percent is overall."""

        def show(u: transfer.ProgressUpdate) -> None:
            if not ctx.progress:
                return
            if base is None or not total:  # (the whole upload's size, from rsync's own percent)
                whole = total or (u.bytes * 100 // u.percent if u.percent else 0)
                eta = transfer.upload_eta(u.bytes, whole, u.rate)
                ctx.progress(
                    f"step {self.label}: {u.percent}% {format_bytes(u.bytes, binary=True)}"
                    f" {u.rate}{' ' + eta if eta else ''}"
                )
                return
            done = base[0] + u.bytes
            eta = transfer.upload_eta(done, total, u.rate)
            ctx.progress(
                f"step {self.label}: {min(100, 100 * done // total)}% {format_bytes(done, binary=True)}"
                f" of {format_bytes(total, binary=True)} {u.rate}{' ' + eta if eta else ''}"
            )

        return show

    def _probe_mode(self, ctx: StepContext) -> bool | None:
        """`upload_probe`: True (always), False (never), None (auto); StepArgsError otherwise."""
        value = self._setting(ctx, "upload_probe", "auto")
        text = str(value).strip().lower()
        if text in ("auto", ""):
            return None
        if value is True or text in ("true", "yes", "on", "1", "always"):
            return True
        if value is False or text in ("false", "no", "off", "0", "never"):
            return False
        raise StepArgsError(f"upload_probe must be auto, true or false, not {value!r}")

    def _probe_timeout(self, ctx: StepContext) -> float:
        """`upload_probe_timeout`: seconds a probe round may take (default 15); StepArgsError otherwise."""
        value = self._setting(ctx, "upload_probe_timeout", transfer.PROBE_ROUND_TIMEOUT)
        try:
            seconds = float(value) if not isinstance(value, bool) else -1.0
        except (TypeError, ValueError):
            seconds = -1.0
        if not 0 < seconds < float("inf"):
            raise StepArgsError(f"upload_probe_timeout must be a number of seconds above 0, not {value!r}")
        return seconds

    def _preflight(self, ctx: StepContext, need: int, master: tuple[Path, str, Path, list[str]]) -> str:
        """The ETA sentence, shown before the first byte: from a short throughput probe over the
        master connection (up to 16 MiB or 2 s into `cat > /dev/null`) when the upload would take
        at least PROBE_WORTH_S at the configured speed (the probe then costs at most 1 %), and
        `upload_probe` is not false, and no --bwlimit caps the rate; else from the configured
        speed (`upload_mbit`). The live line then shows the measured rate and ETA, and the final
        message the rate really achieved."""
        configured = self._link_mbit(ctx)
        mode = self._probe_mode(ctx)
        worth = mode is True or (mode is None and transfer.eta_seconds(need, configured) >= PROBE_WORTH_S)
        mbit = None
        if worth and not self.bwlimit:
            if ctx.progress:
                ctx.progress(f"step {self.label}: measuring the upload speed (2 s)")
            cfg, alias, _control, opts = master
            mbit = transfer.probe_throughput(cfg, alias, timeout=self._probe_timeout(ctx), ssh_opts=opts)
        if mbit:
            eta = f"{transfer.format_eta(need, mbit)} (measured)"
        else:
            eta = f"{transfer.format_eta(need, configured)} (configured)"
        if ctx.progress:
            ctx.progress(f"step {self.label}: {eta}")
        return eta

    def _rsync_batches(
        self,
        ctx: StepContext,
        stage: Path,
        target: str,
        cfg: Path,
        alias: str,
        batches: list[Any],
        total: int,
        work: Work,
    ) -> tuple[transfer.RsyncRun | None, int, int]:
        """Send each batch (a producer returning stage-relative names) with rsync --files-from
        while the next batch is produced; -> (failed run or None, files sent, literal bytes)."""
        base = [0]
        sent = [0, 0]
        failed: list[transfer.RsyncRun] = []
        # this run's own list (two runs to other copies on one host shared `<host>.batch`)
        fd, name = tempfile.mkstemp(dir=cfg.parent, prefix=f".{cfg.stem}.", suffix=".batch")
        os.close(fd)
        listing = Path(name)
        work.temps.append(listing)  # (removed when apply ends)

        def send(names: list[str]) -> bool:
            if not names:
                return True
            listing.write_bytes(b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names))
            argv = transfer.rsync_argv(
                stage,
                target,
                cfg,
                alias,
                self.bwlimit,
                files_from=listing,
                ssh_options=work.ssh_opts,
                marker=self._marker(),
            )
            run = transfer.run_rsync(argv, self._progress(ctx, base, total))
            if run.exit_code != 0:
                failed.append(run)
                return False
            sent[0] += run.stats.files_transferred
            sent[1] += run.stats.literal_bytes
            base[0] += run.stats.total_size
            return True

        transfer.pipelined(batches, send)
        return (failed[0] if failed else None), sent[0], sent[1]

    def _encrypted_batches(self, ctx: StepContext, work: Work, stage: Path) -> list[Any]:
        """Plain encrypted mode: batches of work.send; each producer encrypts (cache misses) and
        hard-links its files into the stage."""
        assert work.enc is not None
        enc = work.enc
        rels = [e.rel[: -len(".age")] for e in work.send]
        cached = {r for r in rels if r in work.cipher and work.cipher[r].is_file()}
        rels.sort(key=lambda r: r in cached, reverse=True)  # cached ones go first
        cache = self._cache_dir(ctx)
        hashes = work.hashes
        assert hashes is not None
        notes, noting = work.notes
        counts = transfer.batch_sizes([work.tree.entries[r].size for r in rels])
        root = work.tree.root
        done = [0]

        current = [""]  # the file being encrypted (producers run one at a time)

        def encrypt_and_stage(chunk: list[str]) -> list[str]:
            for rel in chunk:
                current[0] = rel
                path = work.cipher.get(rel)
                if path is None or not path.is_file():
                    done[0] += 1
                    plain, path = crypto.encrypt_to_cache(work.tree.path(rel), enc, cache)
                    noting.append(notes.submit(crypto.note_sha256, path))  # while rsync sends
                    entry = dataclasses.replace(work.tree.entries[rel], sha256=plain)
                    work.tree.entries[rel] = entry
                    hashes.put(entry, plain)
                    work.cipher[rel] = path
                link = stage / (rel + ".age")
                link.parent.mkdir(parents=True, exist_ok=True)
                link.unlink(missing_ok=True)
                try:
                    os.link(path, link)
                except OSError:
                    shutil.copy2(path, link)
            hashes.save(work.tree.entries)
            return [rel + ".age" for rel in chunk]

        def make(chunk: list[str]) -> Any:
            def produce() -> list[str]:
                try:
                    return encrypt_and_stage(chunk)
                except crypto.ChangedWhileEncrypting:
                    raise LocalWriteError(_changed_while_encrypting(current[0])) from None
                except OSError as exc:
                    # (any error reading a dataset file: a vanished one too, unlike shard mode's
                    # generic message, since here the alternative would blame the cache)
                    why = unreadable_source(exc, root, LOCAL_KEPT, errnos=None) or local_write_failure(
                        exc, f"the encrypted copy of {current[0]}", cache
                    )
                    raise LocalWriteError(why) from None

            return produce

        out, i = [], 0
        for n in counts:
            out.append(make(rels[i : i + n]))
            i += n
        return out

    def _stage_dir(self, ctx: StepContext, work: Work, kind: str) -> Path:
        key = hashlib.sha256(
            f"{ctx.host.name}\0{work.tree.root}\0{kind}".encode("utf-8", "surrogateescape")
        ).hexdigest()[:16]
        stage = ctx.project / ".gpuonboard" / "cache" / "staging" / key
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        return stage

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync, verify by sha256 on the host, re-send mismatches once, decrypt on the host."""
        work: Work = plan.data
        why = None
        if work.master is None:  # planned outside this process's plan() (or it could not start)
            why = self._open_master(ctx.host, ctx.inventory, ctx.known_hosts, ctx.project)
            work.master = self._masters.pop(ctx.host.name, None)
        if work.master is None:
            self._unlock()
            return why or "cannot write the OpenSSH config for the upload under .gpuonboard/ssh/"
        cfg, alias, _control, work.ssh_opts = work.master
        try:  # (the lease and the probe too: any end closes the master)
            # the plaintext tree this run writes (checked for another copy's mark with the lease):
            # an unpack's or a decryption's, or plain mode's copy itself; none for --shards alone
            if work.unpack or self.decrypt_on_host:
                tree = self.plain_target
            else:
                tree = self.target if work.enc is None and not work.groups else ""
            work.lease, refused = self._take_lease(ctx, work, tree)
            if work.lease is None:
                return refused
            lease = work.lease
            work.on_interrupt = children.on_interrupt(lambda: self._give_back_lease(ctx, lease, timeout=5))
            if self.decrypt_dir:
                taken = self._claim_plain_dir(ctx, work.lease)
                if taken:
                    return taken
            if work.enc is not None:  # what a killed earlier run left half-encrypted
                crypto.sweep_dead_temps(self._cache_dir(ctx))
            refresh = uploadlock.touch_command(work.lease)
            work.beat = uploadlock.Heartbeat(["ssh", "-F", str(cfg), *work.ssh_opts, alias, refresh])
            start = time.monotonic()
            if not (work.groups or work.send or work.decrypt or work.mkdirs or work.dec_temps):
                out = None  # only an interrupted upload's leftovers to remove: the lease did
                plan.msg = plan.msg.replace("; remove ", "; removed ", 1) + _stopped_note(work.stopped)
            else:
                eta = self._preflight(ctx, work.need, work.master)
                start = time.monotonic()
                if work.groups:
                    out = self._apply_shards(ctx, plan, work, eta)
                else:
                    out = self._apply_plain(ctx, plan, work, cfg, alias, eta)
                if out is None:
                    plan.msg += _stopped_note(work.stopped)
        finally:
            if work.beat is not None:
                work.beat.stop()
            if work.lease is not None:  # (None too when the host's closing work goes on without us)
                self._give_back_lease(ctx, work.lease)
            if work.on_interrupt is not None:  # (only now: an interrupt's main thread runs it
                children.done(work.on_interrupt)  # meanwhile, before it cuts this connection)
            self._close_master(work.master)
            self._unlock()
            for temp in work.temps:
                temp.unlink(missing_ok=True)
        literal = (plan.diff or {}).get("literal_bytes", 0)
        took = time.monotonic() - start
        if out is None and literal and took > 0:
            plan.msg += f" (achieved {literal * 8 / took / 1e6:.0f} Mbit/s)"
        return out

    def _apply_plain(self, ctx: StepContext, plan: Plan, work: Work, cfg: Path, alias: str, eta: str) -> Any:
        """Plain (and encrypted) mode: rsync, verify by sha256 on the host, re-send mismatches once."""
        cfg_dir = cfg.parent
        self._unmark_unpacked(ctx)
        if work.enc is None:
            root = work.tree.root
            stage, only = (
                (root, None)
                if root.is_dir()
                else (root.parent, cfg.parent / f"{cfg.stem}.{self._unpack_token}.one")
            )
            if only is not None:  # one file: that file, never the rest of its directory
                only.write_bytes(root.name.encode("utf-8", "surrogateescape") + b"\0")
                work.temps.append(only)
            argv = transfer.rsync_argv(
                stage,
                work.target,
                cfg,
                alias,
                self.bwlimit,
                files_from=only,
                ssh_options=work.ssh_opts,
                marker=self._marker(),
            )
            # the local sha256 runs while rsync sends (it was a serial pass before the upload)
            from concurrent.futures import ThreadPoolExecutor

            stop = threading.Event()
            with ThreadPoolExecutor(max_workers=1) as pool:
                hashing = pool.submit(transfer.hash_tree, work.tree, stop)
                try:
                    run: transfer.RsyncRun | None = transfer.run_rsync(argv, self._progress(ctx))
                except BaseException:
                    stop.set()  # (leaving this block waits for the hashing: cut it short)
                    raise
                if run is not None and (run.exit_code == 20 or run.exit_code < 0):
                    stop.set()  # rsync was stopped (an interrupt on another thread): nothing to verify
                try:
                    hashing.result()
                except OSError as exc:
                    return _unreadable(exc, root, LOCAL_KEPT)
            assert run is not None
            bad_run = run if run.exit_code != 0 else None
            sent, literal = run.stats.files_transferred, run.stats.literal_bytes
        else:
            stage = self._stage_dir(ctx, work, "encrypted")
            batches = self._encrypted_batches(ctx, work, stage)
            try:
                bad_run, sent, literal = self._rsync_batches(
                    ctx, stage, work.target, cfg, alias, batches, work.need, work
                )
            except LocalWriteError as exc:
                return str(exc)
        if bad_run is not None:
            return transfer.rsync_conflict(bad_run) or (
                transfer.explain_rsync_failure(bad_run) + "; rerun to resume (partial files are kept)"
            )
        if _lost(work, ctx):  # (asked of the host: verification re-sends and decrypts)
            return LEASE_LOST
        # verification: the host hashes what arrived
        for job in work.notes[1]:
            job.result()
        work.notes[0].shutdown()
        expect = self._expected(work)
        bad = self._mismatches(ctx, work.target, expect)
        if bad and work.enc is not None:
            damaged = _damaged_ciphertexts([work.cipher[r[: -len(".age")]] for r in bad])
            if damaged:
                names = ", ".join(r for r in bad if work.cipher[r[: -len(".age")]] in damaged)
                return (
                    f"the cached ciphertext of {names} was damaged on this machine (its sha256 differs"
                    " from when it was made); it was removed: rerun to encrypt and send it again"
                )
        if bad:
            self._unverified(ctx, work.target, bad)  # until the re-send below verifies
            if work.enc is not None:  # the stage holds only this run's files: link the rest
                for rel in bad:
                    link = stage / rel
                    if not link.exists():
                        link.parent.mkdir(parents=True, exist_ok=True)
                        os.link(work.cipher[rel[: -len(".age")]], link)
            listing = cfg_dir / f"{cfg.stem}.files"
            listing.write_bytes(b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in bad))
            resend = transfer.rsync_argv(
                stage,
                work.target,
                cfg,
                alias,
                self.bwlimit,
                files_from=listing,
                ssh_options=work.ssh_opts,
                marker=self._marker(),
            )
            resend.insert(1, "--ignore-times")
            again = transfer.run_rsync(resend, self._progress(ctx))
            if again.exit_code != 0:
                return transfer.explain_rsync_failure(again)
            sent += again.stats.files_transferred
            literal += again.stats.literal_bytes
            still = self._mismatches(ctx, work.target, {r: expect[r] for r in bad})
            self._unverified(ctx, work.target, still)
            moved = [r for r in still if work.enc is None and _changed_since_scan(work.tree, r)]
            if moved:
                return (
                    f"{', '.join(moved[:5])} changed on this machine during the upload (what arrived is"
                    " neither the old nor surely the new content); rerun to send it as it is now"
                )
            if still:
                return f"sha256 mismatch on the host after re-sending: {', '.join(still[:5])}"
        stray = self._temps_left(ctx, work.target, expect)
        if stray:
            return stray
        size = format_bytes(literal, binary=True)
        links = sum(1 for e in work.send if e.kind == "l")  # (rsync's count is of regular files)
        also = f" and {_count(links, 'symlink')}" if links else ""
        landed = work.target if work.enc is not None else work.tree.landing(work.target)
        msg = f"sent {_count(sent, 'file')}{also} ({size} of data) to {ctx.host.name}:{landed}"
        checked = sum(1 for r in expect if (e := work.tree.entries.get(r)) is not None and e.kind == "l")
        also = f" and {_count(checked, 'symlink')}" if checked else ""  # (its target's sha256)
        msg += f"; {_count(len(expect) - checked, 'file')}{also} verified by sha256; estimate was {eta}"
        msg += _resumed_note(work.resumed, "resumed")
        if work.leftovers:
            msg += f"; removed {_leftovers(work.leftovers)}"
        if work.mkdirs and not expect:  # (rsync -a made them; "sent 0 files" said nothing of them)
            msg = f"made {_made(work.mkdirs)} at {ctx.host.name}:{landed}; the dataset has no files to send"
        elif work.mkdirs:
            msg += f"; made {_made(work.mkdirs)}"
        if work.dec_temps:  # (partial plaintext a killed decryption left: never a dataset file)
            problem = self._remove_decrypt_temps(ctx, work)
            if problem:
                return problem
            msg += f"; removed {_count(len(work.dec_temps), 'temp file')} a cut-short decryption left"
        if self.decrypt_on_host and (work.decrypt or sent):
            problem = self._decrypt(ctx, work)
            if problem:
                return problem
            msg += f"; decrypted {len(work.decrypt) or sent} into {work.tree.landing(self.plain_target)}"
        msg += work.kept
        plan.msg = msg
        plan.diff = {**(plan.diff or {}), "sent_files": sent, "literal_bytes": literal}
        return None

    def _shard_producer(
        self, ctx: StepContext, work: Work, i: int, root: Path
    ) -> tuple[Any, str | None, Any, Path | None, Path | None]:
        """-> (produce, codec for the local pipeline, encrypt, temp ciphertext, cached ciphertext)."""
        group = work.groups[i]

        def pack(write: Any) -> shards.Packed:
            return shards.pack(root, group, write)

        if work.enc is None:
            return pack, work.codec, None, None, None
        shard = work.built[i]
        cached = self._cipher_path(ctx, work, shard) if shard is not None else None
        if cached is not None and cached.is_file():

            def copy(write: Any) -> None:
                with cached.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        write(chunk)

            return copy, None, None, None, cached
        enc = work.enc

        def encrypt(source: Any, sink: Any) -> None:
            crypto.encrypt_stream(source, sink, enc)

        return pack, work.codec, encrypt, shardstream.temp_cipher_path(self._cache_dir(ctx)), None

    def _stream_progress(self, ctx: StepContext, total: int, n_shards: int) -> tuple[Any, list[int]]:
        """on_bytes callback: live percent, rate and shard count; applies --bwlimit."""
        mbit = transfer.parse_rate_mbit(self.bwlimit) if self.bwlimit else None
        throttle = shardstream.Throttle(mbit * 1e6 / 8 if mbit else None)
        state = [0, 0, 0, 0]  # bytes, shard index, last report (ms), bytes of this shard
        start = time.monotonic()

        def on_bytes(n: int) -> None:
            throttle(n)
            state[0] += n
            state[3] += n
            now = time.monotonic()
            if ctx.progress and (now - start) * 1000 - state[2] > 200:
                state[2] = int((now - start) * 1000)
                rate = state[0] / max(now - start, 1e-6)
                eta = transfer.format_duration(max(total - state[0], 0) / rate) if rate > 0 else "?"
                ctx.progress(
                    f"step {self.label}: {min(100, 100 * state[0] // max(total, 1))}%"
                    f" {format_bytes(state[0], binary=True)} of {format_bytes(total, binary=True)}"
                    f" {rate * 8 / 1e6:.0f} Mbit/s ETA {eta} shard {state[1] + 1}/{n_shards}"
                )

        return on_bytes, state

    def _apply_shards(self, ctx: StepContext, plan: Plan, work: Work, eta: str) -> Any:
        """Stream each shard to send (pack -> compress [-> encrypt] -> ssh -> host stores it as
        .incoming-*, unpacking on the fly when asked), then one closing command renames the
        verified shards, writes the manifest, unpacks the rest and removes stale shards."""
        root = self._shard_root(work)
        index, hashes = work.index, work.hashes
        assert index is not None and hashes is not None
        unpack_dir = self._unpack_dir() if work.unpack else ""
        encrypted = work.enc is not None
        prefix = shardstream.identity_prefix(work.identity.reveal()) if encrypted and work.unpack else b""
        master = work.master
        assert master is not None
        first, self._first = self._first, None
        progress, state = self._stream_progress(ctx, work.need, len(work.send_idx))
        arrived: list[tuple[str, str, str]] = []
        renamed: list[tuple[str, str, str]] = []  # the last shard: renamed by the closing command
        sent_bytes = 0

        def kept() -> str:
            return f"{len(arrived)} of {len(work.send_idx)} shards arrived, only the rest is sent"

        def resumable(why: str) -> str:
            return f"{why}; rerun to resume ({kept()})"

        opened: list[shardstream.Stream] = [first] if first is not None else []

        def spawn(n: int) -> shardstream.Stream:
            if n == 0 and first is not None and first.ssh.poll() is None:
                return first  # opened ahead, while planning
            stream = self._spawn_stream(master, n)
            opened.append(stream)
            return stream

        nxt: list[shardstream.Stream] = []  # shard n+1's stream, once shard n is under way

        def on_bytes(k: int) -> None:
            progress(k)
            n = state[1]
            # shard n+1's stream (ssh session, host shell) opens once shard n's first piece was
            # handed on: not at the same moment as shard n's, when both compete for the CPU
            if not nxt and n + 1 < len(work.send_idx) and state[3] > 0:
                nxt.append(spawn(n + 1))

        def record(i: int, packed: Any, tmp_cipher: Path | None) -> None:
            """What packing shard i found (file hashes, shard name) is true whether or not the
            upload then succeeds: note it at once (the index and the manifest use it)."""
            if isinstance(packed, shards.Packed):
                _note_packed(work, i, packed, root)

        def settle(
            n: int, stream: shardstream.Stream, tmp_cipher: Path | None, last: bool = False
        ) -> str | None:
            """Wait for shard n's host side, then give it its real name (the last one: in the
            closing command)."""
            nonlocal sent_bytes
            i = work.send_idx[n]
            part = shardstream.part_name(n)
            res = stream.wait()
            if not res.ok or res.remote_sha != res.local_sha:
                if tmp_cipher is not None:
                    tmp_cipher.unlink(missing_ok=True)
                return resumable(_stream_failure(res))
            sent_bytes += res.sent
            done = work.built[i]
            assert done is not None
            if tmp_cipher is not None:
                os.replace(tmp_cipher, self._cipher_path(ctx, work, done))
            final = self._remote_name(work, done)
            if last:
                renamed.append((part, res.local_sha, final))
                arrived.append((part, res.local_sha, final))
                return None
            mv = ctx.runner.run(shardstream.rename_command(work.target, part, res.local_sha, final))
            if not mv.ok:
                return resumable(f"upload failed: {mv.stderr.strip() or 'cannot rename ' + part}")
            arrived.append((part, res.local_sha, final))
            if saving is None and time.monotonic() - saved[0] > CACHE_SAVE_SHARE * saved[1]:
                # what arrived is known after a SIGKILL or a power cut too (the caches were saved
                # only at the end: the rerun then re-sent every shard); between shards, on this
                # thread (it alone changes them), at most 1/CACHE_SAVE_SHARE of the time
                began = time.monotonic()
                save_caches()
                saved[:] = [time.monotonic(), time.monotonic() - began]
            return None

        saved = [time.monotonic(), 0.0]  # when the caches were last saved, how long that took

        def save_caches() -> None:
            # an optimisation only: when this machine's disk is full the upload still counts,
            # and the next run re-reads the files (the previous caches stay whole)
            with contextlib.suppress(OSError):
                index.save({k for k in work.keys if k})
            with contextlib.suppress(OSError):
                hashes.save(work.tree.entries)

        # shard n+1's ssh starts while shard n is fed; shard n is settled (waited for, renamed)
        # once shard n+1's bytes flow, so the link never idles between shards
        pending: tuple[int, shardstream.Stream, Path | None] | None = None
        helpers = ThreadPoolExecutor(max_workers=2)
        manifest_job: Any = None
        saving: Any = None
        if not work.send_idx:
            manifest_job = helpers.submit(self._manifest_bytes, self._cache_dir(ctx), work)
        try:
            header = shardstream.stream_header(work.codec) + prefix
            for n, i in enumerate(work.send_idx):
                if _lost(work):
                    return LEASE_LOST
                state[1], state[3] = n, 0
                cur = nxt.pop() if nxt else spawn(n)
                try:  # (its temp ciphertext is made in the cache: a full or read-only one fails here)
                    produce, codec, encrypt, tmp_cipher, _cached = self._shard_producer(ctx, work, i, root)
                except OSError as exc:
                    what = f"the encrypted copy of shard {n + 1}"
                    return local_write_failure(exc, what, self._cache_dir(ctx), kept())
                try:
                    packed = cur.feed(produce, codec, header, encrypt, tmp_cipher, on_bytes)
                except (OSError, crypto.CryptoError) as exc:
                    if tmp_cipher is not None:
                        tmp_cipher.unlink(missing_ok=True)
                    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
                        what = f"the encrypted copy of shard {n + 1}"
                        return local_write_failure(exc, what, self._cache_dir(ctx), kept())
                    unreadable = unreadable_source(exc, root, kept())
                    return unreadable or resumable(f"packing or encrypting shard {n + 1} failed: {exc}")
                record(i, packed, tmp_cipher)
                if n == len(work.send_idx) - 1:  # every shard is known now: the manifest is built
                    # and the caches saved while the last shard drains (the Python work holds the
                    # GIL; done later, it delayed the closing command's channel by ~0.1 s)
                    manifest_job = helpers.submit(self._manifest_bytes, self._cache_dir(ctx), work)
                    saving = helpers.submit(save_caches)
                if pending is not None:
                    problem = settle(*pending)
                    if problem:
                        return problem
                pending = (n, cur, tmp_cipher)
            if pending is not None:
                problem = settle(*pending, last=True)
                if problem:
                    return problem
        finally:
            for st in opened:
                st.close()
            if saving is None:
                saving = helpers.submit(save_caches)
        if _lost(work):  # (the host is asked too: by the closing command, before it changes anything)
            return LEASE_LOST
        try:
            return self._finish_shards(
                ctx, plan, work, eta, unpack_dir, prefix, arrived, sent_bytes, manifest_job, renamed
            )
        finally:
            saving.result()
            helpers.shutdown()

    def _manifest_bytes(self, cache: Path, work: Work) -> tuple[str, bytes]:
        """The manifest's sha256 and the gzip form of what the host keeps (see _stored_manifest)."""
        manifest = work.manifest or self._manifest(work, work.shard_size)
        digest = hashlib.sha256(manifest).hexdigest()
        stored = self._stored_manifest(cache, work, manifest, digest)
        return digest, gzip.compress(stored, compresslevel=1, mtime=0)

    @staticmethod
    def _manifest_cipher(cache: Path, work: Work, digest: str) -> Path:
        """Where the ciphertext of the manifest of sha256 `digest` is cached (encrypted mode)."""
        assert work.enc is not None
        return cache / f"{work.enc.cache_key('manifest:' + digest)}.age"

    def _stored_manifest(self, cache: Path, work: Work, manifest: bytes, digest: str) -> bytes:
        """What the host's manifest.json holds: the manifest, or in encrypted mode its age
        ciphertext to the same recipients (the paths, sizes and link targets of the dataset are
        no less private than the contents), made once and cached, so an unchanged manifest has
        one stable ciphertext and a rerun finds it on the host as it is."""
        if work.enc is None:
            return manifest
        path = self._manifest_cipher(cache, work, digest)
        if not path.is_file():
            crypto.encrypt_file(manifest, path, work.enc)
        return path.read_bytes()

    def _stored_digest(self, ctx: StepContext, work: Work, digest: str) -> str:
        """sha256 of what the host's manifest.json holds when it is the manifest of sha256
        `digest` ('' when that is not known here: an encrypted manifest whose ciphertext this
        machine has not cached)."""
        if work.enc is None:
            return digest
        path = self._manifest_cipher(self._cache_dir(ctx), work, digest)
        return crypto.sha256_file(path) if path.is_file() else ""

    def _finish_shards(
        self,
        ctx: StepContext,
        plan: Plan,
        work: Work,
        eta: str,
        unpack_dir: str,
        prefix: bytes,
        arrived: list[tuple[str, str, str]],
        sent_bytes: int,
        manifest_job: Any,
        last: Sequence[tuple[str, str, str]] = (),
    ) -> Any:
        """The closing command: manifest, unpack of shards already there, stale removal, swap."""
        encrypted = work.enc is not None
        try:
            digest, packed_manifest = manifest_job.result()
        except OSError as exc:  # its ciphertext, made in the cache (full, or not writable)
            whole = len(arrived) - len(last)  # (the last one gets its name from the closing command)
            kept = f"{whole} of {len(work.send_idx)} shards arrived, only the rest is sent"
            return local_write_failure(exc, "the encrypted manifest", self._cache_dir(ctx), kept)
        marker = shards.marker_name(digest, self.plain_target)
        names = [self._remote_name(work, s) for s in work.built if s is not None]
        streamed = {final for _, _, final in arrived}
        extract = [
            (self._remote_name(work, sh), "-" if encrypted else sh.sha256)
            for sh in work.built
            if sh is not None and self._remote_name(work, sh) not in streamed
        ]
        stale = [nm for nm in work.stale if nm not in names]
        lists = shardstream.finish_lists(extract if work.unpack else [], stale)
        end = last[0] if last else None
        held = (work.lease.path, work.lease.token) if work.lease else ("", "")
        closing = shardstream.finish_command(
            work.target, unpack_dir, self.plain_target, encrypted, work.codec, marker, end, held, work.drop
        )
        if work.on_interrupt is not None:  # (from here on the host's closing work holds the lease)
            children.done(work.on_interrupt)
            work.on_interrupt = None
        try:
            r = ctx.runner.run(closing, stdin=prefix + lists + packed_manifest, timeout=3600)
        except BaseException:
            # cut off while the host unpacks and swaps: that goes on without us, so the lease
            # stays (the host keeps it fresh until done) instead of admitting another upload
            work.lease = None
            raise
        if r.exit_code == shardstream.LEASE_TAKEN_EXIT:
            work.lease = None  # (another run's now: never released by this one)
            return LEASE_LOST
        if not r.ok:
            lines = [x.strip() for x in r.stderr.strip().splitlines() if x.strip()]
            why = (lines or [f"exit code {r.exit_code}"])[-1]
            full = transfer.disk_full_line(lines)
            if full:  # tar's last line would only say "Exiting with failure status"
                # (tar writes the unpacked tree: with --decrypt-to, on that disk, not the data dir's)
                untar = full.startswith("tar:") and bool(self.decrypt_dir) and work.unpack
                where = posixpath.dirname(self.plain_target) if untar else self.dest
                return (
                    f"finishing the upload on the host failed: the remote disk is full ({full}); free"
                    f" space under {_shown(where)}, then rerun: the {_count(len(work.groups), 'shard')}"
                    f" there {'is' if len(work.groups) == 1 else 'are'} kept"
                )
            if "damaged" in why or r.exit_code == 5:
                return why
            hint = " (wrong identity, or a tampered or truncated shard)" if "age:" in why else ""
            if "sha256 mismatch" in why:
                hint = "; rerun to re-send it"
            return f"finishing the upload on the host failed: {why}{hint}"
        data = format_bytes(sent_bytes, binary=True)
        msg = (
            f"sent {len(arrived)} of {len(work.groups)} shards ({data} of data)"
            f" to {ctx.host.name}:{work.target}; {_count(len(arrived), 'shard')} verified by sha256"
            f" ({work.codec} stream); estimate was {eta}"
        )
        if not arrived:  # only the manifest, leftovers or the unpacked tree were behind
            done = ["manifest updated"] if work.manifest_behind else []
            if stale:
                done.append(f"{_count(len(stale), 'old or partial shard')} removed")
            msg = f"all {len(work.groups)} shards were at {ctx.host.name}:{work.target} already; nothing sent"
            msg += "".join(f"; {d}" for d in done)
        if work.unpack:
            msg += f"; unpacked into {self.plain_target}{work.redo}"
        plan.msg = msg + work.kept
        plan.diff = {
            **(plan.diff or {}),
            "sent_files": len(arrived) + 1,
            "sent_shards": len(arrived),
            "literal_bytes": sent_bytes,
        }
        return None

    def _expected(self, work: Work) -> dict[str, str]:
        if work.enc is None:
            return {e.rel: e.sha256 for e in work.tree.entries.values()}
        return {e.rel + ".age": crypto.ciphertext_sha256(work.cipher[e.rel]) for e in work.tree.files}

    def _mismatches(self, ctx: StepContext, target: str, expect: Mapping[str, str]) -> list[str]:
        rels = list(expect)
        r = ctx.runner.run(transfer.hash_command(target), stdin=transfer.hash_stdin(rels), timeout=3600)
        got = transfer.parse_hashes(rels, r.stdout)
        return [rel for rel in rels if got.get(rel) != expect[rel]]

    @staticmethod
    def _temps_left(ctx: StepContext, target: str, files: Iterable[str]) -> str | None:
        """The failure sentence when rsync temp files of the dataset's files are in the target
        after the upload (this run stopped earlier runs' receivers and kept or removed their temp
        files first, and its own rsync leaves none): another process writes there, which a later
        run's "up to date" would never mention."""
        r = ctx.runner.run(transfer.temps_command(target))
        left = transfer.parse_temps(r.stdout, files) if r.ok else []
        if not left:
            return None
        return (
            f"the upload arrived verified, but {_count(len(left), 'rsync temp file')} not of this run"
            f" {'is' if len(left) == 1 else 'are'} in {ctx.host.name}:{_shown(target)} (e.g."
            f" {_shown(left[0])!r}): another rsync is writing there (or was killed there); stop it,"
            " then rerun (a rerun removes what it left)"
        )

    def _unmark_unpacked(self, ctx: StepContext) -> None:
        """Plain mode writes into the tree an --unpack made: the shards dir's "unpacked"
        markers no longer describe it (a same-size edit would pass the listing check), so a
        later --unpack run checks and unpacks again. Best effort."""
        if self.shards is False:
            return
        if any(n.startswith(shards.MARKER_PREFIX) for n in self._listing(ctx, self.shards_target).files):
            with contextlib.suppress(Exception):
                ctx.runner.run(shell.join(["sh", "-c", UNMARK_SCRIPT, "sh", self.shards_target]))

    @staticmethod
    def _unverified(ctx: StepContext, target: str, rels: Sequence[str]) -> None:
        """Files whose host sha256 differs: mtime to the epoch, so that the next run's quick
        check re-sends them (size and whole-second mtime can match a torn copy: a file written
        to during the upload). Best effort: the run fails anyway."""
        if rels:
            with contextlib.suppress(Exception):
                ctx.runner.run(transfer.unverified_command(target), stdin=transfer.hash_stdin(rels))

    def _decrypt(self, ctx: StepContext, work: Work) -> str | None:
        """Decrypt on the host: identity on stdin (kept in a shell variable, never a file),
        each file into a temp name, renamed only when age succeeded; mtime set like the source.
        In batches of at most DECRYPT_BATCH bytes of arguments (a command line's one argument
        holds 128 KiB: a few hundred files)."""
        todo = work.decrypt or work.tree.files
        batch: list[str] = []
        size = 0
        for k, e in enumerate(todo):
            cipher = posixpath.join(work.target, e.rel + ".age")
            one = [cipher, posixpath.join(self.plain_target, e.rel), str(e.mtime), _perms(work.tree, e.rel)]
            batch += one
            size += sum(len(shell.quote(a).encode("utf-8", "surrogateescape")) + 1 for a in one)
            if size < DECRYPT_BATCH and k + 1 < len(todo):
                continue
            r = ctx.runner.run(
                shell.join(["sh", "-c", DECRYPT_SCRIPT, "sh", self.plain_target, *batch]),
                # the key lines alone, stripped (age refuses an indented or commented-out one)
                stdin="".join(k + "\n" for k in crypto.identity_keys(work.identity.reveal())).encode(),
                timeout=3600,
            )
            batch, size = [], 0
            if not r.ok:
                last = last_line(r.stderr, r.exit_code)
                if r.exit_code == 4:  # the way to a file (see DECRYPT_SCRIPT), not the decryption
                    return f"cannot put the decrypted files in place on the host: {last}"
                if r.exit_code > 128 or r.exit_code == DECRYPT_KILLED:  # no key or data fault
                    return _decrypt_killed(r.exit_code, last)
                full = transfer.disk_full_line(r.stderr.splitlines())
                if full:  # (the plan checked the room: another writer took it meanwhile)
                    return (
                        f"the plaintext's disk on the host is full ({full.strip()}): free space under"
                        f" {_shown(posixpath.dirname(self.plain_target))} there, then rerun (the ciphertexts"
                        " are on the host: nothing is sent again)"
                    )
                why = "wrong identity, or tampered/truncated ciphertext"
                return f"decryption on the host failed ({why}): {last}"
        plain = {e.rel: work.tree.entries[e.rel].sha256 for e in todo}  # hashed while encrypting
        bad = self._mismatches(ctx, self.plain_target, plain)
        if bad:  # (their size and mtime are the source's: without this the rerun said "up to date")
            self._unverified(ctx, self.plain_target, bad)
            return f"decrypted files differ from the source: {', '.join(bad[:5])}"
        return None

    def _remove_decrypt_temps(self, ctx: StepContext, work: Work) -> str | None:
        """Remove the temp files (partial plaintext) of a decryption cut short on the host (its
        command killed: an OOM kill, a reboot), which no later run would otherwise touch; paths
        on stdin, NUL-terminated (any byte but NUL in a name)."""
        r = ctx.runner.run(
            shell.join(["sh", "-c", REMOVE_TEMPS_SCRIPT, "sh", self.plain_target]),
            stdin=b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in work.dec_temps),
        )
        if not r.ok:
            last = last_line(r.stderr, r.exit_code)
            return f"cannot remove the temp files a cut-short decryption left on the host: {last}"
        return None

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """apply returns the problem sentence, or None when everything arrived verified."""
        return applied if isinstance(applied, str) else None


class LocalWriteError(Exception):
    """This machine could not write what the upload needed (its message is the step's)."""


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
NOTHING_SENT = "nothing was sent"
# (plain encrypted mode sends each file's ciphertext: a directory with no file in it has none)
_ONLY_EMPTY_DIRS = (
    "holds only empty directories, which plain encrypted mode does not upload (--shards carries them)"
)
MAX_NAME = 214  # bytes of the copy's name: its unpack dir, `.<name>.gpuonboard-unpack-<8>-<12>`, holds 255
UNMARK_SCRIPT = 'cd -- "$1" 2>/dev/null && rm -f -- unpacked-*'
# $1 the plaintext dir, then (ciphertext, plaintext path, mtime, mode) per file; the identity on
# stdin (the mode is the local file's, as rsync -a keeps it: a temp file is made 0600).
# Each file's way is made of real dirs: a symlink or file an earlier upload left on it is
# replaced (as rsync replaces them), so nothing is ever written through a symlink (outside the
# data dir); a directory where the dataset now has a file is refused (exit 4, one line).
DECRYPT_SCRIPT = shardstream.AGE_ERROR_FN + "\n" + sh.load("dataset_decrypt")
DECRYPT_KILLED = 5  # DECRYPT_SCRIPT's exit status when age was killed by a signal
DECRYPT_TEMP = re.compile(r"\.gpuonboard-dec\.[A-Za-z0-9]{8}(\.err)?")  # DECRYPT_SCRIPT's mktemp names
# $1 the plaintext dir; stdin: NUL-terminated paths in it of DECRYPT_SCRIPT's temp files
REMOVE_TEMPS_SCRIPT = 'cd -- "$1" 2>/dev/null || exit 0; xargs -0 -r rm -f --'


def _decrypt_temp(rel: str) -> bool:
    """Pure: rel is a temp file of DECRYPT_SCRIPT (a decryption into it was cut short)."""
    return DECRYPT_TEMP.fullmatch(posixpath.basename(rel)) is not None


def _decrypt_killed(status: int, last: str) -> str:
    """Pure: the sentence for a decryption on the host stopped by a signal (its command, or age
    in it): not a wrong identity or a damaged file; what was decrypted stays, the rerun goes on."""
    why = last if status == DECRYPT_KILLED else f"its command ended with status {status}"
    return (
        f"the decryption on the host was stopped by a signal ({why}: the host's OOM killer, a"
        " reboot or a kill), not by a wrong key or a damaged file; rerun to decrypt the rest"
        " (what arrived is not sent again)"
    )


DECRYPT_BATCH = 64 * 1024  # bytes of quoted paths per decryption command (one argument: <= 128 KiB)
CACHE_SAVE_SHARE = 20  # shard mode saves its caches while uploading, at most 1/20 of the time
LOCAL_KEPT = "what already arrived is not sent again"  # (plain mode: rsync keeps what arrived)
# errors reading a dataset file that a rerun alone would meet again
UNREADABLE = (errno.EACCES, errno.EPERM, errno.EISDIR)


def local_write_failure(exc: OSError, what: str, where: Path, kept: str = LOCAL_KEPT) -> str:
    """Pure: the sentence for a local write that failed (a full disk is the usual one)."""
    if exc.errno in DISK_FULL:
        return (
            f"no space left on this machine for {what} under {where}; free space there (or set"
            f" the step's cache_dir to a bigger disk), then rerun: {kept}"
        )
    return f"cannot write {what} under {where}: {exc.strerror or exc}; fix that, then rerun: {kept}"


def unreadable_source(
    exc: Exception, root: Path, kept: str, errnos: Sequence[int] | None = UNREADABLE
) -> str | None:
    """Pure: the sentence for a dataset file (under root, or root itself) this process could not
    read, with one of `errnos` (None: any); else None. By default only errors a rerun alone would
    meet again: a file that vanished meanwhile is left to the caller (the rerun's scan no longer
    lists it)."""
    if not isinstance(exc, OSError) or exc.filename is None:
        return None
    if errnos is not None and exc.errno not in errnos:
        return None
    path = Path(os.fsdecode(exc.filename))
    base = root if root.is_dir() else root.parent
    if not path.is_relative_to(base):
        return None
    rel = path.relative_to(base).as_posix()
    return (
        f"cannot read {rel} in the dataset on this machine: {exc.strerror};"
        f" fix it (or move it out), then rerun: {kept}"
    )


def _discard(data: bytes) -> None:
    """A write that keeps nothing (packing only to learn a shard's hashes)."""


def _note_packed(work: Work, i: int, packed: shards.Packed, root: Path) -> None:
    """Note what packing group i found (its files' hashes, the shard's name and member key) in
    the work, the hash cache and the shard index."""
    assert work.index is not None and work.hashes is not None
    files = packed.files
    group = [dataclasses.replace(e, sha256=files.get(e.rel, e.sha256)) for e in work.groups[i]]
    work.groups[i] = group
    for e in group:
        work.hashes.put(e, e.sha256)
    made = shards.Shard(packed.name, packed.sha256, packed.size)
    work.built[i] = made
    work.keys[i] = shards.member_key(root, group, packed.modes)
    work.index.put(work.keys[i], made)


def _unreadable(exc: OSError, root: Path, kept: str) -> str:
    """The sentence for any error reading the dataset (a file or directory in it, or itself)."""
    return unreadable_source(exc, root, kept, errnos=None) or (
        f"cannot read the dataset {root} on this machine: {exc.strerror or exc}; fix it, then rerun: {kept}"
    )


def _changed_while_encrypting(rel: str) -> str:
    """Pure: the sentence for a dataset file written to while it was being encrypted."""
    return (
        f"{_shown(rel)} changed on this machine while it was being encrypted (its ciphertext would"
        f" be part old, part new, so it was not sent); rerun to send it as it is now: {LOCAL_KEPT}"
    )


def _perms(tree: transfer.SourceTree, rel: str) -> str:
    """The local file's permission bits in octal, for its plaintext on the host (644 when gone)."""
    try:
        return f"{os.lstat(tree.path(rel)).st_mode & 0o777:o}"
    except OSError:
        return "644"


def _changed_since_scan(tree: transfer.SourceTree, rel: str) -> bool:
    """Whether a dataset file's size or mtime is not what the scan saw (written to meanwhile)."""
    e = tree.entries.get(rel)
    try:
        st = os.lstat(tree.path(rel))
    except OSError:
        return True
    return e is None or (st.st_size, st.st_mtime_ns) != (e.size, e.mtime_ns)


LEASE_LOST = (
    "another run took over this upload's lease on the host while this one was not heard from for"
    f" over {uploadlock.STALE_S} s (a suspended machine, or a stalled link); stopped before changing"
    " more there: rerun once that one has finished"
)


def _lost(work: Work, ctx: StepContext | None = None) -> bool:
    """Whether the host's lease was taken over: the heartbeat's last word, or (with ctx) the
    host's own answer now (one refresh: exit 1 when the token there is not ours)."""
    if work.beat is not None and work.beat.lost:
        return True
    if ctx is None or work.lease is None:
        return False
    return ctx.runner.run(uploadlock.touch_command(work.lease)).exit_code == 1


def _ours(name: str) -> bool:
    """A name gpuonboard gives its own files beside (or in) a copy on the host."""
    return (
        name in (uploadlock.COPY_MARK, transfer.PARTIAL_DIR)
        or name.endswith(".gpuonboard-upload")
        or ".gpuonboard-unpack-" in name
    )


def _shown(path: str) -> str:
    """A path as one line of a sentence: as it is when printable, else with its line breaks,
    control characters and undecodable bytes escaped as Python writes them."""
    return path if path.isprintable() else repr(path)[1:-1]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _empty_dirs(n: int) -> str:
    """Pure: '1 empty directory', '3 empty directories'."""
    return f"{n} empty {'directory' if n == 1 else 'directories'}"


def _made(dirs: Sequence[str]) -> str:
    """Pure: the message's count of empty directories made on the host, with one example."""
    return f"{_empty_dirs(len(dirs))} (e.g. {dirs[0]!r})"


def _kept_on_host(host: Mapping[str, tuple[str, int, int]], local: set[str], where: str = "") -> str:
    """Pure: the message's note on files in the host's copy (or in `where`, the plaintext dir)
    that the dataset does not have (deleted here since, or written there): plain mode keeps them,
    as rsync without --delete; said, so that "up to date" never hides them."""
    extra = [rel for rel, (kind, _, _) in host.items() if rel not in local and kind in ("f", "l")]
    if extra:  # a path that is a directory in the dataset now: rsync replaces it, not kept
        dirs = _parent_dirs(local)
        extra = sorted(rel for rel in extra if rel not in dirs and not _rsync_temp(rel, local))
    if not extra:
        return ""
    verb = "is" if len(extra) == 1 else "are"
    files = _count(len(extra), "file")
    place = f"in {where} on the host" if where else "on the host"
    return f"; {files} {place} {verb} not in the dataset and kept there (e.g. {extra[0]!r})"


def _rsync_temp(rel: str, local: set[str]) -> bool:
    """Pure: rel is rsync's temp name `.<file>.XXXXXX` beside a dataset file (a killed rsync's,
    or one still writing): not a file of the user's to report as kept (the plan resumes from it
    or removes it, and says so)."""
    return transfer.rsync_temp_of(rel) in local


def _interrupted(
    remote: transfer.RemoteState, names: set[str], sending: set[str]
) -> tuple[list[str], list[str], dict[str, int], int]:
    """Pure: what interrupted uploads left in the target for the files rsync writes there
    (`names`; `sending`: those this run sends): (rsync temp files of files to send, resumed from
    as partial files; temp files of the others, and partial files of any file not sent, removed;
    the bytes each file to send resumes from, its biggest partial or temp file; the bytes of the
    rest, which go). A dropped link's receiver kept its temp file, not a partial one: this run
    stops it, then resumes from its temp file (the rerun re-sent the whole file)."""
    resume: list[str] = []
    remove: list[str] = []
    sizes: dict[str, list[int]] = {}
    for rel, (kind, size, _) in remote.files.items():
        of = transfer.rsync_temp_of(rel) if kind == "f" else None
        if of is None or of not in names or rel in names:  # (no dataset file's: said as kept, left)
            continue
        (resume if of in sending else remove).append(rel)
        sizes.setdefault(of, []).append(size)
    for of, size in remote.partials.items():
        if of in sending:
            sizes.setdefault(of, []).append(size)
        else:
            remove.append(posixpath.join(posixpath.dirname(of), transfer.PARTIAL_DIR, posixpath.basename(of)))
            sizes.setdefault(of, []).append(size)
    basis = {of: max(got) for of, got in sizes.items() if of in sending}
    freed = sum(sum(got) for got in sizes.values()) - sum(basis.values())
    return sorted(resume), sorted(remove), basis, freed


def _room(files: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Pure: (the most an upload adds to the host's disk at any moment, what it adds in the end)
    for files that arrive one after another, each as a whole temp file beside what it replaces
    (its old version, the partial file it resumes from), which goes once it is in place;
    `files` = (bytes it arrives with, bytes it frees then), in rsync's order."""
    peak = grown = 0
    for size, frees in files:
        peak = max(peak, grown + size)
        grown += size - frees
    return max(peak, grown), grown


def _old_size(have: tuple[str, int, int] | None) -> int:
    """Pure: the bytes of the regular file a file sent replaces (0: none there)."""
    return have[1] if have is not None and have[0] == "f" else 0


def _stopped_note(stopped: uploadlock.Stopped) -> str:
    """Pure: the message's note on what the lease found of earlier runs of this copy."""
    note = ""
    if stopped.processes:
        note += (
            f"; stopped {_count(stopped.processes, 'transfer')} an earlier upload of this copy left"
            " running on the host (its link dropped)"
        )
    return note


def _resumed_note(resumed: tuple[int, int], verb: str) -> str:
    """Pure: the message's note on the partial files (or a dropped link's temp files) an upload
    resumes from: ("resume"|"resumed", files and bytes)."""
    n, size = resumed
    if not n:
        return ""
    return (
        f"; {verb} from {_count(n, 'partial file')} an interrupted upload left"
        f" ({format_bytes(size, binary=True)} already there)"
    )


def _leftovers(rels: Sequence[str]) -> str:
    """Pure: the message's note on the temp and partial files interrupted uploads left."""
    return (
        f"{_count(len(rels), 'temp or partial file')} an interrupted upload left (e.g. {_shown(rels[0])!r})"
    )


def _dir_members(empty_dirs: Iterable[str]) -> list[transfer.Entry]:
    """Pure: the dataset's empty directories as shard members (a directory with something in it
    is a header before its first member), so an unpacked tree has them too."""
    return [transfer.Entry(rel, "d", 0, 0, "") for rel in sorted(empty_dirs)]


def _one_spelling(path: str) -> str:
    """Pure: an absolute path without repeated slashes, `.` parts or a trailing slash ('' stays
    ''); `..` is refused before this."""
    return posixpath.normpath("/" + path.lstrip("/")) if path else ""


def _parent_dirs(paths: Iterable[str]) -> set[str]:
    """Pure: every directory the '/'-separated relative paths imply ('a/b/c' -> 'a', 'a/b')."""
    out: set[str] = set()
    for rel in paths:
        i = rel.find("/")
        while i != -1:
            out.add(rel[:i])
            i = rel.find("/", i + 1)
    return out


def _stream_failure(res: shardstream.StreamResult) -> str:
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


def _damaged_ciphertexts(paths: list[Path]) -> set[Path]:
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


def _known_hashes(tree: transfer.SourceTree, hashes: shards.HashCache) -> shards.HashCache:
    """Fill in the sha256 of each file the hash cache still vouches for (same size, mtime and
    inode); the others keep "" for a later pass. Returns the cache."""
    for rel, e in list(tree.entries.items()):
        if e.kind == "f" and not e.sha256:
            known = hashes.get(e)
            if known:
                tree.entries[rel] = dataclasses.replace(e, sha256=known)
    return hashes
