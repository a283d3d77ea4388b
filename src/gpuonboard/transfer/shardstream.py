"""Shard mode's transport: each shard is packed, compressed and sent as ONE stream.

    pack (this process) -> zstd -1 | gzip -1 (local process) -> ssh (the run's OpenSSH master)
        -> host: decompress | tee <shard>.fifo <.incoming-shard> | tar -x into the unpack dir

Nothing waits for anything else: the first byte leaves while the first file is read, the host
unpacks while it receives (with `unpack`), and the host's sha256 of what arrived is computed
by `openssl dgst -sha256` (else `sha256sum`) reading a fifo that tee feeds. Compression only
removes the tar headers' overhead (a 4 KiB file carries a 512-byte header: 12.5 %); random
payload passes through zstd at GB/s. Encrypted shards are age(compressed tar): compress first
(ciphertext does not compress), encrypt in this process with pyrage, and cache the ciphertext
so a rerun or a resend never re-encrypts; with decrypt-on-host the key lines go first on the
stream's stdin and reach `age -i` through a fifo (never a file on the host's disk).

A shard arrives as `.incoming-<n>` and gets its real name (RENAME_SCRIPT, right after it
arrived) only when its sha256 on the host equals the local one; a dropped link leaves no
complete-looking shard, and the rerun re-sends at most the shard that was in flight.
FINISH_SCRIPT runs once at the end (one round trip): writes the manifest, extracts shards that
were already on the host (unpack), removes stale shards and swaps the unpacked tree into place.

Remote texts are constants; every value travels as a positional argument through
`gpuonboard.shell`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gpuonboard import children, sh, shell
from gpuonboard.transfer import HASH_SCRIPT, LISTING_PRUNE, SHA256_FN, crypto

INCOMING = ".incoming-"
CODECS = ("zstd", "gzip")
ENCRYPTED_SUFFIX = {"zstd": ".tar.zst.age", "gzip": ".tar.gz.age"}


def compressor_argv(codec: str) -> list[str]:
    """Local compressor: fast level, no name/time in the header (gzip -n)."""
    # (zstd --fast=3 framed 50,000 tar headers of incompressible files in 0.6 MB instead of
    # 1.2 MB, but compresses text-like data worse than -1: on a slow link that costs far more)
    return ["zstd", "-1", "-q", "-c"] if codec == "zstd" else ["gzip", "-1", "-n", "-c"]


def pick_codec(remote_has_zstd: bool, local_has_zstd: bool | None = None) -> str:
    """zstd when both ends have it (about 30x faster than gzip on incompressible data), else gzip."""
    if local_has_zstd is None:
        local_has_zstd = shutil.which("zstd") is not None
    return "zstd" if remote_has_zstd and local_has_zstd else "gzip"


# shell functions both host scripts use: `sha` (transfer.SHA256_FN); `agerr FILE`, age's own
# error line (not its "report" URL); `read_key`, the key lines identity_prefix() put first on
# stdin, into $key (a shell variable: never a file or an argument)
AGE_ERROR_FN = r"""agerr() { grep -v -e 'filippo.io/age/report' -e '^[[:space:]]*$' "$1" | tail -n 1; }"""
_PRELUDE = SHA256_FN + "\n" + AGE_ERROR_FN + "\n" + sh.load("shard_read_key")

RECEIVE_SCRIPT = _PRELUDE + sh.load("shard_receive")

FINISH_SCRIPT = _PRELUDE + sh.load("shard_finish").replace("__LISTING_PRUNE__", LISTING_PRUNE)


RENAME_SCRIPT = r"""cd -- "$1" || exit 1
got=; [ -f "$2.sum" ] && got=$(cut -c1-64 < "$2.sum")
rm -f -- "$2.sum"
if [ "$got" = "$3" ] && [ -f "$2" ]; then exec mv -f -T -- "$2" "$4"; fi
rm -f -- "$2"; echo "sha256 mismatch on the host for $4" >&2; exit 3
"""


def rename_command(target: str, part: str, sha: str, final: str) -> str:
    """Give an arrived shard its real name once the host's sha256 equals `sha` (right after
    each shard, so an interrupted run keeps every shard that arrived whole)."""
    return shell.join(["sh", "-c", RENAME_SCRIPT, "sh", target, part, sha, final])


# --unpack without keep_shards, once the tree is verified: the shards named on stdin (one per
# line: shard names are hex), and whatever interrupted attempts left (.incoming-* parts, their
# sums and fifos); the manifests and the unpack's marker stay
DROP_SCRIPT = r"""cd -- "$1" || exit 1
while IFS= read -r n; do [ -n "$n" ] && rm -f -- "$n"; done
rm -f -- .incoming-* .finish.x .finish.r .manifest.tmp .key.fifo .age.err .age.fail
"""


def drop_command(target: str) -> str:
    """Remove the shards (names: drop_stdin) and an interrupted attempt's leftovers from the store."""
    return shell.join(["sh", "-c", DROP_SCRIPT, "sh", target])


