"""Shard mode's transport: each shard is packed, compressed and sent as ONE stream.

    pack (this process) -> zstd -1 | gzip -1 (local process) -> ssh (the run's OpenSSH master)
        -> host: decompress | tee <shard>.fifo <.incoming-shard> | tar -x into the unpack dir

Nothing waits for anything else: the first byte leaves while the first file is read, the host
unpacks while it receives (with `unpack`), and the host's sha256 of what arrived is computed
by `openssl dgst -sha256` (else `sha256sum`) reading a fifo that tee feeds. Compression only
removes the tar headers' overhead (a 4 KiB file carries a 512-byte header: 12.5 %); random
payload passes through zstd at GB/s. Encrypted shards are age(compressed tar): compress first
(ciphertext does not compress), encrypt in this process with pyrage into the ciphertext cache
AHEAD of the link (`Ahead`: the stream sends the file as it grows), so a rerun or a resend never
re-encrypts; with decrypt-on-host the key lines go first on the stream's stdin and reach
`age -i` through a fifo (never a file on the host's disk).

A shard arrives as `.incoming-<id>` (`part_of`: named by its member paths, the same in every
run) and gets its real name (RENAME_SCRIPT, right after it arrived) only when its sha256 on the
host equals the local one. A dropped link or an interrupt leaves that partial on the host; the
rerun asks for it in the stream's header (`ask`), the host answers with its size and sha256,
and when the same first bytes packed here (the tar is deterministic; the cached ciphertext is
the same file) hash the same, only the rest is sent and appended (else the shard is sent from
its start, and the result says so). The host's sha256, and the unpack, read the whole file. The
host stores the tar (decompressed) or the ciphertext, so resuming needs no deterministic
compressor: the rest is a new compressed stream.
With an unpack, the host also hashes each unpacked file as soon as tar has closed it (tar -v
names each member as it begins it: a name is hashed once the next one appears) and prints one
`tree <sha256>` over those hashes, in tar's order, as the stream ends; equal to `tree_digest` of
the members' sha256s read here, it proves the shard's files on the host, so the upload's
check of the unpacked tree at the end hashes only the files no stream unpacked this run.
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gpuonboard import children, sh, shell
from gpuonboard.transfer import HASH_SCRIPT, LISTING_PRUNE, SHA256_FN, crypto, shards

INCOMING = ".incoming-"
END_GRACE_S = 5.0  # a stream cut short: how long what was handed on may take to reach the host
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

# (hash_batch.sh's text in $HB: the receiving side hashes each unpacked file as tar finishes it)
RECEIVE_SCRIPT = _PRELUDE + "\nHB=" + shell.quote(sh.load("hash_batch")) + "\n" + sh.load("shard_receive")

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
rm -f -- .incoming-* .finish.x .finish.r .finish.d .manifest.tmp .key.fifo .age.err .age.fail
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
    """The host's temp name of the n-th stream of a run, when its header names none."""
    return f"{INCOMING}{n:06d}"


def part_of(raws: Iterable[bytes]) -> str:
    """The host's temp name of the shard holding these member paths (in order, as stored:
    encoded): the same in every run while the group is the same, so a rerun finds the partial
    an interrupted stream left and resumes from it (what it holds is checked by sha256 first,
    never trusted by name). Each path, then a NUL, hashed."""
    names = list(raws)
    h = hashlib.sha256(b"\0".join(names))
    if names:
        h.update(b"\0")
    return f"{INCOMING}{h.hexdigest()[:32]}"


def receive_command(target: str, part: str, unpack_dir: str, encrypted: bool, clean: bool) -> str:
    """The host side of one shard stream (stdin: stream_header, [identity lines], the stream);
    prints the sha256 of what it stored. It waits for the header before doing anything, so a
    stream can be opened ahead (its login and shell start overlap planning) and closed unused
    without touching the host."""
    flags = ["1" if encrypted else "0", "1" if clean else "0"]
    return shell.join(["sh", "-c", RECEIVE_SCRIPT, "sh", target, part, unpack_dir, *flags])


