"""Raw evidence that no longer backs the verdicts (a raw file changed or deleted since the run)
is named at the top of the HTML / Markdown / JSON report, not only in the raw-outputs table at
the bottom of each host's section (before: a GO headline with nothing said above it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gpuonboard.report import render

REPO = Path(__file__).resolve().parents[3]


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "reports" / "20261201-000000-aaaa"
    (run / "raw" / "h1").mkdir(parents=True)
    raw = {}
    for probe, data in (("nvidia_smi", b"<gpus/>\n"), ("free", b"Mem: 1\n"), ("lscpu", b"CPU(s): 64\n")):
        (run / "raw" / "h1" / f"{probe}.txt").write_bytes(data)
        raw[probe] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "exit_code": 0,
            "file": f"raw/h1/{probe}.txt",
        }
    host = {
        "name": "h1",
        "address": "10.0.0.1",
        "port": 22,
        "vendor": None,
        "vendor_name": None,
        "host_key_fingerprint": "SHA256:abc",
        "facts": None,
        "status": "ok",
        "msg": "1 ok",
        "rules": [{"name": "gpu_count", "expected": "8", "actual": "8", "verdict": "pass", "detail": ""}],
        "steps": [{"step": "acceptance", "status": "ok", "msg": "ok", "duration": 0.1, "checks": []}],
        "raw": raw,
    }
    doc = {
        "schema": "gpuonboard.summary/1",
        "tool_version": "0.1.0",
        "run_id": run.name,
        "playbook": "acceptance",
        "inventory": "inventory",
        "check_mode": True,
        "started": "s",
        "finished": "f",
        "duration": 0.3,
        "hosts": [host],
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return run


def test_changed_and_missing_raw_files_are_named_at_the_top(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out, _, go = render.report(tmp_path / "reports", run.name, "md", REPO)
    assert go and "warning" not in out.read_text(encoding="utf-8")  # all verified: nothing said
    (run / "raw" / "h1" / "nvidia_smi.txt").write_bytes(b"<gpus>8 x H100</gpus>\n")
    (run / "raw" / "h1" / "free.txt").unlink()
    out, _, go = render.report(tmp_path / "reports", run.name, "md", REPO)
    md = out.read_text(encoding="utf-8")
    head = md.split("\n## h1", 1)[0]
    assert "> **warning:** h1: nvidia_smi (raw/h1/nvidia_smi.txt): HASH MISMATCH" in head, head
    assert "> **warning:** h1: free (raw/h1/free.txt): file missing" in head, head
    assert "lscpu" not in head
    out, _, _ = render.report(tmp_path / "reports", run.name, "html", REPO)
    html = out.read_text(encoding="utf-8")
    top = html.split('<section class="host">', 1)[0]
    assert "h1: nvidia_smi (raw/h1/nvidia_smi.txt): HASH MISMATCH" in top
    out, _, _ = render.report(tmp_path / "reports", run.name, "html", REPO, lang="zh")
    assert (
        "h1: free (raw/h1/free.txt): " in out.read_text(encoding="utf-8").split('<section class="host">')[0]
    )
    out, _, _ = render.report(tmp_path / "reports", run.name, "json", REPO)
    assert json.loads(out.read_text())["warnings"] == [
        "h1: free (raw/h1/free.txt): file missing",
        "h1: nvidia_smi (raw/h1/nvidia_smi.txt): HASH MISMATCH",
    ]
