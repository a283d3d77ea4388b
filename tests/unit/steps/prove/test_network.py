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


ANSIBLE_CORPUS = Path(__file__).parents[3] / "fixtures" / "ansible"


def _iperf_checks(
    inv: Inventory,
    host: str,
    run: set[str],
    monkeypatch: pytest.MonkeyPatch,
    reached: list[str] | None = None,
) -> list[Any]:
    """The iperf3 checks of `host`'s network step in a run of the hosts `run`; nothing is
    dialled: each peer the step reaches is appended to `reached` (None: reaching one fails)."""

    def reach(self: NetworkStep, ctx: StepContext, peer: str, *_: Any) -> dict[str, Any]:
        if reached is None:
            raise AssertionError(f"{peer} was reached")
        reached.append(peer)
        return {"received_gbps": 9.5, "sent_gbps": 9.6, "retransmits": 0}

    monkeypatch.setattr(NetworkStep, "_iperf", reach)
    ctx = StepContext(
        host=inv.hosts[host],
        runner=QuickRunner(),  # type: ignore[arg-type]
        facts=None,  # type: ignore[arg-type]
        check=False,
        project=Path("."),
        inventory=inv,
        run_hosts=frozenset(run),
    )
    plan = NetworkStep({"rtt_count": 1, "upload": False}, "network").plan(ctx)
    return [c for c in plan.checks if c.name.startswith("iperf3_")]


def test_a_group_peer_outside_the_selection_is_named_when_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepOps' real config.example inventory (uncommented): `prove --limit gpu01` measures
    iperf3 to gpu02, the next host of gpu01's groups (documented), over a second SSH connection
    to a host the user did not select, without a word; now its check says so and how to stop it
    (selected with gpu01, or named in vars.iperf_peers, no note)."""
    from gpuonboard import inventory

    (tmp_path / "ssh_config").write_text("")
    inv = inventory.load(
        ANSIBLE_CORPUS / "deepops-uncommented" / "inventory", ssh_config=tmp_path / "ssh_config"
    )
    reached: list[str] = []
    [check] = _iperf_checks(inv, "gpu01", {"gpu01"}, monkeypatch, reached)
    assert reached == ["gpu02"]
    assert (check.name, check.verdict) == ("iperf3_gpu02", "pass")
    assert check.detail == (
        "gpu02 is not in this run's selection: as the next host of a group it was reached over its"
        " own SSH connection for its iperf3 server (vars.iperf_peers: [] measures no peer)"
    )
    [check] = _iperf_checks(inv, "gpu01", {"gpu01", "gpu02"}, monkeypatch, reached)
    assert check.detail == ""


def test_a_peer_ansible_reaches_without_ssh_is_named_never_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """community.docker's real connection test inventory, `docker-no-pipelining` given
    `ansible_connection=ssh` (the edit): its group peer `docker-pipelining` is a container
    Ansible reaches with `docker exec`; iperf3 dialled it over SSH at ubuntu-latest:22, now the
    check is unverified naming its connection, even when both are selected."""
    from gpuonboard import inventory

    text = (ANSIBLE_CORPUS / "community-docker-connection" / "test_connection.inventory").read_text()
    edited = text.replace(
        "ansible_ssh_pipelining=false", "ansible_ssh_pipelining=false ansible_connection=ssh"
    )
    (tmp_path / "hosts").write_text(edited)
    (tmp_path / "ssh_config").write_text("")
    inv = inventory.load(tmp_path / "hosts", ssh_config=tmp_path / "ssh_config")
    both = {"docker-pipelining", "docker-no-pipelining"}
    [check] = _iperf_checks(inv, "docker-no-pipelining", both, monkeypatch)  # (reaching it fails)
    assert (check.name, check.verdict) == ("iperf3_docker-pipelining", "unverified")
    assert check.detail == (
        f"{tmp_path / 'hosts'}, line 6: docker-pipelining was not reached, as Ansible reaches it by its"
        " 'community.docker.docker' connection (ansible_connection of group 'docker'), which does not"
        " run over SSH; name the peers to measure in vars.iperf_peers (`[]` measures none), or, where"
        " SSH reaches it, set ansible_connection=ssh for it."
    )


def test_a_peer_never_dialled_is_named_once_with_the_remedy_of_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """community.docker's real connection test inventory, `docker-no-pipelining` given
    `ansible_connection=ssh` and `docker-pipelining` `iperf_port=99999` (the edits): the detail
    named the peer twice and advised `--limit '!docker-pipelining'`, which leaves it the next host
    of the group, and the port of a peer never dialled failed the whole step ("bad network
    setting"). Now the peer is named once, the remedy is vars.iperf_peers (taking it out of the
    list where it was named there), and its port is not read."""
    from gpuonboard import inventory

    text = (ANSIBLE_CORPUS / "community-docker-connection" / "test_connection.inventory").read_text()
    edited = text.replace(
        "ansible_ssh_pipelining=false", "ansible_ssh_pipelining=false ansible_connection=ssh"
    ).replace("ansible_ssh_pipelining=true", "ansible_ssh_pipelining=true iperf_port=99999")
    (tmp_path / "hosts").write_text(edited)
    (tmp_path / "ssh_config").write_text("")
    inv = inventory.load(tmp_path / "hosts", ssh_config=tmp_path / "ssh_config")
    [check] = _iperf_checks(inv, "docker-no-pipelining", set(), monkeypatch)
    assert check.verdict == "unverified"
    assert check.detail.count("docker-pipelining") == 1 and "--limit" not in check.detail
    ctx = StepContext(
        host=inv.hosts["docker-no-pipelining"],
        runner=QuickRunner(),  # type: ignore[arg-type]
        facts=None,  # type: ignore[arg-type]
        check=False,
        project=Path("."),
        inventory=inv,
    )
    args = {"rtt_count": 1, "upload": False, "iperf_peers": ["docker-pipelining"]}
    [check] = [c for c in NetworkStep(args, "network").plan(ctx).checks if c.name.startswith("iperf3_")]
    assert "; take it out of vars.iperf_peers, or, where SSH reaches it" in check.detail
