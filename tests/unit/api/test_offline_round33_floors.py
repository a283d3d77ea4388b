"""A floor of an output cut short that already meets a `>=` order proves it met (measure33b 44,
02, 36): numactl's nodes with CPUs read before the cut (ram), a cut /proc/cpuinfo's packages
read (cpu_cores), a cut lscpu's CPU types read whole (cpu_cores); a floor below the order says
nothing and the rule stays unverified."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.facts.cpu import parse_cpuinfo, parse_lscpu
from gpuonboard.facts.memory import read_numactl_memory

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NUMACTL = "numactl-H__spr-hbm-flat-4node__cut-in-node-1-cpus__deepspeed-3918.txt"
UMF = "numactl-H__spr-hbm-flat-16node__cut-at-node-10__umf-1289.txt"
EMERALD = (
    "proc-cpuinfo__xeon-gold-6542y-emerald-rapids__processor-0-only__cut-in-flags__archspec-json-121.txt"
)
NUTANIX = "proc-cpuinfo__xeon-gold-5120-nutanix-vm__cut-in-processor-1__uyuni-2112.txt"


def _rules(tmp_path: Path, name: str, saved_as: str, order: str) -> tuple[int, dict[str, dict[str, str]]]:
    (tmp_path / saved_as).write_text((REAL / name).read_text())
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text(order)
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts"]
    r = subprocess.run(
        [*cmd, str(tmp_path / saved_as), "--order", str(spec), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.stdout, r.stderr
    return r.returncode, {c["name"]: c for c in json.loads(r.stdout)["rules"]}


@pytest.mark.parametrize(
    ("name", "order", "verdict", "said"),
    [
        (NUMACTL, "128GB", "pass", "at least 251.6 GiB read (numactl's output cut short: 1 of 4 nodes'"),
        (NUMACTL, "512GB", "unverified", "unknown: numactl's output cut short: 1 of 4 nodes' sizes read"),
        # (its 8 nodes with CPUs read, 503.5 GiB; its HBM nodes, CPU-less, are not counted)
        (UMF, "512GB", "pass", "at least 503."),
        (UMF, "600GB", "unverified", "unknown: numactl's output cut short: 11 of 16 nodes' sizes read"),
    ],
)
def test_a_numactl_cut_short_passes_ram_where_its_floor_meets_the_order(
    tmp_path: Path, name: str, order: str, verdict: str, said: str
) -> None:
    """ram was unverified for 128GB though node 0 alone holds 251.6 GiB (measure33b 44)."""
    code, rules = _rules(tmp_path, name, "numactl.txt", f"ram: {order}\n")
    assert code == 0
    assert rules["ram"]["verdict"] == verdict, rules["ram"]
    assert rules["ram"]["actual"].startswith(said), rules["ram"]


def test_a_numactl_floor_counts_only_nodes_with_cpus() -> None:
    """A CPU-less node read before the cut (HBM, CXL, GPU memory) is no floor of the RAM."""
    text = (REAL / UMF).read_text()
    floor = read_numactl_memory(text).floor_bytes
    assert floor is not None and floor >> 20 == 64132 + 64505 * 5 + 64459 + 64456
    cut = "available: 2 nodes (0-1)\nnode 0 cpus:\nnode 0 size: 16384 MB\nnode 0 free: 1 MB\nnode 1 cpus: 0 1"
    assert read_numactl_memory(cut).floor_bytes is None


@pytest.mark.parametrize(
    ("name", "order", "verdict", "least"),
    [
        (EMERALD, 24, "pass", 24),
        (EMERALD, 48, "unverified", 24),
        (NUTANIX, 4, "pass", 4),
        (NUTANIX, 8, "unverified", 4),
    ],
)
def test_a_cpuinfo_cut_short_passes_cpu_cores_where_its_packages_read_meet_the_order(
    tmp_path: Path, name: str, order: int, verdict: str, least: int
) -> None:
    """cpu_cores was unverified for 24 cores though CPU 0's `cpu cores : 24` says its package holds
    24 (measure33b 02); a floor below the order stays unverified, the rest of the box unknown."""
    assert parse_cpuinfo((REAL / name).read_text()).cores_floor == least
    code, rules = _rules(tmp_path, name, "cpuinfo.txt", f"cpu_cores: {order}\n")
    assert code == 0
    assert rules["cpu_cores"]["verdict"] == verdict, rules["cpu_cores"]
    if verdict == "pass":
        assert rules["cpu_cores"]["actual"].startswith(f"at least {least} cores read"), rules["cpu_cores"]
    else:
        assert "cut short" in rules["cpu_cores"]["actual"], rules["cpu_cores"]


def test_a_cpuinfo_floor_leaves_out_a_line_cut_inside_and_a_second_paste() -> None:
    """`cpu cores : 2` may be `24` cut; blocks from a CPU numbered no higher on are another paste."""
    block = "processor\t: {n}\nphysical id\t: {p}\ncore id\t\t: {n}\ncpu cores\t: {c}\n\n"
    assert parse_cpuinfo(block.format(n=0, p=0, c=24) + "processor\t: 1\ncpu cores\t: 2").cores_floor == 24
    cut = block.format(n=0, p=0, c=4) + "processor\t: 1\nphysical id\t: 0\ncpu cores\t: 2"
    assert parse_cpuinfo(cut).cores_floor == 4
    twice = block.format(n=0, p=0, c=4) + block.format(n=0, p=1, c=64) + "processor\t: 1"
    assert parse_cpuinfo(twice).cores_floor == 4


def test_a_cut_lscpu_keeps_the_cores_of_its_types_read_whole() -> None:
    """A GB10's flat lscpu cut after its Cortex-X925 block (10 of 20 CPUs): at least 10 cores."""
    text = (REAL / "lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt").read_text()
    head = text[: text.index("Cortex-A725")]
    head = head[: head.rindex("\n") + 1]
    info = parse_lscpu(head)
    assert info.cut and info.physical_cores is None
    assert info.cores_floor == 10