def drop_stdin(names: Sequence[str]) -> bytes:
    """drop_command's stdin: the shard names, one per line."""
    assert all("\n" not in n for n in names), "shard names are hex"
    return "".join(n + "\n" for n in names).encode()


# --unpack, before the streams: the files of shards not sent this time (unchanged since the tree
# on the host was unpacked, and not kept as shards there) are taken from that tree: hard-linked
# ($2/<rel> -> $1/<rel>; copied where a link cannot be made, e.g. another file system), then
# each is hashed in the new tree and printed as HASH_SCRIPT ($3) prints it; the caller compares
# with the dataset's sha256s, and removes (SEED_DROP_SCRIPT) what differs before it sends that
# file's shard. Paths on stdin, NUL-terminated: kept beside the unpack dir (never in the store:
# they are plaintext), swept with it by any later run. This copy's unpack dirs of interrupted
# runs go first (hard links cost no room, but copies do).
SEED_SCRIPT = r"""u=$1; p=$2
for d in "${u%-*}"-*; do [ "$d" = "$u" ] || [ "$d" = "$u.seed" ] || rm -rf -- "$d"; done
mkdir -p -- "$u" && cat > "$u.seed" || exit 1
if cd -- "$p" 2>/dev/null; then
  xargs -0 -r cp -l -P --parents -t "$u" -- < "$u.seed" 2>/dev/null
  xargs -0 -r sh -c 'u=$0; for f; do [ -e "$u/$f" ] || [ -L "$u/$f" ] || printf "%s\0" "$f"; done' "$u" \
    < "$u.seed" | xargs -0 -r cp -p -P --parents -t "$u" -- 2>/dev/null
fi
sh -c "$3" sh "$u" < "$u.seed"; s=$?
rm -f -- "$u.seed"; exit "$s"
"""

# the files of the new tree (paths on stdin, NUL-terminated) that a seed put there and the
# shard they belong to is sent after all: removed (a link only: the current tree keeps them)
SEED_DROP_SCRIPT = 'cd -- "$1" && xargs -0 -r rm -f --'


def seed_command(unpack_dir: str, plain_target: str) -> str:
    """Fill the unpack dir from the current tree (paths: seed_stdin); prints their hashes
    (transfer.parse_hashes reads them) as the new tree holds them."""
    return shell.join(["sh", "-c", SEED_SCRIPT, "sh", unpack_dir, plain_target, HASH_SCRIPT])


def seed_drop_command(unpack_dir: str) -> str:
    """Remove files a seed put in the unpack dir (paths: seed_stdin)."""
    return shell.join(["sh", "-c", SEED_DROP_SCRIPT, "sh", unpack_dir])


def seed_stdin(rels: Sequence[str]) -> bytes:
    """seed_command's and seed_drop_command's stdin: the relative paths, NUL-terminated."""
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in rels)


def part_name(n: int) -> str:
    """The host's temp name of the n-th stream of a run (renamed once verified)."""
    return f"{INCOMING}{n:06d}"


def receive_command(target: str, part: str, unpack_dir: str, encrypted: bool, clean: bool) -> str:
    """The host side of one shard stream (stdin: stream_header, [identity lines], the stream);
    prints the sha256 of what it stored. It waits for the header before doing anything, so a
    stream can be opened ahead (its login and shell start overlap planning) and closed unused
    without touching the host."""
    flags = ["1" if encrypted else "0", "1" if clean else "0"]
    return shell.join(["sh", "-c", RECEIVE_SCRIPT, "sh", target, part, unpack_dir, *flags])


def stream_header(codec: str) -> bytes:
    """First line of a stream's stdin: go, and the codec the host decompresses with."""
    return f"go {codec}\n".encode()


LEASE_TAKEN_EXIT = 9  # the closing command's exit when the upload's lease is no longer its own