def stream_header(codec: str, part: str = "", ask: bool = False, tree: bool = False) -> bytes:
    """First line of a stream's stdin: go, the codec the host decompresses with, the shard's
    temp name on the host (part_of), `ask` to resume from the partial there (Stream.feed), and
    `tree` (an unpack; with a part) to hash each unpacked file as it lands (tree_digest)."""
    assert all(c not in part for c in " \n/"), "temp names are hex"
    tail = f" {part} {'ask' if ask else 'new'}{' tree' if tree else ''}" if part else ""
    return f"go {codec}{tail}\n".encode()


def tree_digest(members: Sequence[Any]) -> str | None:
    """What the host's `tree <sha256>` line says for a shard of these members (in packing order:
    the entries' kind, rel and sha256) unpacked whole and unchanged: the sha256 of hash_batch's
    lines of its files and symlinks ("F <sha256>" / "L <sha256>", tar's order; directories left
    out). None when it cannot be known: a member's hash is not, or a path holds a line break
    (tar's listing, one name a line, would split it)."""
    h = hashlib.sha256()
    for e in members:
        if "\n" in e.rel:
            return None
        if e.kind == "d":
            continue
        if not e.sha256 or e.kind not in ("f", "l"):
            return None
        h.update(shards.tree_line(e.kind, e.sha256))
    return h.hexdigest()


def tree_line(stdout: str) -> str:
    """The receiving side's `tree <sha256>` (hashed as the files landed), or ""."""
    for line in stdout.split("\n"):
        words = line.split()
        if len(words) == 2 and words[0] == "tree":
            return words[1]
    return ""


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
    stamp: int = 0,
) -> str:
    """The one closing command (stdin: [identity] + finish_lists() + the gzip-compressed
    manifest); `last` = (part, sha256, final name) of the shard streamed last, renamed here as
    rename_command would (one round trip fewer); `lease` = (file, token) it keeps fresh while it
    unpacks (a client interrupted meanwhile leaves it running: the lease must say so), and when
    that file no longer holds the token it changes nothing and exits LEASE_TAKEN_EXIT; `drop` =
    dropped_digest() of the old tree's files the plan found the new tree will lack (another set at
    the swap: a job changed the tree during the upload, and the swap is refused); `stamp` = the
    whole-second mtime the files it unpacked get before the swap (Work.stamp: the host's list of
    what uploads wrote records them with it), 0 for none."""
    argv = ["sh", "-c", FINISH_SCRIPT, "sh", target, unpack_dir, plain_target]
    argv += ["1" if encrypted else "0", codec, marker, *(last or ("", "", "")), *lease, drop]
    argv += [str(stamp) if stamp else ""]
    return shell.join(argv)


def dropped_digest(paths: Sequence[str]) -> str:
    """sha256 of paths sorted by their bytes, each NUL-terminated (as FINISH_SCRIPT computes
    it on the host with `LC_ALL=C sort -z`)."""
    raw = sorted(p.encode("utf-8", "surrogateescape") for p in paths)
    return hashlib.sha256(b"".join(p + b"\0" for p in raw)).hexdigest()


def finish_lists(
    extract: Sequence[tuple[str, str]], remove: Sequence[str], drop: Sequence[str] = ()
) -> bytes:
    """The closing command's shard lists, on its stdin: `extract` = (name, sha256 or "-") of
    shards already on the host to unpack too (checked first: a damaged one is removed so the
    rerun re-sends it); `remove` = stale names; `drop` = the shards to remove once the tree is
    swapped in (an unpack without keep_shards whose every file was proven as it landed: what
    drop_command would do, without its round trip). One per line (a name holding a newline is
    never listed: shard names are hex)."""
    assert all("\n" not in n and " " not in n for n, _ in extract), "shard names are hex"
    assert all("\n" not in n for n in drop), "shard names are hex"
    gone = [n for n in remove if "\n" not in n]
    head = f"{len(extract)} {len(gone)} {len(drop)}"
    lines = [head, *(f"{n} {sha}" for n, sha in extract), *gone, *drop]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


