"""A file given to `gpuonboard facts` that is no saved command output by its bytes: a
compressed file or archive (`nvidia-bug-report.log.gz`, the file vendors attach), a program, an
image (a screenshot of the terminal), or any file with NUL bytes; one sentence naming the file
and what to do, before any parser reads it as text."""

from __future__ import annotations

import codecs

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
