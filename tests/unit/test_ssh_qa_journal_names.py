"""Journals of two hosts never share a file: `gpu 1` and `gpu_1` (or `a/b` and `a_b`) had the
same `gpu_1__provision.json`, so one host's run overwrote the other's journal and `--resume`
skipped steps on a box where they never ran."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuonboard.runner import journal


@pytest.mark.parametrize(("a", "b"), [("gpu 1", "gpu_1"), ("a/b", "a_b"), ("x__y", "x"), ("节点1", "节点_1")])
def test_two_hosts_keep_their_own_journal(tmp_path: Path, a: str, b: str) -> None:
    pb_a, pb_b = ("provision", "provision") if b != "x" else ("provision", "y__provision")
    journal.save(tmp_path, journal.Journal(a, pb_a, "r-a", {"s": {"status": "ok"}}, failed_step="t"))
    journal.save(tmp_path, journal.Journal(b, pb_b, "r-b", {"s": {"status": "failed"}}, failed_step="s"))
    got_a, got_b = journal.load(tmp_path, a, pb_a), journal.load(tmp_path, b, pb_b)
    assert got_a is not None and got_b is not None
    assert (got_a.run_id, got_a.failed_step, got_a.done_steps()) == ("r-a", "t", {"s"})
    assert (got_b.run_id, got_b.failed_step, got_b.done_steps()) == ("r-b", "s", set())
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_a_plain_name_keeps_its_file_name(tmp_path: Path) -> None:
    journal.save(tmp_path, journal.Journal("wuhan-a100-1", "provision", "r1"))
    assert [p.name for p in tmp_path.iterdir()] == ["wuhan-a100-1__provision.json"]


def test_another_hosts_journal_is_never_resumed(tmp_path: Path) -> None:
    journal.save(tmp_path, journal.Journal("box-a", "provision", "r1", {"s": {"status": "ok"}}, "t"))
    shutil.copy(tmp_path / "box-a__provision.json", tmp_path / "box-b__provision.json")
    assert journal.load(tmp_path, "box-b", "provision") is None
    assert journal.load(tmp_path, "box-a", "provision") is not None
