"""The `allreduce` step on a box without GPU peer access (issue 29 item 4), judged on result
documents: `allreduce_p2p` warns when NCCL ran without P2P and names the pairs; a figure measured
through host memory is not judged against an NVLink reference row ("not comparable"), while a
PCIe row (a figure with peer-to-peer, `p2p: true`) passes it where it meets the figure and calls
it not comparable where it does not; a result without a P2P decision (the CPU, recorded runs from before)
gets no such check. The step passes its collective timeout to the script and a run that ended
on it says why in the step's message (a stand-in for the host's python)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.connection import LocalRunner
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.prove import allreduce_checks, load_references, multinode_checks, parse_result
from gpuonboard.steps.prove.allreduce import collective_timeout, p2p_check, reference_check
from gpuonboard.steps.prove.launch import host_bound
from gpuonboard.steps.prove.multinode import NodePlan
from gpuonboard.testing import add_executable

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "prove"
A100 = "NVIDIA A100-SXM4-80GB"


def _a100(p2p: dict[str, Any] | None, peak: float | None = None) -> dict[str, Any]:
    """The recorded 8 x A100 NCCL result with a P2P decision (as the script now reports it)."""
    r = parse_result((FIX / "allreduce_8xa100_nccl.out").read_text())
    assert r is not None and "p2p" not in r
    out = {**r, "p2p": p2p}
    if peak is not None:
        out["peak_busbw_gbps"] = peak
        out["rows"] = [{**row, "busbw_gbps": min(row["busbw_gbps"], peak)} for row in r["rows"]]
    return out


def _p2p(
    pairs: list[list[int]],
    disabled: bool,
    set_by: str | None,
    env: dict[str, str] | None = None,
    gpus: int = 8,
) -> dict[str, Any]:
    return {
        "gpus": list(range(gpus)),
        "pairs_without_access": pairs,
        "nccl_p2p_disabled": disabled,
        "set_by": set_by,
        "environment": env or {},
        "set_env": {"NCCL_P2P_DISABLE": "1"} if set_by == "gpuonboard" else {},
    }


def _by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


NO_P2P = _p2p([[0, 4], [1, 5], [2, 6], [3, 7]], True, "gpuonboard")


def test_p2p_disabled_by_gpuonboard_warns_and_names_the_pairs() -> None:
    c = _by_name(allreduce_checks(_a100(NO_P2P, 12.0), load_references(), A100, 8, "nvlink"))
    p2p = c["allreduce_p2p"]
    assert p2p.verdict == "warn"
    assert p2p.expected == "peer access between every pair of the 8 GPUs"
    assert p2p.actual == (
        "no peer access between GPUs 0-4, 1-5, 2-6, 3-7; NCCL ran with NCCL_P2P_DISABLE=1 (set by gpuonboard:"
        " NCCL can hang using P2P there)"
    )
    assert "the bus bandwidth is for a path through host memory, not GPU to GPU" in p2p.detail
    assert "`nvidia-smi topo -p2p r`" in p2p.detail


def test_a_no_p2p_figure_is_not_judged_against_an_nvlink_row() -> None:
    # 12 GB/s against the 230 GB/s NVSwitch row would be a FAIL; it is not comparable instead
    c = _by_name(allreduce_checks(_a100(NO_P2P, 12.0), load_references(), A100, 8, "nvlink"))
    busbw = c["allreduce_busbw"]
    assert busbw.verdict == "warn"
    assert busbw.expected == "230 GB/s over NVLink (a100-sxm-8x-nvswitch)"
    assert busbw.actual.endswith("with NCCL's P2P off: not comparable")
    assert "through host memory, not over NVLink" in busbw.detail
    assert c["allreduce_correct"].verdict == "pass"
    # the same figure with P2P on is judged as before (a failure)
    on = _by_name(allreduce_checks(_a100(None, 12.0), load_references(), A100, 8, "nvlink"))
    assert on["allreduce_busbw"].verdict == "fail" and "allreduce_p2p" not in on


def test_a_no_p2p_figure_is_still_judged_against_a_pcie_row() -> None:
    table = load_references()
    r = {**_a100(NO_P2P, 18.0), "device_name": "NVIDIA L40S"}
    c = _by_name(allreduce_checks(r, table, "NVIDIA L40S", 8, "pcie", pcie_gen=4))
    assert "pcie-gen4-no-nvlink" in c["allreduce_busbw"].expected
    assert c["allreduce_busbw"].verdict == "pass"  # 18 of 20 GB/s
    assert c["allreduce_p2p"].verdict == "warn"


def test_a_low_no_p2p_figure_is_not_comparable_with_a_pcie_p2p_row() -> None:
    """A healthy 2 x RTX 4090 Gen4 box whose driver gives no peer access: NCCL runs through host
    memory at ~8 GB/s, 40 % of the Gen4 row's 20 GB/s (a figure with GPU peer-to-peer): it
    failed "low bus bandwidth", a fault of a box that has none; now not comparable (a warning).
    (The recorded 8 x A100 result document with its peak and device name edited in-test.)"""
    table = load_references()
    no_p2p = _p2p([[0, 1]], True, "gpuonboard", gpus=2)
    r = {**_a100(no_p2p, 8.0), "device_name": "NVIDIA GeForce RTX 4090", "world_size": 2}
    c = _by_name(allreduce_checks(r, table, "NVIDIA GeForce RTX 4090", 2, "pcie", pcie_gen=4))
    busbw = c["allreduce_busbw"]
    assert busbw.verdict == "warn", busbw
    assert busbw.expected == "20 GB/s with GPU peer-to-peer (pcie-gen4-no-nvlink)"
    assert busbw.actual.endswith("40 % of reference, with NCCL's P2P off: not comparable"), busbw.actual
    assert "through host memory" in busbw.detail and "low bus bandwidth" not in busbw.detail
    # with P2P on, the same figure is judged as before (a failure)
    on = _by_name(
        allreduce_checks({**r, "p2p": None}, table, "NVIDIA GeForce RTX 4090", 2, "pcie", pcie_gen=4)
    )
    assert on["allreduce_busbw"].verdict == "fail"


@pytest.mark.parametrize(("peak", "verdict"), [(5.0, "warn"), (4.9, "fail"), (2.0, "fail")])
def test_a_no_p2p_figure_is_judged_against_half_the_p2p_row(peak: float, verdict: str) -> None:
    """A 2-GPU PCIe Gen4 run with NCCL's P2P off against the Gen4 row (20 GB/s with peer-to-peer):
    through host memory a run moves about half of it, so down to 50 % of that half (5 GB/s) it is
    not comparable (a warning); below it, 2 GB/s (10 % of the row), it fails as low bus bandwidth
    (it warned "not comparable" at any figure)."""
    table = load_references()
    check = reference_check(
        table, "NVIDIA GeForce RTX 4090", 2, "pcie", peak, "x", without_p2p=True, pcie_gen=4
    )
    assert check.verdict == verdict, check
    assert ("low bus bandwidth" in check.detail) == (verdict == "fail")


def test_reference_check_without_p2p_only_changes_nvlink_rows() -> None:
    table = load_references()
    nv = reference_check(table, A100, 8, "nvlink", 226.0, "x", without_p2p=False)
    assert nv.verdict == "pass"
    assert reference_check(table, A100, 8, "nvlink", 226.0, "x", without_p2p=True).verdict == "warn"
    # no row at all: the warning about the missing row, whatever P2P did
    none = reference_check(table, "Tesla T4", 2, "mixed", 5.0, "x", without_p2p=True)
    assert none.expected == "a reference for 2 x Tesla T4 (mixed)"


def test_every_pair_with_access_passes() -> None:
    c = _by_name(allreduce_checks(_a100(_p2p([], False, None)), load_references(), A100, 8, "nvlink"))
    assert c["allreduce_p2p"].verdict == "pass" and c["allreduce_p2p"].actual == "all 28 pairs"
    assert c["allreduce_busbw"].verdict == "pass"


def test_the_environments_own_setting() -> None:
    # the user's NCCL_P2P_DISABLE=1: P2P off, named as theirs; the NVLink row not judged
    mine = _p2p([], True, "environment", {"NCCL_P2P_DISABLE": "1"})
    c = _by_name(allreduce_checks(_a100(mine, 12.0), load_references(), A100, 8, "nvlink"))
    assert c["allreduce_p2p"].verdict == "warn"
    assert (
        c["allreduce_p2p"].actual
        == "every pair has peer access; NCCL ran without P2P: the environment's NCCL_P2P_DISABLE=1"
    )
    assert c["allreduce_busbw"].actual.endswith("not comparable")
    # the user's NCCL_P2P_LEVEL kept though pairs lack access: a warning that says what to set
    level = _p2p([[0, 1]], False, "environment", {"NCCL_P2P_LEVEL": "SYS"})
    check = p2p_check(_a100(level))
    assert check is not None and check.verdict == "warn"
    assert check.actual == "no peer access between GPUs 0-1; the environment's NCCL_P2P_LEVEL=SYS kept"
    assert "set NCCL_P2P_DISABLE=1 in the host's environment if the all-reduce hangs" in check.detail
    # a user's setting that leaves P2P on where every pair has access: a pass that names it
    kept = p2p_check(_a100(_p2p([], False, "environment", {"NCCL_P2P_LEVEL": "NVL"})))
    assert kept is not None and kept.verdict == "pass"
    assert kept.actual == "all 28 pairs; the environment's NCCL_P2P_LEVEL=NVL kept"


def test_no_p2p_decision_no_check() -> None:
    assert p2p_check(_a100(None)) is None
    assert p2p_check({"device": "cpu"}) is None
    one = _p2p([], False, None, gpus=1)
    assert p2p_check(_a100(one)) is None  # one GPU: no pair
    cpu = parse_result((FIX / "allreduce_cpu_gloo.out").read_text())
    assert cpu is not None
    assert "allreduce_p2p" not in _by_name(
        allreduce_checks({**cpu, "p2p": None}, load_references(), "", 0, "unknown")
    )


def test_a_multinode_result_carries_its_p2p_check() -> None:
    plan = NodePlan("rack", ("a", "b"), 0, "a", "10.0.0.1", 29500)
    c = _by_name(multinode_checks({**_a100(NO_P2P), "result": True}, plan, 8, "nccl"))
    assert c["allreduce_p2p"].verdict == "warn" and c["allreduce_multinode"].verdict == "pass"
    c = _by_name(multinode_checks({**_a100(None), "result": True}, plan, 8, "nccl"))
    assert "allreduce_p2p" not in c


def test_the_collective_timeout_fires_before_the_hosts_timeout() -> None:
    assert collective_timeout(900) == 180.0  # the default train_timeout of the step
    for timeout in (20.0, 60.0, 120.0, 300.0, 900.0, 7200.0):
        t = collective_timeout(timeout)
        assert 30.0 <= t <= 180.0
        if host_bound(timeout) >= 60:
            assert t <= host_bound(timeout) / 2, timeout


# --------------------------------------------------------------------------- the step, run


def _ctx(tmp_path: Path, result: dict[str, Any], **vars: Any) -> StepContext:
    out = tmp_path / "allreduce.out"
    out.write_text(f"GPUONBOARD_RESULT {json.dumps(result)}\n")
    args = tmp_path / "args.txt"
    python = add_executable(tmp_path, "fake-python", f"#!/bin/sh\necho \"$@\" > '{args}'\ncat '{out}'\n")
    host = Host(
        "box",
        "127.0.0.1",
        connection="local",
        vars={"train_python": str(python), "remote_tmp": str(tmp_path), "dcgm_level": 0, **vars},
    )
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    return StepContext(host, LocalRunner(host), facts, False, tmp_path)


def test_the_step_passes_its_collective_timeout(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, _a100(NO_P2P, 12.0), train_timeout=120)
    result = REGISTRY["allreduce"]({}).execute(ctx)
    argv = (tmp_path / "args.txt").read_text().split()
    assert argv[argv.index("--collective-timeout") + 1] == "55"  # half of the host's 110 s
    assert result.diff is not None and result.diff["result"]["p2p"] == NO_P2P
    assert "allreduce_p2p" in {c.name for c in result.checks}


def test_a_run_ended_by_the_timeout_says_why(tmp_path: Path) -> None:
    error = (
        "NCCL did not complete an all-reduce within 55 s (the collective timeout; the ranks were ended,"
        " torchrun exited 1); peer access missing between GPUs 0-3: NCCL ran with NCCL_P2P_DISABLE=1"
    )
    ctx = _ctx(tmp_path, {"ok": False, "error": error, "p2p": None}, train_timeout=120)
    result = REGISTRY["allreduce"]({}).execute(ctx)
    assert result.status == "failed"
    assert result.msg == f"allreduce.py: {error}"
