"""summary.json's JSON Schema (draft 2020-12, shipped in the package) holds what the run writes,
and refuses a summary without a verdict or with a field of the wrong type; its times are RFC
3339 in UTC (`Z`), which `jq fromdateiso8601`, datetime.fromisoformat and xs:dateTime read;
`invoke report` still reads an older summary whose times end in `+0000`."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpuonboard import api
from gpuonboard.api import advise
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.report import jsonfile
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.base import Check, StepResult

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
RUN = "20261202-071157-ab12"
# RFC 3339's date-time (section 5.6), the whole of it
RFC3339 = re.compile(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?"
    r"([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
)


def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(jsonfile.schema_path().read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)  # (a schema that is itself not valid draft 2020-12 fails here)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(doc)]


def _facts() -> Any:
    outputs = {
        "nvidia_smi": ProbeOutput(
            (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text(), "", 0
        ),
        "lscpu": ProbeOutput((REAL / "lscpu__intel-xeon-16vcpu__h200-vm.txt").read_text(), "", 0),
        "free": ProbeOutput((REAL / "free__ubuntu-18.04-vm.txt").read_text(), "", 0),
        "nproc": ProbeOutput((REAL / "nproc__h200-vm.txt").read_text(), "", 0),
    }
    return dataclasses.replace(parse_facts(outputs), raw=outputs)


def _written(tmp_path: Path, strict: bool = False) -> dict[str, Any]:
    """A run's summary.json as api.write_reports writes it: a GO host from real captured
    outputs (with a warned and an unverified rule), a NO-GO host, an unreachable one and one
    that failed before any step; the meta as api.execute makes it."""
    order = OrderSpec(gpu_model="H200", gpu_count=1, rdma=(8, 400.0))
    checks = [
        Check("gpu_count", "1", "1", "pass"),
        Check("persistence_mode", "Enabled", "Disabled", "warn", "nvidia-smi -pm 1"),
        Check("fabric_manager", "running", "unknown", "unverified"),
    ]
    good = HostResult(
        Host(name="gpu-1", address="10.0.0.1", order=order),
        "ok",
        "ok",
        [StepResult("acceptance", "ok", "3 rules", checks, duration=0.5, check_mode=True)],
        facts=_facts(),
        fingerprint="SHA256:abc",
        duration=1.25,
    )
    bad = HostResult(
        Host(name="gpu-2", address="10.0.0.2"),
        "failed",
        "step acceptance: gpu_count",
        [
            StepResult("acceptance", "failed", "gpu_count", [Check("gpu_count", "8", "4", "fail")]),
            StepResult("container", "skipped", "an earlier step failed"),
        ],
    )
    gone = HostResult(Host(name="gpu-3", address="10.0.0.3"), "unreachable", "connection refused")
    broken = HostResult(Host(name="gpu-4", address="10.0.0.4"), "failed", "cannot read the facts")
    outcome = conclude([good, bad, gone, broken], strict)
    started = time.time() - 3
    meta = {
        "run_id": RUN,
        "playbook": "acceptance",
        "playbook_path": "playbooks/acceptance.yml",
        "inventory": "inventory/hosts.yml",
        "check_mode": True,
        "started": api._iso(started),
        "finished": api._iso(time.time()),
        "duration": 3.0,
        "exit_code": int(outcome.exit_code),
        "strict": strict,
    }
    out = api.write_reports(outcome, meta, tmp_path / "reports", RUN)
    return dict(json.loads((out / "summary.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("strict", [False, True])
def test_what_a_run_writes_validates(tmp_path: Path, strict: bool) -> None:
    doc = _written(tmp_path, strict)
    assert errors(doc) == []
    assert [h["verdict"]["word"] for h in doc["hosts"]] == [
        "NO-GO" if strict else "GO",
        "NO-GO",
        "NO-GO",
        "NO-GO",
    ]


def test_a_summary_without_a_verdict_or_with_a_wrong_type_fails(tmp_path: Path) -> None:
    doc = _written(tmp_path)
    no_verdict = copy.deepcopy(doc)
    del no_verdict["hosts"][0]["verdict"]
    assert errors(no_verdict) == ["hosts/0: 'verdict' is a required property"]
    wrong_word = copy.deepcopy(doc)
    wrong_word["hosts"][1]["verdict"]["word"] = "PASS"
    assert errors(wrong_word) == ["hosts/1/verdict/word: 'PASS' is not one of ['GO', 'NO-GO', 'no verdict']"]
    wrong_type = copy.deepcopy(doc)
    wrong_type["exit_code"] = "1"
    wrong_type["hosts"][0]["port"] = "22"
    wrong_type["hosts"][0]["rules"][0]["verdict"] = True
    assert sorted(errors(wrong_type)) == [
        "exit_code: '1' is not of type 'integer'",
        "hosts/0/port: '22' is not of type 'integer'",
        "hosts/0/rules/0/verdict: True is not one of ['pass', 'warn', 'fail', 'unverified', 'info']",
    ]
    no_hosts = copy.deepcopy(doc)
    del no_hosts["hosts"]
    assert errors(no_hosts) == [": 'hosts' is a required property"]


def test_every_field_the_run_writes_is_described(tmp_path: Path) -> None:
    """The schema allows fields it does not list (additive changes keep the schema id), so a
    field added to summary.json without its description here is caught by this test."""
    schema = json.loads(jsonfile.schema_path().read_text(encoding="utf-8"))
    doc = _written(tmp_path)
    assert set(doc) <= set(schema["properties"])
    defs = schema["$defs"]
    for host in doc["hosts"]:
        assert set(host) <= set(defs["host"]["properties"]), set(host) - set(defs["host"]["properties"])
        for step in host["steps"]:
            assert set(step) <= set(defs["step"]["properties"])
        if host["facts"]:
            assert set(host["facts"]) <= set(defs["facts"]["properties"])
        assert set(host["order"]) <= set(defs["order"]["properties"])


def test_times_are_rfc3339_in_utc(tmp_path: Path) -> None:
    doc = _written(tmp_path)
    for key in ("started", "finished"):
        stamp = doc[key]
        assert RFC3339.fullmatch(stamp) and stamp.endswith("Z"), stamp
        parsed = datetime.fromisoformat(stamp)
        assert parsed.tzinfo is not None and parsed.utcoffset() == UTC.utcoffset(None)
        assert abs(parsed.timestamp() - time.time()) < 60
    assert api._iso(1796195517.9) == "2026-12-02T07:11:57Z"


def test_an_offset_without_a_colon_is_refused_by_the_schema(tmp_path: Path) -> None:
    """`+0000` (what older runs wrote) is not RFC 3339; `+08:00` is."""
    doc = _written(tmp_path)
    doc["started"] = "2026-12-02T15:11:57+0800"
    assert errors(doc) and "started" in errors(doc)[0]
    doc["started"] = "2026-12-02T15:11:57+08:00"
    assert errors(doc) == []


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_the_times(tmp_path: Path) -> None:
    doc = _written(tmp_path)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run(
        ["jq", "-e", "[.started, .finished] | map(fromdateiso8601)", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    epochs = json.loads(r.stdout)
    assert epochs == [int(datetime.fromisoformat(doc[k]).timestamp()) for k in ("started", "finished")]
    # what older runs wrote is what jq refused
    old = subprocess.run(
        ["jq", "-n", '"2026-12-02T07:11:57+0000" | fromdateiso8601'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert old.returncode != 0


def test_invoke_report_still_reads_an_older_summary_with_plus_0000(tmp_path: Path) -> None:
    _written(tmp_path)
    path = tmp_path / "reports" / RUN / "summary.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(started="2026-11-29T08:00:00+0800", finished="2026-11-29T08:03:12+0800")
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert advise.report(tmp_path / "reports", tmp_path, RUN, "html") == 0
    html = (tmp_path / "reports" / RUN / "report.html").read_text(encoding="utf-8")
    assert "2026-11-29T08:00:00+0800" in html
