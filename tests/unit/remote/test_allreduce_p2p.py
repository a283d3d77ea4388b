"""allreduce.py never hangs on a box without GPU peer access (issue 29 item 4): the P2P decision
is a pure function over a fake access matrix (`can_access(i, j)`) and the environment; the async
error handling variable is the one the torch version reads; a torchrun that ended on the
timeout is named as such, with what the P2P decision says. No GPU is needed: the script is
imported, as it is shipped (standalone, torch imported only where it runs)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from gpuonboard.remote import allreduce as script


def _matrix(n: int, blocked: set[tuple[int, int]]) -> Callable[[int, int], bool]:
    """A fake can_device_access_peer over n GPUs: False for each (i, j) in `blocked` (one way)."""

    def can_access(i: int, j: int) -> bool:
        assert 0 <= i < n and 0 <= j < n and i != j
        return (i, j) not in blocked

    return can_access


def test_every_pair_with_access_changes_nothing() -> None:
    d = script.p2p_decision(range(8), _matrix(8, set()), {})
    assert d["pairs_without_access"] == [] and d["set_env"] == {}
    assert d["nccl_p2p_disabled"] is False and d["set_by"] is None and d["gpus"] == list(range(8))


def test_a_pair_without_access_one_way_disables_p2p() -> None:
    # a consumer 8-card box: GPUs on the two CPU sockets cannot reach each other (either way
    # missing counts: NCCL would use both directions)
    blocked = {(0, 4), (5, 1), (3, 7)}
    d = script.p2p_decision(range(8), _matrix(8, blocked), {"PATH": "/usr/bin"})
    assert d["pairs_without_access"] == [[0, 4], [1, 5], [3, 7]]
    assert d["set_env"] == {"NCCL_P2P_DISABLE": "1"}
    assert d["nccl_p2p_disabled"] is True and d["set_by"] == "gpuonboard" and d["environment"] == {}


def test_no_pair_on_one_gpu() -> None:
    d = script.p2p_decision([0], _matrix(1, set()), {})
    assert d["pairs_without_access"] == [] and d["set_env"] == {}


@pytest.mark.parametrize(
    ("env", "disabled"),
    [
        ({"NCCL_P2P_DISABLE": "0"}, False),  # the user wants P2P: kept, though pairs lack access
        ({"NCCL_P2P_DISABLE": "1"}, True),
        ({"NCCL_P2P_LEVEL": "SYS"}, False),
        ({"NCCL_P2P_LEVEL": "loc"}, True),
        ({"NCCL_P2P_LEVEL": "0"}, True),
        # NCCL_P2P_LEVEL overrides NCCL_P2P_DISABLE in NCCL (p2pCanConnect)
        ({"NCCL_P2P_LEVEL": "PHB", "NCCL_P2P_DISABLE": "1"}, False),
    ],
)
def test_the_users_setting_is_never_overridden(env: dict[str, str], disabled: bool) -> None:
    d = script.p2p_decision(range(4), _matrix(4, {(0, 3)}), env)
    assert d["set_env"] == {}
    assert d["environment"] == env and d["set_by"] == "environment"
    assert d["pairs_without_access"] == [[0, 3]]
    assert d["nccl_p2p_disabled"] is disabled


def test_an_empty_variable_is_no_setting() -> None:
    # NCCL (and torch) read an empty variable as unset: gpuonboard decides
    d = script.p2p_decision(range(2), _matrix(2, {(0, 1)}), {"NCCL_P2P_LEVEL": "", "NCCL_P2P_DISABLE": " "})
    assert (
        d["set_env"] == {"NCCL_P2P_DISABLE": "1"} and d["set_by"] == "gpuonboard" and d["environment"] == {}
    )
    assert script.error_handling_env("2.4.0", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": ""}) == {
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"
    }


def test_the_users_setting_is_recorded_where_every_pair_has_access() -> None:
    d = script.p2p_decision(range(2), _matrix(2, set()), {"NCCL_P2P_DISABLE": "1"})
    assert d["set_env"] == {} and d["nccl_p2p_disabled"] is True and d["set_by"] == "environment"


@pytest.mark.parametrize(
    ("version", "name"),
    [
        ("1.13.1+cu117", "NCCL_ASYNC_ERROR_HANDLING"),
        ("2.1.2", "NCCL_ASYNC_ERROR_HANDLING"),
        ("2.2.0a0+81ea7a4", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),  # NGC's pre-release tags
        ("2.4.0+cu121", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("2.13.0+cpu", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("10.0.0", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("unknown", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ],
)
def test_async_error_handling_under_the_name_the_torch_reads(version: str, name: str) -> None:
    assert script.error_handling_env(version, {}) == {name: "1"}


@pytest.mark.parametrize("present", script.ERROR_HANDLING_VARS)
def test_async_error_handling_already_set_is_kept(present: str) -> None:
    # torchrun sets it for its workers; a user may have chosen a blocking wait instead
    assert script.error_handling_env("2.4.0", {present: "0"}) == {}


def _fake_torch(blocked: set[tuple[int, int]], n: int, version: str = "2.4.0") -> Any:
    def can_device_access_peer(i: int, j: int) -> bool:
        return (i, j) not in blocked

    cuda = SimpleNamespace(can_device_access_peer=can_device_access_peer, device_count=lambda: n)
    return SimpleNamespace(cuda=cuda, __version__=version)


def _clean_env(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    """Unset `names` for the test; whatever prepare_nccl puts in os.environ is removed after it
    (set first so that monkeypatch records each, present or not)."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_a_rank_sets_the_environment_before_nccl_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, (*script.P2P_VARS, *script.ERROR_HANDLING_VARS))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    p2p = script.prepare_nccl(_fake_torch({(2, 1)}, 8, "2.1.0"), 0)
    assert os.environ["NCCL_P2P_DISABLE"] == "1"
    assert os.environ["NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert p2p["gpus"] == [0, 1, 2, 3] and p2p["pairs_without_access"] == [[1, 2]]
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in os.environ  # torch 2.1 reads the old name
    printed = [x for x in capsys.readouterr().out.splitlines() if x.startswith(script.P2P_MARK)]
    assert [json.loads(x[len(script.P2P_MARK) :]) for x in printed] == [p2p]


def test_only_local_rank_0_prints_the_decision(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, (*script.P2P_VARS, *script.ERROR_HANDLING_VARS))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("NCCL_P2P_LEVEL", "NVL")
    p2p = script.prepare_nccl(_fake_torch(set(), 2), 1)
    assert p2p["set_by"] == "environment" and p2p["set_env"] == {}
    assert script.P2P_MARK not in capsys.readouterr().out


def test_an_unanswered_access_question_counts_as_no_access(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch, (*script.P2P_VARS, *script.ERROR_HANDLING_VARS))
    torch = _fake_torch(set(), 2)
    real = torch.cuda.can_device_access_peer

    def failing(i: int, j: int) -> bool:
        if (i, j) == (1, 0):
            raise RuntimeError("CUDA error: unspecified launch failure")
        return bool(real(i, j))

    torch.cuda.can_device_access_peer = failing
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert script.prepare_nccl(torch, 1)["pairs_without_access"] == [[0, 1]]


NCCL_WATCHDOG = (
    "[rank3]:[E1202 07:33:04.29 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective"
    " operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144,"
    " Timeout(ms)=180000) ran for 180007 milliseconds before timing out.\n"
)
GLOO_RECV = (
    "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete\n"
)
STORE_WAIT = "torch.distributed.DistStoreError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/1\n"


def _p2p_line(d: dict[str, Any]) -> str:
    return "some NCCL text" + script.P2P_MARK + json.dumps(d) + "\n"


def test_a_hung_nccl_collective_names_the_missing_peer_access() -> None:
    d = script.p2p_decision(range(4), _matrix(4, {(0, 3), (1, 2)}), {})
    r = script.failure(1, _p2p_line(d), NCCL_WATCHDOG, "nccl", 180)
    assert r["ok"] is False and r["p2p"] == d
    assert r["error"].startswith("NCCL did not complete an all-reduce within 180 s (the collective timeout")
    assert "; peer access missing between GPUs 0-3, 1-2: NCCL ran with NCCL_P2P_DISABLE=1" in r["error"]
    assert r["stderr_tail"][-1].endswith("before timing out.")


def test_a_hang_with_every_pair_reachable_advises_p2p_off() -> None:
    d = script.p2p_decision(range(2), _matrix(2, set()), {})
    r = script.failure(1, _p2p_line(d), NCCL_WATCHDOG, "nccl", 60)
    assert "within 60 s" in r["error"]
    assert "CUDA reports peer access between every GPU pair" in r["error"]
    assert "set NCCL_P2P_DISABLE=1 in the host's environment and rerun" in r["error"]


def test_the_users_kept_setting_is_named() -> None:
    d = script.p2p_decision(range(2), _matrix(2, {(0, 1)}), {"NCCL_P2P_LEVEL": "SYS"})
    r = script.failure(1, _p2p_line(d), NCCL_WATCHDOG, "nccl", 60)
    assert (
        "peer access missing between GPUs 0-1 and the environment's NCCL_P2P_LEVEL=SYS was kept" in r["error"]
    )
    assert "set NCCL_P2P_DISABLE=1 instead" in r["error"]


def test_gloo_and_store_timeouts_are_named() -> None:
    assert script.failure(1, "", GLOO_RECV, "gloo", 10)["error"] == (
        "gloo did not complete an all-reduce within 10 s (the collective timeout; the ranks were"
        " ended, torchrun exited 1)"
    )
    assert script.failure(1, "", STORE_WAIT, "gloo", 10)["error"] == (
        "the gloo process group did not start within 10 s (a rank did not join in time; torchrun exited 1)"
    )


def test_another_failure_keeps_its_words() -> None:
    r = script.failure(1, "", "RuntimeError: CUDA out of memory\n", "nccl", 180)
    assert r["error"] == "torchrun exited 1" and r["p2p"] is None
    d = script.p2p_decision(range(2), _matrix(2, {(0, 1)}), {})
    r = script.failure(1, _p2p_line(d), "RuntimeError: CUDA out of memory\n", "nccl", 180)
    assert (
        r["error"]
        == "torchrun exited 1; peer access missing between GPUs 0-1: NCCL ran with NCCL_P2P_DISABLE=1"
    )


def test_many_pairs_are_cut_short() -> None:
    pairs = [[0, j] for j in range(1, 8)] + [[1, j] for j in range(2, 8)] + [[2, 3], [2, 4]]
    assert script.pair_list(pairs) == "0-1, 0-2, 0-3, 0-4, 0-5, 0-6, 0-7, 1-2, 1-3, 1-4, 1-5, 1-6 and 3 more"


def test_the_last_decision_line_is_read() -> None:
    assert script.last_p2p("x\n" + script.P2P_MARK + "{not json\n") is None
    assert script.last_p2p("nothing here\n") is None
    assert script.last_p2p(script.P2P_MARK + '{"gpus": [0]}\n') == {"gpus": [0]}


def test_the_collective_timeout_is_an_argument() -> None:
    assert script.parse_args([]).collective_timeout == script.COLLECTIVE_TIMEOUT == 180.0
    assert script.parse_args(["--collective-timeout", "45"]).collective_timeout == 45.0
    assert isinstance(script.parse_args([]), argparse.Namespace)


def test_the_launcher_names_the_timeout_and_the_p2p_decision(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The launcher's own timeout: the P2P decision the ranks printed before it struck is named."""
    d = script.p2p_decision(range(2), _matrix(2, {(0, 1)}), {})

    class Hung:
        returncode = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.calls = 0

        def communicate(self, timeout: float | None = None) -> tuple[str, str]:
            self.calls += 1
            if self.calls == 1:
                raise script.subprocess.TimeoutExpired("torchrun", timeout or 0)
            return _p2p_line(d), ""

        def terminate(self) -> None:
            pass

    torch = SimpleNamespace(
        cuda=SimpleNamespace(is_available=lambda: True, device_count=lambda: 2),
        distributed=SimpleNamespace(is_nccl_available=lambda: True),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(script.subprocess, "Popen", Hung)
    argv = ["--timeout", "5"]
    assert script.launch(script.parse_args(argv), argv) == 1
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith(script.MARK)][-1]
    r = json.loads(line[len(script.MARK) :])
    assert r["error"] == (
        "torchrun did not finish within 5 s (stopped); peer access missing between GPUs 0-1:"
        " NCCL ran with NCCL_P2P_DISABLE=1"
    )
    assert r["p2p"] == d
