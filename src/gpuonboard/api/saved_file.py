"""A saved output's bytes as offline reading takes them (api/offline.py): bounded in size,
gunzipped within a bound, a kernel log's tail of NUL bytes left out, a file that cannot be read
named in one sentence (or, in a folder, a note: one missing answer)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.saved_bytes import MAX_GUNZIPPED_BYTES, PipeTimeout, expanded, not_text, read_at_most
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.api.saved_text import decode_saved
from gpuonboard.errors import UsageError

# a saved output larger than this is no command output (what gunzipping one may reach, too)
MAX_OUTPUT_BYTES = MAX_GUNZIPPED_BYTES


def read_saved(path: Path, notes: list[str] | None = None) -> tuple[bytes, str]:
    """A saved output's bytes (errors name the file), and why they are cut short ("" if not: a
    gzip file cut short, whose every output is then incomplete)."""
    try:
        data = read_at_most(path, MAX_OUTPUT_BYTES)
    except PipeTimeout as exc:
        raise UsageError(f"{path}: {exc}; save the command's output to a file and name that file.") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read this file ({exc.strerror or exc}).") from None
    if len(data) > MAX_OUTPUT_BYTES:
        raise UsageError(
            f"{path}: larger than {MAX_OUTPUT_BYTES // 2**20} MiB, not a saved command output;"
            " leave it out of the files to judge."
        )
    try:
        said: list[str] = []
        data, cut = expanded(
            data, MAX_OUTPUT_BYTES, said
        )  # (a gzip file, `nvidia-bug-report.log.gz`: its text)
    except ValueError as bad:
        raise UsageError(f"{path}: {bad}.") from None
    if (why := not_text(data)) is not None:
        head = readable_head(data)
        if head is None:
            raise UsageError(f"{path}: {why}")
        data, cut = (
            head,
            cut
            or (
                f"the file ends in NUL bytes after byte {len(head)} (a tail a crash or a disk error filled"
                " with zeros), so only the output before them was read"
            ),
        )
    if notes is not None:
        notes += [f"{path}: {clause}." for clause in said]
    return data, cut


def readable_head(data: bytes) -> bytes | None:
    """The whole lines before a file's tail of NUL bytes, where they are an output of a known kind
    (a kernel log whose tail a crash filled with zeros: its lines are the box's answer, cut);
    None where there are none, where text follows the NULs (a binary, or damage inside the text:
    refused as before), or they are of no known kind."""
    if b"\x00" not in data or not_text(data[:16].replace(b"\x00", b" ")) is not None:
        return None  # (an archive's or image's magic: no output's damaged tail)
    head, tail = data[: data.index(b"\x00")], data[data.index(b"\x00") :]
    if tail.strip(b"\x00 \t\r\n"):
        return None
    head = head[: head.rfind(b"\n") + 1]
    return head if head.strip() and detect_kind(decode_saved(head)) is not None else None


def unread_file_note(why: str) -> str:
    """The note on a folder's file that cannot be read (its permissions, a binary, past the size
    bound, a damaged gzip): one missing answer, never the whole folder refused. What it holds is
    unverified; the folder's other files are judged (docs/guides/offline.md)."""
    if why.endswith("Permission denied)."):
        why = why[:-1] + "; make it readable (`chmod a+r`) or leave it out of the folder."
    return (
        f"{why} Not read: what it would have shown is unverified (one missing answer: the other"
        " files are judged)."
    )
