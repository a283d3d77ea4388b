"""`numactl --hardware` given without free: the ram rule judges the sum of its node sizes (each
node's MemTotal in MiB, as free's total is judged), cpu_cores stays unjudged (numactl lists CPU
threads, not cores); a numactl cut short judges nothing (measure31b 03, 05, 20)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).parents[2] / "fixtures" / "real"

# (fixture, the command line it was pasted under, an order it meets)
PASTED = [
    (
        "numactl-H__threadripper-4node-2-memoryless__125.8gib__numactl-165.txt",
        "tavianator@tachyon $ numactl -H",
        "128GB",
        "125.8 GiB",
    ),
    (
        "numactl-H__1node-8cpu-7.8gib__nodejs-benchmarking-123.txt",
        "root@nodejsb1:~# numactl --hardware",
        "8GB",
        "7.8 GiB",
    ),
    ("numactl-H__1node-2cpu-16gib__diamond-724.txt", "numactl --hardware", "16GB", "15.999 GiB"),
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _rules(tmp_path: Path, name: str, command: str, order: str) -> tuple[int, dict[str, dict[str, str]], str]:
    (tmp_path / "numactl.txt").write_text(f"{command}\n" + (REAL / name).read_text())
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text(f"cpu_cores: 2\nram: {order}\n")
    r = cli(str(tmp_path / "numactl.txt"), "--order", str(spec), "--json")
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]} if r.stdout else {}
    return r.returncode, rules, " ".join(r.stderr.split())


@pytest.mark.parametrize(("name", "command", "order", "read"), PASTED)
def test_a_numactl_alone_judges_ram_from_its_node_sizes(
    tmp_path: Path, name: str, command: str, order: str, read: str
) -> None:
    """ram was unverified "no free output was given" though the note summed the node sizes."""
    code, rules, stderr = _rules(tmp_path, name, command, order)
    assert code == 0, stderr
    assert rules["ram"]["verdict"] == "pass", rules["ram"]
    assert rules["ram"]["actual"].startswith(read)
    assert "the sum of numactl's node sizes (no free given)" in rules["ram"]["actual"]
    # (numactl lists CPU threads: cores stay lscpu's)
    assert rules["cpu_cores"]["verdict"] == "unverified"
    assert "no lscpu output was given" in rules["cpu_cores"]["actual"]
    assert (
        "ram reads these node sizes where no free or /proc/meminfo is given; cpu_cores reads lscpu" in stderr
    )


def test_a_numactl_alone_below_the_order_fails(tmp_path: Path) -> None:
    """The sum is judged both ways: the Threadripper's 125.8 GiB is short of 256 GB."""
    name, command, _, _ = PASTED[0]
    code, rules, stderr = _rules(tmp_path, name, command, "256GB")
    assert code == 1, stderr
    assert rules["ram"]["verdict"] == "fail"


def test_a_numactl_cut_short_leaves_ram_unverified(tmp_path: Path) -> None:
    """umf-1289's `numactl -H` shows 11 of its 16 nodes' sizes: their sum is only a floor (below
    this order: a floor meeting one passes, test_offline_round33_floors)."""
    name = "numactl-H__spr-hbm-flat-16node__cut-at-node-10__umf-1289.txt"
    code, rules, stderr = _rules(tmp_path, name, "$ numactl -H", "600GB")
    assert code == 0, stderr
    assert rules["ram"]["verdict"] == "unverified"
    assert "numactl's output cut short: 11 of 16 nodes' sizes read" in rules["ram"]["actual"]


def test_free_beside_numactl_is_what_ram_reads(tmp_path: Path) -> None:
    """Where free is given too, its total is judged, not the node sizes."""
    name, command, _, _ = PASTED[0]
    (tmp_path / "free.txt").write_text((REAL / "free__ubuntu-18.04-vm.txt").read_text())
    _rules(tmp_path, name, command, "1GB")
    r = cli(str(tmp_path), "--order", str(tmp_path.parent / f"{tmp_path.name}-order.yml"), "--json")
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["ram"]["verdict"] == "pass" and "numactl" not in rules["ram"]["actual"]


# (fixture, the order's ram, the verdict, the RAM of the nodes with CPUs, the CPU-less nodes' memory)
GPU_NODES = [
    (
        "numactl-H__power9-2node-510gib-4-gpu-hbm-nodes__legion-1338.txt",
        "560GB",
        "unverified",
        "510.3 GiB",
        "63.0 GiB",
    ),
    (
        "numactl-H__power9-2node-510gib-4-gpu-hbm-nodes__legion-1338.txt",
        "512GB",
        "pass",
        "510.3 GiB",
        "63.0 GiB",
    ),
    (
        "numactl-H__power9-2node-255.4gib-4-gpu-hbm-nodes__legion-1120.txt",
        "256GB",
        "pass",
        "255.4 GiB",
        "63.0 GiB",
    ),
    (
        "numactl-H__power9-2node-255.4gib-4-gpu-hbm-nodes__legion-1120.txt",
        "300GB",
        "unverified",
        "255.4 GiB",
        "63.0 GiB",
    ),
    (
        "numactl-H__power9-2node-510gib-4-gpu-hbm-nodes__legion-1338.txt",
        "600GB",
        "fail",
        "510.3 GiB",
        "63.0 GiB",
    ),
    (
        "numactl-H__power9-2node-255.4gib-4-gpu-hbm-nodes__legion-1120.txt",
        "350GB",
        "fail",
        "255.4 GiB",
        "63.0 GiB",
    ),
]


