"""Round 32 (m32b, host side): real captures never seen before, each read as what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.steps.base import Check

FIXTURES = Path(__file__).parents[2] / "fixtures"
SESSIONS = FIXTURES / "sessions"
REAL = FIXTURES / "real"
TWICE = "transcript__ibv_devinfo-x2-second-CUT__pod-mlx5_7-port-init__network-operator-1646.txt"


def _judge(
    tmp_path: Path, text: str, order: str, name: str = "session.txt"
) -> tuple[dict[str, Check], list[str]]:
    (tmp_path / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(tmp_path / name)], notes))
    checks = offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
    return {c.name: c for c in checks}, notes


def test_a_command_run_again_and_cut_short_gives_way_to_its_whole_run(tmp_path: Path) -> None:
    """network-operator#1646: `ibv_devinfo` in a pod (mlx5_7 port 1 PORT_INIT), then the same
    command again, the paste cut after its `board_id`. It was refused, exit 2, "two RDMA port
    listing outputs ... keep one of them". The cut run says nothing the whole one does not (its
    lines are the whole one's as far as they go): the whole run is judged (the port INIT fails
    a 400G order), the cut one named in a note. Edited in-test: a rerun that differs from the
    first (a line changed) is still a rival, cut or not; the cut run first and the whole one
    after it: the whole one judged."""
    text = (SESSIONS / TWICE).read_text()
    order = 'rdma: "1x400G InfiniBand"\n'
    rules, notes = _judge(tmp_path, text, order)
    assert rules["rdma_ports"].verdict == "fail" and "mlx5_7/1 INIT" in rules["rdma_ports"].actual
    (note,) = [n for n in notes if "line 21" in n]
    assert (
        "line 21 (`ibv_devinfo`): the same command as line 1 (`ibv_devinfo`), its output cut short"
        " (mlx5_7 has no port block), the same as that one's as far as it goes; line 1"
        " (`ibv_devinfo`), whole, is judged"
    ) in note
    first, second = text.split("root@test-sr\\ov-podi:/etc/apt# ibv_devinfo\n")[1:]
    prompt = "root@test-sr\\ov-podi:/etc/apt# ibv_devinfo\n"
    changed = prompt + first + prompt + second.replace("28.39.3004", "28.40.1000")
    with pytest.raises(UsageError, match="are two RDMA port listing outputs"):
        _judge(tmp_path, changed, order)
    cut_first = prompt + second + "\n" + prompt + first
    rules, notes = _judge(tmp_path, cut_first, order)
    assert rules["rdma_ports"].verdict == "fail"
    assert any("line 1 (`ibv_devinfo`): the same command as line 11" in n for n in notes), notes
