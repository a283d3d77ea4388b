"""Round 37 (measure37b, measure37e): host tool outputs the readers and rules misjudged: the
`docker info` of a daemon that runs natively on the box (its Total Memory is the box's RAM),
numactl's node sizes blamed on lxcfs, ..."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.docker_memory import docker_native, read_docker_memory
from gpuonboard.facts.probe import ProbeOutput

from ..offline_judge import checks

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NATIVE = REAL / (
    "docker-info__docker-24.0.7__native-ubuntu-22.04-context-default__a30-box-31.31gib-16cpus"
    "__conda-prompt__hello-k8s.txt"
)
DESKTOP = (
    REAL
    / "docker-info__docker-20.10.22__docker-desktop-wsl2-context-default__cmder-prompt__devops-homework.txt"
)


@pytest.mark.parametrize(("order", "verdict"), [("32GB", "pass"), ("64GB", "fail")])
def test_a_native_linux_daemons_total_memory_is_the_boxs_ram(
    tmp_path: Path, order: str, verdict: str
) -> None:
    """m37b 28: hello-k8s' A30 box's docker info (`Context: default`, `Operating System: Ubuntu
    22.04.5 LTS`, `OSType: linux`, `Total Memory: 31.31GiB`) alone: ram was unverified "may be a
    VM's or Docker Desktop's"; the daemon runs natively on the box, its MemTotal is the box's."""
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", NATIVE.read_text(), f"ram: {order}\n")}
    ram = got["ram"]
    assert ram.verdict == verdict, ram
    assert ram.actual == (
        "31.3 GiB (33.6 GB), docker info's Total Memory (a native Linux daemon: `Context: default`,"
        " `Operating System: Ubuntu 22.04.5 LTS`, `OSType: linux`; `Name: 5002544`, the box's host"
        " name; no free given)"
    ), ram.actual
    assert "lxcfs" not in ram.detail, ram.detail


def test_a_native_daemons_cpus_are_named_as_the_boxs_threads_never_its_cores(tmp_path: Path) -> None:
    """`CPUs: 16` of the same daemon: the box's threads, still no core count (a core runs 1 to
    8 threads, by CPU: Xeon Phi 4, POWER 8): unverified, and no longer "may be a VM's"."""
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", NATIVE.read_text(), "cpu_cores: 8\n")}
    cpu = got["cpu_cores"]
    assert cpu.verdict == "unverified", cpu
    assert "the CPU threads of this box, whose daemon runs natively on Linux, not its cores" in cpu.actual


def test_docker_desktops_local_context_stays_unread(tmp_path: Path) -> None:
    """The counterpart: Docker Desktop on WSL2 also says `Context: default`, but its daemon runs
    in Docker Desktop's VM (`Operating System: Docker Desktop`, a `microsoft-standard-WSL2`
    kernel): its Total Memory is that VM's, named and never judged, as before."""
    assert docker_native({"docker_info": ProbeOutput(DESKTOP.read_text(), "", 0)}) is None
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", DESKTOP.read_text(), "ram: 16GB\n")}
    assert got["ram"].verdict == "unverified", got["ram"]
    assert "which may be a VM's or Docker Desktop's" in got["ram"].actual


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("Context:    default", "Context:    remote-gpu"), "a remote context"),
        (("Context:    default\n", ""), "no Context line (docker before 19.03, or cut)"),
        (("Operating System: Ubuntu 22.04.5 LTS", "Operating System: Boot2Docker 19.03.12"), "boot2docker"),
        (("5.15.0-125-generic", "6.6.32-linuxkit"), "a linuxkit kernel"),
        (("Name: 5002544", "Name: colima"), "Colima's VM"),
    ],
)
def test_a_daemon_not_shown_to_be_the_boxs_own_stays_unread(change: tuple[str, str], why: str) -> None:
    """Test inputs made from the native capture: any sign of a remote or VM-carried daemon, or
    no `Context:` line, keeps Total Memory unread as the box's RAM."""
    text = NATIVE.read_text()
    assert change[0] in text
    raw = {"docker_info": ProbeOutput(text.replace(*change), "", 0, host_name="5002544")}
    assert read_docker_memory(raw) is None, why


@pytest.mark.parametrize(
    ("printed", "low", "high"),
    [
        ("31.31GiB", 31.305, 31.315),
        ("7.768GiB", 7.7675, 7.7685),
        ("1008GiB", 1007.5, 1008.5),
        ("31.3GiB", 31.295, 31.305),
    ],
)
def test_docker_infos_total_memory_spans_its_4_significant_digits(
    printed: str, low: float, high: float
) -> None:
    """go-units prints `%.4g`: `31.3GiB` is 31.30 (31.295-31.305 GiB), `1008GiB` 1007.5-1008.5."""
    text = NATIVE.read_text().replace("31.31GiB", printed)
    memory = read_docker_memory({"docker_info": ProbeOutput(text, "", 0, host_name="5002544")})
    assert memory is not None and memory.total_bytes is not None
    less, more = memory.total_spread
    gib = 1 << 30
    assert (memory.total_bytes - less) / gib == pytest.approx(low, abs=1e-6)
    assert (memory.total_bytes + more) / gib == pytest.approx(high, abs=1e-6)


