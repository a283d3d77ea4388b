"""Report files and runs: a host or probe name as one path component (`safe_name`), the raw
output files' names, writing a file whole (`write_atomic`, `write_with_sha`), and loading a run:
the run directory (`run_dir`), its summary.json checked for the shape a report reads
(`load_summary`, `shape_problem`), whether a host record was judged."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gpuonboard import atomicfile, masking, results
from gpuonboard.errors import UsageError

FORMATS = ("html", "md", "json")


_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_HASHED = re.compile(r"-[0-9a-f]{8}$")  # the suffix safe_name appends
_SAFE_MAX = 120  # characters kept before the hash (a path component may hold 255 bytes)


def legacy_safe_name(name: str) -> str:
    """The path component of runs whose summary.json records no `raw.<probe>.file`: the name
    reduced to `[A-Za-z0-9._-]`, which is not injective (`武汉1` and `上海1` were both `__1`);
    used only to read those older runs' `raw/` files."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")
    return cleaned or "_"


@functools.lru_cache(maxsize=4096)  # (a host's ~23 probe names and its own, ~90 times a host)
def safe_name(name: str) -> str:
    """A host or probe name as a single path component (`raw/<host>/<probe>.txt`), one per name.

    A name of `[A-Za-z0-9._-]` (not starting with `.`) stays as it is. Any other name is
    reduced to those characters and gets `-` and 8 hex digits of the sha256 of the original:
    `武汉1` -> `__1-a1b2c3d4`, `gpu/1` and `gpu 1` differ. A safe name that already ends like
    such a suffix is suffixed too, so a reduced name never equals another name kept as is."""
    if _SAFE.fullmatch(name) and len(name) <= _SAFE_MAX and not _HASHED.search(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{legacy_safe_name(name)[:_SAFE_MAX]}-{digest}"


def write_atomic(path: Path, text: str) -> None:
    """Temp file + rename, so a reader never sees half a report. A file name that is not UTF-8
    (its bytes kept as lone surrogates) is written as a `\\udcXX` escape: valid JSON that reads
    back to the same name, and legible in a text report. No secret's value is written (a
    failed login's stderr line in a message): masking.mask_written. (Here rather than in
    jsonfile, which writes summary.json with it: jsonfile imports this module.)"""
    atomicfile.write_text(path, masking.mask_written(text), errors="backslashreplace")


def raw_file(host: str, probe: str) -> str:
    """Where a probe's raw output lies inside the run directory: `raw/<host>/<probe>.txt`."""
    return f"raw/{safe_name(host)}/{safe_name(probe)}.txt"


def sha256_bytes(data: bytes) -> str:
    """Hex sha256."""
    return hashlib.sha256(data).hexdigest()


def write_with_sha(path: Path, text: str | Sequence[str]) -> str:
    """Write the report and `<file>.sha256` beside it (sha256sum -c format); return the hex digest.
    `text`: the report, or its pieces in order (render.render_pieces: a fleet's HTML report,
    13 MB at 50 hosts, is then never one string nor one bytes object: each piece is encoded,
    hashed and written in turn, the same bytes; joined first where a secret is alive, which
    could span two pieces).

    A write that fails (a full disk) is one sentence naming the file (exit 2), not an internal
    error "rerun with --debug and report it"; the report is written whole or not at all."""
    sha_path = path.with_name(path.name + ".sha256")
    pieces = [text] if isinstance(text, str) else list(text)
    if len(pieces) > 1 and masking.any_live_secret():
        pieces = ["".join(pieces)]
    digest = hashlib.sha256()
    try:
        with atomicfile.replacing(path) as f:
            for data in _encoded(pieces):
                digest.update(data)
                atomicfile.write_pieces(f, data)
        write_atomic(sha_path, f"{digest.hexdigest()}  {path.name}\n")
    except OSError as exc:
        raise UsageError(
            f"cannot write {path} ({exc.strerror or exc}); free space there (or fix its permissions)"
            " and run `invoke report` again."
        ) from None
    return digest.hexdigest()


_BATCH = 1 << 16  # short pieces (the page's head, a table's cells) are encoded together up to this


def _encoded(pieces: Sequence[str]) -> Iterator[bytes]:
    """The pieces' text masked (mask_written) and encoded as the report's file holds it (UTF-8, a
    lone surrogate as its backslash escape: a character at a time, so pieces encode as their
    join does), short pieces together."""
    batch: list[str] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= _BATCH:
            yield masking.mask_written("".join(batch)).encode("utf-8", "backslashreplace")
            batch, size = [], 0
    if batch:
        yield masking.mask_written("".join(batch)).encode("utf-8", "backslashreplace")


# ---------------------------------------------------------------- loading


def judged(host: dict[str, Any]) -> bool:
    """Whether a host record of summary.json holds an acceptance verdict (results.judged)."""
    return results.judged(host)


def newest_acceptance_run(reports_dir: Path) -> str | None:
    """The newest run under reports_dir whose summary.json judged a box, or None."""
    paths = sorted(
        (p for p in reports_dir.glob("*/summary.json") if not p.parent.is_symlink()),
        key=lambda p: (p.stat().st_mtime, p.parent.name),
        reverse=True,
    )
    for p in paths:
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and any(judged(h) for h in doc.get("hosts") or []):
            return p.parent.name
    return None


def run_dir(reports_dir: Path, run: str | None) -> Path:
    """reports/<run>/ (default: the newest run that judged a box, else `latest`), which must
    hold summary.json."""
    name = run or newest_acceptance_run(reports_dir) or "latest"
    if "/" in name or name in ("", ".", ".."):
        raise UsageError(f"--run {name!r} is not a run id like 20261129-175134-c38a.")
    path = reports_dir / name
    if not (path / "summary.json").is_file():
        runs = sorted(
            p.name for p in reports_dir.glob("*/summary.json") for p in [p.parent] if not p.is_symlink()
        )
        hint = f"; known runs: {', '.join(runs[-5:])}" if runs else "; run `invoke provision` first"
        raise UsageError(f"no summary.json in {path}{hint}.")
    return path


# the host fields the report reads, and the JSON type each must have when present and not
# null: (its type, the type of each item or value or None, the words for both)
_HOST_SHAPE: dict[str, tuple[type, type | None, str]] = {
    "facts": (dict, None, "an object"),
    "order": (dict, None, "an object"),
    "vendor_billing": (dict, None, "an object"),
    "rules": (list, dict, "a list of objects"),
    "steps": (list, dict, "a list of objects"),
    "benchmarks": (list, dict, "a list of objects"),
    "raw": (dict, dict, "an object of objects"),
}


def shape_problem(doc: dict[str, Any]) -> str | None:
    """What makes a parsed summary.json unusable for a report (a damaged or hand-edited file):
    `hosts` not a list of objects, or a host field the report reads of another JSON type; None
    when the shape is right."""
    hosts = doc.get("hosts")
    if hosts is None:
        return None
    if not isinstance(hosts, list):
        return "`hosts` is not a list of host records"
    for i, h in enumerate(hosts, 1):
        if not isinstance(h, dict):
            return f"host record {i} is not an object"
        for key, (kind, item, what) in _HOST_SHAPE.items():
            value = h.get(key)
            if value is None:
                continue
            items = value.values() if isinstance(value, dict) else value
            if not isinstance(value, kind) or (
                item is not None and not all(isinstance(v, item) for v in items)
            ):
                return f"host {h.get('name', i)!r} has a `{key}` that is not {what}"
        rate = (h.get("vendor_billing") or {}).get("rate")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float)):
            return f"host {h.get('name', i)!r} has a `vendor_billing.rate` that is not a number"
    return None


def load_summary(path: Path) -> dict[str, Any]:
    """Parse a summary.json (UsageError when it is not one, or is damaged: `shape_problem`)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable summary.json ({exc}).") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpuonboard.summary/"):
        raise UsageError(f"{path}: not a gpuonboard summary.json (no schema gpuonboard.summary/1).")
    problem = shape_problem(doc)
    if problem:
        raise UsageError(
            f"{path}: {problem}; the file is damaged (or not written by gpuonboard): rerun"
            " `invoke check` for that host to get a new one."
        )
    return doc
