"""`dcgmi diag -j` parser and the rules the allreduce step folds in, on public real captures
(tests/fixtures/public/SOURCES.md); multi-node planning helpers of the allreduce step."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpuonboard import shell
from gpuonboard.facts import dcgm
from gpuonboard.inventory import Host, Inventory
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import Check, StepArgsError
from gpuonboard.steps.prove import (
    DCGM_PROBE,
    Launch,
    NodePlan,
    build_command,
    dcgm_checks,
    dcgm_failure_note,
    dcgm_level,
    meet_group,
    multinode_checks,
    multinode_selection_problem,
    node_plan,
    torchrun_args,
)

PUBLIC = Path(__file__).resolve().parents[2] / "fixtures" / "public"
V3_PASS = PUBLIC / "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt"
V4_FAIL = PUBLIC / "dcgmi-diag-j__dcgm-4.5.2__gb10__level2__software-fail.json"
V4_SKIPS = PUBLIC / "dcgmi-diag-j__dcgm-4.5.2__gb10__level2-gated__software-fail-skips.json"
PERSISTENCE = (
    'Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi'
    ' -i <gpuId> -pm 1 " as root.'
)


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


# --------------------------------------------------------------------------- parser


def test_dcgm3_all_pass_with_leading_warning_line_and_nulls() -> None:
    d = dcgm.parse(V3_PASS.read_text())
    assert d.error is None and d.version == "3.1.0" and d.driver is None
    assert [t.name for t in d.tests][:3] == ["Denylist", "NVML Library", "CUDA Main Library"]
    assert len(d.tests) == 10  # 9 Deployment tests (the nulls between them skipped) + software
    assert {t.status for t in d.tests} == {"pass"} and d.tests[0].raw_status == "PASS"
    assert d.tests[0].gpus == ("0,1,2,3,4,5,6,7",)  # 3.x: one result for all GPUs
    assert d.tests[-1].category == "Custom" and d.tests[-1].gpus == tuple(str(i) for i in range(8))


def test_dcgm4_real_failure_keeps_dcgm_message() -> None:
    d = dcgm.parse(V4_FAIL.read_text())
    assert d.error is None and (d.version, d.driver) == ("4.5.2", "580.82.09")
    software, memory, pcie = d.tests
    assert (software.category, software.name, software.status, software.raw_status) == (
        "Deployment",
        "software",
        "fail",
        "Fail",
    )
    assert software.gpus == ("0",)
    assert software.messages == (PERSISTENCE,)  # test_summary and result repeat it: once
    assert (memory.status, pcie.status) == ("pass", "pass")


def test_dcgm4_real_skips() -> None:
    d = dcgm.parse(V4_SKIPS.read_text())
    assert [(t.name, t.status) for t in d.tests] == [
        ("software", "fail"),
        ("memory", "skip"),
        ("pcie", "skip"),
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no JSON in the output (no output)"),
        ("Error: unable to establish a connection to the specified host: localhost\n", "localhost"),
        ('{"DCGM GPU Diagnostic": ', "not JSON"),
        ("[1, 2]", "no JSON in the output ([1, 2])"),
        ('{"diag": {"tests": []}}', "unknown JSON shape"),
        ('{"DCGM Diagnostic": {"test_categories": []}}', "no test results"),
        ('{"DCGM GPU Diagnostic": {"runtime_error": "GPU 0 is busy", "version": "3.3.5"}}', "GPU 0 is busy"),
    ],
)
def test_unreadable_documents_say_why(text: str, error: str) -> None:
    d = dcgm.parse(text)
    assert d.error is not None and error in d.error
    assert d.tests == ()


def test_status_spellings_and_levels() -> None:
    assert [
        dcgm.normalise_status(s) for s in ("PASS", "Pass", "FAIL", "Warn", "SKIPPED", "Not Run", "?")
    ] == [
        "pass",
        "pass",
        "fail",
        "warn",
        "skip",
        "skip",
        "unknown",
    ]
    assert dcgm.command(1) == "dcgmi diag -r 1 -j"
    with pytest.raises(ValueError):
        dcgm.command(5)
    assert [dcgm.level_for_budget(s) for s in (0, 60, 150, 1799, 1800, 10_000)] == [1, 1, 2, 2, 3, 4]
    assert dcgm.slug("Page Retirement/Row Remap") == "page_retirement_row_remap"


# --------------------------------------------------------------------------- rules


def test_rules_on_real_failure_fail_with_test_name_and_message() -> None:
    checks = dcgm_checks(dcgm.parse(V4_FAIL.read_text()), 2)
    c = by_name(checks)
    assert c["dcgm_software"].verdict == "fail"
    assert c["dcgm_software"].expected == "Pass"
    assert c["dcgm_software"].actual == f"Fail on GPU 0: {PERSISTENCE}"
    assert c["dcgm_memory"].verdict == "pass" and c["dcgm_pcie"].verdict == "pass"
    summary = c["dcgm_diag"]
    assert summary.verdict == "pass" and summary.expected == "dcgmi diag -r 2: every test Pass"
    assert summary.actual == "DCGM 4.5.2 (driver 580.82.09), level 2: 3 tests, 2 pass, 1 fail"
    assert dcgm_failure_note(checks) == f"; DCGM software: Fail on GPU 0: {PERSISTENCE}"


def test_rules_on_real_pass() -> None:
    checks = dcgm_checks(dcgm.parse(V3_PASS.read_text()), 1)
    assert {c.verdict for c in checks} == {"pass"}
    c = by_name(checks)
    assert c["dcgm_persistence_mode"].actual == "PASS (Deployment)"
    assert c["dcgm_diag"].actual == "DCGM 3.1.0, level 1: 10 tests, 10 pass"
    assert dcgm_failure_note(checks) == ""


def test_rules_skip_is_unverified_and_the_summary_names_the_skipped() -> None:
    # the real 4.5.2 document: the failed software test gated the memory and pcie tests
    c = by_name(dcgm_checks(dcgm.parse(V4_SKIPS.read_text()), 2))
    assert c["dcgm_memory"].verdict == "unverified" and "not run by DCGM" in c["dcgm_memory"].actual
    assert c["dcgm_pcie"].verdict == "unverified"
    assert c["dcgm_software"].verdict == "fail"
    summary = c["dcgm_diag"]
    assert summary.verdict == "unverified"
    assert "DCGM skipped 2 of 3 tests of level 2 (memory, pcie)" in summary.detail


def _category(name: str, tests: list[tuple[str, str]]) -> dict[str, object]:
    return {
        "category": name,
        "tests": [{"name": n, "results": [{"gpu_id": "0", "status": s}]} for n, s in tests],
    }


def test_level3_with_every_hardware_test_skipped_is_no_pass() -> None:
    # NVIDIA/DCGM issue #139 (DCGM 3.x, T400, `dcgmi diag -r 3 -j`): PCIe, GPU Memory, Diagnostic,
    # EUD Test and Targeted Stress all "Skip"; the issue elides the Deployment category, filled
    # with the nine Deployment tests passing as issue #55 (DCGM 3.0.4, `dcgmi diag -r 3`, "most of
    # the tests (beyond the level 1 tests) are simply skipped") prints them
    deployment = [
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS Blocks",
        "Persistence Mode",
        "Environment Variables",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
    ]
    doc = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                _category("Deployment", [(n, "Pass") for n in deployment]),
                _category("Integration", [("PCIe", "Skip")]),
                _category("Hardware", [("GPU Memory", "Skip"), ("Diagnostic", "Skip"), ("EUD Test", "Skip")]),
                _category("Stress", [("Targeted Stress", "Skip")]),
            ]
        }
    }
    checks = dcgm_checks(dcgm.parse(json.dumps(doc, indent="\t")), 3)
    c = by_name(checks)
    assert c["dcgm_diag"].actual == "DCGM ?, level 3: 14 tests, 9 pass, 5 skip"
    assert c["dcgm_diag"].verdict == "unverified"
    assert c["dcgm_diag"].detail.startswith(
        "DCGM skipped 5 of 14 tests of level 3 (PCIe, GPU Memory, Diagnostic, EUD Test, Targeted Stress)"
    )
    assert {c[n].verdict for n in ("dcgm_pcie", "dcgm_gpu_memory", "dcgm_targeted_stress")} == {"unverified"}
    assert "verified nothing" in c["dcgm_diagnostic"].detail
    assert "pass" not in {x.verdict for x in checks if x.name != "dcgm_diag" and "Skip" in x.actual}


def test_rules_warn_on_minimally_edited_real_document() -> None:
    # No public capture holds a Warn: the real 4.5.2 document with the memory test's two
    # status values changed from Pass to Warn and one warning added (documented in SOURCES.md).
    text = V4_FAIL.read_text()
    memory = text.index('"name" : "memory"')
    head, tail = text[:memory], text[memory:]
    tail = tail.replace('"status" : "Pass"', '"status" : "Warn"', 2)
    tail = tail.replace(
        '"Allocated 112427837082 bytes (87.5%)"\n',
        '"Allocated 112427837082 bytes (87.5%)"\n\t\t\t\t\t\t\t\t],\n'
        '\t\t\t\t\t\t\t\t"warnings" : \n\t\t\t\t\t\t\t\t[\n'
        '\t\t\t\t\t\t\t\t\t{"warning" : "Memory bandwidth below expectations"}\n',
        1,
    )
    d = dcgm.parse(head + tail)
    assert d.error is None
    c = by_name(dcgm_checks(d, 2))
    assert c["dcgm_memory"].verdict == "warn"
    assert c["dcgm_memory"].actual == "Warn on GPU 0: Memory bandwidth below expectations"
    assert c["dcgm_pcie"].verdict == "pass"


def test_not_installed_is_information_and_unreadable_warns() -> None:
    (absent,) = dcgm_checks(None, 1)
    assert (absent.name, absent.actual, absent.verdict) == (
        "dcgm_diag",
        "DCGM not installed: skipped",
        "pass",
    )
    (bad,) = dcgm_checks(dcgm.parse("Error: unable to connect to host engine\n"), 1)
    assert bad.verdict == "warn" and bad.actual.startswith("could not read dcgmi output: no JSON")
    (slow,) = dcgm_checks(None, 3, "dcgmi diag -r 3 did not finish within 3600 s", incomplete=True)
    assert slow.verdict == "unverified" and "did not finish" in slow.actual


def test_level_settings() -> None:
    assert dcgm_level(None, None) == 1
    assert dcgm_level("0", None) == 0
    assert dcgm_level(3, 60) == 3  # an explicit level wins over the budget
    assert dcgm_level("", 200) == 2
    for bad in ("x", 7, -1):
        with pytest.raises(StepArgsError):
            dcgm_level(bad, None)
    with pytest.raises(StepArgsError):
        dcgm_level(None, "soon")
    step = REGISTRY["allreduce"]({"dcgm_level": 2})
    assert step.probes() == [DCGM_PROBE]
    with pytest.raises(StepArgsError, match="dcgm_level must be"):
        REGISTRY["allreduce"]({"dcgm_level": 9}).check_host(Host("h", "10.0.0.1"))


# --------------------------------------------------------------------------- multi-node planning


def inventory(groups: dict[str, tuple[str, ...]], **host_vars: dict[str, Any]) -> Inventory:
    names = {n for ms in groups.values() for n in ms} | set(host_vars)
    hosts = {
        n: Host(
            n,
            f"10.0.0.{i + 1}",
            groups=tuple(g for g, ms in groups.items() if n in ms),
            vars=host_vars.get(n, {}),
        )
        for i, n in enumerate(sorted(names))
    }
    return Inventory(Path("hosts.yml"), hosts, groups, {})


def test_node_plan_ranks_in_declared_order_master_first() -> None:
    inv = inventory({"rack": ("b", "a", "c")}, b={"allreduce_master_port": 29611})
    plan = node_plan(inv.hosts["c"], inv, "group")
    assert plan == NodePlan("rack", ("b", "a", "c"), 2, "b", "10.0.0.2", 29611)
    assert node_plan(inv.hosts["b"], inv, "rack") == NodePlan(
        "rack", ("b", "a", "c"), 0, "b", "10.0.0.2", 29611
    )
    assert node_plan(inv.hosts["a"], inv, "") is None
    inv = inventory({"rack": ("a", "b")}, a={"allreduce_master_addr": "192.168.1.5"})
    assert node_plan(inv.hosts["b"], inv, "group") == NodePlan(
        "rack", ("a", "b"), 1, "a", "192.168.1.5", 29500
    )


@pytest.mark.parametrize(
    ("groups", "host", "nodes", "says"),
    [
        ({"solo": ("a",)}, "a", "group", "in no group with another host"),
        ({"r1": ("a", "b"), "r2": ("a", "c")}, "a", "group", "several groups with other hosts (r1, r2)"),
        ({"r1": ("a", "b")}, "a", "nope", "does not have"),
        ({"r1": ("a", "b"), "r2": ("c", "d")}, "a", "r2", "not in group r2"),
        ({"r1": ("a",)}, "a", "r1", "only one host"),
    ],
)
def test_node_plan_errors_say_what_to_fix(
    groups: dict[str, tuple[str, ...]], host: str, nodes: str, says: str
) -> None:
    inv = inventory(groups)
    with pytest.raises(StepArgsError, match=says.replace("(", r"\(").replace(")", r"\)")):
        node_plan(inv.hosts[host], inv, nodes)


def test_torchrun_args() -> None:
    plan = NodePlan("rack", ("a", "b"), 1, "a", "10.0.0.1", 29500)
    assert torchrun_args(plan, 8, 60) == [
        "-m",
        "torch.distributed.run",
        "--nnodes=2",
        "--node_rank=1",
        "--nproc_per_node=8",
        "--master_addr=10.0.0.1",
        "--master_port=29500",
        "--rdzv_conf=timeout=60",
    ]


def test_multinode_command_shape() -> None:
    plan = NodePlan("rack", ("a", "b"), 1, "a", "10.0.0.1", 29500)
    launcher = torchrun_args(plan, 1, 60)
    host = build_command(
        Launch("/opt/py/bin/python", False, "", "/tmp", 60),
        "allreduce.py",
        ["--backend", "gloo"],
        "/tmp/g-1",
        launcher=launcher,
        env={"OMP_NUM_THREADS": "1"},
        remote_timeout=50,
    )
    assert (
        "env OMP_NUM_THREADS=1 timeout 50 /opt/py/bin/python -m torch.distributed.run --nnodes=2"
        " --node_rank=1 --nproc_per_node=1 --master_addr=10.0.0.1 --master_port=29500 --rdzv_conf=timeout=60"
        " /tmp/g-1/allreduce.py --backend gloo"
    ) in host
    runtime = SimpleNamespace(cli="docker", info=SimpleNamespace(engine="docker"), command=shell.join)
    ctr = build_command(
        Launch("python3", True, "img:1", "/tmp", 60), "allreduce.py", [], "/tmp/g-2", runtime, True, launcher
    )
    assert "--network=host" in ctr and "img:1 python -m torch.distributed.run --nnodes=2" in ctr


def test_meet_group_all_arrive_or_name_the_missing_host() -> None:
    members = ("a", "b", "c")
    got: dict[str, tuple[dict[str, Any], list[str]]] = {}

    def arrive(name: str, key: tuple[int, str, str], timeout: float) -> None:
        got[name] = meet_group(key, members, name, {"gpus": len(name)}, timeout)

    threads = [threading.Thread(target=arrive, args=(n, (1, "rack", "allreduce"), 10)) for n in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(missing == [] for _, missing in got.values())
    assert set(got["a"][0]) == {"a", "b", "c"}
    got.clear()
    threads = [threading.Thread(target=arrive, args=(n, (2, "rack", "allreduce"), 0.3)) for n in ("a", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["a"][1] == ["b"] and got["c"][1] == ["b"]
    arrive("b", (2, "rack", "allreduce"), 0.3)  # a late host finds no one: it fails too
    assert got["b"][1] == ["a", "c"]


def test_multinode_rules() -> None:
    plan = NodePlan("rack", ("a", "b"), 0, "a", "10.0.0.1", 29500)
    result = {
        "ok": True,
        "world_size": 2,
        "backend": "gloo",
        "all_correct": True,
        "peak_busbw_gbps": 1.5,
        "rows": [{"bytes": 65536, "busbw_gbps": 0.5}, {"bytes": 1 << 20, "busbw_gbps": 1.5}],
    }
    c = by_name(multinode_checks(result, plan, 1, "gloo"))
    assert c["allreduce_correct"].verdict == "pass"
    assert c["allreduce_multinode"].actual.startswith(
        "peak busbw 1.50 GB/s at 1.0 MiB (2 nodes, world size 2"
    )
    worker = multinode_checks({"ok": True, "result": False}, replace(plan, rank=1), 1, "gloo")
    assert [(x.name, x.verdict) for x in worker] == [("allreduce_multinode", "pass")]
    assert "node rank 1 of 2" in worker[0].actual and "a's report" in worker[0].actual


def test_multinode_selection_problem_fails_at_once() -> None:
    plan = NodePlan("rack", ("a", "b", "c"), 0, "a", "10.0.0.1", 29500)
    assert multinode_selection_problem(plan, frozenset({"a", "b", "c", "z"}), 20) == ""
    assert multinode_selection_problem(plan, frozenset(), 0) == ""  # unknown: the gate decides
    assert multinode_selection_problem(plan, frozenset({"a"}), 20) == (
        "multi-node all-reduce over group rack: b, c are not in this run;"
        " run all 3 hosts of the group together (--group rack --forks 3 or more)"
    )
    assert "needs 3 hosts at once, --forks is 2" in multinode_selection_problem(plan, frozenset("abc"), 2)


def _v4_second_gpu(test: str, status: str, summary: str | None) -> str:
    """The real DCGM 4.5.2 level-2 document (V4_FAIL) with `test`'s one GPU result copied as
    GPU 1's, that copy's status set to `status` and its `info` dropped, and the test's
    test_summary status set to `summary` (None: the test_summary removed, per-GPU results only
    as DCGM 3 prints them): a two-GPU run."""
    data = json.loads(V4_FAIL.read_text())
    for cat in data["DCGM Diagnostic"]["test_categories"]:
        for t in cat["tests"]:
            if t["name"] == test:
                second = {k: v for k, v in t["results"][0].items() if k != "info"}
                t["results"].append({**second, "entity_id": 1, "status": status})
                if summary is None:
                    del t["test_summary"]
                else:
                    t["test_summary"]["status"] = summary
    return json.dumps(data)


@pytest.mark.parametrize(
    ("status", "summary", "verdict", "said"),
    [
        ("Skip", "Pass", "unverified", "Skip on GPU 1 (Hardware): not run by DCGM there"),
        ("Fail", "Pass", "fail", "Fail on GPU 1"),
        ("Warn", "Pass", "warn", "Warn on GPU 1"),
        ("Skip", None, "unverified", "Skip on GPU 1 (Hardware): not run by DCGM there"),
    ],
    ids=[
        "skip-under-summary-pass",
        "fail-under-summary-pass",
        "warn-under-summary-pass",
        "pass-and-skip-no-summary",
    ],
)
def test_dcgm4_summary_never_overrides_a_gpus_own_result(
    status: str, summary: str | None, verdict: str, said: str
) -> None:
    """The real 4.5.2 document, edited in-test (_v4_second_gpu): its memory test given a second
    GPU whose own result is Skip, Fail or Warn, under a test_summary of Pass (or none) while GPU 0
    passed. Before: the summary's status was the test's (a Pass read as a pass of both GPUs), and
    of per-GPU results a Pass beside a Skip was the test's Pass."""
    diag = dcgm.parse(_v4_second_gpu("memory", status, summary))
    (memory,) = [t for t in diag.tests if t.name == "memory"]
    assert memory.gpus == ("1",) and memory.entities == ("0", "1")
    check = by_name(dcgm_checks(diag, 2))["dcgm_memory"]
    assert check.verdict == verdict, check
    assert said in check.actual


