"""--metrics-file: the Prometheus text file node_exporter's textfile collector reads. Every file
parses with prometheus_client's text-format parser and its OpenMetrics parser; label values
with quotes, backslashes and newlines come back as they were; the file is replaced atomically,
readable by others, and no `*.prom` glob ever sees its temp file."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from gpuonboard.report import metrics
from gpuonboard.watch.samples import GpuSample, HostState

from .test_summary_schema import _written

ODD = 'rack "7"\\gpu\nnode'  # a host name with a double quote, a backslash and a newline


def parsed(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{family: {sorted labels: value}}, read by the text-format parser; the OpenMetrics parser
    must read the same samples."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        assert fam.type == "gauge" and fam.documentation
        for s in fam.samples:
            out.setdefault(fam.name, {})[tuple(sorted(s.labels.items()))] = s.value
    again = {
        fam.name: {tuple(sorted(s.labels.items())): s.value for s in fam.samples}
        for fam in openmetrics_families(text)
    }
    assert again == out
    return out


def value(found: dict[str, Any], name: str, **labels: str) -> float:
    return float(found[f"gpuonboard_{name}"][tuple(sorted(labels.items()))])


def test_escaping_of_label_values_and_help() -> None:
    fam = metrics.Family("gpuonboard_x", 'help with "quotes", a \\ and\na newline')
    fam.add(1, host=ODD, gpu="0")
    fam.add(2, host=ODD, gpu="0")  # (a duplicate series: the collector refuses the whole file)
    fam.add(None, host="unknown")  # (unknown: left out, never 0)
    text = metrics.render([fam])
    assert text.splitlines() == [
        '# HELP gpuonboard_x help with "quotes", a \\\\ and\\na newline',
        "# TYPE gpuonboard_x gauge",
        'gpuonboard_x{host="rack \\"7\\"\\\\gpu\\nnode",gpu="0"} 1',
        "# EOF",
    ]
    assert parsed(text) == {"gpuonboard_x": {(("gpu", "0"), ("host", ODD)): 1.0}}


def test_values_and_names() -> None:
    assert [metrics.format_value(v) for v in (3.0, 0.25, -1.0, math.nan, math.inf, -math.inf)] == [
        "3",
        "0.25",
        "-1",
        "NaN",
        "+Inf",
        "-Inf",
    ]
    with pytest.raises(ValueError, match="not a metric name"):
        metrics.render([metrics.Family("gpu-onboard", "x", [({}, 1.0)])])
    with pytest.raises(ValueError, match="not a label name"):
        metrics.render([metrics.Family("gpuonboard_y", "x", [({"bad-label": "v"}, 1.0)])])
    assert metrics.render([metrics.Family("gpuonboard_empty", "x")]) == "# EOF\n"


def test_a_runs_metrics_from_its_summary(tmp_path: Path) -> None:
    """From a real summary.json (api.write_reports): verdicts, statuses, rules, GPUs."""
    doc = _written(tmp_path)
    doc["hosts"][0]["name"] = ODD  # (the summary keeps any name; the metrics escape it)
    found = parsed(metrics.render(metrics.run_families(doc)))
    assert value(found, "host_verdict", host=ODD, verdict="GO") == 1
    assert value(found, "host_verdict", host=ODD, verdict="NO-GO") == 0
    assert value(found, "host_verdict", host="gpu-2", verdict="NO-GO") == 1
    assert value(found, "host_status", host="gpu-3", status="unreachable") == 1
    assert (
        value(found, "rule_verdict", host=ODD, step="acceptance", rule="fabric_manager", verdict="unverified")
        == 1
    )
    assert (
        value(found, "rule_verdict", host="gpu-2", step="acceptance", rule="gpu_count", verdict="fail") == 1
    )
    assert (
        value(found, "rule_verdict", host="gpu-2", step="acceptance", rule="gpu_count", verdict="pass") == 0
    )
    assert value(found, "host_rules", host=ODD, verdict="warn") == 1
    assert value(found, "step_status", host="gpu-2", step="container", status="skipped") == 1
    assert value(found, "host_gpus", host=ODD) == 1
    assert value(found, "host_gpus_ordered", host=ODD) == 1
    (gpu,) = found["gpuonboard_gpu_info"]
    labels = dict(gpu)
    assert labels["host"] == ODD and labels["gpu"] == "0" and labels["UUID"].startswith("GPU-")
    assert "H200" in labels["modelName"]
    assert value(found, "run_exit_code", playbook="acceptance") == doc["exit_code"]
    assert value(found, "run_timestamp_seconds", playbook="acceptance") > 1.7e9
    # an older summary (`+0000`) still gives the time; a damaged field is left out
    doc.update(finished="2026-12-02T07:11:57+0000", duration="x")
    found = parsed(metrics.render(metrics.run_families(doc)))
    assert value(found, "run_timestamp_seconds", playbook="acceptance") == 1796195517
    assert "gpuonboard_run_duration_seconds" not in found


def _state(name: str, status: str, *samples: GpuSample, reconnects: int = 0) -> HostState:
    st = HostState(name, status=status, reconnects=reconnects)
    st.gpus = {s.index: s for s in samples}
    st.gpus_seen = len(samples)
    st.samples = 3
    return st


def test_the_monitors_metrics_are_dcgm_like() -> None:
    hot = GpuSample(
        host=ODD,
        ts=1796195517.5,
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-1",
        count=2,
        util_pct=97,
        mem_used_mib=70000,
        mem_total_mib=81559,
        temp_c=88,
        power_w=690.5,
        power_limit_w=700.0,
        throttle=("HW Slowdown", "HW Power Brake"),
        pstate="P0",
        alerts=("temp 88C",),
    )
    lost = GpuSample(host=ODD, ts=1796195517.4, index=1, name="", faults=("GPU requires reset",))
    states = [_state(ODD, "live", hot, lost), _state("gone", "stale", reconnects=4)]
    found = parsed(metrics.render(metrics.monitor_families(states, running=True, now=1796195518.0)))
    gpu0 = {"host": ODD, "gpu": "0", "UUID": "GPU-1", "modelName": "NVIDIA H100 80GB HBM3"}
    assert value(found, "gpu_util", **gpu0) == 97
    assert value(found, "fb_used", **gpu0) == 70000
    assert value(found, "fb_free", **gpu0) == 11559
    assert value(found, "fb_total", **gpu0) == 81559
    assert value(found, "gpu_temp", **gpu0) == 88
    assert value(found, "power_usage", **gpu0) == 690.5
    assert value(found, "enforced_power_limit", **gpu0) == 700
    assert value(found, "pstate", **gpu0) == 0
    assert value(found, "clock_throttle_reason", **gpu0, reason="HW Power Brake") == 1
    assert value(found, "gpu_alerts", **gpu0) == 1
    gpu1 = {"host": ODD, "gpu": "1", "UUID": "", "modelName": ""}
    assert value(found, "gpu_fault", **gpu1, fault="GPU requires reset") == 1
    # a GPU nvidia-smi could not read has no figures at all, never a calm 0
    assert (tuple(sorted(gpu1.items()))) not in found["gpuonboard_gpu_util"]
    assert value(found, "monitor_host_up", host=ODD) == 1
    assert value(found, "monitor_host_up", host="gone") == 0
    assert value(found, "monitor_host_reconnects", host="gone") == 4
    assert value(found, "monitor_last_sample_timestamp_seconds", host=ODD) == 1796195517.5
    assert value(found, "monitor_running") == 1
    stopped = parsed(metrics.render(metrics.monitor_families(states, running=False, now=1.0)))
    assert value(stopped, "monitor_running") == 0
    # every DCGM name it claims is one DCGM exporter's users know
    assert all(dcgm.startswith("DCGM_FI_DEV_") for _, _, dcgm, _ in metrics.MONITOR_GAUGES)


def test_the_file_is_replaced_atomically_and_readable_by_others(tmp_path: Path) -> None:
    target = tmp_path / "gpuonboard.prom"
    target.write_text("old\n")
    old_umask = os.umask(0o022)
    try:
        metrics.write(target, metrics.render([metrics.Family("gpuonboard_a", "a", [({}, 1.0)])]))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert parsed(target.read_text()) == {"gpuonboard_a": {(): 1.0}}
    assert [p.name for p in tmp_path.iterdir()] == ["gpuonboard.prom"]  # (no temp file left)
    # a folder that does not exist is the caller's error, never made here
    with pytest.raises(FileNotFoundError):
        metrics.write(tmp_path / "nope" / "x.prom", "# EOF\n")


def test_a_write_that_fails_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "gpuonboard.prom"
    metrics.write(target, metrics.render([metrics.Family("gpuonboard_a", "a", [({}, 1.0)])]))
    before = target.read_text()

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        metrics.write(target, metrics.render([metrics.Family("gpuonboard_a", "a", [({}, 2.0)])]))
    assert target.read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name != "gpuonboard.prom"]


def test_the_summary_document_round_trips_through_json(tmp_path: Path) -> None:
    """run_families reads the document as json.loads gives it (what a cron job re-rendering an
    old run would pass), not only the dict the run built."""
    doc = json.loads(json.dumps(_written(tmp_path)))
    assert parsed(metrics.render(metrics.run_families(doc)))["gpuonboard_host_verdict"]
