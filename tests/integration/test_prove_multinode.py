"""`allreduce` with `dcgmi diag` folded in and across the hosts of a group, for real on test hosts.

DCGM: a `dcgmi` that prints a public real capture (tests/fixtures/public/) is dropped on a test
host's PATH; the step runs it, and its rules (and the step's verdict) follow the capture.
Multi-node: two test hosts on loopback run the bundled all-reduce script under one 2-node torchrun
(static rendezvous on the group's first host, gloo on the CPU); selecting only one of them fails
with one sentence naming the missing host instead of hanging in the rendezvous.
"""

from __future__ import annotations

import importlib.util
import shlex
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool, add_executable

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch not installed (scripts/bootstrap.sh with BOOTSTRAP_TESTS=1 installs torch==2.13.0)",
)

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"
V4_FAIL = PUBLIC / "dcgmi-diag-j__dcgm-4.5.2__gb10__level2__software-fail.json"
V3_PASS = PUBLIC / "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt"
# tiny sweep: the rules and the rendezvous are under test, not this machine's bandwidth
SMALL = {
    "train_python": sys.executable,
    "allreduce_min_size": "64KiB",
    "allreduce_max_size": "256KiB",
    "allreduce_iters": 2,
}
HOSTS = [("mn1", None), ("mn2", None), ("dcgmfail", "rtx4090-1x"), ("dcgmpass", None)]


@pytest.fixture(scope="module")
def hosts(pool: TestHostPool) -> Iterator[dict[str, TestHost]]:
    added = pool.add_many(HOSTS)
    yield {h.name: h for h in added}
    for h in added:
        h.stop()


def replay_dcgmi(capture: Path, level: int) -> str:
    """A `dcgmi` that answers `diag -r <level> -j` with a real capture, anything else with an error."""
    return f"""#!/bin/sh
if [ "$*" = "diag -r {level} -j" ]; then exec cat {shlex.quote(str(capture))}; fi
echo "replay dcgmi: unexpected arguments: $*" >&2
exit 2
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write(project: Project, hosts: dict[str, TestHost], names: list[str], **extra: Any) -> None:
    entries = {}
    for name in names:
        entry = host_entry(hosts[name], project.pool)
        entry["vars"].update({**SMALL, **extra})
        entries[name] = entry
    groups = {"rack": {"hosts": ["mn1", "mn2"]}} if {"mn1", "mn2"} <= set(names) else {}
    project.write_inventory(entries, **({"groups": groups} if groups else {}))


def step(project: Project, host: str) -> dict[str, Any]:
    h = next(x for x in project.summary()["hosts"] if x["name"] == host)
    return dict(h["steps"][0])


def test_dcgmi_diag_real_captures_fold_into_the_allreduce_rules(
    project: Project, hosts: dict[str, TestHost]
) -> None:
    add_executable(hosts["dcgmfail"].bin_dir, "dcgmi", replay_dcgmi(V4_FAIL, 2))
    add_executable(hosts["dcgmpass"].bin_dir, "dcgmi", replay_dcgmi(V3_PASS, 1))
    entries = {}
    for name, level in (("dcgmfail", 2), ("dcgmpass", 1)):
        entry = host_entry(hosts[name], project.pool)
        entry["vars"].update({**SMALL, "dcgm_level": level})
        entries[name] = entry
    project.write_inventory(entries)
    r = project.cli(
        "provision", "--host", "dcgmfail,dcgmpass", "--playbook", "prove", "--only", "allreduce", timeout=180
    )
    assert r.returncode == 1, r.stdout + r.stderr  # the real capture holds a DCGM Fail
    # DCGM 4.5.2, level 2: software fails on GPU 0 (persistence mode off), memory and pcie pass
    bad = project.rules("dcgmfail")
    assert bad["dcgm_software"]["verdict"] == "fail"
    assert bad["dcgm_software"]["expected"] == "Pass"
    assert bad["dcgm_software"]["actual"].startswith(
        "Fail on GPU 0: Persistence Mode: Persistence mode for GPU 0"
    )
    assert bad["dcgm_memory"]["verdict"] == "pass" and bad["dcgm_pcie"]["verdict"] == "pass"
    assert bad["dcgm_diag"]["actual"] == "DCGM 4.5.2 (driver 580.82.09), level 2: 3 tests, 2 pass, 1 fail"
    assert bad["allreduce_correct"]["verdict"] == "pass"  # the benchmark still ran
    s = step(project, "dcgmfail")
    assert s["status"] == "failed"
    assert "DCGM software: Fail on GPU 0: Persistence Mode" in s["msg"], s["msg"]
    assert s["diff"]["dcgm"]["version"] == "4.5.2" and s["diff"]["dcgm"]["level"] == 2
    # DCGM 3.1.0, level 1: every test passes, the step passes
    good = project.rules("dcgmpass")
    assert good["dcgm_diag"]["verdict"] == "pass"
    assert good["dcgm_diag"]["actual"] == "DCGM 3.1.0, level 1: 10 tests, 10 pass"
    assert good["dcgm_persistence_mode"]["verdict"] == "pass"
    assert step(project, "dcgmpass")["status"] == "ok"


def test_two_node_gloo_allreduce_across_the_group(project: Project, hosts: dict[str, TestHost]) -> None:
    port = free_port()
    write(
        project,
        hosts,
        ["mn1", "mn2"],
        allreduce_nodes="group",
        allreduce_master_port=port,
        allreduce_join_timeout=60,
    )
    r = project.cli("provision", "--group", "rack", "--playbook", "prove", "--only", "allreduce", timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    master = project.rules("mn1")
    assert master["allreduce_correct"]["verdict"] == "pass"
    assert "(2 nodes, world size 2 x gloo)" in master["allreduce_multinode"]["actual"]
    result = step(project, "mn1")["diff"]["result"]
    assert result["world_size"] == 2 and result["node_rank"] == 0 and result["nodes"] == ["mn1", "mn2"]
    assert result["peak_busbw_gbps"] > 0 and result["all_correct"]
    no_dcgm = master["dcgm_diag"]  # no dcgmi on these hosts: information, not a failure
    assert (no_dcgm["actual"], no_dcgm["verdict"]) == ("DCGM not installed: skipped", "pass")
    worker = project.rules("mn2")["allreduce_multinode"]
    assert worker["verdict"] == "pass" and "node rank 1 of 2" in worker["actual"]
    assert step(project, "mn2")["msg"].startswith("2-node all-reduce over group rack, node 1 of 2")


def test_a_group_host_not_selected_fails_clearly(project: Project, hosts: dict[str, TestHost]) -> None:
    write(
        project,
        hosts,
        ["mn1", "mn2"],
        allreduce_nodes="rack",
        allreduce_master_port=free_port(),
        allreduce_join_timeout=300,  # the run must not wait for it: a CLI timeout of 60 s fails
        dcgm_level=0,
    )
    r = project.cli("provision", "--host", "mn1", "--playbook", "prove", "--only", "allreduce", timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert step(project, "mn1")["msg"] == (
        "multi-node all-reduce over group rack: mn2 is not in this run; run all 2 hosts"
        " of the group together (--group rack --forks 2 or more)"
    )
    # --forks 1 would run the group's hosts one after the other: both fail at once, none waits
    r = project.cli(
        "provision",
        "--group",
        "rack",
        "--forks",
        "1",
        "--playbook",
        "prove",
        "--only",
        "allreduce",
        timeout=60,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    for name in ("mn1", "mn2"):
        assert "needs 2 hosts at once, --forks is 1" in step(project, name)["msg"], step(project, name)