CECELIA = (
    REAL / "script-blocks__lscpu-then-free-h-glued-unindented-header__xeon-e5-2673v4-2s-251gi"
    "__cecelia-env-report.txt"
)
FREE_H = REAL / "free-h__h200-vm__procps-4.0.2.txt"
LSCPU = CECELIA.read_text().split("total        used")[0]


def test_free_right_under_lscpu_is_read_as_its_own_output(tmp_path: Path) -> None:
    """m37e 17: an environment report's `CPU and memory` block: lscpu, then `free -h` right under
    its last line, its header without its leading blanks. Read as one lscpu, ram said "no free
    output was given"; now both read: 40 cores and 251 GiB (256 GB ordered, within tolerance)."""
    got = {
        c.name: c for c in checks(tmp_path, "cpu-mem.txt", CECELIA.read_text(), "cpu_cores: 40\nram: 256GB\n")
    }
    assert (got["cpu_cores"].verdict, got["ram"].verdict) == ("pass", "pass"), got
    assert got["ram"].actual.startswith("251.0 GiB"), got["ram"].actual


@pytest.mark.parametrize(
    ("below", "order", "rule"),
    [
        (FREE_H.read_text(), "ram: 128GB\n", "ram"),
        (
            (REAL / "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt").read_text(),
            "data_disk: {mount: /mydata}\n",
            "data_disk",
        ),
    ],
)
def test_each_output_glued_under_lscpu_is_read_as_alone(
    tmp_path: Path, below: str, order: str, rule: str
) -> None:
    """The class (test inputs joined from real outputs): free's or df's header right under
    lscpu's last line, with or without its own leading blanks, judges its rule as the output
    alone does, and lscpu's cores are still read."""
    alone = next(c for c in checks(tmp_path, "out.txt", below, order) if c.name == rule)
    for shown in (below, below.lstrip(" ")):
        got = {c.name: c for c in checks(tmp_path, "out.txt", LSCPU + shown, order + "cpu_cores: 40\n")}
        assert (got[rule].verdict, got[rule].actual) == (alone.verdict, alone.actual), got[rule]
        assert got["cpu_cores"].verdict == "pass", got["cpu_cores"]


@pytest.mark.parametrize(
    "name",
    [
        "numactl-H__2x-e5-2695v4-2node-255.9gib__roofline-measurement-readme.txt",
        "numactl-H__c5n.18xlarge-2node-184.9gib__aws-c-s3-403.txt",
        "numactl-H__1node-8cpu-7.8gib__nodejs-benchmarking-123.txt",
        "numactl-H__2x-epyc-9375f__2node-1.5tb__proxmox-cpu-affinity-58.txt",
    ],
)
def test_ram_short_by_numactls_nodes_names_no_lxcfs_limit(tmp_path: Path, name: str) -> None:
    """m37b 26: numactl -H alone, its nodes' sum below the order: FAIL, whose causes named "a
    container's memory limit, which lxcfs shows as free's total", untrue: numactl reads the node
    sizes from sysfs, which lxcfs and a cgroup limit leave as they are. A free alone still names it."""
    got = next(
        c
        for c in checks(tmp_path, "numactl-H.txt", (REAL / name).read_text(), "ram: 4TB\n")
        if c.name == "ram"
    )
    assert got.verdict == "fail", got
    assert "the sum of numactl's node sizes" in got.actual, got.actual
    assert "lxcfs" not in got.detail and got.detail.endswith(
        "a missing or failed DIMM, or a smaller box: ask the vendor"
    ), got.detail
    free = next(
        c for c in checks(tmp_path, "free-h.txt", FREE_H.read_text(), "ram: 4TB\n") if c.name == "ram"
    )
    assert "which lxcfs shows as free's total" in free.detail, free.detail


BCACHEFS = REAL / "lsblk-o__kname-multi-devs-bcachefs-sdc1-sdc2-one-mount-mnt-test__util-linux-tests.txt"


