"""A saved `nproc --all` is not the CPUs the login may use: it counts every CPU of the kernel,
whatever CPU set or affinity confines the login (inside a Slurm allocation of 8 CPUs, `nproc`
prints 8 and `nproc --all` 96). Read as `nproc`, it stood for the usable CPUs: a container's
`cpu_cores`, unverified without them, passed. Real captures: tests/fixtures/real/SOURCES.md,
section "Truth sweep round 25 (pasted host tools)"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import checks, judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PLAIN = "nproc__slurm-allocation-8-of-96-cpus__carter-cn-03.txt"  # `nproc`: 8
ALL = "nproc-all__slurm-allocation-8-of-96-cpus__carter-cn-03.txt"  # `nproc --all`: 96
# a box's `grep -c ^processor /proc/cpuinfo` (128; its `nproc`: 4), another's `taskset -c 0,1 nproc` (2)
CPUINFO = "cpuinfo-grep-c-processor__128-cpus-nproc-4__scanner-notes.txt"
TASKSET = "nproc-taskset-c-0-1__2-of-12-cpus__jp-notes.txt"
LSCPU = "lscpu__intel-xeon-16vcpu__h200-vm.txt"
# a container's view (overlay `/`), and its cgroup's CPU quota: none (`max`)
OVERLAY_DF = "Filesystem 1K-blocks Used Available Use% Mounted on\noverlay 100000000 1000 99999000 1% /\n"
NO_QUOTA = "/sys/fs/cgroup/cpu.max:max 100000\n"


@pytest.mark.parametrize(
    ("name", "prompt"),
    [("nproc.txt", "$ nproc --all\n"), ("nproc.txt", "user@carter-cn-03:~$ nproc --all\n"),
     ("nproc-all.txt", ""), ("nproc --all.txt", ""), ("nproc_all.txt", ""),
     ("nproc --ignore=2 --all.txt", "")],
)  # fmt: skip
def test_nproc_all_is_refused_not_read_as_the_usable_cpus(tmp_path: Path, name: str, prompt: str) -> None:
    with pytest.raises(UsageError) as err:
        checks(tmp_path, name, prompt + (REAL / ALL).read_text())
    message = str(err.value)
    assert message.endswith("which is what nproc is read for: save plain `nproc` of the box."), message
    assert message.count(". ") == 0


@pytest.mark.parametrize(
    "name",
    ["nproc.txt", "nproc__all-boxes.txt", "nproc-allocation.txt", "nproc_gpu-all.txt", "nproc-node-all.txt"],
)
def test_plain_nproc_is_still_read(tmp_path: Path, name: str) -> None:
    """The same allocation's plain `nproc` (8), named without --all (a description after `__`,
    a word that only starts with `all`, or `all` after a word that is no nproc flag, is no flag:
    `nproc_gpu-all.txt` was refused as `nproc --all`)."""
    facts, _ = judged_box(tmp_path, {name: (REAL / PLAIN).read_text()}, "cpu_cores: 4\n")
    assert facts.nproc == 8


def test_a_container_is_not_passed_on_its_hosts_cpu_count(tmp_path: Path) -> None:
    """A container (overlay `/`, no CPU quota) with the host's 16-CPU lscpu: without the CPUs it
    may use, cpu_cores is unverified; a `nproc --all` beside it never made that a pass (refused,
    it is a note among the files given: round 35)."""
    box = {"lscpu.txt": (REAL / LSCPU).read_text(), "df.txt": OVERLAY_DF, "cgroup.txt": NO_QUOTA}
    _, by_rule = judged_box(tmp_path / "a", box, "cpu_cores: 16\n")
    assert by_rule["cpu_cores"].verdict == "unverified"
    _, by_rule = judged_box(tmp_path / "b", {**box, "nproc.txt": "$ nproc --all\n16\n"}, "cpu_cores: 16\n")
    assert by_rule["cpu_cores"].verdict == "unverified"


@pytest.mark.parametrize(
    ("capture", "command"),
    [
        (CPUINFO, "$ grep -c ^processor /proc/cpuinfo"),
        (TASKSET, "$ taskset -c 0,1 nproc"),
        (TASKSET, "$ OMP_NUM_THREADS=2 nproc"),
        (TASKSET, "$ nproc --ignore=10"),
    ],
)
def test_a_number_another_command_printed_is_not_nproc(tmp_path: Path, capture: str, command: str) -> None:
    """A bare number saved as nproc.txt under a copied command that is not plain `nproc` (the
    real captures with the command each was published under put back in-test; the last two
    commands are put above the taskset capture's `2` in-test): the online CPUs, or a count
    that command set, never the CPUs the login may use (`taskset`'s 2 failed cpu_cores as "2
    usable")."""
    with pytest.raises(UsageError) as err:
        checks(tmp_path, "nproc.txt", command + "\n" + (REAL / capture).read_text())
    assert f"its copied command `{command[2:]}` is not plain `nproc`" in str(err.value)


@pytest.mark.parametrize(
    "command",
    [
        "$ nproc",
        "$ ssh box nproc",
        "$ sudo nproc",
        "$ nproc | tee nproc.txt",
        "$ /usr/bin/nproc",
        "$ command nproc",
        "$ cat saved.txt",  # (a file shown as it is: read by its name)
    ],
)
def test_plain_nproc_under_its_copied_command_is_read(tmp_path: Path, command: str) -> None:
    """The allocation's plain `nproc` (8) under a copied command that runs it with no argument:
    by its path (`/usr/bin/nproc`) or through the shell's `command`, or under a `cat` of a saved
    file (all three were refused as "not plain `nproc`")."""
    facts, _ = judged_box(
        tmp_path, {"nproc.txt": command + "\n" + (REAL / PLAIN).read_text()}, "cpu_cores: 4\n"
    )
    assert facts.nproc == 8


@pytest.mark.parametrize(
    ("name", "prompt"), [("nproc.txt", ""), ("status.txt", "$ grep Cpus_allowed_list /proc/self/status\n")]
)
def test_the_live_probes_affinity_list_is_read_as_nproc(tmp_path: Path, name: str, prompt: str) -> None:
    """The live probe's nproc answer on a box without nproc, `Cpus_allowed_list:\\t0-3,8-11`
    (the kernel's affinity list nproc counts), saved as raw/<host>/nproc.txt and judged without
    summary.json, or the same line under its grep: refused as "a CSV without its header row".
    Now read as nproc: 8 CPUs, which 16 cores ordered fail on."""
    box = {"lscpu.txt": (REAL / LSCPU).read_text(), name: prompt + "Cpus_allowed_list:\t0-3,8-11\n"}
    facts, by_rule = judged_box(tmp_path, box, "cpu_cores: 16\n")
    assert facts.nproc == 8
    assert by_rule["cpu_cores"].verdict == "fail"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc/self/status here")
def test_a_saved_proc_self_status_is_read_as_nproc(tmp_path: Path) -> None:
    """This machine's real `cat /proc/self/status` (cat's own: the login's affinity): its
    Cpus_allowed_list counted as nproc counts it; another process's (`cat /proc/1/status`) is
    refused, its affinity not the login's."""
    status = Path("/proc/self/status").read_text()
    line = next(ln for ln in status.splitlines() if ln.startswith("Cpus_allowed_list:"))
    facts, _ = judged_box(tmp_path, {"status.txt": "$ cat /proc/self/status\n" + status}, "cpu_cores: 1\n")
    assert facts.nproc == len(_cpus(line.split(":", 1)[1]))
    with pytest.raises(UsageError, match="another process's status file"):
        checks(tmp_path, "status.txt", "$ cat /proc/1/status\n" + status)


def _cpus(listing: str) -> set[int]:
    """The CPUs of a kernel CPU list (`0-3,8-11`)."""
    cpus: set[int] = set()
    for part in listing.strip().split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@pytest.mark.parametrize(
    "command",
    ["$ docker run --rm --cpuset-cpus 0-3 alpine nproc", "$ podman run --rm -it ubuntu nproc"],
)
def test_nproc_in_a_container_the_command_started_is_not_the_logins(tmp_path: Path, command: str) -> None:
    """The taskset capture's bare `2` saved as nproc.txt under a copied `docker run` / `podman
    run` (put above it in-test): it counts the CPUs of the container that command started (its
    `--cpuset-cpus`), never those the login may use (it was read as the login's usable CPUs once
    the command-line reader learnt to unwrap container runs)."""
    with pytest.raises(UsageError) as err:
        checks(tmp_path, "nproc.txt", command + "\n" + (REAL / TASKSET).read_text())
    assert "counts the CPUs of a container it started" in str(err.value)


@pytest.mark.parametrize(
    "command",
    [
        "$ docker exec -it trainer nproc",
        "$ podman exec app nproc",
        "$ docker compose exec app nproc",
        "$ kubectl exec -n ml pod-0 -- nproc",
        "$ lxc exec c1 -- nproc",
        "$ ssh box 'sudo docker exec app sh -c nproc'",
    ],
)
def test_nproc_in_a_container_the_command_entered_is_not_the_logins(tmp_path: Path, command: str) -> None:
    """The taskset capture's bare `2` saved as nproc.txt under a copied `docker exec` (podman's,
    compose's, `kubectl exec`, `lxc exec`; put above it in-test): the CPU set of the container it
    ran in, not the CPUs the login may use; it was read as the login's 2 usable CPUs (only
    `docker run` was refused), failing cpu_cores on a container's share."""
    with pytest.raises(UsageError) as err:
        checks(tmp_path, "nproc.txt", command + "\n" + (REAL / TASKSET).read_text())
    assert "counts the CPUs of the container it ran in, not those this login may use" in str(err.value)


def test_lxcs_nproc_of_a_container_is_refused_as_the_containers(tmp_path: Path) -> None:
    """lxcfs#401's `1` under the command it was published under, `$ lxc exec c2d:bind -- nproc`
    (put back in-test): the CPU set of the LXD container (`limits.cpu: 1`). It was refused as "not
    plain `nproc`" (lxc unknown as an engine); now as the container's CPUs."""
    capture = (REAL / "nproc-lxc-exec__lxd-limits-cpu-1__lxcfs-401.txt").read_text()
    text = "$ lxc exec c2d:bind -- nproc\n" + capture
    with pytest.raises(UsageError) as err:
        checks(tmp_path, "nproc.txt", text)
    assert "`lxc exec c2d:bind -- nproc` counts the CPUs of the container it ran in" in str(err.value)


FLUFFI_176 = (
    Path(__file__).parents[2]
    / "fixtures"
    / "sessions"
    / ("transcript__cpuinfo-wc+nproc+lxc-exec+nproc__two-hosts-lxd-limits-cpu-3__fluffi-176.txt")
)


def test_a_session_that_enters_a_container_reads_the_host_s_nproc(tmp_path: Path) -> None:
    """siemens/fluffi#176's session as stored (`nproc` on host s1901, then `lxc exec nproc-demo
    /bin/bash` and `nproc` inside that LXD container): one box, the container entered by the
    command typed on the host (round 39: refused before as "2 hosts (s1901, nproc-demo)"). Its
    nproc is the host's 16, never the container's 3; no `nproc` is "not an output this tool
    reads"."""
    facts, checks = judged_box(tmp_path, {"session.txt": FLUFFI_176.read_text()}, "cpu_cores: 16\n")
    assert facts.nproc == 16
    assert "not an output this tool reads" not in checks["cpu_cores"].actual


def test_a_sessions_nproc_under_its_prompt_is_read(tmp_path: Path) -> None:
    """fluffi#176's last four lines, the container's (`root@nproc-demo:~# cat /proc/cpuinfo | grep
    processor | wc -l` / `3` / `root@nproc-demo:~# nproc` / `3`), cut in-test: one host's
    session, its `nproc` read as the CPUs the login may use (3), as nproc.txt is. (Before: the
    `3` under `$ nproc` was "not an output this tool reads" and cpu_cores unverified.)"""
    text = "".join(FLUFFI_176.read_text().splitlines(keepends=True)[-4:])
    assert text.startswith("root@nproc-demo:~# cat /proc/cpuinfo")
    facts, _ = judged_box(tmp_path, {"session.txt": text}, "cpu_cores: 3\n")
    assert facts.nproc == 3
