"""The paths `invoke facts` is given, as files, and a gpuonboard run's own folders among them: a
host's `raw/<host>/` folder is read by its run's summary.json (each file as the probe it records),
and the run's folder itself, or its `raw/`, is refused with the host folder to give instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from gpuonboard.errors import UsageError

SUMMARY_SCHEMA_PREFIX = "gpuonboard.summary/"
MAX_SUMMARY_BYTES = 64 * 2**20


def expand(paths: Sequence[str]) -> list[Path]:
    """`a.xml,b.txt`, directories (every file inside) and globs -> files."""
    return [path for path, _ in expand_marked(paths)]


def expand_marked(paths: Sequence[str]) -> list[tuple[Path, bool]]:
    """As expand, each file with whether it came from a folder or a glob (True) rather than being
    named itself: a folder's file that cannot be read is one missing answer (api/offline.py), a
    file the user named that cannot be read is a bad input."""
    out: list[tuple[Path, bool]] = []
    for item in paths:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            path = Path(part)
            if path.is_dir():
                _refuse_run_folder(path, part)
                files = sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
                if not files:  # judged nothing, it exited 0 with an empty table
                    raise UsageError(
                        f"{part}: no saved command output in this directory (it holds no files)."
                    )
                out += [(f, True) for f in files]
            elif any(ch in part for ch in "*?[") and not path.exists():
                # subfolders are skipped, as in a directory
                matches = sorted(f for f in Path().glob(part) if not f.is_dir())
                if not matches:
                    raise UsageError(f"{part}: no file matches this pattern.")
                out += [(f, True) for f in matches]
            else:
                out.append((path, False))
    return out


def _run_summary(run_dir: Path) -> dict[str, Any] | None:
    """The summary.json of a gpuonboard run directory (None: there is none, or it is not ours)."""
    path = run_dir / "summary.json"
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SUMMARY_BYTES + 1)
        doc = json.loads(data) if len(data) <= MAX_SUMMARY_BYTES else None
    except (OSError, ValueError):
        return None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(schema, str) or not schema.startswith(SUMMARY_SCHEMA_PREFIX):
        return None
    assert isinstance(doc, dict)
    return doc


def _raw_record_file(host: str, probe: str, rec: Mapping[str, Any]) -> PurePosixPath:
    """Where the run wrote a probe's raw output (`raw/<host>/<probe>.txt`, as its summary.json
    records it; a run of before that record: the names reduced as that version did)."""
    from gpuonboard.report.render import legacy_safe_name

    file = rec.get("file")
    if isinstance(file, str):
        return PurePosixPath(file)
    return PurePosixPath("raw", legacy_safe_name(host), f"{legacy_safe_name(probe)}.txt")


def raw_dir_manifest(folder: Path) -> dict[str, tuple[str, int]] | None:
    """For a host's folder of a gpuonboard run (`reports/<run>/raw/<host>/`, recognised by the
    run's own summary.json, whose `raw` records name the files in it): file name -> (probe,
    exit code). None for any other folder (a user's own: each file is judged by its content)."""
    try:
        real = folder.resolve()
    except (OSError, RuntimeError):
        return None
    if real.parent.name != "raw":
        return None
    doc = _run_summary(real.parent.parent)
    hosts = doc.get("hosts") if doc is not None else None
    out: dict[str, tuple[str, int]] = {}
    for host in hosts if isinstance(hosts, list) else ():
        records = host.get("raw") if isinstance(host, dict) else None
        for probe, rec in records.items() if isinstance(records, dict) else ():
            if not isinstance(rec, dict):
                continue
            parts = _raw_record_file(str(host.get("name", "")), str(probe), rec).parts
            if len(parts) == 3 and parts[0] == "raw" and parts[1] == real.name:
                code = rec.get("exit_code")
                out[parts[2]] = (str(probe), code if type(code) is int else 0)
    return out or None


def _run_hosts(doc: Mapping[str, Any]) -> list[str]:
    """The host folders under raw/ that a run's summary.json records, in its order."""
    names: list[str] = []
    for host in doc.get("hosts") or ():
        records = host.get("raw") if isinstance(host, dict) else None
        for probe, rec in records.items() if isinstance(records, dict) else ():
            if isinstance(rec, dict):
                parts = _raw_record_file(str(host.get("name", "")), str(probe), rec).parts
                if len(parts) == 3 and parts[1] not in names:
                    names.append(parts[1])
    return names


def _refuse_run_folder(path: Path, given_as: str) -> None:
    """A gpuonboard run's folder (`reports/<run>/`) or its `raw/` is not one box's outputs: say
    which folder to give (summary.json was 'not a recognised command output')."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return
    doc = _run_summary(real)
    if doc is not None:
        run = real
    elif real.name == "raw" and (doc := _run_summary(real.parent)) is not None:
        run = real.parent
    else:
        return
    hosts = _run_hosts(doc)
    example = (
        str(Path(given_as) / "raw" if run == real else Path(given_as))
        + f"/{hosts[0] if hosts else '<host>'}/"
    )
    shown = f" (its hosts: {', '.join(hosts)})" if hosts else ""
    raise UsageError(
        f"{given_as}: this is a gpuonboard run's folder, not one box's saved outputs; give one host's"
        f" folder of it{shown}, e.g. {example}"
    )


def skipped_note(folder: Path, probes: Sequence[str]) -> str:
    """The note that names the outputs of a run's host folder that offline judging does not read."""
    many = len(probes) != 1
    return (
        f"{folder}: {len(probes)} saved output{'s' if many else ''} of this gpuonboard run skipped,"
        f" offline judging does not read {'them' if many else 'it'} ({', '.join(sorted(probes))})."
    )