def finish_command(
    target: str,
    unpack_dir: str,
    plain_target: str,
    encrypted: bool,
    codec: str,
    marker: str,
    last: tuple[str, str, str] | None = None,
    lease: tuple[str, str] = ("", ""),
    drop: str = "",
) -> str:
    """The one closing command (stdin: [identity] + finish_lists() + the gzip-compressed
    manifest); `last` = (part, sha256, final name) of the shard streamed last, renamed here as
    rename_command would (one round trip fewer); `lease` = (file, token) it keeps fresh while it
    unpacks (a client interrupted meanwhile leaves it running: the lease must say so), and when
    that file no longer holds the token it changes nothing and exits LEASE_TAKEN_EXIT; `drop` =
    dropped_digest() of the old tree's files the plan found the new tree will lack (another set at
    the swap: a job changed the tree during the upload, and the swap is refused)."""
    argv = ["sh", "-c", FINISH_SCRIPT, "sh", target, unpack_dir, plain_target]
    argv += ["1" if encrypted else "0", codec, marker, *(last or ("", "", "")), *lease, drop]
    return shell.join(argv)


def dropped_digest(paths: Sequence[str]) -> str:
    """sha256 of paths sorted by their bytes, each NUL-terminated (as FINISH_SCRIPT computes
    it on the host with `LC_ALL=C sort -z`)."""
    raw = sorted(p.encode("utf-8", "surrogateescape") for p in paths)
    return hashlib.sha256(b"".join(p + b"\0" for p in raw)).hexdigest()


def finish_lists(extract: Sequence[tuple[str, str]], remove: Sequence[str]) -> bytes:
    """The closing command's shard lists, on its stdin: `extract` = (name, sha256 or "-") of
    shards already on the host to unpack too (checked first: a damaged one is removed so the
    rerun re-sends it); `remove` = stale names. One per line (a name holding a newline is never
    listed: shard names are hex)."""
    assert all("\n" not in n and " " not in n for n, _ in extract), "shard names are hex"
    gone = [n for n in remove if "\n" not in n]
    lines = [f"{len(extract)} {len(gone)}", *(f"{n} {sha}" for n, sha in extract), *gone]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


@dataclass
class StreamResult:
    """How one shard stream ended."""

    ok: bool
    remote_sha: str
    local_sha: str  # of the bytes the host stores (the tar, or the ciphertext)
    stderr: str
    sent: int  # bytes handed to the pipeline (before compression)


class _Tee:
    """Writer for pyrage: to the ssh stdin and the ciphertext cache file, hashing."""

    def __init__(self, *outs: IO[bytes]) -> None:
        self.outs, self.hash = outs, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        for o in self.outs:
            o.write(data)
        return len(data)

    def flush(self) -> None:
        for o in self.outs:
            o.flush()


class Throttle:
    """Caps the bytes/s handed to the pipeline (the --bwlimit of shard mode; compressed bytes
    on the link are never more than these)."""

    def __init__(self, bytes_per_s: float | None) -> None:
        self.rate, self.start, self.done = bytes_per_s, time.monotonic(), 0

    def __call__(self, n: int) -> None:
        self.done += n
        if self.rate:
            ahead = self.done / self.rate - (time.monotonic() - self.start)
            # (a worker thread of an interrupted run: its streams are killed; sleeping through
            # the rest of the shard kept the process alive after Ctrl-C)
            if ahead > 0 and children.STOPPING.wait(ahead):
                raise BrokenPipeError("the run is being interrupted")


