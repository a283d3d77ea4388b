"""A container whose cgroup limits the live probe could not read: the RAM and CPUs `free`,
`lscpu` and `nproc` show are the host's (a real AutoDL container's `free -h` says `1.0Ti` of a
share of 32 GB), so a pass of `ram` or `cpu_cores` there is unverified, as offline without the
limits; before, any output of the probe (exit 127 where there is no /proc/self/cgroup, nothing
read where the files are not readable, or only the other resource's file) counted as "limits
read: none", and the host's figures passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks.host_rules import rule_cpu, rule_ram
from gpuonboard.units import parse_ram_size

FIXTURES = Path(__file__).parents[3] / "fixtures"
DF = (FIXTURES / "public" / "df-h__autodl-rtx4090-container__overlay-root.txt").read_text()
FREE = (FIXTURES / "public" / "free-h__autodl-rtx4090-container__host-1.0ti.txt").read_text()
LSCPU = (FIXTURES / "real" / "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt").read_text()
ORDER = OrderSpec(ram_bytes=parse_ram_size("512GB"), cpu_cores=32)


def _facts(limits: ProbeOutput, df: str = DF) -> object:
    return parse_facts(
        {
            "df": ProbeOutput(df, "", 0),
            "free": ProbeOutput(FREE, "", 0),
            "lscpu": ProbeOutput(LSCPU, "", 0),
            "nproc": ProbeOutput("64\n", "", 0),
            "cgroup_limits": limits,
        }
    )


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        (ProbeOutput("", "", 127), "(no /proc/self/cgroup)"),
        (ProbeOutput("", "", 0), "(it read none)"),
    ],
)
def test_limits_the_probe_could_not_read_leave_a_containers_pass_unverified(
    limits: ProbeOutput, said: str
) -> None:
    facts = _facts(limits)
    ram, cpu = rule_ram(ORDER, facts, 0.03), rule_cpu(ORDER, facts)
    assert (ram.verdict, cpu.verdict) == ("unverified", "unverified"), (ram, cpu)
    assert ram.actual.endswith("(of the host: / is an overlay, a container)")
    assert f"hold no memory.max or memory.limit_in_bytes {said}" in ram.detail
    assert f"hold no cpu.max or cpu.cfs_quota_us {said}" in cpu.detail


def test_each_limit_counts_only_where_its_own_file_was_read() -> None:
    """cpu.max read (no quota) and no memory file: the CPUs are judged, the RAM is not known."""
    facts = _facts(ProbeOutput("/sys/fs/cgroup/cpu.max\tmax 100000\n", "", 0))
    assert rule_cpu(ORDER, facts).verdict == "pass"
    assert rule_ram(ORDER, facts, 0.03).verdict == "unverified"
    both = _facts(ProbeOutput("/sys/fs/cgroup/memory.max\tmax\n/sys/fs/cgroup/cpu.max\tmax 100000\n", "", 0))
    assert (rule_ram(ORDER, both, 0.03).verdict, rule_cpu(ORDER, both).verdict) == ("pass", "pass")
    v1 = _facts(
        ProbeOutput(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes\t9223372036854771712\n"
            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us\t-1\n/sys/fs/cgroup/cpu/cpu.cfs_period_us\t100000\n",
            "",
            0,
        )
    )
    assert (rule_ram(ORDER, v1, 0.03).verdict, rule_cpu(ORDER, v1).verdict) == ("pass", "pass")


def test_a_machine_that_is_no_container_passes_without_its_limits() -> None:
    """/ on a disk, not an overlay: the probe reading nothing says nothing against free's RAM."""
    machine = (FIXTURES / "real" / "df__ubuntu-18.04-vm__snap-loops.txt").read_text()
    facts = _facts(ProbeOutput("", "", 127), machine)
    assert (rule_ram(ORDER, facts, 0.03).verdict, rule_cpu(ORDER, facts).verdict) == ("pass", "pass")


