"""lscpu parser against every real capture, plain and JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.facts.cpu import (
    CPUINFO,
    LSCPU_JSON_CUT,
    CpuInfo,
    looks_like_cpuinfo,
    looks_like_lscpu,
    parse_cpuinfo,
    parse_lscpu,
)

FIXTURES = Path(__file__).parents[2] / "fixtures"

EPYC = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"
GRACE = "lscpu__gh200-grace-neoverse-v2__aarch64.txt"
# our own capture of a rented 1 x H200 VM (16 vCPUs, KVM, Ubuntu 24.04.3), 2026-11-29
XEON = "lscpu__intel-xeon-16vcpu__h200-vm.txt"
XEON_J = "lscpu-J__intel-xeon-16vcpu__h200-vm.json"
XEON_INFO = CpuInfo("x86_64", "Intel(R) Xeon(R) Processor", 1, 16, 1, 16, 16)
# Jetson AGX Orin: "Socket(s): -", 3 clusters of 4 cores (no SMT): 12 physical cores, not unknown
ORIN = "lscpu__jetson-agx-orin-cortex-a78ae__aarch64-clusters.txt"
OFFLINE = "lscpu__xeon-e5-2630v4__2socket__36-of-40-cpus-offline.txt"

CASES = [
    (EPYC, CpuInfo("x86_64", "AMD EPYC 9374F 32-Core Processor", 2, 32, 1, 64, 64)),
    (GRACE, CpuInfo("aarch64", "Neoverse-V2", 1, 72, 1, 72, 72)),
    (XEON, XEON_INFO),
    (ORIN, CpuInfo("aarch64", "Cortex-A78AE", None, None, 1, 12, 12)),
    # 2 x Xeon E5-2630 v4 with 36 of its 40 CPUs offline ("Thread(s) per core: 0" as printed)
    (OFFLINE, CpuInfo("x86_64", "Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz", 2, 10, 0, 40, 20, (), 36)),
    # IBM POWER9 (ppc64le, SMT4), 6 NUMA nodes of which 4 list no CPU ("NUMA node252 CPU(s): ")
    (
        "lscpu__power9-ppc64le__2socket-6numa__v100-traverse.txt",
        CpuInfo("ppc64le", "POWER9, altivec supported", 2, 16, 4, 128, 32),
    ),
    # truth audit round 2 (values by hand: test_audit_captures_r2.py): GB10 with two CPU types,
    # lscpu in Chinese, a Raspberry Pi's clusters
    (
        "lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt",
        CpuInfo("aarch64", "Cortex-X925 + Cortex-A725", 1, 20, 1, 20, 20),
    ),
    (
        "lscpu__zh-cn__i7-8550u__util-linux-nested.txt",
        CpuInfo("x86_64", "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz", 1, 4, 2, 8, 4),
    ),
    (
        "lscpu__raspberry-pi-4b-cortex-a72__aarch64-clusters.txt",
        CpuInfo("aarch64", "Cortex-A72", None, None, 1, 4, 4),
    ),
    # round 6 (test_audit_captures_r6.py): a KVM guest of 2 x Xeon 8481C (Sapphire Rapids), 4 NUMA
    (
        "lscpu__xeon-platinum-8481c-sapphire-rapids__2socket-4numa__kvm.txt",
        CpuInfo("x86_64", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 2, 44, 2, 176, 88),
    ),
]
# round 15: 2 x EPYC 7742, CPU 255 offline: lscpu counts 1 thread per core over the online CPUs
CASES.append(
    (
        "lscpu__amd-epyc-7742__2socket-256cpu__cpu255-offline__bench-notes.txt",
        CpuInfo("x86_64", "AMD EPYC 7742 64-Core Processor", 2, 64, 1, 256, 128, (), 1),
    )
)
# round 31 (fixN1, test_cpu_counts_first.py): an s390x LPAR's old flat lscpu, no `Socket(s):`
CASES.append(
    (
        "lscpu__s390x-lpar-8cpu-smt2__no-socket-line-books__paste-ends-at-vendor-id__gingerbase-42.txt",
        CpuInfo("s390x", None, None, 8, 2, 8, None, ("lscpu has no 'Socket(s)' field",)),
    )
)
# round 31 (fixN1, api/test_offline_cpus_disagree.py): the host's lscpu in an LXD container
CASES.append(
    (
        "lscpu__xeon-e5-2660__2socket-32cpu__host-view-in-lxd-container-limits-cpu-4__lxcfs-181.txt",
        CpuInfo("x86_64", "Intel(R) Xeon(R) CPU E5-2660 0 @ 2.20GHz", 2, 8, 2, 32, 16),
    )
)
# locale sweep: Ubuntu's Russian lscpu (`Потоков на ядро:` is Thread(s) per core; before, read
# as no such field: a CPU set of SMT siblings was not warned about), its Flags wrapped by lscpu
CASES.append(
    (
        "lscpu__ru-ru__i7-13650hx__util-linux-nested-wrapped-flags.txt",
        CpuInfo("x86_64", "13th Gen Intel(R) Core(TM) i7-13650HX", 1, 14, 2, 20, 14),
    )
)
# blocked-view sweep: lscpu in a Kubernetes container under lxcfs (CPUs 8, 9, 24, 25 of 32 online,
# "Thread(s) per core: 0" as printed)
CASES.append(
    (
        "lscpu__xeon-silver-4110__2socket-32cpu__k8s-lxcfs-4-online__threads-per-core-0.txt",
        CpuInfo("x86_64", "Intel(R) Xeon(R) Silver 4110 CPU @ 2.10GHz", 2, 8, 0, 32, 16, (), 28),
    )
)
# round 26: Cavium ThunderX in util-linux's cluster mode, its firmware's `Socket(s): 2` beside
# `Core(s) per cluster: 48` and `Cluster(s): 2` (cores were unknown: no `Core(s) per socket`)
CASES.append(
    (
        "lscpu__cavium-thunderx-88xx__2socket-cluster-mode__paste-ends-at-cluster-count__tp-libvirt-6474.txt",
        CpuInfo("aarch64", "ThunderX-88XX", None, None, 1, 96, 96),
    )
)
# round 26: a GH200's lscpu pasted with the first letter of `Architecture:` lost (`rchitecture:`):
# the architecture unknown, every count read
CASES.append(
    (
        "lscpu__gh200-grace-neoverse-v2__first-letter-lost__archspec-159.txt",
        CpuInfo(None, "Neoverse-V2", 1, 72, 1, 72, 72),
    )
)
# round 24: German lscpu of a GB10 printed flat (util-linux 2.39 into a pipe: no indented type
# blocks), its two CPU types' blocks one after the other at the margin
DE_GB10 = "lscpu__de-de__gb10-cortex-x925-a725__flat-2-core-types__vllm-collect-env.txt"
CASES.append((DE_GB10, CpuInfo("aarch64", "Cortex-X925 + Cortex-A725", 1, 20, 1, 20, 20)))
# round 24: Spanish lscpu (util-linux's `«Socket(s)»` without its colon; `Modelo:` the model
# number), in the old flat layout and util-linux 2.37's nested one
CASES.append(
    (
        "lscpu__es-es__i7-4790k__socket-label-without-colon.txt",
        CpuInfo("x86_64", "Intel(R) Core(TM) i7-4790K CPU @ 4.00GHz", 1, 4, 2, 8, 4),
    )
)
CASES.append(
    (
        "lscpu__es-es__xeon-gold-6248__2socket-kvm__util-linux-2.37-nested__rocky-9.1.txt",
        CpuInfo("x86_64", "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 2, 4, 1, 8, 8),
    )
)
CASES.append(
    (
        "lscpu__threadripper-2950x__qubes-vm-1-of-4-online__qubes-issues-5708.txt",
        CpuInfo("x86_64", "AMD Ryzen Threadripper 2950X 16-Core Processor", 1, 1, 1, 4, 1, offline_cpus=3),
    )
)
# round 35: an s390 LPAR's (`Socket(s) per book:`, `Book(s):`, no `Socket(s):`; util-linux's test
# drops its Architecture line), and a paste from the On-line CPU(s) list (test_host_readers_r35)
CASES.append(
    (
        "lscpu__s390-lpar-20cpu-17-online__socket-per-book-books__no-architecture-line__util-linux-tests.txt",
        CpuInfo(None, None, None, 4, 1, 20, None, ("lscpu has no 'Socket(s)' field",), offline_cpus=3),
    )
)
CASES.append(
    (
        "lscpu__epyc-2x64c-256cpu-8numa__paste-from-online-list__hackmd.txt",
        CpuInfo(None, None, 2, 64, 2, 256, 128, ("lscpu has no 'CPU(s)' field",)),
    )
)
# real `lscpu -J` captures (the plain cases are also re-expressed as JSON below)
JSON_CASES = [
    (XEON_J, XEON_INFO),
    # (cut inside its `Socket(s):` field: nothing read, and said so: steps/checks/test_host_rules_unread.py)
    (
        "lscpu-J__raspberry-pi-4-cortex-a72__cut-inside-socket-field__ohai-1760.json",
        CpuInfo(None, None, None, None, None, None, None, (LSCPU_JSON_CUT,)),
    ),
]


@pytest.mark.parametrize(("name", "expected"), CASES + JSON_CASES)
def test_every_capture(name: str, expected: CpuInfo) -> None:
    assert parse_lscpu((FIXTURES / "real" / name).read_text()) == expected


def test_every_real_lscpu_is_covered() -> None:
    from .audit_captures import covered  # the truth audit's captures: tested there

    cases = {n for n, _ in CASES + JSON_CASES}
    # (a page's lscpu whose line breaks were lost: refused naming it, api/test_saved_forms_refusals.py)
    refused = {p.name for p in (FIXTURES / "real").glob("lscpu-line-breaks-lost__*")}
    # a Hyper-V guest's lscpu cut in its flags (steps/checks/test_host_rules_vcpus.py)
    refused.add("lscpu__xeon-e5-2673-v4__2vcpu__hyperv-azure-vm__cut-in-flags__opennfs-17.txt")
    # an lscpu cut at its L3 line beside a bare processor count (api/test_offline_unrecognised_in_folder.py)
    refused.add("lscpu__epyc-7281-2s-16c-8-numa__cut-at-l3-cache__inxi-136.txt")
    # round 33: a VM slice's lscpu, its NUMA section alone (api/test_offline_round33_host.py)
    refused.add("lscpu__amd-epyc-9645-kvm-12vcpu-1-core-per-socket__cut-after-bogomips__cpufetch-365.txt")
    refused.add("lscpu-numa-section-only__gh200-9-nodes-8-cpu-less__xpu-perf-129.txt")
    # round 34: a GB10's cut at its second type's Socket(s) (the test below)
    refused.add("lscpu__gb10-cortex-x925-a725__paste-ends-at-second-type-sockets__hyperion-842.txt")
    # round 37: `lscpu -C`'s cache table, refused naming it (api/test_host_readers_r37.py)
    refused.add("lscpu-C__caches-table-4-levels__copied-command__zh-vector-notes.txt")
    # round 39: `lscpu --extended=MODELNAME`, refused as lscpu -e (api/test_named_outputs_r39.py)
    refused.add(
        "lscpu-extended-modelname__snapdragon-7-cpus__hash-prompt-poster-comment__util-linux-3062.txt"
    )
    assert {p.name for p in (FIXTURES / "real").glob("lscpu*")} == cases | covered("lscpu") | refused


def test_real_json_is_the_flat_form_and_agrees_with_plain() -> None:
    # util-linux 2.39 (Ubuntu 24.04) prints a flat list: no "children", same fields as plain
    text = (FIXTURES / "real" / XEON_J).read_text()
    entries = json.loads(text)["lscpu"]
    assert not any("children" in e for e in entries)
    assert {"field": "Model name:", "data": "Intel(R) Xeon(R) Processor"} in entries
    assert json.loads(_as_json((FIXTURES / "real" / XEON).read_text(), nested=False))["lscpu"] == entries
    assert parse_lscpu(text) == parse_lscpu((FIXTURES / "real" / XEON).read_text())


def _as_json(text: str, nested: bool) -> str:
    """Re-express a plain capture the way `lscpu -J` prints it (flat or util-linux 2.38 nested)."""
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        colon = re.search("[:：]", line)  # zh_CN prints a full-width colon
        bare = re.match(r"^ {0,8}(\S+(?: \S+)*) {2,}(\S.*)$", line)  # (es: `«Socket(s)»   1`)
        if colon and not line.startswith(" " * 20):
            key, value = line[: colon.start()], line[colon.end() :]
            entries.append({"field": key.strip() + colon.group(), "data": value.strip()})
        elif bare:
            entries.append({"field": bare.group(1), "data": bare.group(2)})
    if nested:
        entries = [{**entries[0], "children": entries[1:]}]  # (its first line the root, as printed)
    return json.dumps({"lscpu": entries})


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize(("name", "expected"), CASES)
def test_json_form(name: str, expected: CpuInfo, nested: bool) -> None:
    text = _as_json((FIXTURES / "real" / name).read_text(), nested)
    assert parse_lscpu(text) == expected


def test_non_numeric_socket_count_warns() -> None:
    info = parse_lscpu("Architecture: aarch64\nCPU(s): 8\nSocket(s): -\nCore(s) per cluster: 4\n")
    assert info.logical_cpus == 8
    assert info.sockets is None and info.physical_cores is None
    assert info.warnings


@pytest.mark.parametrize(
    "text", ["", "garbage\n", "{not json", '{"lscpu": 3}', "[]", "lscpu: command not found\n"]
)
def test_garbage_warns_without_crash(text: str) -> None:
    info = parse_lscpu(text)
    assert info.logical_cpus is None and info.physical_cores is None
    assert info.warnings


def test_cgroup_cpu_quota() -> None:
    """v2 cpu.max and v1 quota/period as the probe prints them (FILE<TAB>VALUE); the values
    are what the kernel writes there (v1 here: this machine's own cpu controller files)."""
    from gpuonboard.facts.cpu_cgroup import parse_cgroup_cpu_limit

    assert parse_cgroup_cpu_limit("/sys/fs/cgroup/cpu.max\tmax 100000\n") is None
    assert parse_cgroup_cpu_limit("/sys/fs/cgroup/cpu.max\t800000 100000\n") == 8.0
    v1 = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us\t-1\n/sys/fs/cgroup/cpu/cpu.cfs_period_us\t100000\n"
    assert parse_cgroup_cpu_limit(v1) is None
    child = "/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us\t150000\n/sys/fs/cgroup/cpu/a/cpu.cfs_period_us\t100000\n"
    assert parse_cgroup_cpu_limit(child + v1) == 1.5


def test_cgroup_cpuset_counts_the_deepest_set() -> None:
    """The CPU sets the probe walks up the cgroup tree (v2 cpuset.cpus.effective; v1
    cpuset.effective_cpus, cpuset.cpus): the real `12-15` of a `--cpuset-cpus=12,13,14,15`
    container (distribution/distribution#3581) below its host's `0-55`, this machine's own v1
    files (`0-1`); a folder's effective set before its configured one; an empty set (v2's
    cpuset.cpus not configured) or none says nothing."""
    from gpuonboard.facts.cpu_cgroup import parse_cgroup_cpuset

    walk = "/sys/fs/cgroup/cpuset/docker/x/cpuset.cpus\t12-15\n/sys/fs/cgroup/cpuset/cpuset.cpus\t0-55\n"
    assert parse_cgroup_cpuset(walk) == 4
    assert parse_cgroup_cpuset("/sys/fs/cgroup/cpuset/cpuset.effective_cpus\t0-1\n") == 2
    assert parse_cgroup_cpuset("/sys/fs/cgroup/cpuset.cpus.effective\t0-3,8-11,16\n") == 9
    assert parse_cgroup_cpuset("/sys/fs/cgroup/cpuset.cpus.effective\t\n") is None
    # a folder's effective set before its configured one (v2: a set of no online CPU is ignored)
    both = "/sys/fs/cgroup/cpuset.cpus\t200-203\n/sys/fs/cgroup/cpuset.cpus.effective\t0-63\n"
    assert parse_cgroup_cpuset(both) == 64
    assert parse_cgroup_cpuset("/sys/fs/cgroup/cpu.max\tmax 100000\n") is None


def test_cgroup_cpuset_of_an_ancestor_smaller_than_the_own_is_not_read() -> None:
    """cgroup v2 takes the CPUs it hands to a child partition out of the parent's effective
    set: the login's own `rt.slice/job.scope` and `rt.slice` run on 4-63, the root keeps 0-3
    (sets typed here, of the real `0-63` of the EPYC host). A folder's own set already lies
    within its ancestors': the deepest folder's counts (60), with the file it was read from;
    before, the smallest of all (4, the root's)."""
    from gpuonboard.facts.cpu_cgroup import cgroup_cpuset_read, parse_cgroup_cpuset

    walk = (
        "/sys/fs/cgroup/rt.slice/job.scope/cpuset.cpus.effective\t4-63\n"
        "/sys/fs/cgroup/rt.slice/cpuset.cpus.effective\t4-63\n"
        "/sys/fs/cgroup/cpuset.cpus.effective\t0-3\n"
    )
    assert parse_cgroup_cpuset(walk) == 60
    assert cgroup_cpuset_read(walk) == (60, "cpuset.cpus.effective")
    v1 = "/sys/fs/cgroup/cpuset/slurm/job_7/cpuset.cpus\t0-7\n/sys/fs/cgroup/cpuset/cpuset.cpus\t0-63\n"
    assert cgroup_cpuset_read(v1) == (8, "cpuset.cpus")


def test_cluster_layout_counts_cores_per_cluster() -> None:
    """ARM boards without socket data (Kunpeng 920 prints `Core(s) per cluster: 48`,
    `Cluster(s): 4`): cores are clusters x cores per cluster, not unknown (which read as 'only
    hyperthreads reach the order' on a CPU without SMT)."""
    text = (FIXTURES / "real" / ORIN).read_text()
    info = parse_lscpu(text)
    assert (info.physical_cores, info.threads_per_core, info.warnings) == (12, 1, ())
    big = text.replace("CPU(s):                             12", "CPU(s):                             192")
    big = big.replace("Core(s) per cluster:                4", "Core(s) per cluster:                48")
    big = big.replace("Cluster(s):                         3", "Cluster(s):                         4")
    assert parse_lscpu(big).physical_cores == 192


@pytest.mark.parametrize(
    ("name", "flat"),
    [(DE_GB10, False), ("lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt", True)],
)
def test_a_flat_lscpu_cut_after_its_first_cpu_type_is_cut(name: str, flat: bool) -> None:
    """lscpu prints its CPU type blocks flat into a pipe or a file (util-linux 2.38+'s
    `--hierarchic=auto`: what the probe and `lscpu > lscpu.txt` get): each type's Stepping,
    BogoMIPS and Flags lines at the margin. The real German GB10 capture, and the real English
    one with every line's indent dropped (as lscpu prints it flat), each cut before its second
    type's `Model name` line: it was read as whole, 10 cores of 20 CPUs (a hyperthreads-only
    warning on a box without SMT); it is cut short, its core count unknown."""
    text = (FIXTURES / "real" / name).read_text()
    if flat:
        text = "".join(line.lstrip(" ") for line in text.splitlines(keepends=True))
    second = [m.start() for m in re.finditer(r"^(?:Model name|Modellname):", text, re.M)][1]
    info = parse_lscpu(text[:second])
    assert info.model_name == "Cortex-X925" and info.logical_cpus == 20
    assert info.physical_cores is None
    assert info.cut is not None and "10 of its 20 CPUs" in info.cut


HYPERV_CPUINFO = "proc-cpuinfo__amd-ryzen-3-4100__hyperv-vm-2socket-2core-smt__ollama-7287.txt"
JC_CPUINFO = "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # 8 CPUs: 2 sockets of 2 cores, each core two threads (core id 0, 0, 1, 1 per socket)
        (HYPERV_CPUINFO, CpuInfo(None, "AMD Ryzen 3 4100 4-Core Processor", 2, 2, 2, 8, 4, source=CPUINFO)),
        (
            JC_CPUINFO,
            CpuInfo(None, "Intel(R) Core(TM) i5-8279U CPU @ 2.40GHz", 2, 1, 1, 2, 2, source=CPUINFO),
        ),
        # round 35: LoongArch's and MIPS' (`system type` above the blocks, `package` and `core`
        # for physical id and core id, `Model Name` / `cpu model`): a KVM guest of 32 one-core
        # packages, a Baikal-T1 of 1 package x 2 cores (its lscpu says so)
        (
            "proc-cpuinfo__loongarch-3a5000-kvm__32cpu-package-core-keys__system-type-first__util-linux-dump.txt",
            CpuInfo(None, "Loongson-3A5000", 32, 1, 1, 32, 32, source=CPUINFO),
        ),
        (
            "proc-cpuinfo__mips-baikal-t1-p5600__2cpu-package-core-keys__system-type-machine-first__py-cpuinfo.txt",
            CpuInfo(None, "MIPS P5600 V3.0  FPU V2.0", 1, 2, 1, 2, 2, source=CPUINFO),
        ),
    ],
)
def test_proc_cpuinfo_counts_cpus_cores_and_sockets(name: str, expected: CpuInfo) -> None:
    """/proc/cpuinfo (read live where lscpu is not installed): its CPU blocks, the distinct
    (physical id, core id) pairs as cores and the distinct physical ids as sockets."""
    text = (FIXTURES / "real" / name).read_text()
    assert looks_like_cpuinfo(text) and not looks_like_cpuinfo((FIXTURES / "real" / XEON).read_text())
    assert parse_cpuinfo(text) == expected