class Stream:
    """One shard stream: `Stream(argv)` starts ssh at once (so its handshake and the host's
    script start overlap the previous shard), `feed` pushes the bytes and returns as soon as they
    are all handed to the pipes (the next shard can start while they drain), `wait` collects the
    outcome. `close` kills what is left (a stream never fed, or after a failure)."""

    def __init__(self, ssh_argv: Sequence[str]) -> None:
        pipe = subprocess.PIPE
        self.ssh = children.track(subprocess.Popen(list(ssh_argv), stdin=pipe, stdout=pipe, stderr=pipe))
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        out, err = self.ssh.stdout, self.ssh.stderr
        assert out is not None and err is not None
        self._readers = [
            threading.Thread(target=lambda: self._out.append(out.read()), daemon=True),
            threading.Thread(target=lambda: self._err.append(err.read()), daemon=True),
        ]
        for r in self._readers:
            r.start()
        self.comp: subprocess.Popen[bytes] | None = None
        self._enc_thread: threading.Thread | None = None
        self._enc_error: list[BaseException] = []
        self._sink_file: IO[bytes] | None = None
        self._tee: _Tee | None = None
        self._sha = hashlib.sha256()
        self.sent = 0
        self.broken = False

    def feed(
        self,
        produce: Callable[[Callable[[bytes], None]], Any],
        codec: str | None,
        prefix: bytes = b"",
        encrypt: Callable[[IO[bytes], Any], None] | None = None,
        cipher_out: Path | None = None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> Any:
        """`produce(write)` writes the plain bytes (packing) and returns its result; `codec` None
        sends them as they are (a cached ciphertext). With `encrypt` (pyrage.encrypt_io bound to
        the recipients) the compressed stream is encrypted here and the ciphertext also written
        to `cipher_out`."""
        ssh_in = self.ssh.stdin
        assert ssh_in is not None
        result: Any = None
        try:
            if prefix:
                ssh_in.write(prefix)
                ssh_in.flush()
            if codec is None:
                sink: IO[bytes] = ssh_in
            elif encrypt is None:
                self.comp = children.track(
                    subprocess.Popen(compressor_argv(codec), stdin=subprocess.PIPE, stdout=ssh_in)
                )
                ssh_in.close()  # the compressor holds the pipe now
                assert self.comp.stdin is not None
                sink = self.comp.stdin
            else:
                comp = children.track(
                    subprocess.Popen(compressor_argv(codec), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                )
                self.comp = comp
                assert comp.stdin is not None and comp.stdout is not None and cipher_out is not None
                self._sink_file = cipher_out.open("wb")
                tee = self._tee = _Tee(ssh_in, self._sink_file)
                source = comp.stdout

                def run_encrypt() -> None:
                    try:
                        encrypt(source, tee)
                    except BaseException as exc:  # noqa: BLE001 - re-raised in wait()
                        self._enc_error.append(exc)
                        comp.kill()  # unblock the producer: its pipe now breaks

                self._enc_thread = threading.Thread(target=run_encrypt, daemon=True)
                self._enc_thread.start()
                sink = comp.stdin
            hashing = codec is None or encrypt is None

            def write(data: bytes) -> None:
                if hashing:
                    self._sha.update(data)
                sink.write(data)
                self.sent += len(data)
                if on_bytes is not None:
                    on_bytes(len(data))

            try:
                result = produce(write)
                sink.close()
            except BrokenPipeError:
                self.broken = True
            if self._enc_thread is not None:
                self._enc_thread.join()
                assert self._sink_file is not None
                self._sink_file.close()
                with contextlib.suppress(BrokenPipeError):
                    ssh_in.close()
        except BaseException:
            self.close()
            raise
        return result

    def wait(self) -> StreamResult:
        """Wait for the host to finish this shard; its outcome."""
        try:
            if self.comp is not None:
                self.comp.wait()
            self.ssh.wait()
        finally:
            self.close()
        for r in self._readers:
            r.join()
        # read to the end (and the encryption thread, fed by the compressor, joined in feed):
        # close, else each shard kept two or three fds open ('Too many open files' at ~500)
        for pipe in (self.ssh.stdout, self.ssh.stderr, self.comp.stdout if self.comp else None):
            if pipe is not None:
                pipe.close()
        err0 = self._enc_error[0] if self._enc_error else None
        if err0 is not None and not isinstance(err0, OSError):
            raise err0
        stdout = b"".join(self._out).decode("ascii", "replace").strip()
        stderr = b"".join(self._err).decode("utf-8", "replace")
        sha = self._tee.hash.hexdigest() if self._tee is not None else self._sha.hexdigest()
        ok = (
            self.ssh.returncode == 0
            and not self.broken
            and err0 is None
            and (self.comp is None or self.comp.returncode == 0)
        )
        return StreamResult(ok, stdout.splitlines()[-1] if stdout else "", sha, stderr, self.sent)

    def close(self) -> None:
        """Kill the processes still running (a stream never fed, or after a failure)."""
        for proc in (self.comp, self.ssh):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.ssh.stdin is not None and not self.ssh.stdin.closed:
            with contextlib.suppress(OSError):
                self.ssh.stdin.close()
        if self._sink_file is not None and not self._sink_file.closed:
            self._sink_file.close()


def identity_prefix(identity_text: str) -> bytes:
    """What goes first on the stdin of the host's scripts: the number of key lines, then the
    AGE-SECRET-KEY lines (comments dropped)."""
    keys = crypto.identity_keys(identity_text)
    return (f"{len(keys)}\n" + "".join(k + "\n" for k in keys)).encode()


def temp_cipher_path(cache: Path) -> Path:
    """A fresh temp name in the ciphertext cache (renamed to its content key once complete)."""
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=crypto.temp_prefix(".stream."))
    os.close(fd)
    return Path(tmp)