# the cgroup v1 CPU set of a real container (distribution/distribution#3581: `docker run
# --cpuset-cpus=12,13,14,15`), as `tail /sys/fs/cgroup/cpuset/cpuset.cpus` printed it
CPUSET = (FIXTURES / "real" / "cpuset-cpus__docker-cpuset-cpus-12-15__distribution-3581.txt").read_text()


def _offline(tmp_path: Path, listing: str, order: str) -> dict[str, object]:
    """The rules of the AutoDL container's df and free, the EPYC host's lscpu and a saved
    `grep .` listing of cgroup files (no nproc), judged offline against `order`."""
    from gpuonboard.api import offline

    folder = tmp_path / "box"
    folder.mkdir(parents=True)
    (folder / "df.txt").write_text(DF)
    (folder / "free.txt").write_text(FREE)
    (folder / "lscpu.txt").write_text(LSCPU)
    (folder / "cgroup.txt").write_text(listing)
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}


def test_a_saved_cpu_set_among_the_cgroup_files_limits_the_cpus(tmp_path: Path) -> None:
    """A saved `grep .` of the container's cgroup files with its CPU set (the real 12-15 of a
    `--cpuset-cpus=12,13,14,15` container, its v1 file's name put before it) and a quota of
    `max`: 4 CPUs usable of the host's 64, fewer than the 16 ordered; before, a listing holding
    the CPU set was refused as no recognised output."""
    listing = (
        "/sys/fs/cgroup/memory/memory.limit_in_bytes:9223372036854771712\n"
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us:-1\n/sys/fs/cgroup/cpu/cpu.cfs_period_us:100000\n"
        f"/sys/fs/cgroup/cpuset/cpuset.cpus:{CPUSET}"
    )
    cpu = _offline(tmp_path, listing, "cpu_cores: 16\n")["cpu_cores"]
    assert cpu.verdict == "fail", cpu
    assert cpu.actual.endswith("4 usable (cgroup CPU set)")


def test_a_quota_of_max_without_the_cpu_set_is_no_pass_in_a_container(tmp_path: Path) -> None:
    """The same container's listing without its CPU set and no nproc saved: a quota of `max`
    does not say the container may run on the 64 CPUs lscpu shows (the real container above has
    4 of them); before, cpu_cores passed from the host's CPUs."""
    listing = "/sys/fs/cgroup/memory.max:max\n/sys/fs/cgroup/cpu.max:max 100000\n"
    cpu = _offline(tmp_path, listing, "cpu_cores: 16\n")["cpu_cores"]
    assert cpu.verdict == "unverified", cpu
    assert "cpuset.cpus.effective" in cpu.detail
    v2 = listing + "/sys/fs/cgroup/cpuset.cpus.effective:0-63\n"
    assert _offline(tmp_path / "v2", v2, "cpu_cores: 16\n")["cpu_cores"].verdict == "pass"


def test_other_cgroup_files_listed_beside_the_limits_are_skipped(tmp_path: Path) -> None:
    """A `grep .` of the container's whole cgroup folders: beside the real CPU set of the
    `--cpuset-cpus=12,13,14,15 --memory=8192m` container (distribution/distribution#3581) its
    memory limit (8192m, in bytes) and, added here, files the probe does not read
    (cpuset.mems, memory.usage_in_bytes, memory.stat's lines, cpu.shares); before, the whole
    listing was refused as no recognised output, and its limits unread."""
    listing = (
        f"/sys/fs/cgroup/cpuset/cpuset.cpus:{CPUSET}"
        "/sys/fs/cgroup/cpuset/cpuset.mems:0\n"
        "/sys/fs/cgroup/memory/memory.limit_in_bytes:8589934592\n"
        "/sys/fs/cgroup/memory/memory.usage_in_bytes:1101312\n"
        "/sys/fs/cgroup/memory/memory.stat:cache 0\n/sys/fs/cgroup/memory/memory.stat:rss 999424\n"
        "/sys/fs/cgroup/cpu/cpu.shares:1024\n"
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us:-1\n/sys/fs/cgroup/cpu/cpu.cfs_period_us:100000\n"
    )
    rules = _offline(tmp_path, listing, "cpu_cores: 16\nram: 32GB\n")
    assert rules["cpu_cores"].verdict == "fail", rules["cpu_cores"]
    assert rules["ram"].verdict == "fail", rules["ram"]
    assert "8.0 GiB usable (cgroup memory limit)" in rules["ram"].actual