@dataclass
class StreamResult:
    """How one shard stream ended."""

    ok: bool
    remote_sha: str
    local_sha: str  # of the bytes the host stores (the tar, or the ciphertext): the WHOLE shard
    stderr: str
    sent: int  # bytes handed to the pipeline (before compression)
    resumed: int = 0  # bytes of the shard the host kept from an interrupted stream (not sent)
    restarted: bool = False  # the host's partial did not match this shard's bytes: sent whole
    tree: str = ""  # the host's digest of the unpacked files, hashed as they landed (tree_digest)


Producer = Callable[[Callable[[bytes], None]], Any]  # produce(write): writes a shard's bytes


class _Enough(Exception):
    """Raised by prefix_sha's writer once it has what it hashes (ends the packing early)."""


def prefix_sha(produce: Callable[[Callable[[bytes], None]], Any], size: int) -> str | None:
    """sha256 of the first `size` bytes `produce(write)` writes (it is stopped there); None when
    it writes fewer."""
    h, got = hashlib.sha256(), 0

    def write(data: bytes) -> None:
        nonlocal got
        take = memoryview(data)[: size - got]
        h.update(take)
        got += len(take)
        if got >= size:
            raise _Enough

    with contextlib.suppress(_Enough):
        produce(write)
    return h.hexdigest() if got == size else None


def parse_have(line: bytes) -> tuple[int, str] | None:
    """The host's answer to a resume header: `have <bytes> <sha256>` -> (bytes, sha256)."""
    words = line.decode("ascii", "replace").split()
    if len(words) != 3 or words[0] != "have" or not words[1].isdigit():
        return None
    return int(words[1]), words[2]


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


