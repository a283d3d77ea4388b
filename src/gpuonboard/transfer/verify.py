"""sha256 verification of what rsync moved, both ways: the host-side hashing, the parsers of its
output, the local side's hashes, and the comparison of the two.

An upload (push) knows what it sent: the host hashes those paths (names on stdin, in order,
a symlink by its target) and they are compared with the local scan's. A pull learns the names
from the host: the host hashes every file of the dir (SUMS_SCRIPT, sha256sum's own format, read
by parse_manifest), then this machine hashes its copies of them (local_manifest). Both compare
with compare_manifests: what is missing on the receiving side, and what differs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from gpuonboard import shell
from gpuonboard.sh import load
from gpuonboard.transfer.crypto import sha256_file

# `sha` reads stdin and prints "HASH ..." : OpenSSL when it works (SHA-NI: about 3x faster than
# coreutils sha256sum, which matters for a 1 GiB file checked after the upload), else sha256sum
SHA256_FN = (
    "if command -v openssl >/dev/null 2>&1 && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1;"
    " then sha() { openssl dgst -sha256 -r; }; else sha() { sha256sum; }; fi"
)


# one line per NUL-separated path read from stdin, in order: "L|F HASH" or "missing" (a batch of
# plain files by one process: sh/hash_batch.sh)
HASH_SCRIPT = 'cd -- "$1" || exit 3; xargs -0 sh -c ' + shell.quote(load("hash_batch")) + " sh"


def hash_command(target: str) -> str:
    """Remote command computing the sha256 of each path given on stdin (NUL-separated)."""
    return shell.join(["sh", "-c", HASH_SCRIPT, "sh", target])


def hash_stdin(rels: Sequence[str]) -> bytes:
    """The stdin of hash_command: the relative paths, NUL-separated."""
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in rels)


# the paths on stdin (NUL-separated) get the epoch as mtime: they failed verification, and
# rsync's quick check (size + whole-second mtime) on the next run must not take them as sent
UNVERIFIED_SCRIPT = 'cd -- "$1" && xargs -0 -r touch -c -h -m -d @0 --'  # -h: a link itself


def unverified_command(target: str) -> str:
    """Remote command marking paths (stdin: hash_stdin) as not verified, so a rerun re-sends them."""
    return shell.join(["sh", "-c", UNVERIFIED_SCRIPT, "sh", target])


def parse_hashes(rels: Sequence[str], stdout: str) -> dict[str, str | None]:
    """Pure: hash_command's output -> rel -> sha256 (None when missing on the host, or there but
    unreadable: hash_batch.sh's `unreadable` line; either way it differs and is sent again)."""
    return dict(zip(rels, _digests(stdout, len(rels)), strict=True))


def differing(rels: Sequence[str], expect: Mapping[str, str], stdout: str) -> list[str]:
    """Pure: of `rels` (hash_command's stdin, in order), those whose sha256 in its output is not
    `expect`'s (missing on the host, unreadable there, or none read), in order. Line by line: no
    list of the output's lines nor dict of its digests (at 1,000,000 files those were ~280 MB)."""
    return [rel for rel, got in zip(rels, _digests(stdout, len(rels)), strict=True) if got != expect[rel]]


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _digests(stdout: str, n: int) -> Iterator[str | None]:
    """The digest of each of hash_command's first `n` output lines (None: missing, or no
    line), cut one line at a time (its lines end in \\n: printf's and the hash tool's)."""
    at, end = 0, len(stdout)
    for _ in range(n):
        stop = stdout.find("\n", at)
        stop = end if stop < 0 else stop
        fields = stdout[at:stop].split()
        at = stop + 1
        yield fields[1] if len(fields) >= 2 and _DIGEST.fullmatch(fields[1]) else None


# the pull's host-side hashing, run in the dir: the sha256 of every file under it as
# `HASH  ./relative/path` (sha256sum escapes a name holding a backslash or line break), read by
# parse_manifest; one sha256sum per batch of files (a results dir of 100,000 small files)
SUMS_SCRIPT = "find . -type f -exec sha256sum -- {} +"


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c == "\\" and i + 1 < len(name):
            nxt = name[i + 1]
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_manifest(text: str) -> dict[str, str]:
    """Pure: `sha256sum` output (SUMS_SCRIPT's, run in the dir on `./path`s; a verified pull's
    record) -> {relative path: sha256}.

    sha256sum escapes a name holding a backslash or newline (and a carriage return, since
    coreutils 9.1) and marks the line with a leading backslash; every other character stays as
    it is in the name, so lines end at \n alone (str.splitlines() also cut at \r, \v, \f,
    \x1c-\x1e, U+0085, U+2028 and U+2029, which a name may hold: a pull was never verified).
    Every file counts (a pull refuses a host dir holding our partial dir).
    """
    out: dict[str, str] = {}
    for line in text.split("\n"):
        if not line.strip():
            continue
        escaped = line.startswith("\\")
        if escaped:
            line = line[1:]
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            name_parts = line.split(" ", 1)
            if len(name_parts) != 2 or len(name_parts[0]) != 64:
                continue
            digest, name = name_parts[0], name_parts[1].lstrip("*")
        if escaped:
            name = _unescape(name)
        name = name[2:] if name.startswith("./") else name
        out[name] = digest.lower()
    return out


def local_manifest(dest: Path, names: Iterable[str]) -> dict[str, str | None]:
    """sha256 of each named file under dest (None when it is missing or not a file): the
    receiving side of a pull."""
    out: dict[str, str | None] = {}
    for name in names:
        p = dest / name
        try:
            out[name] = sha256_file(p) if p.is_file() and not p.is_symlink() else None
        except OSError:
            out[name] = None
    return out


def compare_manifests(
    sent: Mapping[str, str], received: Mapping[str, str | None]
) -> tuple[list[str], list[str]]:
    """Pure: (missing, corrupt): the files the sending side hashed (`sent`: a pull's host
    manifest, an upload's local scan) that the receiving side lacks (None or absent in
    `received`), and those whose sha256 differs there; each sorted."""
    missing = sorted(n for n in sent if received.get(n) is None)
    corrupt = sorted(n for n, d in sent.items() if received.get(n) is not None and received[n] != d)
    return missing, corrupt
