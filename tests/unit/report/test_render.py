"""`invoke report`: rendering a recorded summary.json to html/md/json, escaping, evidence hashes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gpuonboard import api, results
from gpuonboard.api import advise
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.report import render, terminal
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.base import Check, StepResult

from .summaries import _host, _run

REPO = Path(__file__).resolve().parents[3]
HOSTILE = "<script>alert(1)</script> | x"


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


# `invoke report` on a damaged or hand-edited summary.json: one sentence naming the file and
# the field, exit 2 (before: `internal error (AttributeError ...)`, exit 70).


def _doc(**host: Any) -> dict[str, Any]:
    record = {
        "name": "h1",
        "status": "ok",
        "msg": "m",
        "rules": [{"name": "gpu_count", "expected": "8", "actual": "8", "verdict": "pass"}],
        "steps": [{"step": "acceptance", "status": "ok", "msg": "ok", "checks": []}],
        "raw": {},
        **host,
    }
    return {"schema": "gpuonboard.summary/1", "run_id": "r", "hosts": [record]}


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ({"raw": ["nvidia_smi"]}, "host 'h1' has a `raw` that is not an object of objects"),
        ({"raw": {"nvidia_smi": "6a17"}}, "host 'h1' has a `raw` that is not an object of objects"),
        ({"rules": ["gpu_count"]}, "host 'h1' has a `rules` that is not a list of objects"),
        ({"facts": "8 x A100"}, "host 'h1' has a `facts` that is not an object"),
        ({"steps": {"acceptance": "ok"}}, "host 'h1' has a `steps` that is not a list of objects"),
        ({"vendor_billing": {"rate": "58"}}, "host 'h1' has a `vendor_billing.rate` that is not a number"),
    ],
)
def test_a_damaged_host_record_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], host: dict[str, Any], problem: str
) -> None:
    run = tmp_path / "reports" / "20261201-000000-aaaa"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(_doc(**host)), encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        advise.report(tmp_path / "reports", REPO, run="20261201-000000-aaaa", fmt="html")
    assert str(exc.value) == (
        f"{run / 'summary.json'}: {problem}; the file is damaged (or not written by gpuonboard):"
        " rerun `invoke check` for that host to get a new one."
    )


def test_hosts_that_are_not_records_and_a_sound_file(tmp_path: Path) -> None:
    assert render.shape_problem({"hosts": "h1"}) == "`hosts` is not a list of host records"
    assert render.shape_problem({"hosts": [1]}) == "host record 1 is not an object"
    sound = _doc(facts=None, order=None, benchmarks=[], vendor_billing={"rate": 58.0})
    assert render.shape_problem(sound) is None
    run = tmp_path / "reports" / "20261201-000000-aaaa"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(sound), encoding="utf-8")
    _, _, go = render.report(tmp_path / "reports", None, "md", REPO)
    assert go


# `invoke report` on a summary.json whose benchmark figures are not numbers (hand-edited, or
# written by another tool): the report still renders, the chart draws only real numbers.

RUN = "20261129-000000-aaaa"


def _report(cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--run", RUN]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_a_reference_that_is_not_a_number_renders(tmp_path: Path) -> None:
    """It was `error: internal error (ValueError: could not convert string to float: 'n/a')`."""
    h = _host("gpu-1", "pass", "8")
    h["benchmarks"] = [
        {"name": "matmul", "value": 700, "unit": "TFLOPS", "reference": "n/a", "verdict": "pass"},
        {"name": "copy", "value": 3000, "unit": "GB/s", "reference": 3350, "verdict": "pass"},
    ]
    run = _run(tmp_path, [h])
    r = _report(tmp_path)
    assert r.returncode == 0, r.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count("<rect") == 3  # two values, one reference (3350); none for "n/a"
    assert "reference 3350" in svg


def test_nan_and_infinite_figures_are_left_out_of_the_chart(tmp_path: Path) -> None:
    """Python's json reads NaN and Infinity: the chart drew `width="nan"` bars, and an infinite
    value scaled every other bar to nothing."""
    h = _host("gpu-1", "pass", "8")
    h["benchmarks"] = [
        {"name": "loss", "value": float("nan"), "unit": "", "reference": 1.0, "verdict": "warn"},
        {"name": "bw", "value": float("inf"), "unit": "GB/s", "reference": None, "verdict": "pass"},
        {"name": "copy", "value": 3000, "unit": "GB/s", "reference": float("inf"), "verdict": "pass"},
    ]
    run = _run(tmp_path, [h])
    doc = json.loads((run / "summary.json").read_text())
    assert doc["hosts"][0]["benchmarks"][0]["value"] != doc["hosts"][0]["benchmarks"][0]["value"]  # NaN
    r = _report(tmp_path)
    assert r.returncode == 0, r.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert "nan" not in svg.lower() and "inf" not in svg.lower(), svg
    assert svg.count("<rect") == 1 and 'width="0.0"' not in svg


# `invoke report` on a disk that takes no more (a real write failure: the file-size limit of
# the process, RLIMIT_FSIZE, which makes write() fail with EFBIG as a full disk does ENOSPC).


def report(cwd: Path, max_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if max_file_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--run", RUN]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, preexec_fn=limit)


def test_a_report_that_cannot_be_written_is_one_sentence_and_the_old_one_stays(tmp_path: Path) -> None:
    """It was `error: internal error (OSError: [Errno 27] File too large); rerun with --debug and
    report it.`, exit 70: a bug of the tool, for a full disk."""
    run = _run(tmp_path, [_host("gpu-1", "pass", "8")])
    first = report(tmp_path)
    assert first.returncode == 0, first.stderr
    html, sha = run / "report.html", run / "report.html.sha256"
    before = html.read_bytes(), sha.read_text()

    r = report(tmp_path, max_file_bytes=4096)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: cannot write {html} (File too large); free space there (or fix its permissions)"
        " and run `invoke report` again."
    )
    assert "Traceback" not in r.stderr
    # the earlier report is whole, its checksum still matches, and no temp file is left behind
    assert (html.read_bytes(), sha.read_text()) == before
    assert sha.read_text().split()[0] == hashlib.sha256(html.read_bytes()).hexdigest()
    assert sorted(p.name for p in run.iterdir()) == [
        "raw",
        "report.html",
        "report.html.sha256",
        "summary.json",
    ]


# QA round 4 (reports): evidence files of hosts whose names reduce alike stay apart, `--compare`
# survives one corrupt run, and `check`/`provision` print each host's GO / NO-GO verdict line.

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


# The report templates render in templating.BoundedSandbox, as user templates do: a project's
# own report template that builds a huge value or loops without end is one sentence (exit 2).


@pytest.mark.parametrize(
    "body",
    [
        "{{ 'x' * (2 ** 40) }}",  # a 1 TiB string: refused before it is built
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # 10**10 steps
    ],
)
def test_a_project_report_template_is_bounded(tmp_path: Path, body: str) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "templates" / "report").mkdir(parents=True)
    (tmp_path / "templates" / "report" / "md.j2").write_text(body + "\n")
    with pytest.raises(
        UsageError, match=r"^report template .*/templates/report/md\.j2: .*simplify the template"
    ):
        render.report(tmp_path / "reports", RUN, "md", tmp_path)


def test_the_shipped_report_filters_still_work_bounded(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "templates" / "report").mkdir(parents=True)
    (tmp_path / "templates" / "report" / "md.j2").write_text("{{ 'a|b' | mdcell }} {{ 1000 | size }}\n")
    out, _digest, _go = render.report(tmp_path / "reports", RUN, "md", tmp_path)
    assert out.read_text().startswith("a\\|b ")


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_the_shipped_template_renders_alike_outside_the_sandbox_and_a_copy_inside(
    tmp_path: Path, fmt: str
) -> None:
    """The shipped report template renders in plain Jinja2 (code of ours), a project's copy of
    it in the bounded sandbox; the same summary gives the same text either way."""
    import shutil

    import jinja2

    from gpuonboard.templating import BoundedSandbox

    _run(tmp_path, [_host("gpu-1", "fail", HOSTILE), _host("gpu-2", "pass", "8")])
    name = f"report/{fmt}.j2"
    shipped = render._environment_for(tmp_path, name, fmt == "html")
    assert type(shipped.real()) is jinja2.Environment  # (made on first use: ShippedEnvironment)
    out, _, _ = render.report(tmp_path / "reports", RUN, fmt, tmp_path)
    plain = out.read_text(encoding="utf-8")
    (tmp_path / "templates" / "report").mkdir(parents=True)
    shutil.copy(REPO / "templates" / name, tmp_path / "templates" / name)
    assert isinstance(render._environment_for(tmp_path, name, fmt == "html"), BoundedSandbox)
    out, _, _ = render.report(tmp_path / "reports", RUN, fmt, tmp_path)
    assert out.read_text(encoding="utf-8") == plain
    if fmt == "html":  # (autoescape holds outside the sandbox too)
        assert "<script>alert" not in plain and "&lt;script&gt;alert" in plain


def test_every_check_detail_is_in_the_markdown_and_html_reports(tmp_path: Path) -> None:
    """The Markdown report dropped each row's detail (what to ask the vendor, what to run on the
    box), which the HTML keeps: a warn row's advice is in both."""
    host = _warn_host("gpu-1")
    host["rules"][-2]["detail"] = "ask the vendor to enable it | on each GPU"
    _run(tmp_path, [host])
    run = "20261129-000000-aaaa"
    md = render.report(tmp_path / "reports", run, "md", REPO)[0].read_text(encoding="utf-8")
    html = render.report(tmp_path / "reports", run, "html", REPO)[0].read_text(encoding="utf-8")
    assert "<br>ask the vendor to enable it \\| on each GPU |" in md
    assert "ask the vendor to enable it | on each GPU" in html
