"""A file given to `gpuonboard facts` that is no saved command output by its bytes: a
compressed file or archive other than gzip, a program, an image (a screenshot of the terminal), or
any file with NUL bytes; one sentence naming the file and what to do, before any parser reads it
as text. A gzip file (`nvidia-bug-report.log.gz`, the file vendors attach) is read as the text it
holds, expanded within a bound (`expanded`). Its bytes are read so that a pipe with no writer never
blocks the run (`read_at_most`)."""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import stat
import threading
import time
import zlib
from pathlib import Path

# how long a named pipe (FIFO) given as a saved output may wait for a program to open it for
# writing (a FIFO none opens blocked `facts` for ever in open()), and how long a pipe whose writer
# has opened it (`<(nvidia-smi -q)`, /dev/stdin, a FIFO) may then stay silent: a slow
# nvidia-smi on a sick box prints its first buffered block after minutes
PIPE_SILENCE = 30.0
PIPE_STALL = 600.0

# (leading bytes, what the file is, what to do)
_MAGIC = (
    (b"BZh", "a bzip2 file", "bunzip2 it or leave it out"),
    (b"\xfd7zXZ\x00", "an xz file", "unxz it or leave it out"),
    (b"\x28\xb5\x2f\xfd", "a zstd file", "unzstd it or leave it out"),
    (b"PK\x03\x04", "a zip archive", "unzip it and pass the files inside, or leave it out"),
    (b"\x7fELF", "a program (ELF binary)", "leave it out"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "save the command's text output instead (`CMD > out.txt`)"),
    (b"\xff\xd8\xff", "a JPEG image", "save the command's text output instead (`CMD > out.txt`)"),
    (b"%PDF-", "a PDF document", "save the command's text output instead (`CMD > out.txt`)"),
)


GZIP_MAGIC = b"\x1f\x8b"
# the most a gzip file given is expanded to (an nvidia-bug-report.log.gz of a box with many GPUs,
# its nvidia-debugdump and acpidump in base64, holds tens of MiB); more is refused, never expanded
MAX_GUNZIPPED_BYTES = 128 * 2**20  # (api/offline.py: the same bound as a plain file's text)
_GZIP_HEADER = 10  # (a gzip member's fixed header: magic, method, flags, time, xfl, os)


def expanded(
    data: bytes, limit: int = MAX_GUNZIPPED_BYTES, notes: list[str] | None = None
) -> tuple[bytes, str]:
    """A saved file's bytes as the text they hold, and why that text is cut short ("" if whole):
    a gzip file decompressed (gunzipped, at most `limit` bytes; ValueError past it), any other as
    it is. A gzip stream that ends before its end (`gzip -t`: unexpected end of file) holds an
    output cut short wherever the cut fell, at a line's end too: an incomplete probe. Bytes after
    a whole member that start no member (gzip -d: "trailing garbage ignored") are said in `notes`."""
    if not data.startswith(GZIP_MAGIC):
        return data, ""
    text, ended = gunzipped(data, limit, notes)
    if text.startswith(GZIP_MAGIC):
        raise ValueError("a gzip file inside a gzip file: gunzip it twice and pass the text it holds")
    if _is_tar(text):
        raise ValueError(
            "a tar archive inside gzip (a .tar.gz): extract it (`tar -xzf`) and pass the files inside"
        )
    if ended:
        return text, ""
    if not text.strip():
        raise ValueError("a gzip file cut short before any text it holds (`gzip -t`: unexpected end of file)")
    return text, "a gzip file cut short (`gzip -t`: unexpected end of file): the output ends where it was cut"


def gunzipped(data: bytes, limit: int, notes: list[str] | None = None) -> tuple[bytes, bool]:
    """A gzip file's bytes decompressed (every member: nvidia-bug-report.sh appends one per
    section), and whether its compressed stream ended (False: the file was cut short, its bytes
    read up to the cut); ValueError, one clause, where it would expand past `limit` bytes (a zip
    bomb: never expanded further) or is no gzip stream. Each step expands at most what is left
    of `limit` + 1 bytes, so memory stays bounded whatever the ratio. Bytes after a whole member
    without a gzip magic, or fewer than a member's 10-byte header (a `\n` a download added, a
    lone `\x1f`), are trailing garbage, as gzip -d says: the file ended, those bytes said in
    `notes`, never a cut."""
    out: list[bytes] = []
    size, rest, ended = 0, data, False
    while rest:
        if out and ended and (not rest.startswith(GZIP_MAGIC) or len(rest) < _GZIP_HEADER):
            if notes is not None:
                notes.append(f"{len(rest)} byte(s) after the gzip stream's end, no gzip member: ignored")
            return b"".join(out), True
        unzip = zlib.decompressobj(wbits=31)
        chunk, rest, ended = rest, b"", False
        while chunk:
            try:
                piece = unzip.decompress(chunk, limit + 1 - size)
            except zlib.error as exc:
                if out:  # (bytes after the last member that are no gzip: dropped, as gzip -d warns)
                    return b"".join(out), True
                raise ValueError(f"a damaged gzip file ({exc})") from None
            out.append(piece)
            size += len(piece)
            if size > limit:
                raise ValueError(
                    f"a gzip file that expands past {limit // 2**20} MiB (a zip bomb, or no saved"
                    " command output): leave it out"
                )
            chunk = unzip.unconsumed_tail
        ended = unzip.eof
        if not ended:  # (cut inside a member: what its bytes held, bounded by what was fed)
            out.append(unzip.flush())
            size += len(out[-1])
            if size > limit:
                raise ValueError(
                    f"a gzip file that expands past {limit // 2**20} MiB (a zip bomb, or no saved"
                    " command output): leave it out"
                )
        rest = unzip.unused_data
    return b"".join(out), ended


