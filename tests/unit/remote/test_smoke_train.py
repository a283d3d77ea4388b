"""smoke_train's checkpoint_roundtrip: a checkpoint that reloads the weights but not the optimizer
state (Adam's moments a resume continues from) is no round trip. Runs the real script's training
on the CPU with torch.load returning a state whose optimizer moments were damaged (a disk or
filesystem returning other bytes)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from gpuonboard.steps.prove import smoke_checks

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _run(monkeypatch: pytest.MonkeyPatch, damage: bool) -> dict[str, Any]:
    import torch

    from gpuonboard.remote import smoke_train

    real_load = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        state = real_load(*args, **kwargs)
        if damage:
            moments = state["optimizer"]["state"][0]["exp_avg"]
            moments.view(-1)[0] += 1.0
        return state

    monkeypatch.setattr(torch, "load", load)
    args = smoke_train.parse_args(["--steps", "12", "--batch-size", "16", "--workers", "0"])
    return smoke_train.run(args)


def test_damaged_optimizer_state_fails_the_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _run(monkeypatch, damage=True)
    assert r["checkpoint"]["identical"] is True  # the weights came back: outputs alone pass
    assert r["checkpoint"]["optimizer_identical"] is False
    check = {c.name: c for c in smoke_checks(r, gpu_count=0)}["checkpoint_roundtrip"]
    assert check.verdict == "fail"
    assert check.actual.endswith("outputs identical, optimizer state differs")


def test_intact_checkpoint_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _run(monkeypatch, damage=False)
    assert r["checkpoint"]["identical"] is True and r["checkpoint"]["optimizer_identical"] is True
    check = {c.name: c for c in smoke_checks(r, gpu_count=0)}["checkpoint_roundtrip"]
    assert check.verdict == "pass" and check.actual.endswith("outputs identical")
