"""What a dataset plan hands its apply (`Work`: the scan, what to send, the settings it
loaded, and what apply holds while it runs) and the shape of an open OpenSSH master."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard import transfer
from gpuonboard.transfer import crypto, hashcache, scanstore, shards, shardstream, uploadlock

# an open OpenSSH master connection: (its config file, the host's alias in it, the private
# dir of its control socket, the ssh options that use it)
Master = tuple[Path, str, Path, list[str]]


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
    # each shard's members (scanstore.Group: a range of the scan's members, made when iterated)
    groups: list[Sequence[transfer.Entry]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    built: list[shards.Shard | None] = field(default_factory=list)
    send_idx: list[int] = field(default_factory=list)  # groups to (build and) send
    remote_names: list[str] = field(default_factory=list)
    # unpack: groups not sent whose files the host's current tree holds (hard-linked from it)
    reuse: list[int] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # names in <dest>/<name>.shards to remove
    # shard mode: partials interrupted streams left of the shards to send (temp name -> bytes): resumed
    partials: dict[str, int] = field(default_factory=dict)
    # loaded once by plan, updated and saved by apply
    index: shards.Index | None = None
    hashes: hashcache.HashCache | None = None
    unpack: bool = False
    need: int = 0
    shard_size: int = 0
    codec: str = "gzip"  # shard streams: zstd when both ends have it
    manifest_behind: bool = False  # shard mode: the host's manifest is not this run's
    mkdirs: list[str] = field(default_factory=list)  # plain mode: empty dirs the host lacks
    redo: str = ""  # unpack: the plan's note on why an unpacked tree is unpacked again
    drop: str = ""  # unpack: digest of the host tree's files the swap drops (shardstream.dropped_digest)
    # unpack: the whole-second mtime (this run's start) the closing command gives the files it
    # unpacked, as the host's list of what uploads wrote there records them (uploadlock.WRITTEN_DIR)
    stamp: int = 0
    listed: list[str] = field(default_factory=list)  # the trees whose list of what uploads wrote it added to
    keep_shards: bool = True  # shard mode: the shards stay on the host (False: --unpack without keep_shards)
    room: tuple[int, int] = (0, 0)  # plain mode: bytes the host's disk needs at the peak, and in the end
    room_note: str = ""  # shard mode: the preflight's sentence on the host space needed
    master: Master | None = None  # opened while planning
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
    # plain and encrypted mode: files the host hashed while they arrived (rel in the target ->
    # its sha256 there; transfer/follow.py)
    followed: dict[str, str] = field(default_factory=dict)
    # `sync --verify`: files already on the host whose sha256 differs (sent again, mtime moved first)
    reverify: list[str] = field(default_factory=list)
    # `sync --verify --decrypt-on-host`: the note on the plaintext re-hashed there ('' when not)
    plain_verified: str = ""
    parts: dict[int, str] = field(default_factory=dict)  # shard mode: group -> its temp name (part)

    def ssh_argv(self, cfg: Path, alias: str) -> list[str]:
        """`ssh` over the upload's master connection (a command follows)."""
        return ["ssh", "-F", str(cfg), *self.ssh_opts, alias]

    def part(self, i: int) -> str:
        """Group i's temp name on the host (where a cut-off stream of it left its partial),
        made once from the group's paths as the scan stores them (no Entry made)."""
        part = self.parts.get(i)
        if part is None:
            part = self.parts[i] = shardstream.part_of(raw for raw, _ in scanstore.raw_sizes(self.groups[i]))
        return part