def _is_tar(data: bytes) -> bool:
    """A tar archive: POSIX ustar's (and GNU tar's) magic at byte 257 of its first header."""
    return data[257:262] == b"ustar"


def not_text(data: bytes) -> str | None:
    """Why `data` is no saved command output (`a gzip file, not a saved command output: gunzip
    it ...`), or None for text (UTF-16 with its byte-order mark is text)."""
    for magic, what, todo in _MAGIC:
        if data.startswith(magic):
            return f"{what}, not a saved command output: {todo}."
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    if _is_tar(data):
        return "a tar archive, not a saved command output: extract it (`tar -xf`) and pass the files inside."
    if b"\x00" in data:
        return "a binary file (it holds NUL bytes), not a saved command output: leave it out."
    return None


class PipeTimeout(TimeoutError):
    """A pipe given up on: no program opened it for writing in time, or its writer went silent
    (after `got` bytes); str() is the clause that says which."""

    def __init__(self, opened: bool, got: int, waited: float) -> None:
        self.opened, self.got, self.waited = opened, got, waited
        if not opened:
            what = f"a named pipe (FIFO) that no program opened for writing in {waited:g} s"
        elif got:
            what = f"a pipe whose writer went silent after {got} bytes (nothing more in {waited:g} s)"
        else:
            what = f"a pipe whose writer wrote nothing in {waited:g} s"
        super().__init__(what)


_OPEN_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def read_at_most(path: Path, limit: int, silence: float | None = None, stall: float | None = None) -> bytes:
    """Up to `limit` + 1 bytes of `path` (OSError as open and read raise it). A FIFO (named
    pipe) no program opens for writing waited for ever in open(): it is given up (PipeTimeout)
    after `silence` seconds (PIPE_SILENCE); a pipe a writer has opened (an anonymous one, `<(cmd)` or
    /dev/stdin, is opened at once) is read as its writer writes, and given up only after `stall`
    seconds (PIPE_STALL) without a byte or its end."""
    silence = PIPE_SILENCE if silence is None else silence
    stall = PIPE_STALL if stall is None else stall
    if stat.S_ISFIFO(os.stat(path).st_mode):
        return _read_pipe(_open_fifo(path, silence), limit, stall)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _OPEN_FLAGS)
    if stat.S_ISFIFO(os.fstat(fd).st_mode):  # (made one since the stat: read as it comes)
        return _read_pipe(fd, limit, stall)
    try:
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _same_pipe(path: Path, fd: int) -> str:
    """The FIFO open as `fd`, by a name that stays its own where it is deleted or replaced
    meanwhile (/proc/self/fd/N on Linux); its path elsewhere."""
    held = f"/proc/self/fd/{fd}"
    return held if os.path.exists(held) else str(path)


def _open_fifo(path: Path, wait: float) -> int:
    """A FIFO opened for reading once a program has it open for writing (at once for an
    anonymous pipe, whose writer was there first), or once bytes or a writer's end came through
    it (a writer that wrote and closed before: `facts /dev/stdin < out.fifo`); PipeTimeout after
    `wait` seconds of neither. The blocking open runs in a thread beside a non-blocking one
    (which holds the pipe open meanwhile): given up, it is ended by a writer's open of our own,
    closed at once."""
    nonblocking = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _OPEN_FLAGS)
    opened: list[int] = []
    failed: list[OSError] = []

    def open_blocking() -> None:
        try:
            opened.append(os.open(path, os.O_RDONLY | _OPEN_FLAGS))
        except OSError as exc:
            failed.append(exc)

    waiter = threading.Thread(target=open_blocking, name="gpuonboard-fifo-open", daemon=True)
    waiter.start()
    deadline = time.monotonic() + wait
    came = False
    while waiter.is_alive() and not came and time.monotonic() < deadline:
        came = bool(select.select([nonblocking], [], [], 0.05)[0])
    timed_out = waiter.is_alive() and not came
    wake_until = time.monotonic() + 5
    while waiter.is_alive() and time.monotonic() < wake_until:
        # (again until it is out: the thread may reach its open only after a wake-up was sent)
        with contextlib.suppress(OSError):  # (a reader waits in open: this open does not block)
            os.close(os.open(_same_pipe(path, nonblocking), os.O_WRONLY | os.O_NONBLOCK | _OPEN_FLAGS))
        waiter.join(0.05)
    if came or timed_out:
        for fd in opened:
            os.close(fd)
    if came:
        return nonblocking
    os.close(nonblocking)
    if timed_out:
        raise PipeTimeout(opened=False, got=0, waited=wait)
    if failed:
        raise failed[0]
    return opened[0]


def _read_pipe(fd: int, limit: int, stall: float) -> bytes:
    """A pipe's bytes (closing `fd`) until its end (every writer gone) or `limit` + 1 of them;
    PipeTimeout after `stall` seconds without a byte."""
    chunks: list[bytes] = []
    size = 0
    try:
        os.set_blocking(fd, False)
        quiet_until = time.monotonic() + stall
        while size <= limit:
            left = quiet_until - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise PipeTimeout(opened=True, got=size, waited=stall)
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            quiet_until = time.monotonic() + stall
    finally:
        os.close(fd)
    return b"".join(chunks)
