"""A file given to `gpuonboard facts` that is no saved command output by its bytes: a
compressed file or archive (`nvidia-bug-report.log.gz`, the file vendors attach), a program, an
image (a screenshot of the terminal), or any file with NUL bytes; one sentence naming the file
and what to do, before any parser reads it as text; and its bytes read so that a pipe with no
writer never blocks the run (`read_at_most`)."""

from __future__ import annotations

import codecs
import os
import select
import stat
import time
from pathlib import Path

# how long a pipe named as a saved output (`<(nvidia-smi -q)`, /dev/stdin, a FIFO) may stay
# silent: a FIFO no program writes to blocked `facts` for ever
PIPE_SILENCE = 30.0

# (leading bytes, what the file is, what to do)
_MAGIC = (
    (b"\x1f\x8b", "a gzip file", "gunzip it (`gunzip -k FILE`) or leave it out"),
    (b"BZh", "a bzip2 file", "bunzip2 it or leave it out"),
    (b"\xfd7zXZ\x00", "an xz file", "unxz it or leave it out"),
    (b"\x28\xb5\x2f\xfd", "a zstd file", "unzstd it or leave it out"),
    (b"PK\x03\x04", "a zip archive", "unzip it and pass the files inside, or leave it out"),
    (b"\x7fELF", "a program (ELF binary)", "leave it out"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "save the command's text output instead (`CMD > out.txt`)"),
    (b"\xff\xd8\xff", "a JPEG image", "save the command's text output instead (`CMD > out.txt`)"),
    (b"%PDF-", "a PDF document", "save the command's text output instead (`CMD > out.txt`)"),
)


def not_text(data: bytes) -> str | None:
    """Why `data` is no saved command output (`a gzip file, not a saved command output: gunzip
    it ...`), or None for text (UTF-16 with its byte-order mark is text)."""
    for magic, what, todo in _MAGIC:
        if data.startswith(magic):
            return f"{what}, not a saved command output: {todo}."
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    if b"\x00" in data:
        return "a binary file (it holds NUL bytes), not a saved command output: leave it out."
    return None


def read_at_most(path: Path, limit: int, silence: float = PIPE_SILENCE) -> bytes:
    """Up to `limit` + 1 bytes of `path` (OSError as open and read raise it). Opened without
    blocking: a FIFO (named pipe) no program writes to, or a pipe whose writer never writes,
    waited for ever; a pipe is read as its writer writes, and given up (TimeoutError) after
    `silence` seconds without a byte or its end."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            chunks, size = [], 0
            while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        return _read_pipe(fd, limit, silence)
    finally:
        os.close(fd)


def _read_pipe(fd: int, limit: int, silence: float) -> bytes:
    """A pipe's bytes until its end (every writer gone: at once where none opened it) or `limit`
    + 1 of them; TimeoutError after `silence` seconds without a byte."""
    chunks: list[bytes] = []
    size = 0
    quiet_until = time.monotonic() + silence
    while size <= limit:
        left = quiet_until - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"nothing came through this pipe in {silence:g} s")
        try:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        quiet_until = time.monotonic() + silence
    return b"".join(chunks)
