"""allreduce.py's `allreduce_correct` must catch a collective that returns the right values in the
wrong places (a chunk misplaced by a faulty link or driver), not only one that gets every value
wrong: run the real worker (gloo, one rank, CPU torch) with the collective's output shifted."""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_worker(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shift: bool) -> Any:
    import torch.distributed as dist

    from gpuonboard.remote import allreduce

    for name, value in {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
    }.items():
        monkeypatch.setenv(name, value)
    real = dist.all_reduce

    def misplacing(t: Any, *args: Any, **kwargs: Any) -> Any:
        """The sum arrives, but the second half of the buffer sits where the first should."""
        work = real(t, *args, **kwargs)
        if shift and t.numel() > 1:
            t.copy_(t.roll(t.numel() // 2))
        return work

    monkeypatch.setattr(dist, "all_reduce", misplacing)
    args = argparse.Namespace(
        backend="gloo", min_bytes=4096, max_bytes=65536, factor=4, warmup=1, iters=1, nproc=0, timeout=60
    )
    assert allreduce.worker(args) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith(allreduce.MARK)][-1]
    return json.loads(line[len(allreduce.MARK) :])


def test_misplaced_chunks_are_wrong_sums(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run_worker(monkeypatch, capsys, shift=True)
    assert result["all_correct"] is False
    assert not any(row["correct"] for row in result["rows"])


def test_exact_sums_pass(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run_worker(monkeypatch, capsys, shift=False)
    assert result["all_correct"] is True
    assert [row["bytes"] for row in result["rows"]] == [4096, 16384, 65536]
