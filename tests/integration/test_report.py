"""`invoke report` tells the truth about what the run judged, over real runs on test hosts.

- A run whose acceptance step did not run (`--skip acceptance`) compared the box with no
  order: before, a mis-delivered box (4 of 8 GPUs, 2 GB of 1 TB RAM, PCIe for NVLink) got
  `GO with 2 warnings` in the report and on the terminal, since its health rules passed.
- The Markdown report had no steps table (the HTML one has).
- `--compare --runs` of runs that judged differently (see its test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def _latest_run(project: Project) -> str:
    return (project.root / "reports" / "latest").resolve().name


def _json_report(project: Project, run: str) -> dict[str, Any]:
    r = project.cli("report", "--run", run, "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc: dict[str, Any] = json.loads((project.root / "reports" / run / "report.json").read_text())
    return doc


def test_a_run_that_skipped_acceptance_has_no_verdict_for_a_misdelivered_box(
    project: Project, pool: TestHostPool
) -> None:
    project.write_inventory({"misdelivered": host_entry(pool.hosts["misdelivered"], pool)})
    r = project.cli("provision", "--playbook", "acceptance", "--skip", "acceptance", "--host", "misdelivered")
    assert r.returncode == 0, r.stdout + r.stderr  # gpu_health and driver_compat passed
    assert "GO" not in r.stdout, r.stdout  # no verdict line: the box was compared with nothing
    run = _latest_run(project)
    doc = _json_report(project, run)
    # compared with no order: neither a GO nor a NO-GO of the box, as the exit code 0 says
    assert doc["verdict"] == "no verdict", doc["headline"]
    (host,) = doc["hosts"]
    assert host["go"] is False and "no acceptance rule was evaluated" in host["reasons"]
    assert host["verdict_word"] == "no verdict"
    md = project.cli("report", "--run", run, "--format", "md")
    assert md.returncode == 0 and "no verdict" in md.stdout and "NO-GO" not in md.stdout, md.stdout
    text = (project.root / "reports" / run / "report.md").read_text(encoding="utf-8")
    assert text.startswith("# GPU server acceptance report: no verdict\n"), text[:200]
    assert "- no acceptance rule was evaluated" in text
    # the Markdown report lists the steps that ran (it had no steps table: what ran, and what
    # did not, could not be told from it)
    steps = text.split("### Steps\n", 1)[1].split("###", 1)[0]
    assert "| gpu_health | ok |" in steps and "| driver_compat | ok |" in steps, steps
    assert "| acceptance |" not in steps
    # the same box judged: NO-GO for the order's own reasons, and the line says so
    r = project.cli("check", "--host", "misdelivered")
    assert r.returncode == 1 and "verdict for misdelivered: NO-GO, failed: gpu_count" in r.stdout, r.stdout


def test_a_correct_box_stays_go_and_a_prove_like_run_prints_no_go_line(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    """The check is not stricter than it should be: the correct box is GO when judged; a run of
    other checks only (here gpu_health) passes without claiming a GO for the order."""
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    r = project.cli("check", "--host", "good")
    line = " ".join(r.stdout.split())
    assert r.returncode == 0 and "verdict for good: GO with 2 warnings" in line, r.stdout
    # (memory_repair: the replayed -q -x has MIG on, its row remapper N/A)
    assert "; 3 unverified: memory_repair, nvlink_errors, fabric_manager" in line, r.stdout
    assert _json_report(project, _latest_run(project))["verdict"] == "GO"
    r = project.cli("provision", "--playbook", "acceptance", "--only", "gpu_health", "--host", "good")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verdict for good" not in r.stdout, r.stdout
    # judged against no order: "no verdict", as its exit code 0 says (it said NO-GO)
    assert _json_report(project, _latest_run(project))["verdict"] == "no verdict"
    assert project.summary()["hosts"][0]["verdict"]["word"] == "no verdict"


def test_compare_of_runs_says_what_each_judged_and_names_a_swapped_box(
    project: Project, pool: TestHostPool
) -> None:
    """`report --compare --runs A,B,C`: before, a run that judged nothing (here gpu_health
    only) showed the box as NO-GO, the page did not show what each host was ordered (a GO is
    against its own order), and two different machines behind one host name were compared as
    one box without a word."""
    good, bad = pool.hosts["good"], pool.hosts["misdelivered"]
    project.write_inventory({"box": host_entry(good, pool)})
    assert project.cli("check", "--host", "box").returncode == 0
    first = _latest_run(project)
    r = project.cli("provision", "--playbook", "acceptance", "--only", "gpu_health", "--host", "box")
    assert r.returncode == 0, r.stdout + r.stderr
    health_only = _latest_run(project)
    project.write_inventory({"box": host_entry(bad, pool)})  # the vendor swapped the box
    assert project.cli("check", "--host", "box").returncode == 1
    swapped = _latest_run(project)
    r = project.cli("report", "--compare", "--runs", f"{first},{health_only},{swapped}", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((project.root / "reports" / "compare" / "compare.json").read_text())
    rows = {row["run"]: row for row in doc["rows"]}
    assert rows[first]["verdict"] == "GO" and rows[first]["verdict_detail"].startswith("with 2 warnings")
    assert rows[health_only]["verdict"] == "not judged"
    assert rows[swapped]["verdict"] == "NO-GO"
    # (a NO-GO names what could not be verified too: the 4-GPU box's links of the missing GPUs)
    detail = "failed: gpu_count, ram, interconnect; 3 unverified: memory_repair, nvlink_links, nvlink_errors"
    assert rows[swapped]["verdict_detail"] == detail
    assert {row["ordered"] for row in doc["rows"]} == {"8 x A100 80GB SXM"}
    assert rows[swapped]["gpus"] == "4 x NVIDIA A100-SXM4-80GB"
    (warning,) = doc["warnings"]
    assert warning.startswith("host box presented different host keys in the compared runs (")
    assert bad.fingerprint in warning and good.fingerprint in warning
    assert f"warning: {warning}" in r.stderr
    r = project.cli("report", "--compare", "--runs", f"{first},{swapped}", "--format", "md")
    md = (project.root / "reports" / "compare" / "compare.md").read_text(encoding="utf-8")
    assert "> **warning:** host box presented different host keys" in md
    assert f"| NO-GO {detail} | 8 x A100 80GB SXM | 4 x NVIDIA" in md, md
