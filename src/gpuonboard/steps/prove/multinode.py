"""A multi-node all-reduce over the hosts of one inventory group: this host's node rank and the
master's rendezvous address (`node_plan`), torchrun's arguments, and the gate where the
group's hosts, run in parallel by the runner, meet before they start torchrun together."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuonboard.inventory import Host, Inventory
from gpuonboard.steps.base import StepArgsError


@dataclass(frozen=True)
class NodePlan:
    """This host's place in a multi-node all-reduce over the hosts of one inventory group."""

    group: str
    members: tuple[str, ...]  # the group's hosts in declared order; node rank = index
    rank: int
    master: str
    master_addr: str
    master_port: int


def group_members(inventory: Inventory, group: str) -> tuple[str, ...]:
    """The hosts of a group in declared order (names the inventory knows)."""
    return tuple(m for m in inventory.groups.get(group, ()) if m in inventory.hosts)


def node_plan(host: Host, inventory: Inventory | None, nodes: str) -> NodePlan | None:
    """Pure: None for a single-node run (`nodes` empty), else this host's node rank, the master
    (the group's first host) and its rendezvous address and port; StepArgsError says what to fix."""
    if not nodes:
        return None
    if inventory is None:
        raise StepArgsError("a multi-node all-reduce needs the inventory's groups")
    if nodes == "group":
        shared = [g for g in host.groups if len(group_members(inventory, g)) >= 2]
        if not shared:
            raise StepArgsError(
                f"host {host.name} is in no group with another host; put the nodes in one group"
                " or set allreduce_nodes to a group name"
            )
        if len(shared) > 1:
            raise StepArgsError(
                f"host {host.name} is in several groups with other hosts ({', '.join(shared)});"
                " set allreduce_nodes to one of them"
            )
        group = shared[0]
    else:
        group = nodes
        if group not in inventory.groups:
            raise StepArgsError(f"allreduce_nodes names group {group!r}, which the inventory does not have")
    members = group_members(inventory, group)
    if host.name not in members:
        raise StepArgsError(f"host {host.name} is not in group {group} (allreduce_nodes)")
    if len(members) < 2:
        raise StepArgsError(f"group {group} has only one host; a multi-node all-reduce needs two or more")
    master = inventory.hosts[members[0]]
    addr = str(master.vars.get("allreduce_master_addr") or master.address)
    try:
        port = int(master.vars.get("allreduce_master_port") or 29500)
    except (TypeError, ValueError):
        raise StepArgsError("allreduce_master_port must be a port number") from None
    if not 0 < port < 65536:
        raise StepArgsError(f"allreduce_master_port must be 1-65535, not {port}")
    return NodePlan(group, members, members.index(host.name), master.name, addr, port)


def torchrun_args(plan: NodePlan, nproc: int, join_timeout: float) -> list[str]:
    """`python -m torch.distributed.run` arguments for this node (static rendezvous on the master)."""
    return [
        "-m",
        "torch.distributed.run",
        f"--nnodes={len(plan.members)}",
        f"--node_rank={plan.rank}",
        f"--nproc_per_node={nproc}",
        f"--master_addr={plan.master_addr}",
        f"--master_port={plan.master_port}",
        f"--rdzv_conf=timeout={max(1, int(join_timeout))}",
    ]


class _Gate:
    """The hosts of one group meeting in this process before they start torchrun together."""

    def __init__(self, members: Sequence[str]) -> None:
        self.members = frozenset(members)
        self.arrived: dict[str, dict[str, Any]] = {}
        self.closed = False
        self.left = 0


_GATE_LOCK = threading.Condition()


_GATES: dict[tuple[int, str, str], _Gate] = {}


def multinode_selection_problem(nodes: NodePlan, run_hosts: frozenset[str], forks: int) -> str:
    """Pure: why this run cannot hold the whole group at once ("" when it can): a member not
    selected, or --forks below the group size (the gate would wait for the join timeout)."""
    n = len(nodes.members)
    fix = f"run all {n} hosts of the group together (--group {nodes.group} --forks {n} or more)"
    absent = [m for m in nodes.members if run_hosts and m not in run_hosts]
    if absent:
        return (
            f"multi-node all-reduce over group {nodes.group}: {', '.join(absent)}"
            f" {'is' if len(absent) == 1 else 'are'} not in this run; {fix}"
        )
    if forks and forks < n:
        return (
            f"multi-node all-reduce over group {nodes.group} needs {n} hosts at once,"
            f" --forks is {forks}; {fix}"
        )
    return ""


def meet_group(
    key: tuple[int, str, str], members: Sequence[str], me: str, info: dict[str, Any], timeout: float
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Wait (up to `timeout` s) until every member of the group has reached this step in this run;
    returns (what each arrived host said, the members that never came). The runner runs hosts in
    parallel, so a member that does not come is not selected, unreachable, or queued behind
    --forks: without this gate its peers would sit in torchrun's rendezvous."""
    deadline = time.monotonic() + timeout
    with _GATE_LOCK:
        gate = _GATES.setdefault(key, _Gate(members))
        if gate.closed:
            missing = sorted(gate.members - set(gate.arrived) - {me})
            return dict(gate.arrived), missing or [me]
        gate.arrived[me] = info
        _GATE_LOCK.notify_all()
        while not gate.members <= set(gate.arrived) and not gate.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                gate.closed = True
                _GATE_LOCK.notify_all()
                break
            _GATE_LOCK.wait(left)
        missing = sorted(gate.members - set(gate.arrived))
        gate.left += 1
        if gate.left >= len(gate.arrived) and _GATES.get(key) is gate:
            del _GATES[key]
        return dict(gate.arrived), missing