@pytest.mark.parametrize("size", ["400MB", "100MB"])
def test_lsblk_showing_several_devices_at_the_ordered_mount_says_so(tmp_path: Path, size: str) -> None:
    """m37b 15: util-linux's multi-device bcachefs, `sdc1 250M` and `sdc2 249M` both at /mnt/test,
    no df: data_disk said only "no df output was given". Now unverified either way (the file
    system spans both, or one is mounted over the other), naming both devices and why df is needed."""
    order = f"data_disk: {{mount: /mnt/test, min_size: {size}}}\n"
    disk = next(
        c for c in checks(tmp_path, "lsblk.txt", BCACHEFS.read_text(), order) if c.name == "data_disk"
    )
    assert disk.verdict == "unverified", disk
    assert disk.actual.startswith("unknown: lsblk shows 2 devices mounted at /mnt/test: sdc1 ("), disk.actual
    assert ", sdc2 (" in disk.actual and disk.actual.endswith("(no df given)"), disk.actual
    assert "not the size of the file system at /mnt/test, which only df tells" in disk.detail, disk.detail


CACHES = "`lscpu --caches` (lscpu's table of the CPU caches, which holds no CPU count)"


def test_lscpus_cache_table_in_a_session_is_named_as_such(tmp_path: Path) -> None:
    """m37b 24: cpplus' session of `lscpu`, `lscpu --caches` and `lscpu --all --extended`: the
    cache table was said "this tool reads lscpu's output but could not read what it printed", as
    if a read failed; it is a whole output of another form, with no CPU count. lscpu still judged."""
    from gpuonboard.api import offline

    name = "session__lscpu-then-lscpu-caches-then-lscpu-all-extended__arm64-apple-vm-2cpu__cpplus.txt"
    notes: list[str] = []
    outputs = offline.load_outputs([str(REAL / name)], notes=notes)
    said = " ".join(notes)
    assert f"line 37 (`lscpu --caches`): {CACHES}, which this tool does not read" in said, said
    assert "could not read what it printed" not in said, said
    assert "lscpu" in outputs


def test_a_saved_lscpu_cache_table_alone_is_refused_as_what_it_is(tmp_path: Path) -> None:
    """The family: `$ lscpu -C` and its 4 rows saved alone: refused naming it, no CPU count."""
    from gpuonboard.errors import UsageError

    text = (REAL / "lscpu-C__caches-table-4-levels__copied-command__zh-vector-notes.txt").read_text()
    with pytest.raises(UsageError) as refused:
        checks(tmp_path, "lscpu.txt", text, "cpu_cores: 4\n")
    assert CACHES in str(refused.value), str(refused.value)


TOP_SESSION = REAL / (
    "session__nvidia-smi-2x-rtx-pro-6000-maxq-580.95-then-top-b-n1-head-30-mib-mem__vllm-benchmark-notes.txt"
)


@pytest.mark.parametrize(("order", "verdict"), [("120GB", "pass"), ("256GB", "fail")])
def test_tops_memory_summary_in_a_session_gives_the_ram(tmp_path: Path, order: str, verdict: str) -> None:
    """m37e 06: `$ top -b -n 1 | head -30` after nvidia-smi in a session: procps-ng top's `MiB Mem :
    126426.1 total` (/proc/meminfo's MemTotal, as free's) was not read, ram "no free output was
    given"; now read as 123.5 GiB, its source said."""
    got = {c.name: c for c in checks(tmp_path, "session.txt", TOP_SESSION.read_text(), f"ram: {order}\n")}
    assert got["ram"].verdict == verdict, got["ram"]
    assert got["ram"].actual.startswith(
        "123.5 GiB (132.6 GB), top's Mem total (its memory summary; no free given)"
    ), got["ram"].actual


@pytest.mark.parametrize(
    ("line", "gib", "half"),
    [
        (
            "MiB Mem : 126426.1 total,   1030.2 free,  13982.5 used, 112899.8 buff/cache",
            126426.1 / 1024,
            0.05 / 1024,
        ),
        (
            "KiB Mem : 16305960 total,  1234567 free, 2345678 used, 3456789 buff/cache",
            16305960 / 1024**2,
            0.0,
        ),
        ("GiB Mem :    123.5 total,      1.0 free,     13.7 used,    110.3 buff/cache", 123.5, 0.05),
        ("Mem:   1009148k total,   809316k used,   199832k free,   245708k buffers", 1009148 / 1024**2, 0.0),
    ],
)
def test_tops_memory_total_is_read_in_the_unit_it_names(line: str, gib: float, half: float) -> None:
    """procps top's summary units: its label's (`KiB`/`MiB`/`GiB` Mem, scaled by `-E`), old
    procps' `k`; a decimal printed spreads the total half its last digit either way."""
    from gpuonboard.facts.memory import read_memory

    memory = read_memory(f"top - 04:38:26 up 47 min,  2 users,  load average: 2.00, 1.44, 0.77\n{line}\n")
    assert memory.source == "top" and memory.total_bytes is not None, memory
    assert memory.total_bytes / 2**30 == pytest.approx(gib, abs=1e-6)
    assert memory.total_spread[1] / 2**30 == pytest.approx(half, abs=1e-6)