OPTERON_CPUINFO = "proc-cpuinfo__opteron-6134__4socket-8core-no-smt__core-ids-per-die__hwloc.txt"


def test_proc_cpuinfo_of_two_die_packages_counts_the_kernels_cores() -> None:
    """The real /proc/cpuinfo of a 4-socket Opteron 6134 box (Magny-Cours: two 4-core dies a
    package, no SMT; hwloc's sysfs of it gives each CPU its own thread_siblings_list): each
    package numbers its core ids per die, 0-3 twice, beside `cpu cores : 8` and `siblings : 8`.
    The distinct (physical id, core id) pairs made it 16 cores / 32 threads, and an order of 32
    cores warned "met only by counting hyperthreads" on a box without them; the kernel's own
    count of each whole package's cores gives 32 cores of one thread each."""
    info = parse_cpuinfo((FIXTURES / "real" / OPTERON_CPUINFO).read_text())
    assert info.model_name == "AMD Opteron(tm) Processor 6134"
    assert (info.logical_cpus, info.physical_cores, info.sockets) == (32, 32, 4)
    assert (info.cores_per_socket, info.threads_per_core) == (8, 1)


def test_proc_cpuinfo_without_topology_counts_cpus_only() -> None:
    """A /proc/cpuinfo without `physical id` / `core id` (arm64, many VMs; here the real HyperV
    one with those lines dropped in-test): the CPUs are counted, the cores unknown, never
    guessed."""
    text = (FIXTURES / "real" / HYPERV_CPUINFO).read_text()
    bare = "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith(("physical id", "core id"))
    )
    info = parse_cpuinfo(bare)
    assert (info.logical_cpus, info.physical_cores, info.sockets) == (8, None, None)


