"""`summary.json`: the stable, documented machine-readable result of one run (its JSON Schema,
draft 2020-12, ships as gpuonboard/data/summary.schema.json: `schema_path`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gpuonboard import __version__, atomicfile, masking
from gpuonboard.report.runs import (  # (write_atomic: used as jsonfile.write_atomic too)
    raw_file,
    safe_name,
    write_atomic,
)
from gpuonboard.report.strictjson import dumps
from gpuonboard.results import HostResult, HostVerdict, RunResult, host_rules

SCHEMA = "gpuonboard.summary/1"


def schema_path() -> Path:
    """The JSON Schema (draft 2020-12) of summary.json, shipped in the package."""
    return Path(__file__).resolve().parent.parent / "data" / "summary.schema.json"


def raw_outputs(r: HostResult) -> dict[str, tuple[bytes, int]]:
    """Each probe's stdout as bytes, with its exit code (written to raw/<host>/<probe>.txt and
    hashed into summary.json: the same bytes), after the lines of its stderr a reader reads
    (facts/stderr_lines.py: nvidia-smi's infoROM warning, df's unread mount), so that judging the
    folder again reads them as the run did. A secret of this run (a registry token a `files`
    probe printed) is masked, as everywhere else a report is written."""
    return raw_outputs_and_texts(r)[0]


def raw_outputs_and_texts(r: HostResult) -> tuple[dict[str, tuple[bytes, int]], dict[str, str]]:
    """raw_outputs(r), and by probe the text each output's bytes were encoded from, where
    decoding those bytes as the report's view does (UTF-8, errors replaced) gives that very
    text back: an ASCII text (a text with another character may hold a lone surrogate, which
    decodes to U+FFFD). The view then keeps that text (most often the probe's output itself,
    which the host's facts keep anyway) instead of a decoded copy of the bytes: ~200 kB a host."""
    outputs: dict[str, tuple[bytes, int]] = {}
    texts: dict[str, str] = {}
    if r.facts is None:
        return outputs, texts
    for name, out in r.facts.raw.items():
        if name in r.facts.private:
            outputs[name] = (private_placeholder(out.stdout), out.own_exit_code)
            continue
        text = masking.mask_written(_with_kept_stderr(out.stdout, out.stderr))
        outputs[name] = (text.encode("utf-8", "surrogateescape"), out.own_exit_code)
        if text.isascii():
            texts[name] = text
    return outputs, texts


def _with_kept_stderr(stdout: str, stderr: str) -> str:
    from gpuonboard.facts.stderr_lines import kept_stderr

    return kept_stderr(stderr) + stdout  # (before it, as a terminal shows them: its end kept as it was)


def write_raw(out: Path, results: Sequence[HostResult]) -> dict[str, bytes]:
    """Each probe's raw output to `out/raw/<host>/<probe>.txt` (raw_file: the bytes summary.json
    hashes); returns them by that relative file name, for the HTML report (view.context),
    which then need not read them back. Each host's folder is made once."""
    written: dict[str, bytes] = {}
    for r in results:
        written.update(write_outputs(out, r.host.name, raw_outputs(r)))
    return written


def write_outputs(out: Path, host: str, outputs: Mapping[str, tuple[bytes, int]]) -> dict[str, bytes]:
    """One host's raw outputs (`raw_outputs`) written under `out` (see write_raw)."""
    written: dict[str, bytes] = {}
    if not outputs:
        return written
    (out / "raw" / safe_name(host)).mkdir(parents=True, exist_ok=True)
    for probe, (data, _code) in outputs.items():
        name = raw_file(host, probe)
        _write_new(f"{out}/{name}", data)
        written[name] = data
    return written


# (a raw file as open(path, "wb") writes it: created or emptied, mode 0o666 less the umask,
# not inherited by child processes; without the buffered file object's fstat, isatty and lseek)
_RAW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_BINARY", 0)


def _write_new(path: str, data: bytes) -> None:
    """`data` written to `path` as `open(path, "wb").write(data)` writes it, in 3 system calls
    (open, write, close) of the 6 the file object makes: ~70 fewer a host's 23 raw files. A
    large output (a kernel log) goes atomicfile.PIECE bytes a write, as the reports do."""
    fd = os.open(path, _RAW_FLAGS, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[: atomicfile.PIECE]) :]
    finally:
        os.close(fd)


def private_placeholder(stdout: str) -> bytes:
    """What a report keeps of a private probe's output (a template's value, a secret perhaps):
    its size, never its text (nor its hash: a short password falls to a dictionary of hashes)."""
    size = len(stdout.encode("utf-8", "surrogateescape"))
    return f"(not kept: the output of a template's probe, which may hold a secret; {size} bytes)\n".encode()


def host_json(
    r: HostResult, verdict: HostVerdict, outputs: Mapping[str, tuple[bytes, int]] | None = None
) -> dict[str, Any]:
    """One host's record: status, rules (expected/actual/verdict), steps, facts digest, and its
    verdict as the run computed it. `outputs`: its raw_outputs(r), when already made."""
    rules = host_rules(r)
    if outputs is None:
        outputs = raw_outputs(r)
    return {
        "name": r.host.name,
        "address": r.host.address,
        "port": r.host.port,
        "vendor": r.host.vendor.id if r.host.vendor else None,
        "vendor_name": r.host.vendor.name if r.host.vendor else None,
        "status": r.status,
        "msg": r.msg,
        "host_key_fingerprint": r.fingerprint,
        "duration": round(r.duration, 3),
        "facts": r.facts.summary() if r.facts else None,
        "rules": rules,
        "steps": [s.to_json() for s in r.steps],
        "vendor_licence": r.host.vendor.licence if r.host.vendor else None,
        "vendor_icp": r.host.vendor.icp if r.host.vendor else None,
        "vendor_billing": asdict(r.host.vendor.billing) if r.host.vendor else None,
        "order": asdict(r.host.order),
        # the verdict, computed once (results.conclude): what `invoke report` and the exit code say
        "verdict": verdict.to_json(),
        "raw": {
            name: {
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
                "exit_code": code,
                # where api.write_reports puts the text (names made path-safe, one file per name)
                "file": raw_file(r.host.name, name),
            }
            for name, (data, code) in sorted(outputs.items())
        },
    }


def summary(
    run: RunResult,
    meta: dict[str, Any],
    prepared: Callable[[HostResult, HostVerdict], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """The whole document. `prepared`: a host's record made while the run went on (the same
    result and verdict: report/early.py), else None, when it is made here."""
    records = [(prepared(r, v) if prepared is not None else None) or host_json(r, v) for r, v in run]
    return {
        "schema": SCHEMA,
        "tool_version": __version__,
        **meta,
        "recap": run.recap(),
        "hosts": records,
    }


def write(
    path: Path, doc: dict[str, Any], dumped: Callable[[dict[str, Any]], str | None] | None = None
) -> None:
    """Write summary.json: one host per line (json's C encoder; indent= would use the slow
    pure-Python one, which costs more than a 50-host run's SSH work). `dumped`: a host record's
    line made before (report/early.py), else None."""
    hosts = doc.get("hosts", [])
    head = dumps({k: v for k, v in doc.items() if k != "hosts"})
    body = ",\n  ".join((dumped(h) if dumped is not None else None) or dumps(h) for h in hosts)
    text = head[:-1] + (', "hosts": [\n  ' + body + "\n]}" if hosts else ', "hosts": []}')
    write_atomic(path, text + "\n")
