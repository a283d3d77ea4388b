"""QA round 3 (network step): a bad `vars.iperf_port` is a one-sentence failure, not a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuonboard.inventory import Host, Inventory
from gpuonboard.steps.base import StepArgsError, StepContext
from gpuonboard.steps.prove.network import NetworkStep


class NoRunner:
    def run(self, *a: Any, **k: Any) -> Any:  # nothing may be measured with a bad setting
        raise AssertionError("measured despite a bad setting")


@pytest.mark.parametrize("value", ["abc", 0, 70000, True, [1], 1.5])
def test_bad_iperf_port_fails_the_step_with_one_sentence(value: object) -> None:
    a = Host(name="a", address="10.0.0.1", groups=("rack",))
    b = Host(name="b", address="10.0.0.2", groups=("rack",), vars={"iperf_port": value})
    inv = Inventory(Path("inv.yml"), {"a": a, "b": b}, {"rack": ("a", "b")}, {})
    ctx = StepContext(host=a, runner=NoRunner(), facts=None, check=False, project=Path("."), inventory=inv)  # type: ignore[arg-type]
    plan = NetworkStep({}, "network").plan(ctx)
    assert plan.failed
    assert plan.msg.startswith("bad network setting: host b: vars.iperf_port must be a port number")


def test_iperf_port_accepts_numbers_and_text_digits() -> None:
    from gpuonboard.steps.prove.network import iperf_port

    assert iperf_port(Host(name="b", address="x", vars={"iperf_port": "5201"})) == 5201
    assert iperf_port(Host(name="b", address="x", vars={"iperf_port": 5201})) == 5201
    assert iperf_port(Host(name="b", address="x")) is None
    with pytest.raises(StepArgsError):
        iperf_port(Host(name="b", address="x", vars={"iperf_port": "-1"}))


class QuickRunner:
    def run(self, command: str, **_: Any) -> Any:
        from gpuonboard.connection import CommandResult

        return CommandResult(command, 0, "", "")


def test_upload_probes_that_overlap_say_the_link_was_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    barrier = threading.Barrier(2)

    def upload(self: NetworkStep, ctx: StepContext) -> float:
        barrier.wait(timeout=10)  # both hosts' probes run at once, as with --forks
        return 400.0

    monkeypatch.setattr(NetworkStep, "_upload", upload)
    hosts = [Host(name=n, address="10.0.0.1", vars={"iperf_peers": []}) for n in ("a", "b")]
    plans: dict[str, Any] = {}

    def plan(h: Host) -> None:
        ctx = StepContext(host=h, runner=QuickRunner(), facts=None, check=False, project=Path("."))  # type: ignore[arg-type]
        plans[h.name] = NetworkStep({"rtt_count": 1}, "network").plan(ctx)

    threads = [threading.Thread(target=plan, args=(h,)) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("a", "b"):
        check = next(c for c in plans[name].checks if c.name == "upload_throughput")
        assert check.actual.endswith(
            "measured while 1 other host(s) were measured over this machine's link,"
            " so one upload alone may be faster"
        )
        assert plans[name].diff["result"]["upload_shared_with"] == 1
    alone = Host(name="c", address="10.0.0.1", vars={"iperf_peers": []})
    monkeypatch.setattr(NetworkStep, "_upload", lambda self, ctx: 400.0)
    ctx = StepContext(host=alone, runner=QuickRunner(), facts=None, check=False, project=Path("."))  # type: ignore[arg-type]
    check = next(
        c for c in NetworkStep({"rtt_count": 1}, "network").plan(ctx).checks if c.name == "upload_throughput"
    )
    assert check.actual == "400 Mbit/s from this machine over SSH (100 GB ≈ 33 min)"
