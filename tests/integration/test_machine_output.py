"""Machine-readable output through the real CLI against test hosts: `check --json` prints the
run's summary.json on stdout and every human line on stderr (exit codes unchanged);
`inventory --json` the resolved hosts; each summary.json validates against the shipped JSON
Schema, each junit.xml against the Surefire and Jenkins schemas; `--metrics-file` writes a
Prometheus text file from `check` and from `monitor`."""

from __future__ import annotations

import copy
import json
import re
import stat
from pathlib import Path
from typing import Any

import jsonschema
from conftest import REPO, Project, host_entry
from lxml import etree
from prometheus_client.parser import text_string_to_metric_families

from gpuonboard.report import jsonfile
from gpuonboard.testing import TestHostPool

SCHEMAS = REPO / "tests" / "fixtures" / "schemas"
RFC3339_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def assert_valid_summary(doc: dict[str, Any]) -> None:
    schema = json.loads(jsonfile.schema_path().read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert RFC3339_UTC.fullmatch(doc["started"]) and RFC3339_UTC.fullmatch(doc["finished"])


def assert_valid_junit(path: Path) -> None:
    root = etree.parse(str(path)).getroot()
    jenkins = etree.XMLSchema(etree.parse(str(SCHEMAS / "jenkins-xunit-junit-10.xsd")))
    assert jenkins.validate(root), jenkins.error_log
    surefire = etree.XMLSchema(etree.parse(str(SCHEMAS / "surefire-test-report.xsd")))
    for suite in root.iter("testsuite"):
        assert surefire.validate(etree.ElementTree(copy.deepcopy(suite))), surefire.error_log


def prom(path: Path) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for s in fam.samples:
            found.setdefault(fam.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return found


def test_check_json_is_the_summary_on_stdout_and_the_rest_on_stderr(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    metrics_file = tmp_path / "textfile" / "gpuonboard.prom"
    metrics_file.parent.mkdir()
    r = project.cli("check", "--host", "good", "--json", "--metrics-file", str(metrics_file))
    assert r.returncode == 0, r.stderr
    summary = project.root / "reports" / "latest" / "summary.json"
    assert r.stdout == summary.read_text(encoding="utf-8")  # the same document, byte for byte
    doc = json.loads(r.stdout)
    assert doc["hosts"][0]["verdict"]["word"] == "GO"
    assert_valid_summary(doc)
    assert_valid_junit(summary.parent / "junit.xml")
    # the human text, all of it, on stderr
    assert "PASS" in r.stderr and "verdict for good: GO" in r.stderr and "reports: " in r.stderr
    # the metrics file: the verdict, the rules, the GPUs found and ordered; readable by others
    found = prom(metrics_file)
    assert found["gpuonboard_host_verdict"][(("host", "good"), ("verdict", "GO"))] == 1
    assert found["gpuonboard_host_gpus"][(("host", "good"),)] == 8
    assert found["gpuonboard_host_gpus_ordered"][(("host", "good"),)] == 8
    key = (("host", "good"), ("rule", "gpu_count"), ("step", "acceptance"), ("verdict", "pass"))
    assert found["gpuonboard_rule_verdict"][key] == 1
    assert len(found["gpuonboard_gpu_info"]) == 8
    assert stat.S_IMODE(metrics_file.stat().st_mode) & 0o044 == 0o044
    assert [p.name for p in metrics_file.parent.iterdir()] == ["gpuonboard.prom"]


def test_check_json_of_a_no_go_and_an_unreachable_host(project: Project, pool: TestHostPool) -> None:
    addr, port = pool.unreachable_address()
    project.write_inventory(
        {
            "misdelivered": host_entry(pool.hosts["misdelivered"], pool),
            "nodriver": host_entry(pool.hosts["nodriver"], pool),
            "gone": {"address": addr, "port": port, "key_file": str(pool.client_key)},
        }
    )
    r = project.cli("check", "--json", "--connect-retries", "0")
    assert r.returncode == 1, r.stderr  # (as without --json)
    doc = json.loads(r.stdout)
    assert_valid_summary(doc)
    assert_valid_junit(project.root / "reports" / "latest" / "junit.xml")
    words = {h["name"]: (h["status"], h["verdict"]["word"]) for h in doc["hosts"]}
    assert words == {
        "misdelivered": ("failed", "NO-GO"),
        "nodriver": ("failed", "NO-GO"),
        "gone": ("unreachable", "NO-GO"),
    }
    assert "FAIL" in r.stderr and "unreachable" in r.stderr
    # --quiet --json: the document still, the errors on stderr; only the unreachable: exit 3
    project.write_inventory({"gone": {"address": addr, "port": port, "key_file": str(pool.client_key)}})
    r = project.cli("check", "--json", "--quiet", "--connect-retries", "0")
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert_valid_summary(doc)
    assert r.stderr.startswith("error: gone: unreachable: ")


def test_a_metrics_file_that_cannot_be_written_is_refused_before_connecting(
    project: Project, pool: TestHostPool
) -> None:
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    r = project.cli("check", "--json", "--metrics-file", str(project.root / "no" / "such" / "x.prom"))
    assert r.returncode == 2 and r.stdout == ""
    assert "--metrics-file" in r.stderr and "no directory" in r.stderr
    assert not (project.root / "reports").exists()  # (nothing ran)


def test_inventory_json(project: Project, pool: TestHostPool) -> None:
    good = pool.hosts["good"]
    project.write_inventory(
        {"good": host_entry(good, pool), "behind": host_entry(pool.hosts["behind"], pool, jump="good")},
        groups={"a100": {"hosts": ["good"]}},
    )
    r = project.cli("inventory", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "gpuonboard.inventory/1"
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert list(hosts) == ["good", "behind"]
    assert hosts["good"]["address"] == good.address and hosts["good"]["port"] == good.port
    assert hosts["good"]["target"] == f"root@{good.address}:{good.port}"
    assert hosts["good"]["groups"] == ["a100"] and hosts["behind"]["groups"] == []
    assert hosts["good"]["vendor"] == "demo-idc" and hosts["good"]["order"]["gpu_count"] == 8
    assert hosts["good"]["order_text"].startswith("8 x A100")
    assert hosts["behind"]["jump"] == ["good"] and hosts["behind"]["target"].endswith(" via good")
    assert "vars" not in hosts["good"]  # (they may hold secrets)
    # the table went to stderr, as it was
    assert "inventory " in r.stderr and "good" in r.stderr and "8 x A100" in r.stderr
    plain = project.cli("inventory")
    assert plain.returncode == 0 and "8 x A100" in plain.stdout and plain.stderr == ""


def test_monitor_metrics_file(project: Project, pool: TestHostPool, tmp_path: Path) -> None:
    """`monitor --once` and the live monitor write the GPU figures under DCGM exporter's names."""
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    once = tmp_path / "once.prom"
    r = project.cli("monitor", "--host", "good", "--once", "--json", "--metrics-file", str(once))
    assert r.returncode == 0, r.stderr
    found = prom(once)
    assert len(found["gpuonboard_gpu_temp"]) == 8 and set(found["gpuonboard_gpu_temp"].values()) == {27}
    assert set(found["gpuonboard_power_usage"].values()) == {67.03}
    # this A100 (MIG mode) answers `[N/A]` for its utilization: no figure, never a 0
    assert "gpuonboard_gpu_util" not in found
    labels = dict(next(iter(found["gpuonboard_fb_total"])))
    assert labels["host"] == "good" and labels["UUID"].startswith("GPU-") and "A100" in labels["modelName"]
    assert found["gpuonboard_monitor_host_up"][(("host", "good"),)] == 1
    live = tmp_path / "live.prom"
    r = project.cli(
        "monitor",
        "--host",
        "good",
        "--json",
        "--interval",
        "200ms",
        "--duration",
        "2",
        "--metrics-file",
        str(live),
    )
    assert r.returncode == 0, r.stderr
    found = prom(live)
    assert found["gpuonboard_monitor_running"][()] == 0  # (its last write, once it stopped)
    assert len(found["gpuonboard_power_usage"]) == 8
    assert found["gpuonboard_monitor_last_sample_timestamp_seconds"][(("host", "good"),)] > 1.7e9
