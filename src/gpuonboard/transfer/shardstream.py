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

from gpuonboard import children, shell
from gpuonboard.transfer import LISTING_PRUNE, SHA256_FN, crypto

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
_PRELUDE = (
    SHA256_FN
    + "\n"
    + AGE_ERROR_FN
    + r"""
read_key() {
  IFS= read -r nk || { echo 'no identity on stdin' >&2; exit 1; }
  key=; while [ "$nk" -gt 0 ]; do IFS= read -r l || exit 1; key="$key$l
"; nk=$((nk - 1)); done
}"""
)

RECEIVE_SCRIPT = (
    _PRELUDE
    + r"""
t=$1; part=$2; u=$3; enc=$4; clean=$5
# the stream header: "go <codec>"; EOF instead = a stream opened ahead and not needed: nothing done
read -r go dc || exit 0
[ "$go" = go ] || { echo 'bad stream header' >&2; exit 1; }
case $dc in zstd|gzip) ;; *) echo "unknown codec: $dc" >&2; exit 1 ;; esac
mkdir -p -- "$t" && cd -- "$t" || exit 1
f=$part.fail; rm -f -- "$part" "$part.sum" "$f" "$part.fifo" "$part.key"
if [ -n "$u" ]; then
  if [ "$clean" = 1 ]; then
    for d in "${u%-*}"-*; do [ "$d" = "$u" ] || rm -rf -- "$d"; done  # this copy's only
  fi
  mkdir -p -- "$u" || exit 1
fi
if [ "$enc" = 1 ] && [ -n "$u" ]; then
  command -v age >/dev/null || { echo 'age is not installed on the host' >&2; exit 127; }
  read_key
fi
need=1; [ "$enc" = 1 ] && [ -z "$u" ] && need=0
if [ "$need" = 1 ] && ! command -v "$dc" >/dev/null; then
  echo "$dc is not installed on the host" >&2; exit 127
fi
mkfifo -m 600 "$part.fifo" || exit 1
sha < "$part.fifo" > "$part.sum" &
# tar's complaints name plaintext paths: kept in a variable, never in a file in the store on the
# data disk (nor beside the unpack dir: when that disk is full, they would be lost)
untar() {
  terr=$(tar -x -m --no-same-owner -f - -C "$u" 2>&1) \
    || echo "tar -x failed: $(printf '%s\n' "$terr" | grep -v 'Exiting with failure' | tail -n 1)" >> "$f"
  cat > /dev/null
}
keep() { tee -- "$part.fifo" "$@" || echo "writing $part failed" >> "$f"; }
if [ "$enc" = 1 ]; then
  if [ -n "$u" ]; then
    mkfifo -m 600 "$part.key" || exit 1
    { printf '%s' "$key" > "$part.key" & } 2>/dev/null
    keep "$part" \
      | { age -d -i "$part.key" 2>"$part.aerr" || agerr "$part.aerr" >> "$f"
        } \
      | { "$dc" -dc || echo "$dc -d failed" >> "$f"; } | untar
    : <> "$part.key"; rm -f -- "$part.key" "$part.aerr"
  else
    keep > "$part"
  fi
else
  { "$dc" -dc || echo "$dc -d failed" >> "$f"; } \
    | if [ -n "$u" ]; then keep "$part" | untar; else keep > "$part"; fi
fi
: <> "$part.fifo"
wait
rm -f -- "$part.fifo"
if [ -s "$f" ]; then cat -- "$f" >&2; rm -f -- "$f"; exit 3; fi
rm -f -- "$f"
cut -c1-64 < "$part.sum"
"""
)

