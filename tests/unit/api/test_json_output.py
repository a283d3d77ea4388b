"""api.execute with --json (what `provision --json` and `check --json` run): stdout is the run's
summary.json and nothing else, every human line is on stderr, the exit code is the run's; with
--metrics-file the run's Prometheus file is written (a failure to write it is a warning). The
monitor's metrics file is rewritten only when due."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuonboard import api
from gpuonboard.api import monitor
from gpuonboard.errors import UsageError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.results import HostResult
from gpuonboard.runner import playbook
from gpuonboard.steps.base import Check, StepResult
from gpuonboard.watch.samples import GpuSample, HostState


class _NoPreconnect:
    def __init__(self, hosts: object) -> None:
        pass

    def close(self) -> None:
        pass


def _run_with(monkeypatch: pytest.MonkeyPatch, verdict: str) -> None:
    def run(hosts: object, book: object, inv: object, options: Any) -> list[HostResult]:
        check = Check("gpu_count", "8", "8" if verdict == "pass" else "4", verdict)
        status = "ok" if verdict == "pass" else "failed"
        step = StepResult("acceptance", status, "checked", [check])
        print("a line a step printed")  # (worker output: human, so stderr under --json)
        return [HostResult(Host(name="h1", address="10.0.0.1"), status, "done", [step])]

    monkeypatch.setattr(api, "run", run)
    monkeypatch.setattr(api, "Preconnect", _NoPreconnect)
    monkeypatch.setenv("COLUMNS", "200")


def _execute(tmp_path: Path, **settings: Any) -> int:
    (tmp_path / "b.yml").write_text("steps:\n  - step: acceptance\n")
    host = Host(name="h1", address="10.0.0.1")
    inv = Inventory(tmp_path / "hosts.yml", {"h1": host}, {}, {})
    book = playbook.load(tmp_path / "b.yml")
    return api.execute(inv, [host], book, api.Settings(project=tmp_path, progress=False, **settings))


@pytest.mark.parametrize(("verdict", "code"), [("pass", 0), ("fail", 1)])
def test_json_is_the_summary_alone_on_stdout(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    verdict: str,
    code: int,
) -> None:
    _run_with(monkeypatch, verdict)
    assert _execute(tmp_path, json=True) == code
    out, err = capsys.readouterr()
    summary = (tmp_path / "reports" / "latest" / "summary.json").read_text(encoding="utf-8")
    assert out == summary
    assert json.loads(out)["exit_code"] == code
    assert "a line a step printed" in err and "verdict for h1:" in err and "reports: " in err
    # without --json: as before, the tables on stdout and the document only in the file
    assert _execute(tmp_path) == code
    out, err = capsys.readouterr()
    assert "verdict for h1:" in out and not out.lstrip().startswith("{")


def test_the_run_writes_its_metrics_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_with(monkeypatch, "fail")
    target = tmp_path / "gpuonboard.prom"
    assert _execute(tmp_path, metrics_file=target, quiet=True) == 1
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(target.read_text())
        for s in fam.samples
    }
    assert samples[("gpuonboard_host_verdict", (("host", "h1"), ("verdict", "NO-GO")))] == 1
    assert samples[("gpuonboard_run_exit_code", (("playbook", "b"),))] == 1
    assert "warning" not in capsys.readouterr().err
    # a name node_exporter does not read is written, with a warning saying so
    assert _execute(tmp_path, metrics_file=tmp_path / "gpu.txt", quiet=True) == 1
    assert "reads only *.prom files" in capsys.readouterr().err
    assert (tmp_path / "gpu.txt").is_file()


def test_a_metrics_file_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_with(monkeypatch, "pass")
    for bad, said in (
        (tmp_path / "missing" / "x.prom", "no directory"),
        (tmp_path, "is a directory"),
    ):
        with pytest.raises(UsageError, match=said):
            _execute(tmp_path, metrics_file=bad)
    assert not (tmp_path / "reports").exists()


def test_a_metrics_write_that_fails_after_the_run_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuonboard.report import metrics

    _run_with(monkeypatch, "pass")

    def full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(metrics, "write", full)
    assert _execute(tmp_path, metrics_file=tmp_path / "x.prom", quiet=True) == 0  # (unchanged)
    err = capsys.readouterr().err
    assert "warning: --metrics-file" in err and "No space left on device" in err


def _state(samples: int, status: str = "live") -> HostState:
    st = HostState("h1", status=status, samples=samples)
    st.gpus = {0: GpuSample(host="h1", ts=1.0, index=0, name="GPU", temp_c=40 + samples)}
    return st


def test_the_monitors_file_is_rewritten_when_due(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(monitor.time, "monotonic", lambda: clock[0])
    target = tmp_path / "m.prom"
    mf = monitor.MetricsFile(target, interval=0.2)  # (at least 1 s apart)
    assert mf.update([_state(1)]) and "gpuonboard_gpu_temp" in target.read_text()
    first = target.read_text()
    clock[0] += 0.5
    assert mf.update([_state(2)]) and target.read_text() == first  # (not yet due)
    clock[0] += 0.6
    assert mf.update([_state(2)]) and target.read_text() != first  # (due, and changed)
    second = target.read_text()
    clock[0] += 5
    assert mf.update([_state(2)]) and target.read_text() == second  # (due, but nothing new)
    assert mf.update([_state(2)], running=False)  # (the last write, whatever the time)
    assert "gpuonboard_monitor_running 0" in target.read_text()
    target.unlink()
    (tmp_path / "m.prom").mkdir()  # (a write that fails: recorded, and no more tries)
    assert not mf.update([_state(3)], running=False)
    assert mf.failed and "--metrics-file" in mf.failed[0]


def test_a_metrics_file_that_is_not_gpuonboards_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--metrics-file notes.txt` (a completion gone wrong) replaced the user's notes with the
    run's metrics, unsaid: the new file is renamed over whatever is at the path. A file with
    something in it that is not a metrics file gpuonboard wrote is refused before the run now;
    an empty file and an earlier run's file are replaced as before."""
    _run_with(monkeypatch, "pass")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    other = tmp_path / "node.prom"  # another exporter's textfile
    other.write_text("# HELP node_disk_ok 1\n# TYPE node_disk_ok gauge\nnode_disk_ok 1\n")
    for path in (notes, other):
        with pytest.raises(UsageError) as caught:
            _execute(tmp_path, metrics_file=path, quiet=True)
        assert str(caught.value) == (
            f"--metrics-file {path} is a file gpuonboard did not write (it does not start with"
            " gpuonboard's metrics), which the run would replace; give a new file, or the one an"
            " earlier run wrote."
        )
    assert notes.read_text() == "my notes\n" and other.read_text().startswith("# HELP node_disk_ok")
    ours = tmp_path / "gpu.prom"
    ours.write_text("")
    for _ in range(2):  # empty, then the first run's own file
        assert _execute(tmp_path, metrics_file=ours, quiet=True) == 0
        assert ours.read_text().startswith("# HELP gpuonboard_")


@pytest.mark.parametrize("blank", ["\n", " \n\t\r\n", "\n" * 1000])
def test_a_metrics_file_of_blanks_is_replaced_like_an_empty_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    """`echo > gpu.prom` (a file of one line end, as a user or a textfile setup makes one) was
    refused as "a file gpuonboard did not write": only blanks and line ends are nothing to keep,
    as an empty file is; a blank line before other text is still refused."""
    _run_with(monkeypatch, "pass")
    path = tmp_path / "gpu.prom"
    path.write_text(blank)
    assert _execute(tmp_path, metrics_file=path, quiet=True) == 0
    assert path.read_text().startswith("# HELP gpuonboard_")
    path.write_text(blank + "my notes\n")
    with pytest.raises(UsageError, match="is a file gpuonboard did not write"):
        _execute(tmp_path, metrics_file=path, quiet=True)
