"""The live probe's disk and memory commands (connection/probe_commands.py core_probes), run by a real
`sh` as the batched probe runs them, against a replay toolbox that prints real captured outputs
for the arguments it is given (and refuses any others, as a tool without that option does),
then parsed and judged as a live check is."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.connection.probe_commands import DF_TIMEOUT, core_probes, df_command
from gpuonboard.facts.probe import Probe, ProbeOutput, build_script, new_token, split_output
from gpuonboard.inventory import OrderSpec
from gpuonboard.inventory.model import DataDiskSpec
from gpuonboard.steps.checks.disk_rules import _NETWORK_FS, _NETWORK_FUSE, rule_data_disk
from gpuonboard.steps.checks.host_rules import rule_cpu, rule_ram
from gpuonboard.testing.toolbox import ReplayRule, render_script

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
GPFS_DF_HT = REAL / "df-hT__k8s-pod__gpfs-15t-volume__ibm-spectrum-scale-csi.txt"
HYPERV_CPUINFO = REAL / "proc-cpuinfo__amd-ryzen-3-4100__hyperv-vm-2socket-2core-smt__ollama-7287.txt"
LSBLK_P = REAL / "lsblk-P__qemu-vm-ubuntu-core-ab-partitions__snappy.txt"
LSBLK_COLUMNS = "-b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL"


def _box(tmp_path: Path, replies: dict[str, dict[str, str]]) -> Path:
    """A bin dir holding, per command, a replay script answering each given argument string
    with its text (any other arguments: a refusal on stderr, exit 2), and `cat`; nothing else."""
    bin_dir, files = tmp_path / "bin", tmp_path / "files"
    bin_dir.mkdir()
    for command, answers in replies.items():
        rules = []
        for i, (args, text) in enumerate(answers.items()):
            (files / command).mkdir(parents=True, exist_ok=True)
            (files / command / str(i)).write_text(text)
            rules.append(ReplayRule(args=args, file=PurePosixPath(command, str(i))))
        script = bin_dir / command
        script.write_text(render_script(command, rules, files))
        script.chmod(0o755)
    os.symlink("/bin/cat", bin_dir / "cat")
    return bin_dir


def _probe(bin_dir: Path, names: tuple[str, ...], df_timeout: int = DF_TIMEOUT) -> Facts:
    """The core probes named, run as one batched script by /bin/sh with only `bin_dir` on PATH,
    parsed as gather parses them."""
    probes = [p for p in core_probes(df_timeout=df_timeout) if p.name in names]
    return _run_probes(bin_dir, probes, list(names))


def _run_probes(
    bin_dir: Path, probes: list[Probe], names: list[str], preexec: Callable[[], None] | None = None
) -> Facts:
    """`probes` run as one batched script by /bin/sh with only `bin_dir` on PATH (`preexec` run in
    the child first), their outputs `names` split and parsed as gather parses them."""
    token = new_token()
    done = subprocess.run(
        ["/bin/sh", "-c", build_script(probes, token)],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=preexec,
    )
    return parse_facts(split_output(done.stdout, done.stderr, token, names))


def _mem_total() -> int:
    """This machine's MemTotal in bytes (/proc/meminfo's kB are KiB)."""
    line = next(
        line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")
    )
    return int(line.split()[1]) * 1024


def _untyped(df_t: str) -> str:
    """A `df -T` output without its Type column (the second cell of each line), as the same df
    prints it without -T."""
    return "".join(" ".join(line.split()[:1] + line.split()[2:]) + "\n" for line in df_t.splitlines())


def test_a_gpfs_mount_whose_device_looks_local_is_a_network_share_live(tmp_path: Path) -> None:
    """IBM Spectrum Scale in a Kubernetes pod (ibm-spectrum-scale-csi#80, real `df -hT`): the
    volume's device `remote_fs0_1m` looks like a local disk; only its type, gpfs, says it is a
    share whose 15T is the cluster's, not the rented quota. The box's df answers `-T` with that
    capture (its -h sizes: the real rows) and plain `-P -k` with the same rows less the Type
    column (edited in-test: the second cell of each line dropped). The live probe ran `df -P -k`
    alone: the share read as a local disk (`warn`: could not tell whether remote_fs0_1m is on
    another disk than /); now it asks df for the types: unverified, a network share."""
    df_t = GPFS_DF_HT.read_text()
    bin_dir = _box(tmp_path, {"df": {"-P -k -T /": df_t, "-P -k -T": df_t, "-P -k": _untyped(df_t)}})
    facts = _probe(bin_dir, ("df",))
    order = OrderSpec(data_disk=DataDiskSpec("/var/lib/mongodb/data", 10**12))
    check = rule_data_disk(order, facts, 0.05)
    assert check.verdict == "unverified", check
    assert "a network share, gpfs" in check.actual
    assert "quota" in check.detail


@pytest.mark.parametrize("fstype", sorted(_NETWORK_FS) + sorted(f"fuse.{name}" for name in _NETWORK_FUSE))
def test_every_network_type_offline_reads_is_read_live(fstype: str, tmp_path: Path) -> None:
    """The class: every type the data disk rule takes for a network share (`df -T` offline) is
    seen live. The same real ibm-spectrum-scale-csi#80 `df -hT`, its volume's `gpfs` cell
    replaced in-test by each type (the device `remote_fs0_1m` kept: it looks local)."""
    df_t = GPFS_DF_HT.read_text().replace(" gpfs ", f" {fstype} ")
    bin_dir = _box(tmp_path, {"df": {"-P -k -T /": df_t, "-P -k -T": df_t, "-P -k": _untyped(df_t)}})
    facts = _probe(bin_dir, ("df",))
    check = rule_data_disk(OrderSpec(data_disk=DataDiskSpec("/var/lib/mongodb/data")), facts, 0.05)
    assert (check.verdict, check.actual.endswith(f"(a network share, {fstype})")) == ("warn", True), check


def test_a_df_that_refuses_t_answers_without_types(tmp_path: Path) -> None:
    """A df without -T (old BusyBox: `df: invalid option -- 'T'`; here the replay's refusal)
    still answers the probe: its plain `-P -k` rows (the same real capture less its Type column),
    never a df failure."""
    untyped = _untyped(GPFS_DF_HT.read_text())
    facts = _probe(_box(tmp_path, {"df": {"-P -k": untyped}}), ("df",))
    assert facts.raw["df"].exit_code == 0
    assert {m.mountpoint: m.fstype for m in facts.mounts}["/var/lib/mongodb/data"] is None
    assert len(facts.mounts) == 11


def test_an_lsblk_without_json_is_read_from_its_pairs(tmp_path: Path) -> None:
    """util-linux before 2.27 (RHEL/CentOS 7, Ubuntu 14.04) has no `lsblk -J` (here: the
    replay's refusal); the probe read nothing of the disks there (the data disk rule could not
    tell / 's disk from the data disk's). It now asks `lsblk -P` with the same columns: the real
    `lsblk -P` of an Ubuntu Core VM (snappy's test data, verbatim) gives sda and its partitions."""
    bin_dir = _box(tmp_path, {"lsblk": {f"-P {LSBLK_COLUMNS}": LSBLK_P.read_text()}})
    facts = _probe(bin_dir, ("lsblk",))
    by_name = {d.name: d for d in facts.block_devices}
    assert by_name["sda3"].parent == "sda" and "/" in by_name["sda3"].mountpoints
    assert by_name["sda5"].parent == "sda" and "/writable" in by_name["sda5"].mountpoints


def test_an_lsblk_with_json_answers_json(tmp_path: Path) -> None:
    """Where lsblk has -J, the probe's output is its JSON (what offline reading and the checks'
    messages name)."""
    json_text = (REAL / "lsblk-J-b__h200-vm.json").read_text()
    facts = _probe(
        _box(tmp_path, {"lsblk": {"-J -o NAME": json_text, f"-J {LSBLK_COLUMNS}": json_text}}), ("lsblk",)
    )
    assert facts.raw["lsblk"].stdout == json_text
    assert facts.block_devices


@pytest.mark.skipif(not Path("/proc/meminfo").is_file(), reason="no /proc/meminfo here")
def test_a_box_without_free_is_read_from_proc_meminfo(tmp_path: Path) -> None:
    """A minimal image without procps' free (its PATH here: only cat): the probe said `free is
    not installed` and the RAM was unverified, though the kernel's /proc/meminfo, which free
    reads, was there. It now reads /proc/meminfo (this machine's, real)."""
    facts = _probe(_box(tmp_path, {}), ("free",))
    assert facts.memory is not None and facts.memory.total_bytes == _mem_total()
    order = OrderSpec(ram_bytes=2**30)
    assert rule_ram(order, facts, 0.05).verdict == "pass"


def test_a_box_without_free_or_proc_meminfo_says_free_is_missing() -> None:
    """Neither free nor a readable /proc/meminfo: exit 127, free not installed (unverified)."""
    assert _exit_without("free", "/proc/meminfo") == 127


def _exit_without(probe: str, read: str) -> int:
    """The exit status of the core probe `probe` with no tool on its PATH and the kernel file
    `read` (its fallback) unreadable."""
    command = next(p.command for p in core_probes() if p.name == probe)
    done = subprocess.run(
        ["/bin/sh", "-c", command.replace(read, "/nonexistent/" + read.rsplit("/", 1)[1])],
        env={"PATH": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode


def _tools(tmp_path: Path, links: dict[str, str]) -> Path:
    """A bin dir of symlinks to real tools of this machine (BusyBox's applets run by name)."""
    bin_dir = tmp_path / "real-bin"
    bin_dir.mkdir()
    for name, target in links.items():
        os.symlink(target, bin_dir / name)
    return bin_dir


@pytest.mark.parametrize("df", ["coreutils", "busybox"])
def test_the_real_df_here_gives_each_mount_its_type(df: str, tmp_path: Path) -> None:
    """The probe's df command run by this machine's real GNU df, or BusyBox's df applet (1.35
    here): every mount has its file system type, / included."""
    target = shutil.which("busybox") if df == "busybox" else "/bin/df"
    if target is None or not Path(target).exists():
        pytest.skip(f"no {df} df here")
    facts = _probe(_tools(tmp_path, {"df": target}), ("df",))
    assert facts.mounts, facts.raw["df"]
    assert all(m.fstype for m in facts.mounts)
    root = next(m for m in facts.mounts if m.mountpoint == "/")
    assert root.size_bytes


def test_busybox_free_is_read(tmp_path: Path) -> None:
    """BusyBox's free applet (a minimal image with BusyBox and no procps): its `free -k` is read."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("no busybox here")
    facts = _probe(_tools(tmp_path, {"free": busybox}), ("free",))
    assert facts.memory is not None and facts.memory.total_bytes == _mem_total()


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="no /proc/cpuinfo here")
def test_a_box_without_lscpu_is_read_from_proc_cpuinfo(tmp_path: Path) -> None:
    """A minimal image without util-linux's lscpu (its PATH here: only cat): the probe said
    `lscpu is not installed` (cpu_cores unverified) though the kernel's /proc/cpuinfo was there.
    It now reads /proc/cpuinfo (this machine's, real): one CPU a `processor` block."""
    facts = _probe(_box(tmp_path, {}), ("lscpu",))
    blocks = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("processor")]
    assert facts.cpu is not None and facts.cpu.logical_cpus == len(blocks)
    assert rule_cpu(OrderSpec(cpu_cores=1), facts).verdict in ("pass", "warn")


EPYC_LSCPU = REAL / "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="no /proc/cpuinfo here")
@pytest.mark.parametrize("printed", ["cut", "nothing"])
def test_an_lscpu_that_fails_or_prints_nothing_is_read_from_proc_cpuinfo(
    tmp_path: Path, printed: str
) -> None:
    """An lscpu that fails after printing part of its output (the EPYC box's real lscpu cut
    after its first 6 lines, then `lscpu: failed to determine number of CPUs` and exit 1: the
    edit), or that exits 0 printing nothing (a stub). Before, the probe passed the cut output on
    with lscpu's exit status, which reads as nothing (cpu_cores unverified), and the empty one
    with nothing: /proc/cpuinfo was read only where lscpu failed silently or was missing. Now
    the kernel's /proc/cpuinfo (this machine's, real) is read, its source named."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    head = "".join(EPYC_LSCPU.read_text().splitlines(True)[:6])
    (tmp_path / "head").write_text(head if printed == "cut" else "")
    fails = "echo 'lscpu: failed to determine number of CPUs' >&2; exit 1" if printed == "cut" else "exit 0"
    (bin_dir / "lscpu").write_text(f"#!/bin/sh\ncat {tmp_path / 'head'}\n{fails}\n")
    (bin_dir / "lscpu").chmod(0o755)
    os.symlink("/bin/cat", bin_dir / "cat")
    facts = _probe(bin_dir, ("lscpu",))
    blocks = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("processor")]
    assert facts.cpu is not None and facts.cpu.source == "/proc/cpuinfo", facts.raw["lscpu"]
    assert facts.cpu.logical_cpus == len(blocks)
    assert rule_cpu(OrderSpec(cpu_cores=1), facts).verdict in ("pass", "warn")


@pytest.mark.parametrize(("ordered", "verdict"), [(4, "pass"), (6, "warn"), (9, "fail")])
def test_cpu_cores_judged_from_proc_cpuinfo(ordered: int, verdict: str) -> None:
    """The real /proc/cpuinfo of a HyperV VM (ollama#7287: 2 sockets of 2 cores, 2 threads each)
    as the lscpu probe's answer on a box without lscpu: 4 cores pass, 8 threads only a warning,
    more than 8 CPUs a fail (before: not read, `unverified`)."""
    facts = parse_facts({"lscpu": ProbeOutput(HYPERV_CPUINFO.read_text(), "", 0)})
    check = rule_cpu(OrderSpec(cpu_cores=ordered), facts)
    assert check.verdict == verdict, check
    assert check.actual.startswith("4 cores / 8 threads")


def test_cpu_cores_of_a_proc_cpuinfo_cut_short_is_unverified() -> None:
    """The real HyperV /proc/cpuinfo cut in-test inside its fourth CPU's block (at 45 % of its
    length): the CPUs after the cut are unknown, so cpu_cores is unverified and says the listing
    is cut short, never a count of the CPUs before the cut."""
    text = HYPERV_CPUINFO.read_text()
    facts = parse_facts({"lscpu": ProbeOutput(text[: int(len(text) * 0.45)], "", 0)})
    check = rule_cpu(OrderSpec(cpu_cores=4), facts)
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: the CPU listing is cut short (it ends inside the block of CPU 3)",
    )


@pytest.mark.skipif(shutil.which("busybox") is None, reason="no busybox here")
def test_a_df_that_hangs_under_busyboxs_timeout_is_stopped_and_said(tmp_path: Path) -> None:
    """The same hung df on a box whose `timeout` is BusyBox's (this machine's real busybox,
    handed the program by its path): it exits 143 on expiry, not GNU's 124, so the probe ran plain df
    again after `df -T /` timed out (twice the wait) and then ended with 143 and no line saying
    why. Now 143 is a timeout too: exit 124, the line said, after one wait only."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text('#!/bin/sh\necho ran >> "$0.calls"\nexec sleep 60\n')
    (bin_dir / "df").chmod(0o755)
    # (BusyBox runs its own applet of a name it has, `df` too: the program is handed by its path)
    (bin_dir / "timeout").write_text(
        f'#!/bin/sh\nk=$2; s=$3; shift 3; p=$(command -v "$1"); shift\n'
        f'exec {shutil.which("busybox")} timeout -k "$k" "$s" "$p" "$@"\n'
    )
    (bin_dir / "timeout").chmod(0o755)
    for tool in ("sleep", "true", "sh"):
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    facts = _probe(bin_dir, ("df",), df_timeout=1)
    assert facts.raw["df"].exit_code == 124
    assert "df did not answer within 1 s" in facts.raw["df"].stderr
    assert (bin_dir / "df.calls").read_text().count("ran") == 1


def test_a_df_that_hangs_is_stopped_and_said(tmp_path: Path) -> None:
    """A hard NFS mount whose server is gone makes df block in statfs for ever (here: a df that
    sleeps), and with it the whole batched probe: every rule was lost to "a remote command timed
    out". df now runs under the host's `timeout` (here 1 s): it ends with exit 124 and a line
    saying why, and data_disk is unverified, naming it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text("#!/bin/sh\nexec sleep 60\n")
    (bin_dir / "df").chmod(0o755)
    for tool in ("timeout", "sleep", "true"):
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    facts = _probe(bin_dir, ("df",), df_timeout=1)
    assert facts.raw["df"].exit_code == 124
    check = rule_data_disk(OrderSpec(data_disk=DataDiskSpec("/data")), facts, 0.05)
    assert check.verdict == "unverified"
    assert "df did not answer within 1 s" in check.actual


def test_cpu_cores_from_proc_cpuinfo_names_it_not_lscpu() -> None:
    """The real HyperV /proc/cpuinfo as the lscpu probe's answer on a box without lscpu: with its
    `physical id` / `core id` / `cpu cores` lines dropped in-test (arm64, POWER9 print none), the
    unverified said "the core count is not in this lscpu output" and "run `lscpu`" where lscpu
    is not installed; ordered 9 CPUs, its fail said "a smaller CPU model or fewer sockets" though
    /proc/cpuinfo lists the online CPUs only. Both now name /proc/cpuinfo."""
    lines = HYPERV_CPUINFO.read_text().splitlines(keepends=True)
    bare = "".join(ln for ln in lines if not ln.startswith(("physical id", "core id", "cpu cores")))
    check = rule_cpu(OrderSpec(cpu_cores=8), parse_facts({"lscpu": ProbeOutput(bare, "", 0)}))
    assert check.verdict == "unverified" and check.actual.endswith(
        "the core count is not in this /proc/cpuinfo"
    )
    assert "lscpu gave" not in check.detail
    failed = rule_cpu(
        OrderSpec(cpu_cores=9), parse_facts({"lscpu": ProbeOutput(HYPERV_CPUINFO.read_text(), "", 0)})
    )
    assert failed.verdict == "fail" and failed.detail.startswith(
        "fewer online CPUs than ordered in /proc/cpuinfo"
    )


PI3_CPUINFO = REAL / "proc-cpuinfo__raspberry-pi-3b-cortex-a53__no-core-ids__arm-socs-table-6.txt"


@pytest.mark.parametrize(
    ("ordered", "verdict", "part"),
    [(4, "pass", "0xd03"), (8, "fail", "0xd03"), (4, "unverified", "0xd4a"), (4, "unverified", "0xd99")],
)
def test_cpu_cores_from_an_arm64_proc_cpuinfo_names_it(ordered: int, verdict: str, part: str) -> None:
    """The real /proc/cpuinfo of a Raspberry Pi 3 (arm64: 4 CPU blocks, no topology lines, the
    board's lines after the last block) as the lscpu probe's answer on a box without lscpu: 4
    cores ordered said "the core count is not in this lscpu output"; 8 ordered fail on its 4
    online CPUs, saying /proc/cpuinfo lists the online CPUs only. Round 35: its `CPU part :
    0xd03` (Cortex-A53) runs one thread a core, so its 4 CPUs are 4 cores, the part cited; the
    same blocks naming an SMT part (0xd4a, Neoverse E1) or one unknown (0xd99) stay unverified."""
    text = PI3_CPUINFO.read_text().replace("0xd03", part)
    facts = parse_facts({"lscpu": ProbeOutput(text, "", 0)})
    check = rule_cpu(OrderSpec(cpu_cores=ordered), facts)
    assert check.verdict == verdict, check
    if verdict == "pass":
        assert "Cortex-A53 (CPU part 0xd03): one thread a core" in check.actual, check.actual
    else:
        assert "/proc/cpuinfo" in (check.actual + check.detail) and "lscpu output" not in check.actual


def _probe_with_table(bin_dir: Path, names: tuple[str, ...], table: Path) -> Facts:
    """_probe, the mount table read from `table` in /proc/self/mounts' place."""
    mark = "==> /proc/self/mounts <=="
    probes = [
        dataclasses.replace(
            p,
            command=p.command.replace(mark, "@").replace("/proc/self/mounts", str(table)).replace("@", mark),
        )
        for p in core_probes()
        if p.name in names
    ]
    return _run_probes(bin_dir, probes, [p.name for p in probes])


def _mount_table(df_t: str) -> str:
    """The kernel's mount table (/proc/mounts' `DEVICE MOUNTPOINT TYPE OPTIONS 0 0`) of a
    `df -T` output's rows: its device, mount point and type cells, options `rw,relatime`."""
    rows = [line.split() for line in df_t.splitlines()[1:] if line.strip()]
    return "".join(f"{r[0]} {r[-1]} {r[1]} rw,relatime 0 0\n" for r in rows)


def test_a_df_that_refuses_t_gets_each_type_from_the_mount_table(tmp_path: Path) -> None:
    """ibm-spectrum-scale-csi#80's real `df -hT` in a pod given a GPFS volume, on a box whose df
    refuses -T (toybox, BusyBox before 1.23; here the replay's refusal): df answers `-P -k` with
    the same rows less the Type column (edited in-test), and the kernel's mount table holds
    each row's device, mount point and type (built in-test from the capture's cells). The probe
    read no type at all: `remote_fs0_1m` looked like a local disk (`warn`, could not tell
    whether it is on another disk than /, its 15T size passed). Now each type is read from the
    mount table: unverified, a network share (gpfs) whose size is the cluster's."""
    df_t = GPFS_DF_HT.read_text()
    table = tmp_path / "mounts"
    table.write_text(_mount_table(df_t))
    bin_dir = _box(tmp_path, {"df": {"-P -k": _untyped(df_t)}})
    facts = _probe_with_table(bin_dir, ("df", "mounts"), table)
    check = rule_data_disk(OrderSpec(data_disk=DataDiskSpec("/var/lib/mongodb/data", 10**12)), facts, 0.05)
    assert check.verdict == "unverified", check
    assert check.actual.endswith("(a network share, gpfs)")
    assert {m.mountpoint: m.fstype for m in facts.mounts}["/"] == "overlay"


# a CIFS share's line as the kernel writes it in /proc/mounts: its options name the user, the
# domain and the server's address, which no report may hold
_CIFS_LINE = (
    "//10.0.0.5/share /mnt/share cifs rw,relatime,vers=3.1.1,cache=strict,username=alice,"
    "domain=CORP,uid=0,noforceuid,gid=0,noforcegid,addr=10.0.0.5,file_mode=0755 0 0\n"
)


@pytest.mark.parametrize("tools", ["builtins", "cut and head"])
def test_the_mount_table_is_read_without_options_and_bounded(tools: str, tmp_path: Path) -> None:
    """The GPFS box above (df refuses -T) whose mount table also holds a CIFS share's line with
    `username=alice,domain=CORP,addr=...` (as the kernel writes it) and 5,000 more mounts
    (Kubernetes' secret volumes, built in-test). The `mounts` probe stored the whole table, the
    options too, in raw/<host>/mounts.txt and the report. Now df's probe prints each line's
    device, mount point and type only, at most 4,096 lines, by cut and head or by the shell's
    builtins, and still types the GPFS share."""
    df_t = GPFS_DF_HT.read_text()
    pods = "".join(
        f"tmpfs /var/lib/kubelet/pods/{i:08d}/volumes/kubernetes.io~secret/token tmpfs rw,relatime 0 0\n"
        for i in range(5000)
    )
    table = tmp_path / "mounts"
    table.write_text(_mount_table(df_t) + _CIFS_LINE + pods)
    bin_dir = _box(tmp_path, {"df": {"-P -k": _untyped(df_t)}})
    if tools != "builtins":
        for tool in ("cut", "head"):
            os.symlink(shutil.which(tool) or tool, bin_dir / tool)
    facts = _probe_with_table(bin_dir, ("df", "mounts"), table)
    written = "".join(out.stdout for out in facts.raw.values())
    assert "username=" not in written and "rw,relatime" not in written
    lines = facts.raw["mounts"].stdout.splitlines()
    assert 4000 < len(lines) <= 4096
    assert "//10.0.0.5/share /mnt/share cifs" in lines
    assert {m.mountpoint: m.fstype for m in facts.mounts}["/var/lib/mongodb/data"] == "gpfs"
    assert "==>" not in facts.raw["df"].stdout
    from gpuonboard.facts.mount_table import MOUNT_TABLE_MARK

    assert MOUNT_TABLE_MARK in df_command()


def test_a_df_that_gives_types_reads_no_mount_table(tmp_path: Path) -> None:
    """The real GPFS `df -hT` answered with -T: the kernel's mount table (with a CIFS share's
    options) is not read at all (the `mounts` probe read it on every host, used or not)."""
    df_t = GPFS_DF_HT.read_text()
    table = tmp_path / "mounts"
    table.write_text(_mount_table(df_t) + _CIFS_LINE)
    bin_dir = _box(tmp_path, {"df": {"-P -k -T": df_t}})
    facts = _probe_with_table(bin_dir, ("df", "mounts"), table)
    assert "mounts" not in facts.raw and "/mnt/share" not in facts.raw["df"].stdout
    assert {m.mountpoint: m.fstype for m in facts.mounts}["/var/lib/mongodb/data"] == "gpfs"


@pytest.mark.skipif(shutil.which("busybox") is None, reason="no busybox here")
def test_a_real_busybox_df_that_refuses_t_gets_types_from_this_machines_mount_table(tmp_path: Path) -> None:
    """This machine's real BusyBox df applet, refusing -T as a BusyBox built without it does (a
    wrapper hands it `-Z` in -T's place: BusyBox's own `invalid option` and usage, exit 1), and
    this machine's real /proc/self/mounts: every mount df lists has its type, as the kernel's
    mount table gives it (before: no type at all)."""
    wrapper = tmp_path / "df"
    wrapper.write_text(
        f'#!/bin/sh\nfor a; do shift; [ "$a" = -T ] && a=-Z; set -- "$@" "$a"; done\n'
        f'exec {shutil.which("busybox")} df "$@"\n'
    )
    wrapper.chmod(0o755)
    bin_dir = _tools(tmp_path, {"df": str(wrapper)})
    facts = _probe(bin_dir, ("df",))
    assert "invalid option -- 'Z'" in facts.raw["df"].stderr
    from gpuonboard.facts.mount_table import parse_mount_table

    table = parse_mount_table(Path("/proc/self/mounts").read_text())
    assert facts.mounts
    assert all(m.fstype == table[m.mountpoint][1] for m in facts.mounts), facts.mounts


def _counted(tmp_path: Path, tools: tuple[str, ...]) -> Path:
    """A bin dir where each of `tools` is this machine's real one behind a wrapper that notes
    each run in `<tool>.calls`."""
    bin_dir = tmp_path / "counted"
    bin_dir.mkdir()
    for tool in tools:
        real = shutil.which(tool)
        assert real is not None
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "$*" >> "$0.calls"\nexec {real} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    return bin_dir


@pytest.mark.skipif(shutil.which("lsblk") is None, reason="no lsblk here")
def test_df_and_lsblk_run_once_each_where_they_answer(tmp_path: Path) -> None:
    """The probe's cost per host: this machine's real GNU df, lsblk and timeout (each noted as
    it runs). df ran three times (`timeout true`, `df -T /`, then the table) and lsblk twice
    (`-J -o NAME`, then the table); now each runs once: df's types and lsblk's JSON, as before;
    timeout twice: its silent check of -k (`true` is not on this PATH: exit 127, -k taken),
    then df under it."""
    bin_dir = _counted(tmp_path, ("df", "lsblk", "timeout"))
    facts = _probe(bin_dir, ("df", "lsblk"))
    assert facts.mounts and all(m.fstype for m in facts.mounts)
    assert facts.raw["lsblk"].stdout.lstrip().startswith("{")
    calls = {t: (bin_dir / f"{t}.calls").read_text().splitlines() for t in ("df", "lsblk", "timeout")}
    assert calls == {
        "df": ["-P -k -T"],
        "lsblk": [f"-J {LSBLK_COLUMNS}"],
        "timeout": ["-k 5 1 true", f"-k 5 {DF_TIMEOUT} df -P -k -T"],
    }


def test_a_timeout_that_refuses_k_runs_df_without_it_with_types(tmp_path: Path) -> None:
    """A `timeout` that refuses -k (BusyBox before -k came; here the replay's refusal of every
    argument) and a df with -T (the real GPFS `df -hT`): df is asked again without `timeout`,
    and its types kept."""
    df_t = GPFS_DF_HT.read_text()
    bin_dir = _box(tmp_path, {"df": {"-P -k -T": df_t}, "timeout": {}})
    facts = _probe(bin_dir, ("df",))
    assert facts.raw["df"].exit_code == 0
    assert {m.mountpoint: m.fstype for m in facts.mounts}["/var/lib/mongodb/data"] == "gpfs"


def test_df_s_own_unread_mount_is_quoted_where_timeout_refuses_k(tmp_path: Path) -> None:
    """A BusyBox `timeout` before -k came (its usage text on stderr, exit 1, as BusyBox 1.28
    prints it) and a df that lists the real GPFS `df -hT` rows but could not read a stale FUSE
    mount (`df: /mnt/s3: Transport endpoint is not connected`, exit 1, as GNU df does): df's
    partial reason quoted the timeout's usage line, and data_disk at /mnt/s3 said so. Now the
    timeout is asked silently first and df runs without it: df's own line is quoted."""
    bin_dir = _box(tmp_path, {})
    rows = tmp_path / "df_t.txt"
    rows.write_text(GPFS_DF_HT.read_text())
    (bin_dir / "timeout").write_text(
        '#!/bin/sh\nprintf "BusyBox v1.28.4 (2018-05-30) multi-call binary.\\n\\n'
        'Usage: timeout [-t SECS] [-s SIG] PROG ARGS\\n" >&2; exit 1\n'
    )
    (bin_dir / "df").write_text(
        f'#!/bin/sh\n/bin/cat {rows}; echo "df: /mnt/s3: Transport endpoint is not connected" >&2; exit 1\n'
    )
    for tool in ("timeout", "df"):
        (bin_dir / tool).chmod(0o755)
    facts = _probe(bin_dir, ("df",))
    assert "Transport endpoint is not connected" in facts.raw["df"].partial, facts.raw["df"]
    assert "Usage" not in facts.raw["df"].partial + facts.raw["df"].stderr
    check = rule_data_disk(OrderSpec(data_disk=DataDiskSpec("/mnt/s3", 10**12)), facts, 0.05)
    assert check.verdict == "unverified" and "Usage" not in check.detail, check


def _probe_pinned(bin_dir: Path, names: tuple[str, ...], cpus: set[int]) -> Facts:
    """_probe, run with its CPU affinity narrowed to `cpus` (as `taskset -c` or a job's CPU
    binding narrows a login's)."""
    probes = [p for p in core_probes() if p.name in names]
    return _run_probes(bin_dir, probes, list(names), lambda: os.sched_setaffinity(0, cpus))


@pytest.mark.skipif(
    shutil.which("lscpu") is None
    or len(os.sched_getaffinity(0)) < 2
    or not Path("/proc/self/status").is_file(),
    reason="needs lscpu, 2 CPUs and /proc/self/status",
)
def test_a_box_without_nproc_reads_the_affinity_list_it_counts(tmp_path: Path) -> None:
    """A box without coreutils' nproc (its PATH here: this machine's real lscpu only), the login
    pinned to one CPU (as `taskset -c 0` pins it): the nproc probe exited 127 and the CPUs this
    login may use were unknown, so the machine's cores ordered passed on lscpu alone. The probe
    now reads the kernel's affinity list nproc counts (/proc/self/status' Cpus_allowed_list,
    real): one CPU, and the cores ordered fail, as they do where nproc says 1."""
    bin_dir = _tools(tmp_path, {"lscpu": shutil.which("lscpu") or "lscpu"})
    facts = _probe_pinned(bin_dir, ("lscpu", "nproc"), {0})
    assert facts.raw["nproc"].stdout.startswith("Cpus_allowed_list:")
    assert facts.nproc == 1
    cores = facts.cpu.physical_cores if facts.cpu else None
    assert cores is not None and cores >= 2
    check = rule_cpu(OrderSpec(cpu_cores=cores), facts)
    assert check.verdict == "fail", check
    assert check.detail.startswith("only 1 CPU usable (affinity/cgroup) of 2")


def test_a_box_without_nproc_or_proc_self_status_says_nproc_is_missing() -> None:
    """Neither nproc nor a readable /proc/self/status: exit 127, nproc not installed."""
    assert _exit_without("nproc", "/proc/self/status") == 127


def _without_cpu0() -> str:
    """The real HyperV /proc/cpuinfo as the kernel prints it with CPU 0 offline (edited in-test):
    CPU 0's block dropped, and the `siblings` of its package's other blocks 3 (the kernel counts
    the online CPUs of a package there); then the live probe's online list, `1-7`."""
    blocks = HYPERV_CPUINFO.read_text().split("\n\n")
    kept = [b.replace("siblings\t: 4", "siblings\t: 3") if "physical id\t: 0" in b else b for b in blocks[1:]]
    return "\n\n".join(kept) + "/sys/devices/system/cpu/online: 1-7\n"


def test_a_proc_cpuinfo_whose_cpu0_is_offline_is_whole() -> None:
    """A box without lscpu whose CPU 0 is offline (`chcpu -d 0`; the real HyperV /proc/cpuinfo
    edited as _without_cpu0 says): it starts at `processor : 1`, and the cut test took its top
    for missing (cpu_cores unverified, "it starts at CPU 1"). The online list the probe prints
    after it names CPUs 1-7, all there: read whole, 4 cores pass."""
    text = _without_cpu0()
    facts = parse_facts({"lscpu": ProbeOutput(text, "", 0)})
    assert facts.cpu is not None and facts.cpu.logical_cpus == 7 and facts.cpu.physical_cores == 4
    assert rule_cpu(OrderSpec(cpu_cores=4), facts).verdict == "pass"


def test_a_proc_cpuinfo_that_lacks_an_online_cpus_block_is_cut() -> None:
    """The same listing with its last block (CPU 7) dropped in-test too (a cut at a block's
    end): the online list names CPU 7, so it is cut short, unverified, never 7 CPUs counted."""
    text = _without_cpu0()
    last = text.rindex("processor\t: 7")
    text = text[:last] + "/sys/devices/system/cpu/online: 1-7\n"
    # (5 cores: above the 4 its two packages read prove, `cpu cores : 2` each, a floor that passes
    # an order it meets, round 33)
    check = rule_cpu(OrderSpec(cpu_cores=5), parse_facts({"lscpu": ProbeOutput(text, "", 0)}))
    assert check.verdict == "unverified", check
    assert "CPU 7" in check.actual
    floor = rule_cpu(OrderSpec(cpu_cores=4), parse_facts({"lscpu": ProbeOutput(text, "", 0)}))
    assert floor.verdict == "pass" and floor.actual.startswith("at least 4 cores read"), floor


def _lxcfs_view(siblings: str = "4") -> str:
    """The real HyperV /proc/cpuinfo (CPUs 0-7) as an LXC container under lxcfs before 4.0 shows
    it (edited in-test): its blocks, each `siblings` line set to `siblings` (lxcfs keeps the
    host's), then the live probe's online list, the host's 32 CPUs (`0-31`)."""
    text = HYPERV_CPUINFO.read_text().replace("siblings\t: 4", f"siblings\t: {siblings}")
    return text + "/sys/devices/system/cpu/online: 0-31\n"


@pytest.mark.parametrize("siblings", ["4", "16"])
def test_an_lxcfs_proc_cpuinfo_of_fewer_cpus_than_online_is_whole(siblings: str) -> None:
    """An LXC container without lscpu (Alpine) under lxcfs before 4.0 (_lxcfs_view), nproc 8:
    /proc/cpuinfo lists the container's CPUs 0-7, the online list the host's 0-31. It read as
    cut short ("lacks the block of CPU 8"), and cpu_cores warned on "8 logical CPUs (lscpu
    unreadable)". Blocks 0 to nproc-1 with only CPUs above them missing are a container's view,
    whole (a package's blocks fewer than the host's siblings line says too): 4 cores pass."""
    facts = parse_facts(
        {"lscpu": ProbeOutput(_lxcfs_view(siblings), "", 0), "nproc": ProbeOutput("8\n", "", 0)}
    )
    assert facts.cpu is not None and facts.cpu.cut is None, facts.cpu
    assert (facts.cpu.logical_cpus, facts.cpu.physical_cores) == (8, 4)
    assert rule_cpu(OrderSpec(cpu_cores=4), facts).verdict == "pass"


@pytest.mark.parametrize("nproc", ["", "32\n"])
def test_an_lxcfs_view_is_cut_where_nproc_does_not_count_its_blocks(nproc: str) -> None:
    """The same view without nproc, or with nproc 32 (its 8 blocks not the CPUs this login may
    use): cut short as before, unverified or a warning on nproc alone, which now says lscpu gave
    nothing and /proc/cpuinfo was cut (it said "lscpu unreadable")."""
    raw = {"lscpu": ProbeOutput(_lxcfs_view(), "", 0)} | (
        {"nproc": ProbeOutput(nproc, "", 0)} if nproc else {}
    )
    facts = parse_facts(raw)
    assert facts.cpu is not None and facts.cpu.cut is not None
    check = rule_cpu(OrderSpec(cpu_cores=5), facts)  # (above the floor of 4 its packages prove)
    assert check.verdict == ("warn" if nproc else "unverified"), check
    assert "lscpu unreadable" not in check.actual
    if nproc:
        assert check.actual == "32 logical CPUs (no lscpu; /proc/cpuinfo cut short)"


JC_CPUINFO = REAL / "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt"


@pytest.mark.parametrize(("ordered", "verdict"), [(1, "pass"), (2, "fail")])
def test_a_vm_whose_cpu0_is_offline_says_so(ordered: int, verdict: str) -> None:
    """jc's real /proc/cpuinfo of a VM of two 1-core sockets, CPU 0 taken offline (edited
    in-test: its block dropped), then the live probe's lists: online `1`, present `0-1`. It read
    as 1 core / 1 thread on one socket with nothing said of the offline CPU (2 cores ordered
    failed as "counts 1 cores"). Now the present CPUs not online are offline, as lscpu's
    Off-line CPU(s) list: "2 CPUs, 1 online", a fail naming the offline CPU."""
    text = JC_CPUINFO.read_text()
    text = text[text.index("processor\t: 1") :]
    text += "/sys/devices/system/cpu/online: 1\n/sys/devices/system/cpu/present: 0-1\n"
    facts = parse_facts({"lscpu": ProbeOutput(text, "", 0)})
    assert facts.cpu is not None and (facts.cpu.logical_cpus, facts.cpu.offline_cpus) == (2, 1)
    check = rule_cpu(OrderSpec(cpu_cores=ordered), facts)
    assert check.verdict == verdict, check
    assert "1 online" in check.actual
    if verdict == "fail":
        assert "only 1 of 2 CPUs online (1 offline: present, not online" in check.detail


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="no /proc/cpuinfo here")
def test_a_box_without_lscpu_or_cat_reads_proc_cpuinfo_and_meminfo(tmp_path: Path) -> None:
    """A minimal image without util-linux, procps or cat (its PATH here: an empty folder): the
    fallbacks ran `cat /proc/cpuinfo` and `cat /proc/meminfo`, which were not found (exit 127:
    `lscpu is not installed`, `free is not installed`, both unverified). The shell's builtins
    now read them (this machine's, real): every CPU and the RAM."""
    bin_dir = tmp_path / "empty"
    bin_dir.mkdir()
    facts = _probe(bin_dir, ("lscpu", "free"))
    blocks = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("processor")]
    assert facts.cpu is not None and facts.cpu.logical_cpus == len(blocks)
    if Path("/sys/devices/system/cpu/present").is_file():  # (and the kernel's CPU lists after it)
        assert "\n/sys/devices/system/cpu/present: " in facts.raw["lscpu"].stdout
    assert facts.memory is not None and facts.memory.total_bytes == _mem_total()


@pytest.mark.skipif(
    not (Path("/etc/os-release").is_file() and Path("/proc/sys/kernel/osrelease").is_file()),
    reason="needs /etc/os-release and /proc/sys/kernel/osrelease",
)
def test_a_box_without_cat_or_uname_reads_its_os_and_kernel(tmp_path: Path) -> None:
    """A minimal image without cat or uname (its PATH here: an empty folder): the OS and kernel
    probes exited 127 (`cat`, `uname` not found) and the report named neither. The shell's
    builtins now read /etc/os-release and the kernel's release (this machine's, real), as
    `cat` and `uname -r` print them."""
    bin_dir = tmp_path / "empty"
    bin_dir.mkdir()
    facts = _probe(bin_dir, ("os_release", "kernel"))
    assert facts.raw["os_release"].stdout.rstrip("\n") == Path("/etc/os-release").read_text().rstrip("\n")
    assert facts.kernel == os.uname().release


def test_a_box_with_only_usr_lib_os_release_names_its_os(tmp_path: Path) -> None:
    """os-release(5): a system may ship /usr/lib/os-release alone. Here /etc/os-release is
    missing (its path pointed elsewhere in-test) and /usr/lib/os-release holds this machine's
    real one: the OS is read (before: `cat: /etc/os-release: No such file`, no OS)."""
    if not Path("/etc/os-release").is_file():
        pytest.skip("no /etc/os-release here")
    usr_lib = tmp_path / "os-release"
    usr_lib.write_text(Path("/etc/os-release").read_text())
    command = next(p.command for p in core_probes() if p.name == "os_release")
    command = command.replace("/usr/lib/os-release", str(usr_lib)).replace("/etc/os-release", "/nonexistent")
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30, check=False)
    facts = parse_facts({"os_release": ProbeOutput(done.stdout, done.stderr, done.returncode)})
    assert facts.os_release.get("NAME"), done


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="no /proc/cpuinfo here")
def test_an_lscpu_that_fails_without_output_gives_way_to_proc_cpuinfo(tmp_path: Path) -> None:
    """lscpu in an OpenVZ or gVisor container, or on a 2.6.32 kernel, prints only `lscpu: failed
    to determine number of CPUs: /sys/devices/system/cpu/possible: No such file or directory`
    and exits 1 (google/gvisor#91, evdenis/cvehound#29, OutsideIT/FireMotD#38: that line, and
    here its exit 1, by a stand-in lscpu): cpu_cores was unverified, "lscpu failed", though the
    kernel's /proc/cpuinfo was readable. It is now read (this machine's, real): every CPU."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    said = "lscpu: failed to determine number of CPUs: "
    said += "/sys/devices/system/cpu/possible: No such file or directory"
    (bin_dir / "lscpu").write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    (bin_dir / "lscpu").chmod(0o755)
    os.symlink("/bin/cat", bin_dir / "cat")
    facts = _probe(bin_dir, ("lscpu",))
    blocks = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("processor")]
    assert facts.cpu is not None and facts.cpu.logical_cpus == len(blocks), facts.raw["lscpu"]
    assert said in facts.raw["lscpu"].stderr