@pytest.mark.parametrize("keep", [0.45, 0.97])
def test_proc_cpuinfo_cut_short_counts_nothing(keep: float) -> None:
    """The real HyperV /proc/cpuinfo cut in-test at `keep` of its length (inside a CPU block,
    a line cut too): the CPUs after the cut are unknown, so no count at all (never 'fewer CPUs
    than ordered'), and the cut said."""
    text = (FIXTURES / "real" / HYPERV_CPUINFO).read_text()
    info = parse_cpuinfo(text[: int(len(text) * keep)])
    assert (info.logical_cpus, info.physical_cores) == (None, None)
    assert info.cut is not None and "cut short" in info.warnings[0]


def _bare_field_every_label(line: str) -> tuple[str, str] | None:
    """_bare_field as it was: every translated label tried, longest first."""
    from gpuonboard.facts.cpu import _bare_labels

    text = line.strip()
    for label in _bare_labels():
        rest = text[len(label) :]
        if text.startswith(label) and rest[:2] in ("  ", "\t", " \t") and rest.strip():
            return label, rest.strip()
    return None


def test_bare_field_tries_the_labels_a_line_can_start_with_and_reads_what_every_label_read() -> None:
    """_bare_field tries only the labels sharing the line's first character: for each label of
    data/lscpu_labels.yml as lscpu pads it (blanks or a tab, a value, a wrapped Flags line's
    words after it, the label cut short or alone), and for a real capture's every line, it
    reads what trying every label read."""
    from gpuonboard.facts.cpu import _bare_field, _bare_labels

    captures = sorted((FIXTURES / "real").glob("lscpu*"))
    lines = [line for path in captures for line in path.read_text().splitlines()]
    for label in _bare_labels():
        lines += [
            f"{label}   1",
            f"  {label}\t2 ",
            f"{label} \tx y",
            f"{label} 3",
            label,
            f"{label}  ",
            f"{label[:-1]}   4",
            f"{label}x   5",
            f"\u00a0{label}   6",
        ]
    lines += ["", "   ", "\t", "fpu vme de pse tsc msr pae mce cx8"]
    assert [_bare_field(line) for line in lines] == [_bare_field_every_label(line) for line in lines]