@pytest.mark.parametrize(("name", "order", "verdict", "ram", "gpu"), GPU_NODES)
def test_cpu_less_numa_nodes_are_not_counted_as_ram(
    tmp_path: Path, name: str, order: str, verdict: str, ram: str, gpu: str
) -> None:
    """A POWER9 box lists its V100s' HBM as CPU-less NUMA nodes (`node 252 cpus:` empty): ram summed
    them and passed `ram: 560GB` on 573.3 GiB, of 510.3 GiB of RAM (measure31d 40). Where only the
    sum of all nodes meets the order, ram is unverified (that memory may be DRAM whose CPUs are
    offline, review revE F3); it fails where even all nodes miss it."""
    code, rules, stderr = _rules(tmp_path, name, "numactl --hardware", order)
    assert code == (1 if verdict == "fail" else 0), stderr
    assert rules["ram"]["verdict"] == verdict, rules["ram"]
    assert rules["ram"]["actual"].startswith(ram), rules["ram"]
    assert (
        f"4 CPU-less nodes of {gpu} not counted (CPU-less nodes: device memory (GPU HBM, CXL) or DRAM"
        in (rules["ram"]["actual"])
    )
    if verdict == "unverified":
        assert "with the 4 CPU-less nodes (63.0 GiB) all nodes hold enough" in rules["ram"]["detail"]
    assert f"({ram}) of memory on the nodes with CPUs, and 64512 MiB ({gpu}) on 4 CPU-less nodes" in stderr


# revE d4: node 1 holds DRAM and lists no online CPU (a VM's vCPUs all on node 0, `nr_cpus=`,
# offlined CPUs); built as numactl prints such a box (a test input, not a capture)
OFFLINE_NODE = """available: 2 nodes (0-1)
node 0 cpus: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
node 0 size: 64326 MB
node 0 free: 60110 MB
node 1 cpus:
node 1 size: 64507 MB
node 1 free: 64201 MB
node distances:
node   0   1
  0:  10  20
  1:  20  10
"""


def test_a_cpu_less_node_of_dram_is_no_false_missing_dimm(tmp_path: Path) -> None:
    """A CPU-less node may be DRAM whose CPUs are offline: ram failed 62.8 GiB of a 128GB order,
    "a missing or failed DIMM", and called node 1 GPU HBM or CXL (review revE F3); the nodes with
    CPUs miss the order, all nodes meet it: unverified, not saying what that memory is."""
    (tmp_path / "numactl.txt").write_text(OFFLINE_NODE)
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text("ram: 128GB\n")
    r = cli(str(tmp_path / "numactl.txt"), "--order", str(spec), "--json")
    ram = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["ram"]
    assert ram["verdict"] == "unverified", ram
    assert "DIMM" not in ram["detail"] and "or DRAM whose CPUs are offline" in ram["actual"], ram
    assert "1 CPU-less node (63.0 GiB)" in ram["detail"] and "free -k" in ram["detail"], ram
    stderr = " ".join(r.stderr.split())
    assert "device memory (GPU HBM, CXL) or DRAM whose CPUs are offline" in stderr, stderr
    assert "a CPU's HBM in flat mode" not in stderr


C5N = "numactl-H__c5n.18xlarge-2node-184.9gib__aws-c-s3-403.txt"


@pytest.mark.parametrize("shape", ["two-boxes", "node-twice"])
def test_two_numactl_outputs_in_one_file_are_never_summed_as_one_box(tmp_path: Path, shape: str) -> None:
    """Review revC: `for h in gpu01 gpu02; do ssh $h numactl -H; done` saved in one file passed
    ram at 369.7 GiB, both boxes' nodes summed (the same file of two frees is refused); node 0's
    block pasted twice with node 1 lost passed at 184.7 GiB. A node listed twice, or more sizes
    than the `available:` line, or two `available:` lines: no total, ram unverified saying why."""
    text = (REAL / C5N).read_text()
    if shape == "two-boxes":
        pasted = text + text
    else:
        lines = text.splitlines(True)
        node0 = [line for line in lines if line.startswith("node 0 ")]
        pasted = "".join(line for line in lines if not line.startswith("node 1 ")) + "".join(node0)
    (tmp_path / "numactl.txt").write_text("$ numactl -H\n" + pasted)
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text("ram: 180GB\n")
    r = cli(str(tmp_path / "numactl.txt"), "--order", str(spec), "--json")
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]} if r.stdout else {}
    assert rules["ram"]["verdict"] == "unverified", (rules.get("ram"), r.stderr)
    assert "twice" in rules["ram"]["actual"] or "outputs" in rules["ram"]["actual"]
