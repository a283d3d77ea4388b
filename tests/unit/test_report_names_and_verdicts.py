"""QA round 4 (reports): evidence files of hosts whose names reduce alike stay apart, `--compare`
survives one corrupt run, and `check`/`provision` print each host's GO / NO-GO verdict line."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from gpuonboard import api
from gpuonboard.api import advise
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.report import render, terminal
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.base import Check, StepResult

REPO = Path(__file__).resolve().parents[2]
# names that all reduced to `__1` or `gpu_1` before: one host's files overwrote another's
COLLIDING = ["武汉1", "上海1", "gpu/1", "gpu_1", "gpu 1", ".gpu_1"]


def _result(name: str) -> HostResult:
    raw = {
        "nvidia_smi": ProbeOutput(f"nvidia-smi output of {name}\n", "", 0),
        "container:5c59f674b1": ProbeOutput(f"image of {name}\n", "", 0),
        "container_5c59f674b1": ProbeOutput(f"another probe of {name}\n", "", 0),
    }
    check = Check("gpu_count", "8", "8", "pass")
    return HostResult(
        Host(name=name, address="10.0.0.1"),
        "ok",
        "1 ok",
        [StepResult("acceptance", "ok", "ok", [check])],
        facts=parse_facts(raw),
    )


def test_hosts_whose_names_reduce_alike_keep_their_own_evidence(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    meta = {
        **dict.fromkeys(("playbook_path", "inventory", "started", "finished"), "-"),
        **{"run_id": "20261201-000000-aaaa", "playbook": "acceptance", "check_mode": False},
        **{"duration": 1.0, "exit_code": 0},
    }
    api.write_reports(conclude([_result(n) for n in COLLIDING]), meta, reports, "20261201-000000-aaaa")
    out, _, go = render.report(reports, "20261201-000000-aaaa", "json", REPO)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert go
    files = set()
    for host in doc["hosts"]:
        entries = {e["probe"]: e for e in host["raw_entries"]}
        for probe in ("nvidia_smi", "container:5c59f674b1", "container_5c59f674b1"):
            assert entries[probe]["status"] == "verified", (host["name"], entries[probe])
            files.add(entries[probe]["file"])
    assert len(files) == 3 * len(COLLIDING)  # one file per host and probe, none shared
    html, _, _ = render.report(reports, "20261201-000000-aaaa", "html", REPO)
    text = html.read_text(encoding="utf-8")
    for name in COLLIDING:
        assert f"nvidia-smi output of {name}" in text
    # names that were safe keep their old path
    summary = json.loads((reports / "20261201-000000-aaaa" / "summary.json").read_text(encoding="utf-8"))
    by_name = {h["name"]: h for h in summary["hosts"]}
    assert by_name["gpu_1"]["raw"]["nvidia_smi"]["file"] == "raw/gpu_1/nvidia_smi.txt"
    assert re.fullmatch(r"raw/__1-[0-9a-f]{8}/nvidia_smi\.txt", by_name["武汉1"]["raw"]["nvidia_smi"]["file"])


def test_an_older_run_without_recorded_files_is_still_read(tmp_path: Path) -> None:
    # a run written before `raw.<probe>.file` existed: names reduced the old way, no suffix
    run = tmp_path / "reports" / "20261101-000000-aaaa"
    data = b"old nvidia-smi\n"
    (run / "raw" / "__1").mkdir(parents=True)
    (run / "raw" / "__1" / "container_5c59f674b1.txt").write_bytes(data)
    rec = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "exit_code": 0}
    host = {"name": "武汉1", "status": "ok", "msg": "", "rules": [], "raw": {"container:5c59f674b1": rec}}
    doc = {"schema": "gpuonboard.summary/1", "run_id": "x", "hosts": [host]}
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    entry = render.context(doc, run)["hosts"][0]["raw_entries"][0]
    assert entry["status"] == "verified" and entry["file"] == "raw/__1/container_5c59f674b1.txt"
    # and the names this version writes differ from that old, lossy one
    assert render.safe_name("武汉1") != render.safe_name("上海1")


def test_safe_name_is_injective_and_keeps_safe_names() -> None:
    for name in ("demo-a100", "nvidia_smi", "gpu.1", "rack7-node-0001"):
        assert render.safe_name(name) == name
    names = [*COLLIDING, "gpu-1", "gpu_1-" + render.safe_name("gpu/1").rsplit("-", 1)[1], "", ".", ".."]
    reduced = [render.safe_name(n) for n in names]
    assert len(set(reduced)) == len(names), reduced
    assert all(re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", r) for r in reduced)
    assert render.safe_name("武汉1") == render.safe_name("武汉1")  # stable
    assert len(render.safe_name("x" * 400)) <= 130 and len(render.safe_name("武" * 400)) <= 130


def _summary(run: Path, host: str) -> None:
    run.mkdir(parents=True)
    steps = [{"step": "acceptance", "status": "ok"}]
    doc = {
        "schema": "gpuonboard.summary/1",
        "run_id": run.name,
        "hosts": [{"name": host, "rules": [], "steps": steps}],
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")


def test_compare_skips_a_corrupt_run_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    _summary(reports / "20261201-000000-aaaa", "gpu-1")
    _summary(reports / "20261201-000001-bbbb", "gpu-2")
    bad = reports / "20261201-000002-cccc" / "summary.json"
    bad.parent.mkdir()
    bad.write_text('{"schema": "gpuonboard.summary/1", "hosts": [', encoding="utf-8")  # cut short
    assert advise.report(reports, tmp_path, fmt="md", compare=True) == 0
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and str(bad) in err
    assert "gpu-1" in (reports / "compare" / "compare.md").read_text(encoding="utf-8")
    # named runs: the corrupt one is left out too
    warnings: list[str] = []
    _, _, rows = render.compare(
        reports,
        ["20261201-000000-aaaa", "20261201-000001-bbbb", "20261201-000002-cccc"],
        "md",
        REPO,
        warnings,
    )
    assert [r["host"] for r in rows] == ["gpu-1", "gpu-2"] and len(warnings) == 1
    # fewer than two readable runs left: a clear error
    with pytest.raises(UsageError, match="needs two readable runs.*20261201-000002-cccc"):
        render.compare(reports, ["20261201-000000-aaaa", "20261201-000002-cccc"], "md", REPO)


def _checked(name: str, *checks: Check) -> HostResult:
    failed = any(c.verdict == "fail" for c in checks)
    status = "failed" if failed else "ok"
    return HostResult(
        Host(name=name, address="10.0.0.1"),
        status,
        "m",
        [StepResult("acceptance", status, "m", list(checks))],
    )


def test_terminal_prints_one_verdict_line_per_host() -> None:
    good = _checked(
        "h1",
        Check("gpu_count", "8", "8", "pass"),
        Check("persistence_mode", "Enabled", "Disabled", "warn"),
        Check("mig_mode", "Disabled", "Enabled", "warn"),
    )
    bad = _checked("h[2]", Check("gpu_count", "8", "4", "fail"), Check("vram", "80", "40", "fail"))
    plain = HostResult(Host(name="h3", address="10.0.0.3"), "ok", "1 ok", [StepResult("cmd", "ok", "ok")])
    con = Console(record=True, width=200)
    terminal.print_results(conclude([good, bad, plain]), con)
    lines = [line for line in con.export_text().splitlines() if line.startswith("verdict for")]
    assert lines == [
        "verdict for h1: GO with 2 warnings: persistence_mode, mig_mode",
        "verdict for h[2]: NO-GO, failed: gpu_count, vram",
    ]
    con = Console(record=True, width=200)
    terminal.print_results(conclude([good, bad]), con, lang="zh")
    text = con.export_text()
    assert "h1 的验收结论：验收通过（GO），2 项警告：persistence_mode, mig_mode" in text
    assert "h[2] 的验收结论：验收不通过（NO-GO），不通过：gpu_count, vram" in text


def test_check_prints_the_verdict_line_unless_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuonboard.inventory import Inventory
    from gpuonboard.runner import playbook

    host = Host(name="h1", address="10.0.0.1")

    def run(hosts: object, book: object, inv: object, options: object) -> list[HostResult]:
        return [_checked("h1", Check("mig_mode", "Disabled", "Enabled", "warn"))]

    class NoPreconnect:
        def __init__(self, hosts: object) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(api, "run", run)
    monkeypatch.setattr(api, "Preconnect", NoPreconnect)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "b.yml").write_text("steps:\n  - step: acceptance\n")
    inv = Inventory(tmp_path / "hosts.yml", {"h1": host}, {}, {})
    book = playbook.load(tmp_path / "b.yml")
    api.execute(inv, [host], book, api.Settings(project=tmp_path, progress=False))
    assert "verdict for h1: GO with 1 warning: mig_mode" in capsys.readouterr().out
    api.execute(inv, [host], book, api.Settings(project=tmp_path, quiet=True))
    assert "verdict" not in capsys.readouterr().out