def _hyperv_lines() -> list[str]:
    return (FIXTURES / "real" / HYPERV_CPUINFO).read_text().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("edit", "cut"),
    [
        # its first 56 lines: two whole blocks of physical id 0, whose siblings line says 4
        (lambda lines: "".join(lines[:56]), "it holds 2 CPUs of physical id 0, whose siblings line says 4"),
        # the top scrolled off: from `processor : 4` on
        (
            lambda lines: "".join(
                lines[next(i for i, x in enumerate(lines) if x.startswith("processor\t: 4")) :]
            ),
            "it starts at CPU 4: its top, from CPU 0, is missing",
        ),
        # without its last 10 lines: CPU 7's block cut at a line's end
        (lambda lines: "".join(lines[:-10]), "the block of CPU 7 lacks lines of CPU 0's block"),
    ],
)
def test_proc_cpuinfo_not_whole_counts_nothing(edit: Any, cut: str) -> None:
    """The real HyperV /proc/cpuinfo (8 CPUs) edited in-test as each case says: every edit ends
    at a CPU block's end with the kernel's newline, which was read as fewer CPUs (1 core / 2
    threads, 2 cores / 4 threads); the CPUs outside it are unknown: no count, the cut said."""
    info = parse_cpuinfo(edit(_hyperv_lines()))
    assert (info.logical_cpus, info.physical_cores, info.cut) == (None, None, cut)


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        # every line but the blank ones (a paste that lost them): the whole topology
        (lambda line: line.strip() != "", (8, 4, 2, None)),
        # `grep -E 'processor|physical id|core id' /proc/cpuinfo`
        (lambda line: re.match("processor|physical id|core id", line), (8, 4, 2, "grep")),
        # `grep processor /proc/cpuinfo`
        (lambda line: line.startswith("processor"), (8, None, None, "grep")),
    ],
)
def test_proc_cpuinfo_without_blank_lines_counts_each_processor_block(
    keep: Any, expected: tuple[Any, ...]
) -> None:
    """The real HyperV /proc/cpuinfo with only the lines `keep` keeps (in-test): blocks were
    split at blank lines only, so a text without them was one CPU (1 core / 1 thread). Each
    `processor : N` line now begins a block; blocks of topology lines only are said filtered."""
    info = parse_cpuinfo("".join(line for line in _hyperv_lines() if keep(line)))
    filtered = info.filtered and "grep"
    assert (info.logical_cpus, info.physical_cores, info.sockets, filtered) == expected


