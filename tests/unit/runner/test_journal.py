"""The runner and its journal on `connection: local` hosts (real commands on this machine): a
bug in one step fails that step, not the host's whole record; --resume skips a done step only
when it would run with the same arguments; a journal is never left half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import runner
from gpuonboard.connection import LocalRunner
from gpuonboard.inventory import Host
from gpuonboard.results import HostResult
from gpuonboard.runner import journal, playbook
from gpuonboard.steps.base import Plan, Step, StepContext


def local_host(name: str = "box") -> Host:
    return Host(name, "127.0.0.1", connection="local")


def write_book(tmp_path: Path, steps: list[dict[str, Any]], name: str = "book") -> playbook.Playbook:
    path = tmp_path / f"{name}.yml"
    path.write_text(json.dumps({"name": name, "steps": steps}))  # (JSON is YAML)
    return playbook.load(path)


def options(tmp_path: Path, **kw: Any) -> runner.RunOptions:
    return runner.RunOptions(
        state_dir=tmp_path / "state", project=tmp_path, core_facts=False, run_id=kw.pop("run_id", "r1"), **kw
    )


def cmd(name: str, log: Path, word: str | None = None) -> dict[str, Any]:
    # (`creates` of a path never made: a probe of its own, as core_facts=False needs one)
    argv = ["sh", "-c", f"echo {word or name} >> {log}"]
    return {"step": "command", "name": name, "args": {"argv": argv, "creates": f"{log}.never"}}


def statuses(result: HostResult) -> list[tuple[str, str]]:
    return [(s.step, s.status) for s in result.steps]


class Buggy(Step):
    """A step with a bug (an exception that is not a GpuonboardError)."""

    name = "command"
    read_only = False

    def plan(self, ctx: StepContext) -> Plan:
        raise KeyError("oops")


def test_a_bug_in_one_step_fails_that_step_and_keeps_what_ran_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUONBOARD_DEBUG", raising=False)
    log = tmp_path / "ran.log"
    book = write_book(tmp_path, [cmd("first", log), cmd("buggy", log), cmd("last", log)])
    h = local_host()
    steps = [playbook.instantiate(book, s, h) for s in book.steps]
    steps[1] = Buggy({}, "buggy")
    opts = options(tmp_path)
    result = runner._run_steps(h, LocalRunner(h), steps, book, opts)
    assert result.status == "failed"
    assert statuses(result) == [("first", "changed"), ("buggy", "failed"), ("last", "skipped")]
    assert result.steps[1].msg == (
        "internal error in this step (KeyError: 'oops'); rerun with --debug and report it"
    )
    assert log.read_text() == "first\n"
    record = journal.load(opts.state_dir, "box", "book")
    assert record is not None and record.failed_step == "buggy"
    assert record.done_steps() == {"first"}  # so --resume continues at the buggy step


def test_resume_runs_a_done_step_again_when_its_arguments_changed(tmp_path: Path) -> None:
    log, flag = tmp_path / "ran.log", tmp_path / "flag"
    fails = {"step": "command", "name": "flaky", "args": {"argv": ["test", "-e", str(flag)]}}
    book = write_book(tmp_path, [cmd("first", log), fails, cmd("last", log)])
    h = local_host()
    assert runner.run([h], book, None, options(tmp_path))[0].status == "failed"
    flag.touch()
    # the user fixes `first` (another file, another image ...) along with the cause of the failure
    book = write_book(tmp_path, [cmd("first", log, "first-fixed"), fails, cmd("last", log)])
    result = runner.run([h], book, None, options(tmp_path, resume=True, run_id="r2"))[0]
    assert statuses(result) == [("first", "changed"), ("flaky", "changed"), ("last", "changed")]
    assert log.read_text() == "first\nfirst-fixed\nlast\n"
    # unchanged arguments: the done step is skipped, as before
    flag.unlink()
    runner.run([h], book, None, options(tmp_path, run_id="r3"))
    flag.touch()
    result = runner.run([h], book, None, options(tmp_path, resume=True, run_id="r4"))[0]
    assert statuses(result) == [("first", "skipped"), ("flaky", "changed"), ("last", "changed")]
    assert result.steps[0].msg == "done in run r3; resumed after it"


def test_a_journal_from_before_argument_digests_still_resumes(tmp_path: Path) -> None:
    log, flag = tmp_path / "ran.log", tmp_path / "flag"
    fails = {"step": "command", "name": "flaky", "args": {"argv": ["test", "-e", str(flag)]}}
    book = write_book(tmp_path, [cmd("first", log), fails])
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "box__book.json").write_text(
        json.dumps(
            {
                "run_id": "old",
                "steps": {"first": {"status": "changed", "run_id": "old"}},
                "failed_step": "flaky",
                "finished": False,
            }
        )
    )
    flag.touch()
    result = runner.run([local_host()], book, None, options(tmp_path, resume=True))[0]
    assert statuses(result) == [("first", "skipped"), ("flaky", "changed")]
    assert not log.exists()


def test_a_journal_holds_any_diff_and_an_unwritable_one_keeps_the_results(tmp_path: Path) -> None:
    state = tmp_path / "state"
    rec = journal.Journal("box", "book", "r1", steps={"s": {"status": "ok", "diff": {"path": Path("/x")}}})
    journal.save(state, rec)  # a diff value JSON cannot hold is written as its text, not half a file
    assert json.loads((state / "box__book.json").read_text())["steps"]["s"]["diff"] == {"path": "/x"}
    assert [p.name for p in state.iterdir()] == ["box__book.json"]
    # a state dir that cannot be made (here: a file in its way; a full disk alike)
    (tmp_path / "blocked").write_text("")
    log = tmp_path / "ran.log"
    book = write_book(tmp_path, [cmd("first", log)])
    opts = options(tmp_path)
    opts.state_dir = tmp_path / "blocked" / "state"
    result = runner.run([local_host()], book, None, opts)[0]
    assert (result.status, statuses(result)) == ("changed", [("first", "changed")])
    assert result.msg.startswith("1 changed; the journal could not be written (")
    assert result.msg.endswith("), so --resume cannot continue here")


# Journals of two hosts never share a file: `gpu 1` and `gpu_1` (or `a/b` and `a_b`) had the
# same `gpu_1__provision.json`, so one host's run overwrote the other's journal and `--resume`
# skipped steps on a box where they never ran.


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