class _Flushing:
    """A file writer that flushes each write (Ahead.follow reads the file as it grows)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f

    def write(self, data: bytes) -> int:
        n = self.f.write(data)
        self.f.flush()
        return n

    def flush(self) -> None:
        self.f.flush()


class Ahead:
    """One encrypted shard made ahead of the link: packed, compressed and encrypted into `path`
    (the ciphertext cache) by a thread at disk and CPU speed, while `follow` sends the file as
    it grows. The whole ciphertext is thus cached seconds into the shard, and a stream cut off
    later resumes from it: age encrypts to a fresh random key, so a new encryption never
    matches the bytes the host kept. `produce(write)` packs; `encrypt(source, sink)` encrypts."""

    def __init__(
        self,
        produce: Callable[[Callable[[bytes], None]], Any],
        codec: str,
        encrypt: Callable[[IO[bytes], Any], None],
        path: Path,
    ) -> None:
        self.path = path
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(produce, codec, encrypt), daemon=True)
        self._thread.start()

    def _run(self, produce: Callable[[Callable[[bytes], None]], Any], codec: str, encrypt: Any) -> None:
        try:
            with self.path.open("wb") as out:
                # (its own session: a Ctrl-C in the terminal stops this process, which then
                # lets the shard's encryption finish, not the compressor under it)
                comp = children.track(
                    subprocess.Popen(
                        compressor_argv(codec),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        start_new_session=True,
                    )
                )
                assert comp.stdin is not None and comp.stdout is not None
                errors: list[BaseException] = []
                source = comp.stdout

                def run_encrypt() -> None:
                    try:
                        encrypt(source, _Flushing(out))
                    except BaseException as exc:  # noqa: BLE001 - re-raised below
                        errors.append(exc)
                        comp.kill()  # unblock the producer: its pipe now breaks

                sink = comp.stdin

                def write(data: bytes) -> None:
                    sink.write(data)

                enc = threading.Thread(target=run_encrypt, daemon=True)
                enc.start()
                try:
                    self.result = produce(write)
                    comp.stdin.close()
                except BrokenPipeError:
                    if not errors:
                        raise
                finally:
                    enc.join()
                    comp.wait()
                    source.close()
                    with contextlib.suppress(OSError):
                        comp.stdin.close()
                if errors:
                    raise errors[0]
                if comp.returncode:
                    raise OSError(f"{codec} failed (exit {comp.returncode})")
        except BaseException as exc:  # noqa: BLE001 - raised by follow, seen by finished
            self.error = exc
        finally:
            self.done.set()

    def finished(self, timeout: float) -> Any:
        """Wait up to `timeout` s for the ciphertext: what packing returned, or None (failed,
        or not done by then)."""
        if not self.done.wait(timeout) or self.error is not None:
            return None
        return self.result

    def follow(self, write: Callable[[bytes], None]) -> Any:
        """Write the ciphertext as it is made, to its end; -> what packing returned."""
        with self.path.open("rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if chunk:
                    write(chunk)
                elif self.done.is_set():
                    chunk = f.read(1 << 20)  # (what was written before it was done)
                    if not chunk:
                        break
                    write(chunk)
                elif children.STOPPING.is_set():
                    raise BrokenPipeError("the run is being interrupted")
                else:
                    self.done.wait(0.02)
        if self.error is not None:
            raise self.error
        return self.result


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
        self._first: list[bytes] = []  # the host's first line (its answer to a resume header)
        self._first_ready = threading.Event()
        out, err = self.ssh.stdout, self.ssh.stderr
        assert out is not None and err is not None

        def read_out() -> None:
            try:
                first = out.readline()
                self._first.append(first)
            finally:
                self._first_ready.set()
            self._out.append(first + out.read())

        self._readers = [
            threading.Thread(target=read_out, daemon=True),
            threading.Thread(target=lambda: self._err.append(err.read()), daemon=True),
        ]
        for r in self._readers:
            r.start()
        self.comp: subprocess.Popen[bytes] | None = None
        self._sha = hashlib.sha256()
        self._local = ""  # the shard's sha256 as its producer computed it (feed's `digest`)
        self.sent = 0
        self.resumed = 0
        self.restarted = False
        self.broken = False

    def _resume_from(
        self, produce: Callable[[Callable[[bytes], None]], Any], ssh_in: IO[bytes]
    ) -> int | None:
        """After a resume header: the host's partial (its size and sha256), against the
        sha256 of the same first bytes packed here; tells the host where to start (`from N`).
        -> the offset (0: from the start), or None when the host did not answer."""
        self._first_ready.wait()
        have = parse_have(self._first[0]) if self._first else None
        if have is None:
            return None
        size, sha = have
        offset = size if size and prefix_sha(produce, size) == sha else 0
        self.restarted = bool(size) and not offset
        ssh_in.write(f"from {offset}\n".encode())
        ssh_in.flush()
        self.resumed = offset
        return offset

    def feed(
        self,
        produce: Callable[[Callable[[bytes], None]], Any],
        codec: str | None,
        prefix: bytes = b"",
        on_bytes: Callable[[int], None] | None = None,
        resume: bool = False,
        digest: Callable[[Any], str] | None = None,
    ) -> Any:
        """`produce(write)` writes the shard's bytes as the host stores them (packing), and
        returns its result; `codec` compresses them on the way (None: sent as they are: a
        ciphertext). `resume` (the header in `prefix` asked for it): the first bytes the host
        kept from an interrupted stream are checked by sha256 and not sent again (`produce`
        then runs twice: it must write the same bytes each time). `digest(result)`: the sha256
        of the bytes `produce` wrote, which it computed itself (packing hashes the tar as it
        writes it): they are then not hashed a second time here."""
        ssh_in = self.ssh.stdin
        assert ssh_in is not None
        result: Any = None
        try:
            if prefix:
                ssh_in.write(prefix)
                ssh_in.flush()
            skip = self._resume_from(produce, ssh_in) if resume else 0
            if skip is None:
                self.broken = True
                return None
            if codec is None:
                sink: IO[bytes] = ssh_in
            else:
                self.comp = children.track(
                    subprocess.Popen(compressor_argv(codec), stdin=subprocess.PIPE, stdout=ssh_in)
                )
                ssh_in.close()  # the compressor holds the pipe now
                assert self.comp.stdin is not None
                sink = self.comp.stdin

            update = self._sha.update if digest is None else None

            def write(data: bytes) -> None:
                nonlocal skip
                if update is not None:
                    update(data)
                if skip:  # (the host has these: only hashed, for the whole shard's sha256)
                    if len(data) <= skip:
                        skip -= len(data)
                        return
                    data, skip = data[skip:], 0
                sink.write(data)
                self.sent += len(data)
                if on_bytes is not None:
                    on_bytes(len(data))

            try:
                result = produce(write)
                sink.close()
            except BrokenPipeError:
                self.broken = True
            else:
                if digest is not None:
                    self._local = digest(result)
        except BaseException:
            self.end()
            raise
        return result

    def wait(self) -> StreamResult:
        """Wait for the host to finish this shard; its outcome."""
        try:
            if self.comp is not None:
                self.comp.wait()
            self.ssh.wait()
        except BaseException:
            self.end()
            raise
        finally:
            self.close()
        for r in self._readers:
            r.join()
        # read to the end: close, else each shard kept two or three fds open ('Too many open
        # files' at ~500)
        for pipe in (self.ssh.stdout, self.ssh.stderr):
            if pipe is not None:
                pipe.close()
        stdout = b"".join(self._out).decode("ascii", "replace").strip()
        stderr = b"".join(self._err).decode("utf-8", "replace")
        ok = self.ssh.returncode == 0 and not self.broken and (self.comp is None or self.comp.returncode == 0)
        remote = stdout.splitlines()[-1] if stdout else ""
        return StreamResult(
            ok,
            remote,
            self._local or self._sha.hexdigest(),
            stderr,
            self.sent,
            self.resumed,
            self.restarted,
            tree_line(stdout),
        )

    def end(self, grace: float = END_GRACE_S) -> None:
        """Cut short (an interrupt, a failure): close the pipes, so what was handed on still
        reaches the host's partial (resumed from by the rerun: killing ssh at once makes the
        host's TCP drop what it had received, megabytes on a fast link), waiting `grace` s at
        most (a dead link: then killed), then close()."""
        deadline = time.monotonic() + grace

        def shut() -> None:
            for pipe in (self.comp.stdin if self.comp is not None else None, self.ssh.stdin):
                if pipe is not None and not pipe.closed:
                    with contextlib.suppress(OSError, ValueError):
                        pipe.close()

        try:
            closing = threading.Thread(target=shut, daemon=True)  # (a full pipe blocks a close)
            closing.start()
            closing.join(grace)
            for proc in (self.comp, self.ssh):
                if proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(max(0.0, deadline - time.monotonic()))
        finally:
            self.close()

    def close(self) -> None:
        """Kill the processes still running (a stream never fed, or after a failure)."""
        for proc in (self.comp, self.ssh):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.ssh.stdin is not None and not self.ssh.stdin.closed:
            with contextlib.suppress(OSError):
                self.ssh.stdin.close()


def end_all(streams: Sequence[Stream], grace: float = END_GRACE_S) -> None:
    """Stream.end for each stream at once (one grace period for all)."""
    ends = [threading.Thread(target=st.end, args=(grace,), daemon=True) for st in streams]
    for t in ends:
        t.start()
    for t in ends:
        t.join()


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