def test_proc_cpuinfo_without_core_id_counts_the_cpu_cores_of_each_package() -> None:
    """The real HyperV /proc/cpuinfo with its `core id` lines dropped in-test: its `physical id`
    and `cpu cores` (2 per package) still give 4 cores of 2 sockets, which were left unread."""
    info = parse_cpuinfo("".join(line for line in _hyperv_lines() if not line.startswith("core id")))
    assert (info.logical_cpus, info.physical_cores, info.sockets, info.threads_per_core) == (8, 4, 2, 2)


def test_proc_cpuinfo_pasted_twice_counts_nothing() -> None:
    """The real HyperV /proc/cpuinfo (8 CPUs) with its blocks of CPUs 4-7 pasted a second time
    after it (in-test): 12 CPUs were counted (4 cores / 12 threads), a CPU twice; the kernel
    lists each CPU once in rising order, so the text is not known whole."""
    lines = _hyperv_lines()
    text = "".join(lines) + "\n\n" + "".join(lines[4 * 28 :]) + "\n"
    info = parse_cpuinfo(text)
    assert (info.logical_cpus, info.cut) == (
        None,
        "CPU 4 follows a CPU numbered as high or higher (a block pasted twice?)",
    )


def test_a_grep_of_lscpu_keeping_its_counts_is_not_read_as_a_whole_lscpu() -> None:
    """Review of round 26: an lscpu known by its counting lines alone took in `lscpu | grep -E
    '^(CPU\\(s\\)|Thread|Core|Socket|Model name)'` of the real 2-socket Xeon Silver 4110 under
    lxcfs (4 of 32 CPUs online), which drops the Off-line CPU(s) list: the box passed 16 cores
    ordered from that line's absence. A paste that lost lines above `CPU(s):` keeps the On-line
    list; a grep of the counts, or `virsh nodeinfo` (whose `CPU socket(s)` counts a NUMA cell's;
    its lines written here as libvirt prints them), has none and is no lscpu."""
    text = (
        FIXTURES
        / "real"
        / "lscpu__xeon-silver-4110__2socket-32cpu__k8s-lxcfs-4-online__threads-per-core-0.txt"
    ).read_text()
    kept = re.compile(r"^(CPU\(s\)|Thread|Core|Socket|Model name)")
    grep = "".join(line for line in text.splitlines(keepends=True) if kept.match(line))
    assert not looks_like_lscpu(grep)
    virsh = (
        "CPU model:           x86_64\nCPU(s):              256\nCPU frequency:       2450 MHz\n"
        "CPU socket(s):       1\nCore(s) per socket:  64\nThread(s) per core:  2\n"
        "NUMA cell(s):        2\nMemory size:         1056462048 KiB\n"
    )
    assert not looks_like_lscpu(virsh)


