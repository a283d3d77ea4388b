"""The views of one GPU's formats (facts/gpu_agree.py), computed once per GPU however many rules
ask them, on a real box read in four formats."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import gpu_agree

from ..api.test_offline_json import H200_BOX


@pytest.mark.parametrize("view", ["_setting_reads", "_disputed", "_usage_samples", "_link_reads"])
def test_each_view_is_computed_once_per_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, view: str
) -> None:
    """Judging the real H200 box of four formats: each view of a GPU (or its readings) is
    computed once, every later rule's ask answered from it. Before: setting_reads was computed
    for one GPU up to 16 times a rule pass, usage_samples 40 times."""
    asked: Counter[int] = Counter()
    real: Callable[..., Any] = getattr(gpu_agree, view)

    def counted(of: Any) -> Any:
        asked[id(of)] += 1
        return real(of)

    monkeypatch.setattr(gpu_agree, view, counted)
    for f in H200_BOX:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    facts = parse_facts(offline.load_outputs([str(tmp_path)]))
    offline.judge(facts, None)
    assert asked and max(asked.values()) == 1, asked


def test_each_setting_of_a_gpu_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judging the real H200 box of four formats: each setting of a GPU's readings is collected
    (`_read`) once. Before: once per ask of setting_reads, many times a setting."""
    asked: Counter[tuple[int, str]] = Counter()
    real = gpu_agree._read

    def counted(copies: Any, field: str) -> Any:
        asked[(id(copies), field)] += 1
        return real(copies, field)

    monkeypatch.setattr(gpu_agree, "_read", counted)
    for f in H200_BOX:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    offline.judge(parse_facts(offline.load_outputs([str(tmp_path)])), None)
    assert asked and max(asked.values()) == 1, max(asked.values())