def test_a_listing_of_no_file_the_probe_reads_is_no_cgroup_listing() -> None:
    """Only files the probe does not read (memory.current, cpu.weight): no limits listing."""
    from gpuonboard.api import saved_cgroup

    assert (
        saved_cgroup.cgroup_limits("/sys/fs/cgroup/memory.current:1101312\n/sys/fs/cgroup/cpu.weight:100\n")
        is None
    )


# a recursive `grep -r . /sys/fs/cgroup` of a v2 host (file names and values typed here, the CPU
# set the real 12-15 above): the root's and user.slice's files, and those of another container
# beside the login (system.slice/docker-0a1b2c.scope: 2 CPUs, 4 GiB, CPUs 12-15)
RECURSIVE = (
    "/sys/fs/cgroup/cgroup.controllers:cpuset cpu io memory hugetlb pids rdma misc\n"
    "/sys/fs/cgroup/cpuset.cpus.effective:0-63\n/sys/fs/cgroup/cpu.stat:usage_usec 123456\n"
    "/sys/fs/cgroup/user.slice/cpu.max:max 100000\n/sys/fs/cgroup/user.slice/memory.max:max\n"
    "/sys/fs/cgroup/system.slice/memory.max:max\n"
    "/sys/fs/cgroup/system.slice/docker-0a1b2c.scope/cgroup.procs:4242\n"
    "/sys/fs/cgroup/system.slice/docker-0a1b2c.scope/cpu.max:200000 100000\n"
    "/sys/fs/cgroup/system.slice/docker-0a1b2c.scope/memory.max:4294967296\n"
    "/sys/fs/cgroup/system.slice/docker-0a1b2c.scope/cpuset.cpus.effective:12-15\n"
)


def test_a_listing_of_sibling_cgroups_is_refused(tmp_path: Path) -> None:
    """The recursive listing holds limits of folders of which neither holds the other: which
    are the login's own cannot be told, so the listing is refused, naming them; before, the
    smallest limit of every folder was read, another container's, and cpu_cores failed
    "2 usable (cgroup CPU quota)" and ram "4.0 GiB usable (cgroup memory limit)"."""
    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    # (beside other outputs, of other kinds, since round 35 the refusal is a note and the rules the
    # limits would decide stay unverified: the host's free and lscpu never pass for the login's)
    rules = _offline(tmp_path, RECURSIVE, "cpu_cores: 16\nram: 8GB\n")
    assert (rules["cpu_cores"].verdict, rules["ram"].verdict) == ("unverified", "unverified"), rules
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box")], notes)
    assert any("neither holds the other (/system.slice and /user.slice)" in note for note in notes), notes
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "cgroup.txt").write_text(RECURSIVE)
    with pytest.raises(UsageError, match=r"neither holds the other \(/system\.slice and /user\.slice\)"):
        offline.load_outputs([str(tmp_path / "alone" / "cgroup.txt")])


def test_a_listing_of_one_chain_of_cgroups_is_read(tmp_path: Path) -> None:
    """The same listing's root and user.slice files alone, the login's own folder below them,
    and a v1 container's files of each controller's tree (`memory/docker/x`, `cpu/docker/x`:
    one folder): one chain from the root, read as the live walk's."""
    own = "".join(line + "\n" for line in RECURSIVE.splitlines() if "system.slice" not in line)
    own += "/sys/fs/cgroup/user.slice/user-1000.slice/memory.max:max\n"
    rules = _offline(tmp_path, own, "cpu_cores: 16\nram: 8GB\n")
    assert (rules["cpu_cores"].verdict, rules["ram"].verdict) == ("pass", "pass"), rules
    v1 = (
        "/sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes:8589934592\n"
        "/sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_quota_us:-1\n"
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us:-1\n"
        f"/sys/fs/cgroup/cpuset/docker/x/cpuset.cpus:{CPUSET}"
    )
    rules = _offline(tmp_path / "v1", v1, "cpu_cores: 16\nram: 32GB\n")
    assert "8.0 GiB usable (cgroup memory limit)" in rules["ram"].actual
    assert rules["cpu_cores"].actual.endswith("4 usable (cgroup CPU set)")