def test_an_online_list_shorter_than_cpus_counts_the_rest_offline() -> None:
    """The same real lscpu with only its `Off-line CPU(s) list` line taken out: its On-line list
    (8,9,24,25) names 4 of 32 CPUs, so 28 are offline whether or not that line was kept (the
    box passed a 16-core order when it was not)."""
    text = (
        FIXTURES
        / "real"
        / "lscpu__xeon-silver-4110__2socket-32cpu__k8s-lxcfs-4-online__threads-per-core-0.txt"
    ).read_text()
    whole = parse_lscpu(text)
    without = parse_lscpu("".join(line for line in text.splitlines(keepends=True) if "Off-line" not in line))
    assert whole.offline_cpus == 28
    assert without.offline_cpus == 28


def test_an_lscpu_whose_architecture_line_was_lost_is_known_by_its_counts() -> None:
    """archspec/archspec #159: a GH200's lscpu pasted as `rchitecture:  aarch64` (its first
    letter lost) was no lscpu ("not a recognised command output", exit 2); its `CPU(s):`,
    `Thread(s) per core:`, `Core(s) per socket:` and `Socket(s):` lines say it is, and the CPU
    type blocks follow `CPU(s):`, so no core is lost with the lines above it. A /proc/cpuinfo, or
    lscpu's lines without a core count (`lscpu | grep CPU`), is not known by them."""
    text = (
        FIXTURES / "real" / "lscpu__gh200-grace-neoverse-v2__first-letter-lost__archspec-159.txt"
    ).read_text()
    assert looks_like_lscpu(text)
    assert looks_like_lscpu(text.replace("rchitecture:", "CPU op-mode(s):"))
    assert not looks_like_lscpu("\n".join(line for line in text.splitlines() if "Core(s)" not in line))
    for cpuinfo in (FIXTURES / "real").glob("proc-cpuinfo__*"):
        assert not looks_like_lscpu(cpuinfo.read_text()), cpuinfo.name


