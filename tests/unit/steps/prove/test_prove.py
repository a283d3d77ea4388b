"""Rules of smoke_train / allreduce / disk_speed on recorded results; remote command shapes."""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpuonboard import shell
from gpuonboard.connection import LocalRunner
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.prove import (
    Launch,
    SmokeTrainStep,
    allreduce_checks,
    broken_driver_sentence,
    build_command,
    disk_checks,
    disk_failure,
    disk_script,
    host_bound,
    launcher_argv,
    load_references,
    match_reference,
    nvidia_smi_failure,
    parse_acs,
    parse_disk,
    parse_result,
    run_script,
    script_bytes,
    smoke_checks,
)
from gpuonboard.steps.prove.gpu_benchmark import benchmark_checks, load_gpu_references
from gpuonboard.testing import add_executable

from ...facts.smi_failures import _facts, _probes

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "prove"


def load(name: str) -> dict[str, Any]:
    data = parse_result((FIX / name).read_text())
    assert data is not None
    return data


def by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


def test_registered_and_read_only() -> None:
    for name in ("smoke_train", "allreduce", "disk_speed"):
        assert REGISTRY[name].read_only


def test_parse_result_takes_last_marker_line() -> None:
    out = 'noise\nGPUONBOARD_RESULT {"a": 1}\nmore\nGPUONBOARD_RESULT {"a": 2}\n'
    assert parse_result(out) == {"a": 2}
    assert parse_result("no marker") is None
    assert parse_result("GPUONBOARD_RESULT {broken") is None


def test_smoke_rules_on_recorded_cpu_run() -> None:
    c = by_name(smoke_checks(load("smoke_cpu.out"), gpu_count=0))
    assert c["loader_yields"].verdict == "pass"
    assert c["loss_falls"].verdict == "pass"
    assert c["checkpoint_roundtrip"].verdict == "pass"
    assert c["training_device"].actual.startswith("cpu (no GPU")
    assert c["train_throughput"].verdict == "pass"


def test_smoke_rules_flag_each_failure() -> None:
    r = load("smoke_cpu.out")
    bad = {
        **r,
        "batches": 3,
        "loss_last": r["loss_first"] * 0.95,
        "checkpoint": {**r["checkpoint"], "identical": False, "max_abs_diff": 1e-3},
        "loader_wait_share": 0.6,
    }
    c = by_name(smoke_checks(bad, gpu_count=8, nproc=64))
    assert c["loader_yields"].verdict == "fail"
    assert c["loss_falls"].verdict == "fail"
    assert c["checkpoint_roundtrip"].verdict == "fail"
    assert c["training_device"].verdict == "fail" and "8 GPU" in c["training_device"].actual
    assert c["loader_bottleneck"].verdict == "warn"
    assert "num_workers" in c["loader_bottleneck"].detail and "64 cores" in c["loader_bottleneck"].detail


def test_smoke_rules_on_cuda() -> None:
    r = {
        **load("smoke_cpu.out"),
        "device": "cuda",
        "device_name": "NVIDIA H100",
        "peak_gpu_mem_bytes": 2 << 30,
    }
    c = by_name(smoke_checks(r, gpu_count=8))
    assert c["training_device"].verdict == "pass" and "peak GPU memory 2.0 GiB" in c["training_device"].actual


def test_smoke_rules_on_recorded_h200_run() -> None:
    # real smoke_train.py --device cuda on a rented 1 x H200 (torch 2.11.0+cu130), 2026-11-29
    r = load("smoke_cuda_h200.out")
    assert (r["device"], r["cuda_device_count"], r["torch_version"]) == ("cuda", 1, "2.11.0+cu130")
    checks = smoke_checks(r, gpu_count=1, nproc=16)
    assert {c.verdict for c in checks} == {"pass"}
    c = by_name(checks)
    assert set(c) == {
        "loader_yields",
        "loss_falls",
        "checkpoint_roundtrip",
        "training_device",
        "loader_bottleneck",
        "train_throughput",
    }
    assert c["training_device"].actual == "cuda (NVIDIA H200), peak GPU memory 67.7 MiB"
    assert c["loss_falls"].actual == "1.9984 -> 0.3694 (-82 %)"
    assert c["loader_yields"].actual == "60 batches"
    assert c["checkpoint_roundtrip"].actual.endswith("outputs identical")
    assert c["loader_bottleneck"].actual == "1 % with 2 workers"
    assert c["train_throughput"].actual == "11,290 samples/s, median step 2.78 ms on cuda"


def test_allreduce_cpu_is_information_only() -> None:
    r = load("allreduce_cpu_gloo.out")
    assert r["world_size"] == 2 and r["backend"] == "gloo"
    for row in r["rows"]:
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (2 - 1) / 2)
    c = by_name(allreduce_checks(r, load_references(), "", 0, "unknown"))
    assert c["allreduce_correct"].verdict == "pass"
    assert c["allreduce_busbw"].verdict == "pass" and "information only" in c["allreduce_busbw"].expected


def test_cpu_torch_on_a_gpu_box_fails_training_and_allreduce() -> None:
    # a real CPU run (torch CPU build) judged on a box whose nvidia-smi lists 8 GPUs:
    # nothing ran on the GPUs, so neither the training device nor the busbw may pass
    where = "/opt/venv/bin/python"
    sentence = (
        f"the box lists 8 GPU(s) but torch in {where} has no CUDA: nothing ran on the GPUs;"
        " use the NGC container (train_in_container) or a CUDA build of torch"
    )
    s = by_name(smoke_checks(load("smoke_cpu.out"), gpu_count=8, where=where))
    assert (s["training_device"].verdict, s["training_device"].detail) == ("fail", sentence)
    a = by_name(
        allreduce_checks(
            load("allreduce_cpu_gloo.out"), load_references(), "NVIDIA A100", 8, "nvlink", where=where
        )
    )
    assert (a["allreduce_busbw"].verdict, a["allreduce_busbw"].detail) == ("fail", sentence)
    assert a["allreduce_correct"].verdict == "pass"