def test_a_v1_listing_of_each_controller_s_own_chain_is_read(tmp_path: Path) -> None:
    """A cgroup v1 Slurm step's listing (paths and values typed here): memory and cpuset in
    `slurm/uid_1000/job_42/step_0`, cpu,cpuacct in `system.slice/slurmd.service`; v1 keeps a
    tree per controller, each folder on one chain from its own root, so the limits are read:
    ram fails at the 64 GiB limit, cpu_cores at the 16-CPU set. Before, the folders were
    compared across the trees and the listing refused as "neither holds the other"."""
    slurm = (
        "/sys/fs/cgroup/memory/slurm/uid_1000/job_42/step_0/memory.limit_in_bytes:68719476736\n"
        "/sys/fs/cgroup/cpuset/slurm/uid_1000/job_42/step_0/cpuset.cpus:0-15\n"
        "/sys/fs/cgroup/cpu,cpuacct/system.slice/slurmd.service/cpu.cfs_quota_us:-1\n"
    )
    rules = _offline(tmp_path, slurm, "cpu_cores: 32\nram: 128GB\n")
    assert "64.0 GiB usable (cgroup memory limit)" in rules["ram"].actual, rules["ram"]
    assert rules["cpu_cores"].actual.endswith("16 usable (cgroup CPU set)"), rules["cpu_cores"]


def test_a_cpu_set_of_an_ancestor_partition_is_no_limit_beside_nproc() -> None:
    """cgroup v2 takes the CPUs it hands to a child partition out of the parent's effective
    set: the login's `rt.slice/job.scope` and `rt.slice` run on 4-63, the root keeps 0-3 (sets
    typed here), nproc 60; before, the root's set counted and cpu_cores failed "4 usable (cgroup
    CPU set)". A set smaller than a read nproc is a misread too (nproc's affinity lies within
    it): nproc counts."""
    walk = (
        "/proc/1/comm\tsystemd\n"
        "/sys/fs/cgroup/rt.slice/job.scope/cpuset.cpus.effective\t4-63\n"
        "/sys/fs/cgroup/rt.slice/cpuset.cpus.effective\t4-63\n"
        "/sys/fs/cgroup/cpuset.cpus.effective\t0-3\n"
    )
    facts = parse_facts(
        {
            "lscpu": ProbeOutput(LSCPU, "", 0),
            "nproc": ProbeOutput("60\n", "", 0),
            "cgroup_limits": ProbeOutput(walk, "", 0),
        }
    )
    cpu = rule_cpu(OrderSpec(cpu_cores=8), facts)
    assert cpu.verdict == "pass" and cpu.actual.endswith("60 usable (affinity/cgroup)"), cpu
    odd = parse_facts(
        {
            "lscpu": ProbeOutput(LSCPU, "", 0),
            "nproc": ProbeOutput("60\n", "", 0),
            "cgroup_limits": ProbeOutput("/sys/fs/cgroup/cpuset.cpus.effective\t0-3\n", "", 0),
        }
    )
    assert rule_cpu(OrderSpec(cpu_cores=8), odd).verdict == "pass"


def test_the_cpu_set_named_is_the_file_read() -> None:
    """No lscpu nor nproc, the v1 CPU set of the real container (cpuset.cpus): the CPUs known
    are said to come from cpuset.cpus; before, always from "cpuset.cpus.effective"."""
    limits = f"/sys/fs/cgroup/cpuset/cpuset.cpus\t{CPUSET}"
    cpu = rule_cpu(OrderSpec(cpu_cores=2), parse_facts({"cgroup_limits": ProbeOutput(limits, "", 0)}))
    assert "(the cgroup's cpuset.cpus)" in cpu.detail, cpu