def test_proc_cpuinfo_with_blocks_left_out_by_hand_counts_nothing() -> None:
    """intel/gprofiler#458's Graviton (Cortex-A72) /proc/cpuinfo, its first six blocks, with the
    blocks of CPUs 1 to 4 replaced in the test by a `...` line, as a paste shortens it: an arm64
    block has no `siblings` to tell CPUs missing, so it was read as a whole listing of 2 CPUs
    (cpu_cores failed "fewer online CPUs than ordered"); the `...` says CPUs were left out."""
    text = (
        FIXTURES / "real" / "proc-cpuinfo__graviton-a1-cortex-a72__first-6-blocks__gprofiler-458.txt"
    ).read_text()
    assert parse_cpuinfo(text).logical_cpus == 6
    blocks = text.split("\n\n")
    shortened = "\n\n".join([blocks[0], "...", blocks[5]])
    info = parse_cpuinfo(shortened)
    assert (info.logical_cpus, info.cut) == (None, "lines were left out by hand (`...` on line 10)")


def test_a_left_out_line_between_fields_of_cpu_blocks_is_no_proof_of_the_rest() -> None:
    """A `...` a paste put between two fields of /proc/cpuinfo blocks stands for lines left
    out, which may be whole blocks: the hwloc Opteron 6134 capture (32 CPUs) edited in the
    test to `processor : 0`, `...`, the last 3 lines of block 30, a blank, block 31 read as 2
    CPUs and failed a 32-core order (review TT); ollama#7287's 8 blocks with each `flags` line
    replaced by `...` are as uncertain by their shape alone: unverified both (cut named)."""
    text = (FIXTURES / "real" / HYPERV_CPUINFO).read_text()
    edited = re.sub(r"(?m)^flags\s*:.*$", "...", text)
    assert edited.count("\n...\n") == 8
    assert parse_cpuinfo(edited).cut == "lines were left out by hand (`...` on line 20)"
    blocks = (FIXTURES / "real" / OPTERON_CPUINFO).read_text().rstrip("\n").split("\n\n")
    hidden = "\n".join(["processor\t: 0", "...", *blocks[30].splitlines()[-3:]]) + "\n\n" + blocks[31] + "\n"
    info = parse_cpuinfo(hidden)
    assert info.logical_cpus is None and info.cut is not None and "left out by hand" in info.cut


