"""The raw outputs a run writes as each host is done (report.early.EarlyReport): the same files as at the
end of the run, and an interrupted run removes exactly what it wrote."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.report import jsonfile
from gpuonboard.report.early import EarlyReport as EarlyRaw
from gpuonboard.results import HostResult


def _result(name: str) -> HostResult:
    outputs = {"nproc": ProbeOutput("8\n", "", 0), "uname": ProbeOutput("6.8.0\n", "", 0)}
    facts = parse_facts(outputs)
    facts.raw.update(outputs)
    return HostResult(Host(name=name, address="10.0.0.1"), "ok", "1 ok", facts=facts)


def test_early_files_are_the_ones_the_end_of_the_run_writes(tmp_path: Path) -> None:
    early = EarlyRaw(tmp_path / "early")
    results = [_result("a"), _result("武汉 1")]
    for r in results:
        early(r)
    late = jsonfile.write_raw(tmp_path / "late", results)
    assert early.written == late and early.hosts == {"a", "武汉 1"}
    for name, data in late.items():
        assert (tmp_path / "early" / name).read_bytes() == data


def test_remove_takes_only_what_it_wrote_and_nothing_is_written_after(tmp_path: Path) -> None:
    out = tmp_path / "run"
    early = EarlyRaw(out)
    early(_result("a"))
    assert early.written
    mine = out / "raw" / "notes.txt"  # a file this run did not write stays, with its folders
    mine.write_text("keep\n")
    early.remove()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["raw", "raw/notes.txt"]
    early(_result("b"))  # a host that ends after the interruption writes nothing
    assert not (out / "raw" / "b").exists()
    mine.unlink()
    early.remove()  # the run's own folders go once empty
    assert not out.exists()
