"""Round 35 (measure35b, measure35c): host tool outputs in layouts the readers refused or
misread: lscpu's topology fields in all their layouts (s390's `Socket(s) per book:` and
`Book(s):`, a paste from its `On-line CPU(s) list:`), and some lines of lscpu beside free's in one
block (a node record), cut at their blank line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.api.shown import shown
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.cpu import parse_lscpu

from ..offline_judge import checks, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
S390 = (
    REAL
    / "lscpu__s390-lpar-20cpu-17-online__socket-per-book-books__no-architecture-line__util-linux-tests.txt"
)
FROM_ONLINE = REAL / "lscpu__epyc-2x64c-256cpu-8numa__paste-from-online-list__hackmd.txt"
NODE_RECORD = REAL / "script-blocks__lscpu-lines+free-h-between-blank-lines__epyc-9534-2x64c__node-record.txt"


@pytest.mark.parametrize("path", [S390, FROM_ONLINE])
def test_an_lscpu_in_each_topology_layout_is_lscpu(path: Path) -> None:
    assert detect_kind(path.read_text()) == "lscpu"


@pytest.mark.parametrize(("cores", "verdict"), [(17, "pass"), (18, "fail")])
def test_the_s390_lpar_counts_its_online_cpus(tmp_path: Path, cores: int, verdict: str) -> None:
    """17 of its 20 CPUs online, 1 thread a core: 17 cores; 18 is more than are online. Its
    `Socket(s) per book` and `Book(s)` count the machine's sockets, not the LPAR's: no count is
    cut away, with its Architecture line or without."""
    text = S390.read_text()
    for saved in (text, "Architecture:         s390x\n" + text):
        got = checks(tmp_path, "lscpu.txt", saved, f"cpu_cores: {cores}\n")
        cpu = next(c for c in got if c.name == "cpu_cores")
        assert cpu.verdict == verdict, cpu
        assert "cut short" not in cpu.actual + cpu.detail, cpu
    assert parse_lscpu("Architecture:         s390x\n" + text).cut is None


def test_an_lscpu_pasted_from_its_online_list_is_judged(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "lscpu.txt", FROM_ONLINE.read_text(), "cpu_cores: 128\n")
    assert got["cpu_cores"] == ("pass", "128 cores / 256 threads"), got["cpu_cores"]
    assert (
        verdicts(tmp_path, "lscpu.txt", FROM_ONLINE.read_text(), "cpu_cores: 129\n")["cpu_cores"][0] == "warn"
    )


def test_a_paste_whose_counts_miss_online_cpus_is_not_judged_whole() -> None:
    """A paste from its On-line list whose counts hold fewer CPUs than are online (another CPU
    type's lines left out) gives no logical count from the list."""
    text = FROM_ONLINE.read_text().replace("Core(s) per socket: 64", "Core(s) per socket: 32")
    assert parse_lscpu(text).logical_cpus is None


def test_a_grep_of_lscpu_without_its_online_list_needs_counts_holding_every_cpu() -> None:
    """`CPU(s): 256` with 2 x 64 x 2: every CPU counted (none offline); `CPU(s): 260` with the
    same counts may hold offline CPUs the grep left out: refused as before."""
    lines = NODE_RECORD.read_text().split("\n\n", 1)[0] + "\n"
    assert detect_kind(lines) == "lscpu"
    assert detect_kind(lines.replace("256", "260", 1)) is None


def test_lscpu_lines_and_free_between_blank_lines_are_each_read(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "cpu-mem.txt", NODE_RECORD.read_text(), "cpu_cores: 128\nram: 1TB\n")
    assert got["cpu_cores"][0] == "pass", got["cpu_cores"]
    assert got["ram"][0] == "pass" and got["ram"][1].startswith("1.5 TiB"), got["ram"]
    (tmp_path / "cpu-mem.txt").write_text(NODE_RECORD.read_text())
    notes: list[str] = []
    parse_facts(offline.load_outputs([str(tmp_path / "cpu-mem.txt")], notes))
    assert "a script's output of several tools between blank lines" in " ".join(notes), notes


NUMACTL_TOP_CUT = (
    REAL / "numactl-H__4node-32gib__page-begins-at-node-0-size-prompt-after__oracle-12c-consolidation.txt"
)


@pytest.mark.parametrize(("ram", "verdict"), [("32GB", "pass"), ("64GB", "fail")])
def test_a_numactl_that_lost_its_top_sums_the_nodes_of_its_matrix(
    tmp_path: Path, ram: str, verdict: str
) -> None:
    """The page begins at `node 0 size:` (its `available:` line and node 0's CPUs on the page
    before): every node of its distance matrix has its size line, so their sum is the RAM, and
    the cut is said."""
    got = checks(tmp_path, "numactl.txt", NUMACTL_TOP_CUT.read_text(), f"ram: {ram}\n")
    check = next(c for c in got if c.name == "ram")
    assert check.verdict == verdict, check
    assert check.actual.startswith(("31.98 GiB", "32.0 GiB")), check.actual
    assert "cut at its top (no `available:` line)" in check.actual, check.actual
    said = shown("numactl", NUMACTL_TOP_CUT.read_text())
    assert said.startswith("numactl --hardware: 4 NUMA nodes, at least 18 CPUs"), said
    assert "its `available:` line and a node's CPU list" in said, said


def test_a_numactl_that_lost_its_top_and_a_node_size_gives_no_total(tmp_path: Path) -> None:
    """Node 3 of its matrix without its size line: no total, only a floor (unverified)."""
    text = NUMACTL_TOP_CUT.read_text().replace("node 3 size: 8176 MB\n", "")
    got = verdicts(tmp_path, "numactl.txt", text, "ram: 32GB\n")
    assert got["ram"][0] == "unverified", got["ram"]


@pytest.mark.parametrize(
    ("name", "cores", "part"),
    [
        (
            "proc-cpuinfo__aarch64-cortex-a53__4cpu-cpu-part-0xd03__ansible.txt",
            4,
            "Cortex-A53 (CPU part 0xd03)",
        ),
        (
            "proc-cpuinfo__arm32-biglittle-a53-a73__8cpu-cpu-part-per-block__gopsutil-1037.txt",
            8,
            "Cortex-A53 (CPU part 0xd03) + Cortex-A73 (CPU part 0xd09)",
        ),
        (
            "proc-cpuinfo__raspberry-pi-4-cortex-a72__4cpu-cpu-part-0xd08__cadvisor.txt",
            4,
            "Cortex-A72 (CPU part 0xd08)",
        ),
        ("proc-cpuinfo__arm64-neoverse-n1__1cpu__ghw-snapshot.txt", 1, "Neoverse-N1 (CPU part 0xd0c)"),
    ],
)
def test_an_arm_cpuinfo_of_one_thread_cores_counts_each_cpu_a_core(
    tmp_path: Path, name: str, cores: int, part: str
) -> None:
    """arm64 and ARMv7 print no core id; an Arm core that runs one thread a core (every
    Cortex-A/X and Neoverse but Cortex-A65/A65AE and Neoverse E1) makes each CPU a core: judged,
    the part cited (was unverified: "the core count is not in this /proc/cpuinfo")."""
    text = (REAL / name).read_text()
    got = verdicts(tmp_path, "cpuinfo.txt", text, f"cpu_cores: {cores}\n")
    assert got["cpu_cores"][0] == "pass", got["cpu_cores"]
    assert f"({part}: one thread a core)" in got["cpu_cores"][1], got["cpu_cores"]
    assert verdicts(tmp_path, "cpuinfo.txt", text, f"cpu_cores: {cores + 1}\n")["cpu_cores"][0] == "fail"


def test_one_online_cpu_of_an_unknown_core_is_at_least_one_core(tmp_path: Path) -> None:
    """The Neoverse N1 guest's one CPU with its part unknown to the table: a CPU is a core or a
    thread of one, so an order of 1 core is met (was unverified, "lists 1 online CPUs")."""
    text = (
        (REAL / "proc-cpuinfo__arm64-neoverse-n1__1cpu__ghw-snapshot.txt")
        .read_text()
        .replace("0xd0c", "0xd99")
    )
    got = checks(tmp_path, "cpuinfo.txt", text, "cpu_cores: 1\n")
    cpu = next(c for c in got if c.name == "cpu_cores")
    assert (cpu.verdict, cpu.actual.endswith("at least 1 core (1 CPU online)")) == ("pass", True), cpu


AUTODL = (
    REAL
    / "session__autodl-no-gpu-mode__nvidia-smi-no-devices-cgroup-memory-max-2g__poster-comments-after-outputs"
    "__medicalgpt-log.txt"
)


def test_a_posters_comment_after_an_output_line_is_not_the_outputs(tmp_path: Path) -> None:
    """`2147483648      # 容器内存上限 2 GiB` is the cgroup's limit (2 GiB, under an 8 GB order:
    fail, the container's limit), and `No devices were found   # 开发机无 GPU` is nvidia-smi's
    sentence without the poster's words (was: ram "no free output was given", the cgroup line
    dropped; nvidia_driver quoting the comment as nvidia-smi's)."""
    got = checks(tmp_path, "session.txt", AUTODL.read_text(), "gpu_count: 1\nram: 8GB\n")
    rules = {c.name: c for c in got}
    assert rules["ram"].verdict == "fail" and "2.0 GiB usable (cgroup memory limit" in rules["ram"].actual
    assert rules["nvidia_driver"].actual == "nvidia-smi failed (No devices were found)", rules[
        "nvidia_driver"
    ]
    assert "开发机" not in " ".join(c.actual + c.detail for c in got)


IB_SESSION = (
    REAL / "session__hash-glued-prompts__ibdev2netdev-4up-then-ibswitches-4-switches__heioy-books.txt"
)


def test_a_session_of_hash_glued_prompts_reads_each_command(tmp_path: Path) -> None:
    """`#ibdev2netdev` then `#ibswitches -C mlx5_0`: the second, a tool whose output is not
    read, is a prompt of the same form, so its `Switch :` lines are no part of ibdev2netdev's
    output (was: the whole file refused); ibswitches said not read, rdma_ports unverified."""
    (tmp_path / "session.txt").write_text(IB_SESSION.read_text())
    notes: list[str] = []
    outputs = offline.load_outputs([str(tmp_path / "session.txt")], notes)
    assert "ibdev2netdev" in outputs, outputs.keys()
    assert "line 7 (`ibswitches -C mlx5_0`) is not an output this tool reads" in " ".join(notes), notes
    got = verdicts(tmp_path, "session.txt", IB_SESSION.read_text(), 'rdma: "4x56G InfiniBand"\n')
    assert got["rdma_ports"][0] == "unverified", got["rdma_ports"]


def test_a_meminfo_ram_verdict_names_memtotal(tmp_path: Path) -> None:
    """node_exporter's /proc/meminfo (MemTotal 3742148 kB) under a 4GB order: the fail says what
    the box is, its MemTotal, beside the shortfall (was `3.6 GiB (3.8 GB)` alone)."""
    text = (REAL / "meminfo__3.57gib__node-exporter.txt").read_text()
    got = checks(tmp_path, "meminfo.txt", text, "ram: 4GB\n")
    ram = next(c for c in got if c.name == "ram")
    assert ram.verdict == "fail" and ram.actual.endswith("/proc/meminfo's MemTotal (3742148 kB)"), ram
    assert ram.detail.startswith("441.6 MiB less than ordered"), ram.detail


def test_an_lsblk_without_mount_points_beside_no_df_says_so(tmp_path: Path) -> None:
    text = (
        REAL / "lsblk-t__topology-columns-no-mountpoint__simple-nvme-ascii-tree__util-linux-tests.txt"
    ).read_text()
    got = checks(tmp_path, "lsblk.txt", text, "data_disk: {mount: /home/test, min_size: 15GB}\n")
    disk = next(c for c in got if c.name == "data_disk")
    assert disk.verdict == "unverified", disk
    assert "the lsblk given has no MOUNTPOINT column" in disk.detail, disk.detail
