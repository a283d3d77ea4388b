"""A floor of an output cut short that already meets a `>=` order proves it met (measure33b 44,
02, 36): numactl's nodes with CPUs read before the cut (ram), a cut /proc/cpuinfo's packages
read whole (cpu_cores), a cut lscpu's CPU types read whole (cpu_cores); a floor below the order says
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


OPTERON = "proc-cpuinfo__opteron-6134__4socket-8core-no-smt__core-ids-per-die__hwloc.txt"


def _opteron_blocks(count: int, cut_in_next: bool) -> str:
    """The first `count` blocks of the 4-socket Opteron 6134's /proc/cpuinfo (each package
    `siblings : 8`, `cpu cores : 8`, core ids 0-3 twice), cut inside the next block's `flags`
    line where `cut_in_next`: what lxcfs serves a container given CPUs 0-3 keeps the host's lines."""
    blocks = (REAL / OPTERON).read_text().split("\n\n")
    text = "\n\n".join(blocks[:count]) + "\n\n"
    return text + blocks[count][: blocks[count].index("flags") + 20] if cut_in_next else text


@pytest.mark.parametrize(
    ("name", "order", "verdict", "least"),
    [
        # one block of 48 siblings: its `cpu cores : 24` is of CPUs not read (measure33b 02)
        (EMERALD, 24, "unverified", None),  # (its siblings cut: no floor)
        (NUTANIX, 4, "unverified", 1),
    ],
)
def test_a_cpuinfo_cut_short_trusts_cpu_cores_only_of_a_package_read_whole(
    tmp_path: Path, name: str, order: int, verdict: str, least: int | None
) -> None:
    """cpu_cores passed 24 cores of CPU 0's `cpu cores : 24` alone (measure33b 02): the floor
    counts the (physical id, core id) pairs read, a package's `cpu cores` only where its blocks
    reach its siblings count."""
    assert parse_cpuinfo((REAL / name).read_text()).cores_floor == least
    code, rules = _rules(tmp_path, name, "cpuinfo.txt", f"cpu_cores: {order}\n")
    assert code == 0
    assert rules["cpu_cores"]["verdict"] == verdict, rules["cpu_cores"]
    assert "cut short" in rules["cpu_cores"]["actual"], rules["cpu_cores"]


@pytest.mark.parametrize(
    ("count", "cut_in_next", "least"),
    [
        (4, False, None),  # lxcfs's 4 CPUs of physical id 0, `siblings : 8`: the siblings cut, no floor
        (3, True, 4),  # cut inside CPU 3's flags: its core id and the 3 before read
        (8, True, 9),  # package 0 whole: its `cpu cores : 8` over its 4 core ids per die; + CPU 8's
    ],
)
def test_a_cpuinfo_floor_of_a_container_view_counts_only_the_cores_read(
    count: int, cut_in_next: bool, least: int | None
) -> None:
    """The first 4 blocks of a real cpuinfo (lxcfs' view of CPUs 0-3) passed `at least 8 cores read`
    from each block's `cpu cores : 8`, the host's."""
    info = parse_cpuinfo(_opteron_blocks(count, cut_in_next))
    assert info.cut and info.physical_cores is None
    assert info.cores_floor == least


@pytest.mark.parametrize(("count", "cut_in_next"), [(4, False), (3, True)])
def test_a_container_view_of_4_cpus_leaves_an_8_core_order_unverified(
    tmp_path: Path, count: int, cut_in_next: bool
) -> None:
    (tmp_path / "cpuinfo.txt").write_text(_opteron_blocks(count, cut_in_next))
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text("cpu_cores: 8\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts"]
    r = subprocess.run(
        [*cmd, str(tmp_path / "cpuinfo.txt"), "--order", str(spec), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["cpu_cores"]["verdict"] == "unverified", rules["cpu_cores"]


def test_a_cpuinfo_floor_leaves_out_a_line_cut_inside_and_a_second_paste() -> None:
    """`core id : 2` may be `24` cut; blocks from a CPU numbered no higher on are another paste."""
    block = "processor\t: {n}\nphysical id\t: {p}\ncore id\t\t: {n}\ncpu cores\t: 24\n\n"
    head = "".join(block.format(n=n, p=0) for n in range(3))
    assert parse_cpuinfo(head + "processor\t: 3\nphysical id\t: 0\ncore id\t\t: 2").cores_floor == 3
    twice = head + "".join(block.format(n=n, p=1) for n in range(3)) + "processor\t: 3"
    assert parse_cpuinfo(twice).cores_floor == 3


def test_a_cut_lscpu_keeps_the_cores_of_its_types_read_whole() -> None:
    """A GB10's flat lscpu cut after its Cortex-X925 block (10 of 20 CPUs): at least 10 cores."""
    text = (REAL / "lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt").read_text()
    head = text[: text.index("Cortex-A725")]
    head = head[: head.rindex("\n") + 1]
    info = parse_lscpu(head)
    assert info.cut and info.physical_cores is None
    assert info.cores_floor == 10
