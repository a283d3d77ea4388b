"""Rules of smoke_train / allreduce / disk_speed on recorded results; remote command shapes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpuonboard import shell
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.prove import (
    Launch,
    allreduce_checks,
    build_command,
    disk_checks,
    disk_script,
    load_references,
    match_reference,
    parse_acs,
    parse_disk,
    parse_result,
    script_bytes,
    smoke_checks,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "prove"


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
    c = by_name(allreduce_checks(r, table, "NVIDIA L40S", 8, "pcie", {"ports": 8, "redirecting": 4}, True))
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