def test_dcgm4_summary_worse_than_every_gpu_is_kept() -> None:
    """The real 4.5.2 document's software test, its test_summary Fail over its one GPU result
    edited to Pass (in-test): the summary's Fail stands (DCGM's own word about the test)."""
    data = json.loads(V4_FAIL.read_text())
    software = data["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    software["results"][0]["status"] = "Pass"
    check = by_name(dcgm_checks(dcgm.parse(json.dumps(data)), 2))["dcgm_software"]
    assert check.verdict == "fail"


def test_a_run_naming_fewer_gpus_than_the_box_lists_is_no_pass_of_the_others() -> None:
    """The real DCGM 3.1.0 document of an 8-GPU box (nine tests' one result `"gpu_ids" :
    "0,1,2,3,4,5,6,7"`, one test's a result per GPU, `"gpu_ids" : 0` ... `7`), edited in-test
    to name GPUs 0-3 only (the lists cut to "0,1,2,3", the results of GPUs 4-7 removed: a run
    DCGM restricted to some GPUs, or GPUs it does not support), judged beside the 8 GPUs
    nvidia-smi lists. Before: `dcgm_diag` passed "10 tests, 10 pass" (no entity was compared
    with the box's GPUs)."""
    raw = V3_PASS.read_text()
    doc = json.loads(raw[raw.index("{") :])
    for cat in doc["DCGM GPU Diagnostic"]["test_categories"]:
        for t in filter(None, cat["tests"]):
            t["results"] = [
                {**r, "gpu_ids": "0,1,2,3"} if r["gpu_ids"] == "0,1,2,3,4,5,6,7" else r
                for r in t["results"]
                if r["gpu_ids"] not in (4, 5, 6, 7)
            ]
    text = json.dumps(doc, indent="\t")
    summary = by_name(dcgm_checks(dcgm.parse(text), 1, listed=8))["dcgm_diag"]
    assert summary.verdict == "unverified", summary
    assert "DCGM gave results for GPU 0, 1, 2, 3 only, of the 8 GPUs nvidia-smi lists" in summary.actual
    whole = by_name(dcgm_checks(dcgm.parse(V3_PASS.read_text()), 1, listed=8))["dcgm_diag"]
    assert whole.verdict == "pass" and "only" not in whole.actual
    # DCGM 4's per-entity results: the real GB10 document names GPU 0, the one GPU of its box
    gb10 = by_name(dcgm_checks(dcgm.parse(V4_FAIL.read_text()), 2, listed=1))["dcgm_diag"]
    assert "only" not in gb10.actual


def test_a_pass_carrying_dcgms_error_is_no_clean_pass() -> None:
    """The real 4.5.2 document, its memory test's GPU 0 result (status Pass) given a `warnings`
    entry as DCGM 4 writes its errors (in-test edit: the DCGM_FR_MEMORY_ALLOC message NVIDIA/DCGM
    issue #284 reports under a Pass). Before: `dcgm_memory` passed "Pass (Hardware)"."""
    data = json.loads(V4_FAIL.read_text())
    hardware = next(c for c in data["DCGM Diagnostic"]["test_categories"] if c["category"] == "Hardware")
    hardware["tests"][0]["results"][0]["warnings"] = [
        {
            "error_category": 1,
            "error_id": 25,
            "error_severity": 2,
            "warning": "Could not allocate memory on GPU 0",
        }
    ]
    check = by_name(dcgm_checks(dcgm.parse(json.dumps(data)), 2))["dcgm_memory"]
    assert check.verdict == "warn", check
    assert check.actual == "Pass (Hardware) with DCGM's error: Could not allocate memory on GPU 0"


def _v3_without_deployment_ids() -> dict[str, Any]:
    """The real DCGM 3.1.0 document of an 8-GPU box, its nine Deployment results' `gpu_ids`
    removed (DCGM 3.1.7-3.3.9 print Deployment results with no GPU id: NVIDIA/DCGM dcgmi/Diag.cpp;
    3.3 adds `gpu_id` only to an error)."""
    raw = V3_PASS.read_text()
    doc: dict[str, Any] = json.loads(raw[raw.index("{") :])
    for cat in doc["DCGM GPU Diagnostic"]["test_categories"]:
        for t in filter(None, cat["tests"]):
            if cat["category"] == "Deployment":
                t["results"] = [{k: v for k, v in r.items() if k != "gpu_ids"} for r in t["results"]]
    return doc


def test_id_less_deployment_results_leave_the_gpus_of_the_others_counted() -> None:
    """The real DCGM 3.1.0 document in the DCGM 3.2 shape (_v3_without_deployment_ids), its
    per-GPU test's results of GPUs 4-7 removed too (in-test): a run naming GPUs 0-3 of the 8
    nvidia-smi lists. Before: an id-less result read as GPU "?", no number, and the count gave
    up on the whole run: dcgm_diag passed."""
    doc = _v3_without_deployment_ids()
    for cat in doc["DCGM GPU Diagnostic"]["test_categories"]:
        for t in filter(None, cat["tests"]):
            t["results"] = [r for r in t["results"] if r.get("gpu_ids") not in (4, 5, 6, 7)]
    diag = dcgm.parse(json.dumps(doc, indent="\t"))
    summary = by_name(dcgm_checks(diag, 1, listed=8))["dcgm_diag"]
    assert summary.verdict == "unverified", summary
    assert "DCGM gave results for GPU 0, 1, 2, 3 only, of the 8 GPUs nvidia-smi lists" in summary.actual
    assert diag.tests[0].entities == () and diag.tests[0].gpus == ()
    whole = by_name(dcgm_checks(dcgm.parse(json.dumps(_v3_without_deployment_ids())), 1, listed=8))
    assert whole["dcgm_diag"].verdict == "pass", whole["dcgm_diag"]


def test_a_pass_carrying_a_plain_string_warning_is_no_clean_pass() -> None:
    """The real DCGM 3.1.0 document, its per-GPU test's GPU 3 result (status PASS) given a
    `warnings` of one plain string (in-test), as DCGM 3.1/3.2 print a GPU's warning (NVIDIA/DCGM
    dcgmi/Diag.cpp), the text DCGM_FR_MEMORY_ALLOC's. Before: a string was no warnings list and
    was dropped: the test passed clean."""
    raw = V3_PASS.read_text()
    doc = json.loads(raw[raw.index("{") :])
    custom = next(c for c in doc["DCGM GPU Diagnostic"]["test_categories"] if c["category"] != "Deployment")
    test = next(filter(None, custom["tests"]))
    third = next(r for r in test["results"] if r["gpu_ids"] == 3)
    third["warnings"] = "Error allocating 1024 bytes on GPU 3"
    diag = dcgm.parse(json.dumps(doc))
    check = by_name(dcgm_checks(diag, 1))[f"dcgm_{dcgm.slug(test['name'])}"]
    assert check.verdict == "warn", check
    assert "Error allocating 1024 bytes on GPU 3" in check.actual


def test_a_cpu_entity_s_result_names_no_gpu() -> None:
    """The real DCGM 4.5.2 document, its memory test given a second result (in-test) of entity
    group CPU, entity id 0, status Skip (DCGM 4's cpu_eud test reports its CPUs so), beside GPU
    0's Pass. Before: the skip was worded "Skip on GPU 0", the CPU's id read as a GPU's."""
    data = json.loads(V4_FAIL.read_text())
    hardware = next(c for c in data["DCGM Diagnostic"]["test_categories"] if c["category"] == "Hardware")
    memory = hardware["tests"][0]
    gpu = {k: v for k, v in memory["results"][0].items() if k != "info"}
    memory["results"].append({**gpu, "entity_group": "CPU", "entity_group_id": 7, "status": "Skip"})
    diag = dcgm.parse(json.dumps(data))
    check = by_name(dcgm_checks(diag, 2))["dcgm_memory"]
    assert check.verdict == "unverified", check
    assert "GPU" not in check.actual, check
    (test,) = [t for t in diag.tests if t.name == "memory"]
    assert test.status == "skip" and test.gpus == () and test.entities == ("0",)