def test_allreduce_one_h200_is_information_only() -> None:
    # real allreduce.py --max-bytes 1073741824 on 1 x H200 (NCCL 2.28.9): one rank, busbw 0
    r = load("allreduce_1xh200_nccl.out")
    assert (r["world_size"], r["backend"], r["nccl_version"], r["device_name"]) == (
        1,
        "nccl",
        "2.28.9",
        "NVIDIA H200",
    )
    assert [row["bytes"] for row in r["rows"]] == [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
    assert {row["busbw_gbps"] for row in r["rows"]} == {0.0} and r["peak_busbw_gbps"] == 0.0
    c = by_name(allreduce_checks(r, load_references(), "NVIDIA H200", 1, "single"))
    assert set(c) == {"allreduce_correct", "allreduce_busbw"}  # no sizes warning, no reference lookup
    assert c["allreduce_correct"].verdict == "pass" and c["allreduce_correct"].actual == "6 sizes, all exact"
    busbw = c["allreduce_busbw"]
    assert busbw.verdict == "pass" and "one GPU" in busbw.expected
    assert busbw.actual.startswith("1 x nccl: nothing crosses a link")
    # the same run with a wrong sum still fails
    wrong = {**r, "all_correct": False}
    c = by_name(allreduce_checks(wrong, load_references(), "NVIDIA H200", 1, "single"))
    assert c["allreduce_correct"].verdict == "fail"


def test_allreduce_gpu_against_reference() -> None:
    table = load_references()
    r = load("allreduce_8xa100_nccl.out")
    c = by_name(allreduce_checks(r, table, "NVIDIA A100-SXM4-80GB", 8, "nvlink"))
    assert c["allreduce_busbw"].verdict == "pass"
    assert "a100-sxm-8x-nvswitch" in c["allreduce_busbw"].expected
    assert "allreduce_sizes" not in c
    slow = {**r, "peak_busbw_gbps": 150.0}
    assert (
        by_name(allreduce_checks(slow, table, "NVIDIA A100-SXM4-80GB", 8, "nvlink"))[
            "allreduce_busbw"
        ].verdict
        == "warn"
    )
    dead = {**r, "peak_busbw_gbps": 60.0, "max_bytes": 64 << 20, "all_correct": False}
    c = by_name(allreduce_checks(dead, table, "NVIDIA A100-SXM4-80GB", 8, "nvlink"))
    assert c["allreduce_busbw"].verdict == "fail"
    assert c["allreduce_sizes"].verdict == "warn"
    assert c["allreduce_correct"].verdict == "fail"
    # no reference for the topology -> warn; PCIe box -> generic row + ACS report
    assert by_name(allreduce_checks(r, table, "Tesla T4", 2, "mixed"))["allreduce_busbw"].verdict == "warn"
    c = by_name(
        allreduce_checks(r, table, "NVIDIA L40S", 8, "pcie", {"ports": 8, "redirecting": 4}, True, pcie_gen=4)
    )
    assert "pcie-gen4-no-nvlink" in c["allreduce_busbw"].expected
    assert c["pcie_acs"].verdict == "warn" and "4 of 8" in c["pcie_acs"].actual


def test_reference_table_rows_have_sources() -> None:
    table = load_references()
    for row in table["references"]:
        assert row["source"].startswith("https://") and isinstance(row["verified"], bool)
    assert match_reference(table, "NVIDIA H100 80GB HBM3 SXM", 8, "nvlink")["id"] == "h100-sxm-8x-nvswitch"
    assert match_reference(table, "NVIDIA A100 80GB PCIe", 8, "nvlink") is None


def test_parse_acs() -> None:
    text = (
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
        "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n"
    )
    assert parse_acs(text) == {"ports": 2, "redirecting": 1}
    assert parse_acs("") is None


def test_disk_parse_dd_and_rules() -> None:
    d = parse_disk("TOOL dd\nDIRECT 1\nWRITE 4294967296 2000000000\nREAD 4294967296 1000000000\n")
    assert d["write_gbps"] == pytest.approx(2.147, rel=1e-3) and d["read_gbps"] == pytest.approx(
        4.295, rel=1e-3
    )
    c = by_name(disk_checks(d, 7_000_000_000, 0.5))
    assert c["disk_write"].verdict == "pass" and "direct I/O" in c["disk_write"].actual
    assert (
        "14.0 GB in 7 s" in c["checkpoint_time"].actual and "98.0 GB in 46 s" in c["checkpoint_time"].actual
    )
    slow = parse_disk("TOOL dd\nDIRECT 0\nWRITE 1073741824 5000000000\nREAD 1073741824 100000000\n")
    c = by_name(disk_checks(slow, None, 0.5))
    assert c["disk_write"].verdict == "warn"
    assert "page cache" in c["disk_read"].detail
    assert "checkpoint_time" not in c
    assert parse_disk("ERR only 10 KiB free in /data, need 99 KiB\n")["error"].startswith("only 10 KiB")


def test_disk_parse_fio() -> None:
    w = json.dumps(
        {"fio version": "fio-3.33", "jobs": [{"write": {"bw_bytes": 1_500_000_000, "io_bytes": 1 << 30}}]}
    )
    r = json.dumps({"jobs": [{"read": {"bw_bytes": 3_000_000_000, "io_bytes": 1 << 30}}]})
    d = parse_disk(f"TOOL fio\nDIRECT 1\n##FIO-WRITE\n{w}\n##FIO-READ\n{r}\n##FIO-END\n")
    assert d["write_gbps"] == 1.5 and d["read_gbps"] == 3.0 and d["direct"] is True


def test_disk_script_runs_here_with_dd(tmp_path: Path) -> None:
    weird = tmp_path / "da'ta $(x)"
    weird.mkdir()
    out = subprocess.run(
        ["sh", "-c", disk_script(str(weird), 8, use_fio=False)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    d = parse_disk(out.stdout)
    assert d["tool"] == "dd" and d["write_gbps"] and d["read_gbps"] and d["bytes"] == 8 << 20
    assert not list(weird.iterdir())


def test_disk_script_says_when_df_prints_no_number(tmp_path: Path) -> None:
    """A df that prints human sizes (a test host replays `df -h` for every df, a wrapper on a
    vendor image): one sentence, not "only 202G KiB free"."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text(
        "#!/bin/sh\nprintf 'Filesystem Size Used Avail Use%% Mounted on\\n/dev/x 1T 800G 202G 80%% /\\n'\n"
    )
    (bin_dir / "df").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    out = subprocess.run(
        ["sh", "-c", disk_script(str(tmp_path), 8, use_fio=False)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 3
    assert parse_disk(out.stdout)["error"] == (
        f"cannot read the free space in {tmp_path}: df -Pk printed '202G', not a number of KiB"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_temp_script_writes_runs_and_removes(tmp_path: Path) -> None:
    work = tmp_path / "w o'rk"
    cmd = shell.temp_script(str(work), "s.py", shell.join(["cat", f"{work}/s.py"]))
    out = subprocess.run(["sh", "-c", cmd], input=b"print(1)\n", capture_output=True)
    assert out.returncode == 0 and out.stdout == b"print(1)\n"
    assert not work.exists()
    failing = shell.temp_script(str(work), "s.py", "exit 7")
    assert subprocess.run(["sh", "-c", failing], input=b"", capture_output=True).returncode == 7
    assert not work.exists()
    with pytest.raises(ValueError):
        shell.temp_script(str(work), "../x", "true")


def test_temp_script_dir_goes_when_the_channel_closed_before_its_command_was_killed(tmp_path: Path) -> None:
    """The SSH channel gone (Ctrl-C, a dropped link), then the script killed: the shell's word
    about it ("Terminated") hits a closed stderr; SIGPIPE must not skip the cleanup."""
    import os

    work = tmp_path / "w"
    cmd = shell.temp_script(str(work), "s.sh", "sh -c 'kill -TERM $$'")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads stderr any more
    try:
        p = subprocess.Popen(
            ["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=write_end
        )
    finally:
        os.close(write_end)
    p.communicate(b"true\n", timeout=30)
    assert p.returncode == 143
    assert not work.exists()


def test_container_command_shape() -> None:
    launch = Launch("python3", True, "nvcr.io/nvidia/pytorch:24.08-py3", "/tmp", 60)
    runtime = SimpleNamespace(
        cli="docker", info=SimpleNamespace(engine="docker"), command=lambda argv: shell.sudo(shell.join(argv))
    )
    cmd = build_command(launch, "smoke_train.py", ["--steps", "5"], "/tmp/gpuonboard-x", runtime, gpus=True)
    for part in (
        "--gpus all",
        "-v /tmp/gpuonboard-x:/tmp/gpuonboard-x",
        "sudo -n",
        "smoke_train.py --steps 5",
    ):
        assert part in cmd
    host = build_command(Launch("/opt/py/bin/python", False, "", "/tmp", 60), "allreduce.py", [], "/tmp/g-1")
    assert "/opt/py/bin/python /tmp/g-1/allreduce.py" in host


def test_scripts_are_bundled() -> None:
    assert b"GPUONBOARD_RESULT" in script_bytes("smoke_train.py")
    assert b"torch.distributed.run" in script_bytes("allreduce.py")


def test_failing_nvidia_smi_is_a_broken_gpu_box_not_a_cpu_box() -> None:
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.prove import nvidia_smi_failure

    broken = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    cases = {
        "broken": (ProbeOutput(broken, "", 9), "nvidia-smi failed (exit code 9): " + broken),
        "hung": (ProbeOutput("", "", 124), "nvidia-smi did not answer (stopped after its timeout)"),
        "absent": (ProbeOutput("", "", 127), None),
        "none": (ProbeOutput("No devices were found", "", 6), None),
    }
    for name, (raw, want) in cases.items():
        failure = nvidia_smi_failure(parse_facts({"nvidia_smi": raw}))
        assert failure == want, name
    failure = nvidia_smi_failure(parse_facts({"nvidia_smi": cases["broken"][0]}))
    c = by_name(smoke_checks(load("smoke_cpu.out"), gpu_count=0, gpu_failure=failure))
    assert c["training_device"].verdict == "fail" and "exit code 9" in c["training_device"].actual
    assert "the NVIDIA driver does not answer" in c["training_device"].detail
    # a GPU-less box (absent nvidia-smi, "No devices were found") still trains on the CPU
    c = by_name(smoke_checks(load("smoke_cpu.out"), gpu_count=0, gpu_failure=None))
    assert c["training_device"].verdict == "pass"


# False verdicts of the prove rules: a loss that did not really fall (inf, NaN, negative, blown
# up and only partly back), a loss_margin that lets a flat loss pass, a ResNet-50 figure at another
# image size judged against the 224 px reference, an all-reduce over fewer ranks judged against
# the whole box's row, and a result marker that follows a C library's partial line on stdout.


def _recorded(name: str) -> dict[str, Any]:
    r = parse_result((FIX / name).read_text())
    assert r is not None
    return r


def _loss(r: dict[str, Any]) -> Any:
    return {c.name: c for c in smoke_checks(r, gpu_count=1)}["loss_falls"]


def test_recorded_runs_still_pass() -> None:
    for name in ("smoke_cpu.out", "smoke_cuda_h200.out"):
        assert _loss(_recorded(name)).verdict == "pass", name


@pytest.mark.parametrize(
    ("first", "last"),
    [(math.inf, math.inf), (math.inf, 0.1), (2.0, -1.0), (math.nan, 0.1), (2.0, math.nan)],
)
def test_a_loss_that_is_not_a_finite_cross_entropy_fails(first: float, last: float) -> None:
    r = {**_recorded("smoke_cuda_h200.out"), "loss_first": first, "loss_last": last}
    check = _loss(r)
    assert check.verdict == "fail", check
    assert f"the mean loss of the first / last steps was {first} / {last}" in check.actual
    assert "suspect numerics" in check.detail


def test_a_nan_step_in_between_fails() -> None:
    r = _recorded("smoke_cuda_h200.out")
    losses = list(r["losses"])
    losses[30] = math.nan
    check = _loss({**r, "losses": losses})
    assert check.verdict == "fail" and "the loss was nan at step 31" in check.actual


def test_a_loss_that_blew_up_and_came_only_part_of_the_way_back_fails() -> None:
    # the shape of the real script's run at --lr 1e9 (see tests/integration/test_prove_real_scripts.py)
    r = {
        **_recorded("smoke_cuda_h200.out"),
        "loss_first": 1.87e31,
        "loss_last": 1.16e28,
        "loss_window": 5,
        "losses": [2.07, 1e31, 2e31, 3e31, 3e31, *[1e28] * 55],
    }
    check = _loss(r)
    assert check.verdict == "fail"
    assert check.actual == "1.87e+31 -> 1.16e+28 (-100 %); but the first steps reached 2.0700 already"
    assert "blew up" in check.detail


def _smoke_plan(**vars: Any) -> Any:
    host = SimpleNamespace(name="h1", vars=vars)
    ctx = SimpleNamespace(host=host, check=True)
    return SmokeTrainStep({}).plan(ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize("margin", [0, -0.5, 1, 1.5, "nan"])
def test_a_loss_margin_that_would_pass_a_flat_loss_is_refused(margin: Any) -> None:
    plan = _smoke_plan(train_loss_margin=margin)
    assert plan.failed
    assert plan.msg.startswith("bad smoke_train setting: loss_margin (vars.train_loss_margin) must be")


def test_a_sensible_loss_margin_is_taken() -> None:
    plan = _smoke_plan(train_loss_margin=0.5)
    assert not plan.failed and plan.msg == "check mode: the smoke training was not run"


def test_resnet50_at_another_image_size_is_not_judged_against_the_224_px_row() -> None:
    r = _recorded("gpu_benchmark_cuda_h200.out")
    w = r["workers"][0]
    # a half-speed H200 at 112 px: four times fewer pixels per image, about 1.9x the reference
    small = {**r, "image_size": 112, "workers": [{**w, "images_per_s": 11500.0}]}
    c = {x.name: x for x in benchmark_checks(small, load_gpu_references(), [])}
    assert c["resnet50_gpu0"].verdict == "warn"
    assert c["resnet50_gpu0"].actual.endswith("at 112 px (reference: 224 px): not comparable")
    assert "unset benchmark_image_size" in c["resnet50_gpu0"].detail
    assert c["sustained_gpu0"].verdict == "pass"  # the drop over time is still judged
    # the default size is still judged against the row
    same = {x.name: x for x in benchmark_checks(r, load_gpu_references(), [])}
    assert same["resnet50_gpu0"].verdict == "pass"


def test_an_allreduce_over_fewer_ranks_is_matched_by_the_ranks_that_ran() -> None:
    r = _recorded("allreduce_8xa100_nccl.out")
    table = load_references()
    name = "NVIDIA A100-SXM4-80GB"
    four = {**r, "world_size": 4}
    c = {x.name: x for x in allreduce_checks(four, table, name, 8, "nvlink", nproc_asked=4)}
    assert "a100-sxm-4x-nvlink" in c["allreduce_busbw"].expected
    two = {**r, "world_size": 2}
    c = {x.name: x for x in allreduce_checks(two, table, name, 8, "nvlink", nproc_asked=2)}
    assert c["allreduce_busbw"].verdict == "warn"
    assert c["allreduce_busbw"].expected == f"a reference for 2 x {name} (nvlink)"
    # all eight: the 8-GPU row as before
    c = {x.name: x for x in allreduce_checks(r, table, name, 8, "nvlink")}
    assert "a100-sxm-8x-nvswitch" in c["allreduce_busbw"].expected


def test_the_marker_after_a_partial_nccl_line_is_found() -> None:
    out = (
        "box:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        'box:4242:4301 [0] NCCL INFO Channel 00/02 :    0   1GPUONBOARD_RESULT {"ok": true, "n": 1}\n'
        "box:4242:4301 [0] NCCL INFO Connected all rings\n"
    )
    assert parse_result(out) == {"ok": True, "n": 1}
    # an error result quoting an inner result line is read as the outer one
    inner = '"GPUONBOARD_RESULT {\\"ok\\": true}"'
    assert parse_result(f'GPUONBOARD_RESULT {{"ok": false, "stderr_tail": [{inner}]}}\n') == {
        "ok": False,
        "stderr_tail": ['GPUONBOARD_RESULT {"ok": true}'],
    }


# QA: prove (smoke_train, allreduce, gpu_benchmark) quotes the line of a failing nvidia-smi that
# names its cause, and advises by that cause, through the project's one helper
# (`facts.nvidia_smi_failure`), as acceptance, gpu_health, driver_compat and the container step do.
#
# Before, prove quoted nvidia-smi's FIRST output line: on a real box that may be a warning printed
# before the failure ("WARNING: infoROM is corrupted ..."), so the report named the infoROM as the
# reason the run fell back to the CPU. The nvidia-smi output goes through the real fact probes (every
# nvidia-smi format its own probe), with an `nvidia-smi` on PATH that prints those lines and exits as
# nvidia-smi does.

INFOROM = "WARNING: infoROM is corrupted at gpu 0000:02:00.0"
NO_MODULE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    " Make sure that the latest NVIDIA driver is installed and running."
)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
ADVICE = {
    NO_MODULE: "the NVIDIA kernel module is not loaded (often a new kernel the driver was not rebuilt"
    " for, or Secure Boot refusing the module; `dmesg | grep -i nvidia` says which): ask the"
    " vendor to reboot, or to reinstall the driver for the running kernel, and run the check"
    " again",
    MISMATCH: "the NVIDIA kernel module and the driver's library are different versions (a driver"
    " updated without a reboot): ask the vendor to reboot the box, or to reinstall one driver"
    " version, and run the check again",
}
FRAME = "the NVIDIA driver does not answer, so this ran on the CPU and proves nothing about the GPUs"
FIX_DRIVER = "fix the driver (see acceptance's nvidia_driver and gpu_health) and run prove again"


def _load(name: str) -> dict[str, Any]:
    data = parse_result((FIX / name).read_text())
    assert data is not None
    return data


@pytest.mark.parametrize(("cause", "code"), [(NO_MODULE, 9), (MISMATCH, 18)])
def test_the_cause_line_is_quoted_after_a_warning_and_advised_by_cause(
    tmp_path: Path, cause: str, code: int
) -> None:
    raw = _probes(tmp_path, f"{INFOROM}\n{cause}", code)
    failure = nvidia_smi_failure(_facts(raw))
    assert failure == f"nvidia-smi failed (exit code {code}): {cause}"
    detail = f"{failure}: {FRAME}; {ADVICE[cause]}"
    assert broken_driver_sentence(failure) == detail  # (gpu_benchmark's benchmark_device too)
    [smoke] = [
        c for c in smoke_checks(_load("smoke_cpu.out"), 0, gpu_failure=failure) if c.name == "training_device"
    ]
    assert (smoke.verdict, smoke.actual, smoke.detail) == ("fail", f"cpu ({failure})", detail)
    checks = allreduce_checks(
        _load("allreduce_cpu_gloo.out"), load_references(), "", 0, "unknown", gpu_failure=failure
    )
    [busbw] = [c for c in checks if c.name == "allreduce_busbw"]
    assert (
        busbw.verdict == "fail"
        and busbw.actual.endswith(f" on the CPU ({failure})")
        and busbw.detail == detail
    )


def test_an_unknown_cause_and_a_hung_nvidia_smi_keep_the_fix_the_driver_advice(tmp_path: Path) -> None:
    raw = _probes(tmp_path, "Segmentation fault", 139)
    failure = nvidia_smi_failure(_facts(raw))
    assert failure == "nvidia-smi failed (exit code 139): Segmentation fault"
    assert broken_driver_sentence(failure) == f"{failure}: {FRAME}; {FIX_DRIVER}"
    hung = nvidia_smi_failure(parse_facts({"nvidia_smi": ProbeOutput("", "", 124)}))
    assert hung == "nvidia-smi did not answer (stopped after its timeout)"
    assert broken_driver_sentence(hung) == f"{hung}: {FRAME}; {FIX_DRIVER}"


# QA: prove's `train_in_container` finds and runs the training image under the name the
# container step left it as.
#
# An image pinned by digest only and pulled through a registry mirror keeps the mirror's name
# (`MIRROR/<path>@sha256:...`, a digest reference is no tag target); docker finds it only under that
# exact name. prove probed the image's own name alone, so after a successful container step it said
# "image ... is not on the host", and it ran the image under the name the user wrote, which docker
# would pull from the image's own registry (the one the mirror stands in for). The probe is the real
# one (`container.probe_command`), run through a real local runner against a `docker` that, like
# docker's reference store, knows an image only by the exact name it was pulled as.

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
IMAGE = f"nvcr.io/nvidia/pytorch@{DIGEST}"
MIRROR = "mirror.example.cn:5000"
MIRROR_COPY = f"{MIRROR}/nvidia/pytorch@{DIGEST}"
TAGGED = "nvcr.io/nvidia/pytorch:24.08-py3"
ID = "sha256:" + "12" * 32


def _docker(tmp_path: Path, name: str, digest: str) -> Path:
    """A `docker` holding one image, known only by the exact name `name` (its repo digest: that
    name's repository with `digest`): `image inspect` finds it by that name alone, `run` runs it
    only under that name (printing the result line with the name it ran); any other name is not
    found."""
    bin_dir = tmp_path / "bin"
    repo = name.partition("@")[0].removesuffix(":24.08-py3")
    add_executable(
        bin_dir,
        "docker",
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  info) echo \'{"DockerRootDir": "/var/lib/docker", "ServerVersion": "27.0.3"}\' ;;\n'
        f'  image) [ "$5" = "{name}" ] || exit 1\n'
        f"    echo '{ID} [\"{repo}@{digest}\"]' ;;\n"
        "  run) for a; do\n"
        f'      if [ "$a" = "{name}" ]; then\n'
        '        printf \'GPUONBOARD_RESULT {"ok": true, "ran": "%s"}\\n\' "$a"; exit 0; fi\n'
        "    done\n"
        "    echo 'Unable to find image locally; pulling from its registry' >&2; exit 125 ;;\n"
        "  *) exit 0 ;;\n"
        "esac\n",
    )
    return bin_dir


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, **vars: object) -> tuple[object, str]:
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    host = Host("box", "127.0.0.1", connection="local", vars={"container_image": image, **vars})
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    ctx = StepContext(host, LocalRunner(host), facts, False, tmp_path)
    launch = Launch("python3", True, image, str(tmp_path), 30)
    return run_script(ctx, launch, "smoke_train.py", ["--steps", "1"])


def test_a_digest_only_pin_through_a_mirror_runs_under_the_mirrors_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _docker(tmp_path, MIRROR_COPY, DIGEST)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=MIRROR)
    assert why == "" and data == {"ok": True, "ran": MIRROR_COPY}, why
    # a list of mirrors: the copy of any of them is found (here the second's)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=["m1.example.cn", MIRROR])
    assert why == "" and data == {"ok": True, "ran": MIRROR_COPY}, why


def test_an_image_on_no_name_it_may_have_says_which_names_were_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _docker(tmp_path, "other.example.cn/nvidia/pytorch@" + DIGEST, DIGEST)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=MIRROR)
    assert data is None
    assert why == (
        f"image {IMAGE} is not on the host (looked for it as {IMAGE}, {MIRROR_COPY});"
        " run the container step first"
    )
    data, why = _run(tmp_path, monkeypatch, IMAGE)  # no mirror: its own name only
    assert (data, why) == (None, f"image {IMAGE} is not on the host; run the container step first")


def test_a_tag_and_digest_pin_runs_the_local_tag_when_it_holds_the_pinned_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the container step tags a pull back to the image's tag name: run that, not `name:tag@digest`
    # (docker looks that up as `name@digest`, which it does not hold, and pulls from nvcr.io)
    _docker(tmp_path, TAGGED, DIGEST)
    data, why = _run(tmp_path, monkeypatch, f"{TAGGED}@{DIGEST}", registry_mirror=MIRROR)
    assert why == "" and data == {"ok": True, "ran": TAGGED}, why
    # the tag now names another image (moved since): not the pinned one, so it is not run
    _docker(tmp_path, TAGGED, OTHER)
    data, why = _run(tmp_path, monkeypatch, f"{TAGGED}@{DIGEST}")
    assert data is None
    assert why == (
        f"image {TAGGED}@{DIGEST} is on the host as {TAGGED} but not with the pinned digest ({OTHER});"
        " run the container step first"
    )


# prove's `train_in_container` gives the container the GPUs the way its engine takes them:
# docker `--gpus all`; podman (and podman behind the `docker` shim) its CDI device, since podman
# before 5.0 accepts `--gpus all` and ignores it, so the run saw no GPU and the box read NO-GO.


@pytest.mark.parametrize(
    ("cli", "engine", "flags"),
    [
        ("docker", "docker", "--gpus all"),
        ("podman", "podman", "--device nvidia.com/gpu=all"),
        ("docker", "podman", "--device nvidia.com/gpu=all"),  # the podman-docker shim
    ],
)
def test_the_container_gets_the_gpus_as_its_engine_takes_them(cli: str, engine: str, flags: str) -> None:
    runtime = SimpleNamespace(cli=cli, info=SimpleNamespace(engine=engine), command=shell.join)
    launch = Launch("python3", True, "nvcr.io/nvidia/pytorch:24.08-py3", "/tmp", 60)
    cmd = build_command(launch, "smoke_train.py", [], "/tmp/gpuonboard-smoke_train-x", runtime, gpus=True)
    assert f"--ipc=host {flags} -v /tmp/gpuonboard-smoke_train-x" in cmd
    if "--device" in flags:
        assert "--gpus" not in cmd
    # a box without GPUs: none asked for
    cmd = build_command(launch, "smoke_train.py", [], "/tmp/gpuonboard-smoke_train-x", runtime, gpus=False)
    assert "--gpus" not in cmd and "nvidia.com/gpu" not in cmd


# prove's remote command stops its script when the process that started it goes away, and
# changes nothing else: the exit status, stdout and stderr are the script's own, the host's
# `timeout` still ends it with 124, and nothing of the watcher is left once it ends.
#
# These run the real command text with the local /bin/sh under a parent process (the shape of
# `connection: local`: `/bin/sh -c COMMAND` under gpuonboard); over SSH the same is tested in
# tests/integration/test_prove_session_end.py. Every process they start names this test's
# tmp_path (a copy of `sleep` lives there), so that is what they look for and clean up.

PARENT = "import subprocess, sys; subprocess.run(['/bin/sh', '-c', sys.argv[1]], input=sys.argv[2].encode())"


def _pids_naming(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if text.encode() in (proc / "cmdline").read_bytes().replace(b"\0", b" "):
                pids.append(int(proc.name))
    return pids


def _wait_until(what: str, ok: Callable[[], object], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    """tmp_path with a `sleep` copy in it; whatever still names tmp_path afterwards is killed."""
    shutil.copy(shutil.which("sleep") or "/bin/sleep", tmp_path / "sleep")
    yield tmp_path
    for pid in _pids_naming(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _host_command(tmp_path: Path, remote_timeout: float = 60) -> tuple[str, Path]:
    work = tmp_path / "gpuonboard-s-1"
    launch = Launch("/bin/sh", False, "", str(tmp_path), 60)
    return build_command(launch, "s.sh", ["a b"], str(work), remote_timeout=remote_timeout), work


def test_a_normal_run_keeps_its_status_and_output_and_leaves_nothing(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox)
    r = subprocess.run(
        ["/bin/sh", "-c", cmd], input=b'echo "out $1"; echo err >&2; exit 3\n', capture_output=True
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out a b\n", b"err\n")
    _wait_until("the watcher outlived the script", lambda: not _pids_naming(str(sandbox)), 3)
    assert not work.exists()


def test_the_hosts_timeout_still_ends_it_with_124(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox, remote_timeout=1)
    start = time.monotonic()
    r = subprocess.run(["/bin/sh", "-c", cmd], input=f"{sandbox}/sleep 30\n".encode(), capture_output=True)
    assert r.returncode == 124 and time.monotonic() - start < 10
    _wait_until("the watcher outlived the script", lambda: not _pids_naming(str(sandbox)), 3)
    assert not work.exists()


def _start_under_parent(cmd: str, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", PARENT, cmd, script])


def test_the_script_and_its_own_session_children_stop_when_the_parent_dies(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox)
    # a child in the script's session and one in a session of its own (as torchrun's ranks)
    parent = _start_under_parent(cmd, f"{sandbox}/sleep 300 & setsid {sandbox}/sleep 301 & wait\n")
    _wait_until("the script never started", lambda: len(_pids_naming(f"{sandbox}/sleep 30")) >= 2, 10)
    parent.kill()
    parent.wait()
    _wait_until("the script outlived the process that started it", lambda: not _pids_naming(str(sandbox)), 8)
    assert not work.exists()


def test_a_script_that_ignores_sigterm_is_killed_after_the_grace(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "STOP_GRACE_S", 1)
    cmd, work = _host_command(sandbox)
    parent = _start_under_parent(cmd, f"trap '' TERM; {sandbox}/sleep 300\n")
    _wait_until("the script never started", lambda: _pids_naming(f"{sandbox}/sleep 300"), 10)
    parent.kill()
    parent.wait()
    _wait_until("SIGKILL never followed", lambda: not _pids_naming(str(sandbox)), 8)
    assert not work.exists()


def test_a_containers_script_is_stopped_through_the_runtime_by_its_name(sandbox: Path) -> None:
    """The container's processes are dockerd's, not the session's: `docker kill NAME` stops it."""
    log = sandbox / "docker.log"
    cli = sandbox / "docker"
    cli.write_text(
        f'#!/bin/sh\necho "$*" >> {shell.quote(log)}\n[ "$1" = run ] && exec {sandbox}/sleep 302\n'
    )
    cli.chmod(0o755)
    runtime = SimpleNamespace(cli=str(cli), command=shell.join)
    work = sandbox / "gpuonboard-smoke_train-abc123"
    launch = Launch("python3", True, "img:1", str(sandbox), 60)
    cmd = build_command(launch, "smoke_train.py", [], str(work), runtime, remote_timeout=50)
    parent = _start_under_parent(cmd, "print(1)\n")
    _wait_until("the container never started", lambda: _pids_naming(f"{sandbox}/sleep 302"), 10)
    parent.kill()
    parent.wait()
    _wait_until("the container outlived the session", lambda: not _pids_naming(str(sandbox)), 8)
    calls = log.read_text().splitlines()
    assert calls[0].startswith("run --rm --name gpuonboard-smoke_train-abc123 ")
    assert "kill --signal=TERM gpuonboard-smoke_train-abc123" in calls


# prove's session watcher (shell.until_session_ends) stops the script's process tree when the
# session that started it goes away, and nothing else. A process name may hold a line break (any
# process can set its own: prctl, /proc/self/comm), and /proc/PID/stat's first line then ends
# inside the name: `a) S 1234` read there made a foreign process look like a child of the
# script's pid 1234, so it was SIGTERMed with the script. It must be left running.
#
# The real command text runs with the local /bin/sh under a parent process (the shape of
# `connection: local`), as in the session-bound tests above.

__all__ = ["sandbox"]  # the fixture, used by name

# a process (not the script's) that names itself `a) S <pid>\n<rest>` and waits
DECOY = (
    "import ctypes, sys, time\n"
    "ctypes.CDLL(None).prctl(15, ('a) S ' + sys.argv[1] + '\\nx').encode(), 0, 0, 0)\n"
    "print('named', flush=True)\n"
    "time.sleep(60)\n"
)


def _sleeps(sandbox: Path) -> list[int]:
    """The script's own process: the `sleep` copy in sandbox (its argv[0])."""
    pids = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if (
                proc.name.isdigit()
                and (proc / "cmdline").read_bytes().split(b"\0")[0] == f"{sandbox}/sleep".encode()
            ):
                pids.append(int(proc.name))
    return pids


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "prctl"), reason="needs Linux prctl")
def test_a_process_whose_name_fakes_a_stat_line_is_not_killed_with_the_script(sandbox: Path) -> None:
    work = sandbox / "gpuonboard-s-1"
    launch = Launch("/bin/sh", False, "", str(sandbox), 60)
    cmd = build_command(launch, "s.sh", [], str(work), remote_timeout=60)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, cmd, f"{sandbox}/sleep 303\n"])
    decoy: subprocess.Popen[bytes] | None = None
    try:
        _wait_until("the script never started", lambda: _sleeps(sandbox), 10)
        (script_pid,) = _sleeps(sandbox)
        decoy = subprocess.Popen([sys.executable, "-c", DECOY, str(script_pid)], stdout=subprocess.PIPE)
        assert decoy.stdout is not None and decoy.stdout.readline() == b"named\n"
        parent.kill()
        parent.wait()
        _wait_until("the script outlived its session", lambda: not _sleeps(sandbox), 10)
        time.sleep(0.5)
        assert decoy.poll() is None, f"a process that is not the script's was stopped (exit {decoy.poll()})"
    finally:
        if decoy is not None:
            decoy.kill()
            decoy.wait()
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()