def test_an_lscpu_json_cut_anywhere_is_cut_short() -> None:
    """The H200 VM's `lscpu -J` cut every 7 characters in the test: a cut inside a string
    (`"field": "Model na`) read as "lscpu JSON invalid: Unterminated string ..." (no readable
    output) in 379 of 656 cuts; a cut inside a string or a literal is the output cut short."""
    text = (FIXTURES / "real" / XEON_J).read_text()
    said = {parse_lscpu(text[:cut]).warnings for cut in range(1, len(text) - 1, 7)}
    assert said == {(LSCPU_JSON_CUT,)}
    assert parse_lscpu('{"lscpu": [{"field": "CPU(s):", "data": nul').warnings == (LSCPU_JSON_CUT,)
    assert (
        parse_lscpu('{"lscpu": [{"field": "CPU(s):" "data": "8"}]}')
        .warnings[0]
        .startswith("lscpu JSON invalid")
    )


def test_an_lscpu_cut_at_a_type_s_socket_count_proves_its_cores_per_socket() -> None:
    """m34b 15 (hyperion#842): a GB10's lscpu ending at its Cortex-A725 block's `Socket(s):`,
    its `Core(s) per socket: 10` read. The cut was said "before its core count", untrue, and
    the floor held the X925's 10 cores only; at least one socket holds the A725's 10: 20 read."""
    name = "lscpu__gb10-cortex-x925-a725__paste-ends-at-second-type-sockets__hyperion-842.txt"
    info = parse_lscpu((FIXTURES / "real" / name).read_text())
    assert info.cut == (
        "it ends inside a CPU type's block, before its socket count (Socket(s); its Core(s) per"
        " socket, 10, read)"
    )
    assert (info.cores_floor, info.physical_cores) == (20, None)
    # the family: every whole real lscpu of CPU type blocks cut at its last `Socket(s):` value
    for whole in ("lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt",):
        text = (FIXTURES / "real" / whole).read_text()
        at = text.rindex("Socket(s):") + len("Socket(s):")
        cut = parse_lscpu(text[:at] + "\n")
        assert cut.cores_floor == parse_lscpu(text).physical_cores, cut