FINISH_SCRIPT = (
    _PRELUDE
    + r"""
# CARRY $1=new tree, $2=mk|mode, then ./paths of empty dirs in the old tree (cwd): a path whose
# every component in the new tree is absent or a real dir (never through a symlink or a file:
# the dataset's entry at that path wins, and nothing is made outside the tree) is printed
# NUL-terminated for one batched `mkdir -p` (mk), or gets the old dir's mode once made (mode)
CARRY='u=$1; what=$2; shift 2
for d; do
  rest=${d#./}; cur=$u; ok=1
  while [ -n "$rest" ]; do
    c=${rest%%/*}; if [ "$c" = "$rest" ]; then rest=; else rest=${rest#*/}; fi
    cur=$cur/$c
    if [ -L "$cur" ] || { [ -e "$cur" ] && [ ! -d "$cur" ]; }; then ok=0; break; fi
    if [ "$what" = mode ] && [ ! -d "$cur" ]; then ok=0; break; fi
  done
  [ "$ok" = 1 ] || continue
  if [ "$what" = mk ]; then printf "%s\\0" "$cur"; else chmod --reference="$d" -- "$cur" 2>/dev/null; fi
done'

t=$1; u=$2; p=$3; enc=$4; dc=$5; marker=$6; lp=$7; lsha=$8; lfin=$9; lease=${10:-}; tok=${11:-}
drop=${12:-}  # sha256 of the old tree's files the plan found the new one will lack (see below)
# the upload's lease stays fresh while this runs (it may outlive an interrupted client)
ours() { grep -qxF "token $tok" -- "$lease" 2>/dev/null; }
beat() { [ -n "$lease" ] && ours && touch -c -- "$lease"; :; }
# the lease is still this upload's (another run takes it over when this one was not heard from
# for STALE_S): asked here, not in a round trip of its own before this command
if [ -n "$lease" ] && ! ours; then
  echo 'the upload lease was taken over' >&2; exit 9  # LEASE_TAKEN_EXIT
fi
cd -- "$t" || exit 1
if [ -n "$lp" ]; then  # the last shard streamed gets its real name here (RENAME_SCRIPT's check)
  got=; [ -f "$lp.sum" ] && got=$(cut -c1-64 < "$lp.sum")
  rm -f -- "$lp.sum"
  if [ "$got" != "$lsha" ] || [ ! -f "$lp" ]; then
    rm -f -- "$lp"; echo "sha256 mismatch on the host for $lfin" >&2; exit 3
  fi
  mv -f -T -- "$lp" "$lfin" || exit 1  # (-T: never into a directory of that name)
fi
if [ "$enc" = 1 ] && [ -n "$u" ]; then
  read_key
fi
# the shard lists (finish_lists: on stdin, not the command line, whose one argument holds
# 128 KiB: ~1,200 shards), then the manifest
lines() {
  i=0; while [ "$i" -lt "$1" ]; do IFS= read -r l && printf '%s\n' "$l" || return 1; i=$((i + 1)); done
}
lists() { IFS=' ' read -r nx nr && lines "$nx" > .finish.x && lines "$nr" > .finish.r; }
gone() { rm -f -- .manifest.tmp .finish.x .finish.r; echo "the $1 did not arrive whole" >&2; exit 1; }
lists || gone 'shard lists'
gzip -dc > .manifest.tmp || gone manifest
fail() {
  [ -n "$u" ] && rm -rf -- "$u" "$u.old" "$u.new"
  rm -f -- .manifest.tmp .finish.x .finish.r; exit "$1"
}
if [ -n "$u" ]; then  # unpack dirs of this copy's interrupted runs (.<name>.gpuonboard-unpack-*)
  for d in "${u%-*}"-*; do [ "$d" = "$u" ] || rm -rf -- "$d"; done
  mkdir -p -- "$u" || fail 1
fi
mv -f -T -- .manifest.tmp manifest.json || fail 1
while IFS=' ' read -r s want <&3; do
  [ -n "$u" ] || continue
  beat
  if [ "$want" != - ] && [ "$(sha < "$s" | cut -c1-64)" != "$want" ]; then
    rm -f -- "$s"
    echo "shard $s on the host was damaged (sha256 mismatch) and has been removed; rerun to re-send it" >&2
    fail 3
  fi
  ok=1
  if [ "$enc" = 1 ]; then
    rm -f -- .key.fifo; mkfifo -m 600 .key.fifo || fail 1
    { printf '%s' "$key" > .key.fifo & } 2>/dev/null
    rm -f -- .age.fail
    # age's own complaint only (killed by a reader that stopped, it says nothing: not damage);
    # tar's names plaintext paths: in a variable, never in the store (see RECEIVE_SCRIPT)
    terr=$(
      { age -d -i .key.fifo -- "$s" 2>.age.err || { [ -s .age.err ] && agerr .age.err > .age.fail; }; } \
      | "$dc" -dc 2>/dev/null | tar -x -m --no-same-owner -f - -C "$u" 2>&1) || ok=0
    : <> .key.fifo; rm -f -- .key.fifo .age.err
    if [ -s .age.fail ]; then  # the identity matches a recipient (checked locally): damaged
      why=$(cat .age.fail); rm -f -- .age.fail "$s"
      echo "shard $s on the host was damaged ($why) and has been removed; rerun to re-send it" >&2; fail 3
    fi
    if [ "$ok" != 1 ]; then  # tar's line (a full disk says so), not its closing "Exiting with ..."
      printf '%s\n' "$terr" | grep -v 'Exiting with failure' | tail -n 1 >&2; rm -f -- .age.fail
      echo "unpacking $s failed" >&2; fail 2
    fi
    rm -f -- .age.fail
  else
    tar -x -m --no-same-owner -f "$s" -C "$u" || fail 2
  fi
done 3< .finish.x
while IFS= read -r s; do rm -rf -- "$s"; done < .finish.r
rm -f -- .finish.x .finish.r
rm -f -- unpacked-*
if [ -n "$u" ]; then
  chmod 755 "$u"
  parent=$(dirname -- "$p")
  old=
  if [ -d "$p" ] && [ ! -L "$p" ]; then  # empty dirs a job made in the old tree: kept (see CARRY)
    ( cd -- "$p" && find . -mindepth 1 -type d -empty -exec sh -c "$CARRY" sh "$u" mk {} + ) \
      | xargs -0 -r mkdir -p -- 2>/dev/null
    ( cd -- "$p" && find . -mindepth 1 -type d -empty ! -perm 0755 -exec sh -c "$CARRY" sh "$u" mode {} + )
    [ -f "$p/.gpuonboard-copy" ] && cp -p -- "$p/.gpuonboard-copy" "$u/" 2>/dev/null  # --decrypt-to's mark
    # the old tree's files the new one lacks must be exactly those the plan saw ($drop: sha256 of
    # their sorted NUL-terminated paths); any other set means a job changed the tree meanwhile
    lst() { ( d=$1; shift; cd -- "$d" && find . -mindepth 1 """
    + LISTING_PRUNE
    + r""" -o "$@" -printf '%P\0' ) | LC_ALL=C sort -z -T "${u%/*}"; }  # (spills there, not /tmp)
    # (both lists hold plaintext paths: beside the unpack dir, on --decrypt-to's disk and swept
    # with it by the next run, never in the store on the data disk)
    lst "$p" ! -type d > "$u.old"; lst "$u" > "$u.new"
    got=$(LC_ALL=C comm -z -23 "$u.old" "$u.new" | sha | cut -c1-64); rm -f -- "$u.old" "$u.new"
    if [ "$got" != "$drop" ]; then
      printf '%s\n' "the tree $p changed during the upload (files not in the dataset appeared in it, or\
 ones it no longer has vanished: a job at work?); it was not replaced and nothing was lost: see what\
 is there, then rerun (the shards are on the host: nothing is sent again)" >&2
      fail 5
    fi
  fi
  if [ -e "$p" ] || [ -L "$p" ]; then
    old=$(mktemp -d "$parent/.gpuonboard-old.XXXXXXXX") && mv -- "$p" "$old/x" || fail 1
  fi
  mv -- "$u" "$p" || fail 1
  cp -f -- manifest.json manifest.unpacked.json 2>/dev/null  # what the tree holds now
  [ -n "$old" ] && rm -rf -- "$old"
  : > "$marker"
fi
exit 0
"""
)


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