# The all-reduce launcher (remote/allreduce.py) waited for torchrun 900 s whatever
# vars.train_timeout said: a run allowed 30 minutes was stopped at 15 with "torchrun did not
# finish within 900 s". Its wait now lies beyond the host's own bound of the script, so the
# step's timeout governs; the launcher's parser takes the flag (the real script, run here).

SCRIPT = Path(__file__).resolve().parents[4] / "src" / "gpuonboard" / "remote" / "allreduce.py"


def test_the_launchers_wait_follows_train_timeout() -> None:
    for timeout in (60.0, 900.0, 1800.0, 7200.0):
        argv = launcher_argv(Launch("python3", False, "", "/tmp", timeout), None)
        wait = float(argv[argv.index("--timeout") + 1])
        assert wait > host_bound(timeout), (timeout, argv)
    assert launcher_argv(Launch("python3", False, "", "/tmp", 1800.0), 3)[:2] == ["--nproc", "3"]


def test_the_launcher_parses_its_wait() -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('a', {str(SCRIPT)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(m.parse_args(['--nproc', '2', '--timeout', '1850']).timeout)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1850.0"


# `disk_speed` parsing of unusual tool output and its rules over the page-cache evidence.


def _fio(write: dict[str, object], read: dict[str, object], after_json: str = "") -> str:
    w = json.dumps({"jobs": [{"jobname": "write", "write": write}]}, indent=1)
    r = json.dumps({"jobs": [{"jobname": "read", "read": read}]}, indent=1)
    return (
        "FS xfs /dev/nvme1n1 /data\nSIZE 1073741824\nTOOL fio\nDIRECT 1\n"
        f"##FIO-WRITE\n{w}\n{after_json}DROPPED 1\n##FIO-READ\n{r}\n##FIO-END\n"
    )


def test_fio_2_json_has_bandwidth_in_kib_only() -> None:
    """fio 2.x (CentOS 7, Ubuntu 16.04) prints `bw` (KiB/s) and no `bw_bytes`: was a KeyError,
    "internal error in this step"."""
    d = parse_disk(_fio({"io_bytes": 1048576, "bw": 1464843}, {"io_bytes": 1048576, "bw": 2929687}))
    assert round(d["write_gbps"], 3) == 1.5 and round(d["read_gbps"], 3) == 3.0
    assert d["bytes"] == 1 << 30  # the file's size, not fio 2's io_bytes (KiB)


def test_fio_message_after_its_json_keeps_the_figure() -> None:
    """fio's stderr goes with its JSON; a warning after it made the figure `not measured`."""
    text = _fio(
        {"bw_bytes": 2_000_000_000}, {"bw_bytes": 3_000_000_000}, "fio: file hash not empty on exit\n"
    )
    d = parse_disk(text)
    assert d["write_gbps"] == 2.0 and d["read_gbps"] == 3.0


def test_a_read_from_the_page_cache_is_not_a_disk_figure() -> None:
    out = (
        "FS nfs4 nas:/export /data\nSIZE 1073741824\nTOOL dd\nDIRECT 0\nWRITE 1073741824 1000000000\n"
        "CACHED_AFTER_WRITE 1073741824\nDROPPED 1\nCACHED_BEFORE_READ 1073741824\nREAD 1073741824 100000000\n"
    )
    read = {c.name: c for c in disk_checks(parse_disk(out), None, 0.5, "/data", "/data")}["disk_read"]
    assert read.verdict == "warn"
    assert read.actual.endswith("; 100% of the file was in the page cache when the read began")
    assert read.detail.startswith("not a disk figure: the read came from memory")


def test_quota_stops_the_file_one_sentence() -> None:
    why = "write failed: dd: error writing '/data/.gpuonboard-disk.x': Disk quota exceeded"
    assert disk_failure("/data", why, 4 << 30) == (
        f"disk test in /data failed: a disk quota stopped the 4.0 GiB test file although df shows"
        f" enough free space ({why}); the test file was removed. Raise the quota or set"
        " vars.disk_test_size smaller"
    )


def test_disk_script_reads_dd_in_the_c_locale_on_a_translated_host(tmp_path: Path) -> None:
    """A host whose session locale is Chinese (LANG=zh_CN.UTF-8 from /etc/default/locale; here
    LANGUAGE=zh_CN over C.UTF-8, which coreutils' translations answer the same): before, the
    real dd's `dd: 写入 ... 时出错: 设备上没有空间` was not seen as a full disk, the file was
    written a second time, and the error read `write failed: 0 字节已复制，...`. The disk is
    full here as /dev/full is: the real dd writes there (its fsync never reached, as on a full
    disk)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_dd = shutil.which("dd")
    assert real_dd
    (bin_dir / "dd").write_text(
        "#!/bin/sh\n"
        'n=$#; i=0; while [ "$i" -lt "$n" ]; do a=$1; shift; i=$((i + 1))\n'
        "  case $a in of=/dev/null) ;; of=*) a=of=/dev/full ;; conv=fsync) continue ;; esac\n"
        '  set -- "$@" "$a"; done\n'
        f'exec {real_dd} "$@"\n'
    )
    (bin_dir / "dd").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LC_ALL": "C.UTF-8", "LANGUAGE": "zh_CN:de"}
    out = subprocess.run(
        ["sh", "-c", disk_script(str(tmp_path), 8, use_fio=False)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 5
    why = parse_disk(out.stdout)["error"]
    assert why.startswith("write failed: ")
    assert why.endswith("dd: error writing '/dev/full': No space left on device")
    assert disk_failure(str(tmp_path), why, 8 << 20).startswith(
        f"disk test in {tmp_path} failed: the disk filled up while the 8.0 MiB test file was written"
    )
