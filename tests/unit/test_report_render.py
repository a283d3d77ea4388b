"""`invoke report`: rendering a recorded summary.json to html/md/json, escaping, evidence hashes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import results
from gpuonboard.errors import UsageError
from gpuonboard.report import render

REPO = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script> | x"


def _host(name: str, verdict: str, actual: str) -> dict[str, Any]:
    return {
        "name": name,
        "address": "10.0.0.1",
        "port": 22,
        "vendor": "wuhan-idc",
        "vendor_name": "Wuhan Optics Valley IDC",
        "vendor_licence": "B1.B2-20200000",
        "vendor_icp": "鄂ICP备00000000号",
        "vendor_billing": {"unit": "hour", "rate": 58.0, "currency": "CNY", "monthly_rate": 28000},
        "status": "failed" if verdict == "fail" else "ok",
        "msg": "m",
        "host_key_fingerprint": "SHA256:abc",
        "duration": 1.0,
        "facts": {
            "gpu_count": 8,
            "gpu_model": "NVIDIA A100-SXM4-80GB",
            "driver_version": "535.54.03",
            "cuda_version": "12.2",
            "interconnect": "nvlink",
            "cpu_cores": 64,
            "ram_bytes": 10**12,
        },
        "order": {
            "gpu_model": "A100 80GB SXM",
            "gpu_count": 8,
            "vram_bytes": 80 * 10**9,
            "cpu_cores": 64,
            "ram_bytes": 10**12,
            "data_disk": None,
            "interconnect": "nvlink",
            "min_driver": "535",
        },
        "rules": [
            {"name": "gpu_count", "expected": "8", "actual": actual, "verdict": verdict, "detail": ""},
            {"name": "ram", "expected": ">= 1.0 TB", "actual": "1.0 TB", "verdict": "pass", "detail": ""},
        ],
        "steps": [
            {
                "step": "acceptance",
                "status": "ok",
                "msg": "ok",
                "check_mode": False,
                "duration": 0.1,
                "diff": None,
                "checks": [],
            },
            {
                "step": "driver_compat",
                "status": "ok",
                "msg": "ok",
                "check_mode": False,
                "duration": 0.1,
                "diff": None,
                "checks": [
                    {
                        "name": "ngc_driver",
                        "expected": ">= 535",
                        "actual": "535.54.03",
                        "verdict": "pass",
                        "detail": "",
                    }
                ],
            },
        ],
        "raw": {},
    }


def _run(tmp_path: Path, hosts: list[dict[str, Any]], run_id: str = "20261129-000000-aaaa") -> Path:
    run = tmp_path / "reports" / run_id
    for h in hosts:
        data = b"nvidia-smi output <b>\n"
        (run / "raw" / h["name"]).mkdir(parents=True)
        (run / "raw" / h["name"] / "nvidia_smi.txt").write_bytes(data)
        h["raw"] = {
            "nvidia_smi": {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "exit_code": 0}
        }
    doc = {
        "schema": "gpuonboard.summary/1",
        "tool_version": "0.1.0",
        "run_id": run_id,
        "playbook": "provision",
        "playbook_path": "p",
        "inventory": "i",
        "check_mode": False,
        "started": "s",
        "finished": "f",
        "duration": 1.0,
        "exit_code": 0,
        "recap": {},
        "hosts": hosts,
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return run


def test_html_escapes_and_sha_matches(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "fail", HOSTILE)])
    out, digest, go = render.report(tmp_path / "reports", "20261129-000000-aaaa", "html", REPO)
    html = out.read_text(encoding="utf-8")
    assert not go and "NO-GO" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>" not in html.replace("<body>", "")  # the raw text is escaped too
    assert "鄂ICP备00000000号" in html and "B1.B2-20200000" in html and "SHA256:abc" in html
    assert "verified" in html and "Benchmarks" not in html  # no benchmark data: no section
    sha_file = out.with_name("report.html.sha256").read_text()
    assert sha_file == f"{hashlib.sha256(out.read_bytes()).hexdigest()}  report.html\n"
    assert digest in sha_file


def test_go_md_json_and_tampered_raw(tmp_path: Path) -> None:
    run = _run(tmp_path, [_host("gpu-1", "pass", "8")])
    out, _, go = render.report(tmp_path / "reports", "20261129-000000-aaaa", "md", REPO)
    md = out.read_text(encoding="utf-8")
    assert go and md.startswith("# GPU server acceptance report: GO")
    assert "| GPU count | 8 | 8 |" in md
    (run / "raw" / "gpu-1" / "nvidia_smi.txt").write_bytes(b"changed")
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "json", REPO)
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "GO"
    assert doc["hosts"][0]["raw_entries"][0]["status"] == "HASH MISMATCH"


def test_markdown_cell_escapes_pipes_and_html(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "fail", HOSTILE)])
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "md", REPO)
    md = out.read_text(encoding="utf-8")
    # Markdown escapes with backslashes: `\<` is a literal `<` to every CommonMark renderer
    assert "| \\<script>alert(1)\\</script> \\| x |" in md
    assert not re.search(r"(?<!\\)<script", md)


def test_markdown_is_not_html_escaped(tmp_path: Path) -> None:
    h = _host("gpu-1", "pass", "8")
    h["rules"][1]["actual"] = "1.0 TB & more, see *docs* [x](y) <b>"
    h["host_key_fingerprint"] = "SHA256:a|b`c"
    _run(tmp_path, [h])
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "md", REPO)
    md = out.read_text(encoding="utf-8")
    assert "&gt;" not in md and "&lt;" not in md and "&amp;" not in md
    assert "| ram | >= 1.0 TB | 1.0 TB & more, see \\*docs\\* \\[x\\](y) \\<b> | **PASS** |" in md
    assert "| host-key fingerprint | ``SHA256:a\\|b`c`` |" in md  # code span: only | escaped
    # html keeps HTML escaping
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "html", REPO)
    assert "&gt;= 1.0 TB" in out.read_text(encoding="utf-8")


def test_md_cell_and_code() -> None:
    assert render.md_cell("a_b _c d_ 2 * 3 &amp; & \\ x\ny") == "a_b \\_c d\\_ 2 \\* 3 \\&amp; & \\\\ x<br>y"
    assert render.md_code("`x`") == "`` `x` ``" and render.md_code("p|q") == "`p\\|q`"


def _warn_host(name: str) -> dict[str, Any]:
    h = _host(name, "pass", "8")
    h["rules"] += [
        {
            "name": "persistence_mode",
            "expected": "Enabled",
            "actual": "Disabled on GPU 0",
            "verdict": "warn",
            "detail": "enable it",
        },
        {
            "name": "pcie_link",
            "expected": "max",
            "actual": "GPU 0 Gen1 of Gen4",
            "verdict": "warn",
            "detail": "",
        },
    ]
    return h


def test_go_with_warnings_names_them_in_every_format(tmp_path: Path) -> None:
    _run(tmp_path, [_warn_host("gpu-1")])
    run = "20261129-000000-aaaa"
    out, _, go = render.report(tmp_path / "reports", run, "md", REPO)
    md = out.read_text(encoding="utf-8")
    assert go
    assert md.startswith("# GPU server acceptance report: GO with 2 warnings: persistence_mode, pcie_link\n")
    assert "every acceptance rule passed" not in md.lower()
    assert "but 2 check(s) warned" in md and "persistence_mode (Disabled on GPU 0)" in md
    assert "## gpu-1: GO with 2 warnings: persistence_mode, pcie_link" in md
    out, _, _ = render.report(tmp_path / "reports", run, "html", REPO)
    html = out.read_text(encoding="utf-8")
    assert '<span class="verdict go" id="verdict">GO</span>' in html
    assert '<strong class="warned" id="warned"> with 2 warnings: persistence_mode, pcie_link</strong>' in html
    assert "every acceptance rule passed" not in html.lower()
    out, _, _ = render.report(tmp_path / "reports", run, "json", REPO)
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "GO"  # the machine token stays
    assert doc["headline"] == "GO with 2 warnings: persistence_mode, pcie_link"
    assert [w["name"] for w in doc["warned_checks"]] == ["persistence_mode", "pcie_link"]
    assert "every acceptance rule passed" not in doc["explain"].lower()
    # Chinese
    out, _, _ = render.report(tmp_path / "reports", run, "md", REPO, lang="zh")
    assert "验收通过（GO），2 项警告：persistence_mode, pcie_link" in out.read_text(encoding="utf-8")
    # the `report` command's own line says it too (it printed a bare GO)
    (tmp_path / "reports" / "latest").symlink_to(run)
    done = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--format", "md"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GO with 2 warnings: persistence_mode, pcie_link  report: "), done.stdout


def test_go_warnings_of_several_hosts_and_plain_go(tmp_path: Path) -> None:
    _run(tmp_path, [_warn_host("gpu-1"), _host("gpu-2", "pass", "8")])
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "json", REPO)
    doc = json.loads(out.read_text())
    assert doc["headline"] == "GO with 2 warnings: gpu-1: persistence_mode, gpu-1: pcie_link"
    assert [h["headline_suffix"] for h in doc["hosts"]] == [
        " with 2 warnings: persistence_mode, pcie_link",
        "",
    ]
    _run(tmp_path, [_host("gpu-3", "pass", "8")], "20261129-000001-bbbb")
    out, _, _ = render.report(tmp_path / "reports", "20261129-000001-bbbb", "json", REPO)
    doc = json.loads(out.read_text())
    assert doc["headline"] == "GO" and doc["explain"].startswith("Every host reached, every acceptance rule")


def test_benchmark_chart_only_when_present(tmp_path: Path) -> None:
    h = _host("gpu-1", "pass", "8")
    h["benchmarks"] = [
        {"name": "matmul <bf16>", "value": 250.0, "unit": "TFLOPS", "reference": 312, "verdict": "pass"}
    ]
    _run(tmp_path, [h])
    out, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "html", REPO)
    html = out.read_text(encoding="utf-8")
    assert "<svg" in html and "matmul &lt;bf16&gt;" in html and "<script" not in html


def test_compare_and_missing_run(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")], "20261129-000000-aaaa")
    _run(tmp_path, [_host("gpu-2", "fail", "4")], "20261129-000001-bbbb")
    out, _, rows = render.compare(tmp_path / "reports", [], "md", REPO)
    assert [r["host"] for r in rows] == ["gpu-1", "gpu-2"]
    assert rows[0]["per_gpu_hour"] == "7.25 CNY" and rows[1]["verdict"] == "NO-GO"
    assert "throughput columns are empty" in out.read_text()
    with pytest.raises(UsageError, match="no summary.json"):
        render.report(tmp_path / "reports", "nope", "html", REPO)


def test_cli_report(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "reports" / "latest").symlink_to("20261129-000000-aaaa")
    done = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--format", "md"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reports" / "latest" / "report.md.sha256").is_file()
    bad = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--format", "pdf"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --format 'pdf' is not one of html, md, json."


def test_the_order_row_reads_ram_as_the_rule_does() -> None:
    """`ram: 1TB` is judged as 1 TiB; the order-vs-delivered row said `1.0 TB (931.3 GiB)`."""
    rows = render.order_rows({"order": {"ram_bytes": 10**12}, "facts": {}, "rules": []})
    ram = next(r for r in rows if "1.0" in str(r))
    assert "1.0 TiB" in str(ram) and "931.3 GiB" not in str(ram), ram


def test_a_project_report_template_cannot_run_code_here(tmp_path: Path) -> None:
    """A project's own templates/report/md.j2 renders in the immutable sandbox, as playbooks
    and templates/ do: reaching Python internals is one sentence naming it, and nothing runs."""
    from gpuonboard.errors import UsageError

    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    marker = tmp_path / "ran"
    (tmp_path / "templates" / "report").mkdir(parents=True)
    (tmp_path / "templates" / "report" / "md.j2").write_text(
        f"{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}\n"
    )
    want = r"^report template .*/templates/report/md\.j2: access to attribute .* is unsafe; fix the template"
    with pytest.raises(UsageError, match=want):
        render.report(tmp_path / "reports", "20261129-000000-aaaa", "md", tmp_path)
    assert not marker.exists()


def test_report_and_compare_take_the_newest_run_that_judged_the_box(tmp_path: Path) -> None:
    """`invoke report` without --run, and --compare, read the newest run whose acceptance step
    ran: a `sync` or `teardown` run after `check` judged no box (its report said NO-GO, "no
    acceptance rule was evaluated", and --compare showed no GPUs)."""
    import os

    _run(tmp_path, [_host("gpu-1", "pass", "8")], "20261129-000000-aaaa")
    later = _host("gpu-1", "pass", "8")
    later["rules"], later["facts"] = [], {}
    later["steps"] = [{"step": "dataset", "status": "changed", "msg": "sent", "checks": []}]
    newer = _run(tmp_path, [later], "20261129-000100-bbbb")
    os.utime(newer / "summary.json", (2_000_000_000, 2_000_000_000))
    (tmp_path / "reports" / "latest").symlink_to("20261129-000100-bbbb")
    out, _, go = render.report(tmp_path / "reports", None, "md", REPO)
    assert out.parent.name == "20261129-000000-aaaa" and go
    _, _, rows = render.compare(tmp_path / "reports", [], "md", REPO)
    assert [(r["host"], r["run"]) for r in rows] == [("gpu-1", "20261129-000000-aaaa")]
    # named, the sync run is still reported
    out, _, go = render.report(tmp_path / "reports", "20261129-000100-bbbb", "md", REPO)
    assert out.parent.name == "20261129-000100-bbbb" and not go


def test_a_failed_step_no_rule_explains_is_named_in_the_verdict() -> None:
    """prove's disk_speed that could not read the free space failed without a rule of its own,
    after another failed step: the verdict line and the report's reasons name it and why."""
    why = "cannot read the free space in /data: df -Pk printed '202G', not a number of KiB"
    host = {
        "status": "failed",
        "msg": "step smoke_train: training ran on the CPU",
        "rules": [{"name": "training_device", "verdict": "fail", "expected": "cuda", "actual": "cpu"}],
        "steps": [
            {
                "step": "smoke_train",
                "status": "failed",
                "msg": "training ran on the CPU",
                "checks": [
                    {"name": "training_device", "verdict": "fail", "expected": "cuda", "actual": "cpu"}
                ],
            },
            {"step": "disk_speed", "status": "failed", "msg": why, "checks": []},
            {"step": "network", "status": "ok", "msg": "ok", "checks": []},
        ],
    }
    verdict = results.judge(host)
    go, rest = render.host_headline(verdict)
    assert not go and rest == f", failed: training_device, step disk_speed ({why})", rest
    _, reasons = render.host_verdict(verdict)
    assert f"step disk_speed failed: {why}" in reasons
    assert not any("smoke_train failed" in r for r in reasons)  # (the host's message names it)


def test_compare_shows_ram_in_binary_units_as_everywhere_else(tmp_path: Path) -> None:
    host = _host("gpu-1", "pass", "8")
    host["facts"]["ram_bytes"] = 135_162_146_816  # what `free -b` says of a 126 GiB box
    _run(tmp_path, [host])
    _, _, rows = render.compare(tmp_path / "reports", [], "md", REPO)
    assert rows[0]["ram"] == "125.9 GiB", rows[0]
