"""A host tool's answer given inside a container (`docker exec app free -h`, `kubectl exec pod --
lscpu`, `lxc exec c1 -- cat /proc/meminfo`, `docker run IMG ...`) is what that container saw,
not the box: lxcfs serves a container its own memory limit as /proc/meminfo (free's total) and
its CPU set as the online CPUs (lscpu's Off-line CPU(s) list, /proc/cpuinfo's blocks). So a
shortfall read there is unverified, never a hardware claim; a pass stands (a container sees
nothing the box lacks); its nproc is refused (api/test_offline_nproc.py), as `docker run`'s was.
Real captures (tests/fixtures/real/SOURCES.md), the copied command put above each in-test; each
test of a verdict fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.command_line import run
from gpuonboard.api.narrowed import container_view
from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# lxd#6166: `free -h` inside an LXD container given `limits.memory 4000MB` (`Mem: 3.7Gi`)
LXD_FREE = "free-h__lxd-container-4000mb-limit__lxcfs__debian10.txt"
# lxcfs#433: `lscpu` in a k8s container under lxcfs (CPU(s) 32, 4 online, 2 x 8 cores)
LXCFS_LSCPU = "lscpu__xeon-silver-4110__2socket-32cpu__k8s-lxcfs-4-online__threads-per-core-0.txt"
# jc's /proc/meminfo of a 3.8 GiB VM, and its /proc/cpuinfo (2 sockets x 1 core)
MEMINFO = "meminfo__3.8gib-vm__jc.txt"
CPUINFO = "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt"
# the H200 VM's `free -h` (125Gi) and `lscpu` (16 cores); a Slurm allocation's plain `nproc` (8)
H200_FREE = "free-h__h200-vm__procps-4.0.2.txt"
H200_LSCPU = "lscpu__intel-xeon-16vcpu__h200-vm.txt"
NPROC = "nproc__slurm-allocation-8-of-96-cpus__carter-cn-03.txt"

ENTERED = [
    "docker exec -it app",
    "podman exec app",
    "docker compose exec app",
    "kubectl exec -it pod --",
    "lxc exec debian10-lxc1 --",
    "incus exec c1",
    "docker run --rm ubuntu",
]


def _box(tmp_path: Path, name: str, capture: str, command: str, order: str) -> tuple[str, str, str]:
    """(verdict, actual, detail) of the order's one rule over the capture saved as `name` under
    the copied `command` (none where "")."""
    text = (f"$ {command}\n" if command else "") + (REAL / capture).read_text()
    _, by_rule = judged_box(tmp_path, {name: text}, order)
    rule = "ram" if order.startswith("ram") else "cpu_cores"
    return by_rule[rule].verdict, by_rule[rule].actual, by_rule[rule].detail


@pytest.mark.parametrize("engine", ENTERED)
@pytest.mark.parametrize(
    ("name", "capture", "tool", "order"),
    [
        ("free.txt", LXD_FREE, "free -h", "ram: 8GB\n"),
        ("meminfo.txt", MEMINFO, "cat /proc/meminfo", "ram: 8GB\n"),
        ("lscpu.txt", LXCFS_LSCPU, "lscpu", "cpu_cores: 8\n"),
        ("lscpu.txt", LXCFS_LSCPU, "lscpu", "cpu_cores: 4\n"),
        ("cpuinfo.txt", CPUINFO, "cat /proc/cpuinfo", "cpu_cores: 8\n"),
    ],
)
def test_a_shortfall_read_inside_a_container_is_not_the_boxs(
    tmp_path: Path, engine: str, name: str, capture: str, tool: str, order: str
) -> None:
    """The lxcfs container's 3.7Gi free failed an 8 GB order "a missing or failed DIMM, or a
    smaller box"; its lscpu (4 of 32 CPUs online) failed 8 cores "ask the vendor to bring them
    online" and warned 4 (hyperthreads): each the container's share, read as the box's. Now
    unverified, naming the command; without it (the box's own shell) they still fail or warn."""
    plain = _box(tmp_path / "plain", name, capture, "", order)
    assert plain[0] in ("fail", "warn"), plain
    verdict, actual, detail = _box(tmp_path / "in", name, capture, f"{engine} {tool}", order)
    assert verdict == "unverified", (verdict, actual)
    assert actual.endswith(f"`{engine} {tool}` shows {'the memory' if 'ram' in order else 'the CPUs'} of"
                           f" {'a container it started' if 'run' in engine else 'the container it ran in'},"
                           " not the box's"), actual  # fmt: skip
    assert "run in its own shell" in detail


@pytest.mark.parametrize(
    ("name", "capture", "tool", "order"),
    [
        ("free.txt", H200_FREE, "free -h", "ram: 64GB\n"),
        ("lscpu.txt", H200_LSCPU, "lscpu", "cpu_cores: 16\n"),
    ],
)
def test_a_pass_read_inside_a_container_stands(
    tmp_path: Path, name: str, capture: str, tool: str, order: str
) -> None:
    """The H200 VM's 125Gi free and 16-core lscpu under `docker exec app ...`: a container sees no
    memory or CPU the box lacks, so what meets the order still passes."""
    assert _box(tmp_path, name, capture, f"docker exec app {tool}", order)[0] == "pass"


def test_the_logins_own_cpu_limit_still_fails_beside_a_containers_lscpu(tmp_path: Path) -> None:
    """The H200 VM's 16-core lscpu under `docker exec app lscpu` beside the login's own plain
    `nproc` (the Slurm allocation's 8; two boxes' captures joined in-test): the login may use 8
    CPUs, its own limit, so 16 cores ordered still fail."""
    box = {
        "lscpu.txt": "$ docker exec app lscpu\n" + (REAL / H200_LSCPU).read_text(),
        "nproc.txt": (REAL / NPROC).read_text(),
    }
    _, by_rule = judged_box(tmp_path, box, "cpu_cores: 16\n")
    assert by_rule["cpu_cores"].verdict == "fail", by_rule["cpu_cores"]


@pytest.mark.parametrize(
    ("kind", "command", "said"),
    [
        ("free", "lxc exec c1 -- free -h", "`lxc exec c1 -- free -h` shows the memory of the container"),
        ("free", "ssh box 'docker exec app cat /proc/meminfo'", "`ssh box 'docker exec app"),
        ("lscpu", "sudo incus exec c1 lscpu", "`sudo incus exec c1 lscpu` shows the CPUs of the container"),
        ("lscpu", "docker run --rm alpine cat /proc/cpuinfo", "shows the CPUs of a container it started"),
        ("free", "free -h", ""),
        ("lscpu", "ssh box lscpu", ""),
        ("lscpu", "lxc list", ""),  # (no command run in a container)
        # (df's: narrowed says it lists the container's filesystems; since round 33 it is marked a
        # container's view too, which data_disk reads: steps/checks/test_data_disk_container_view.py)
        ("df", "docker exec app df -h", "`docker exec app df -h` shows the disks of the container"),
    ],
)  # fmt: skip
def test_the_container_view_is_told_by_the_command(kind: str, command: str, said: str) -> None:
    told = container_view(kind, command)
    assert (said in told) if said else told == "", told


@pytest.mark.parametrize(
    ("command", "engine"),
    [
        ("lxc exec c1 -- free -h", ("lxc", "exec", "c1", "--")),
        ("incus exec --user 1000 c1 free -h", ("incus", "exec", "--user", "1000", "c1")),
        ("lxc exec c1 free -h", ("lxc", "exec", "c1")),
    ],
)
def test_lxc_and_incus_exec_run_the_command_in_a_container(command: str, engine: tuple[str, ...]) -> None:
    """LXD's and Incus' `exec INSTANCE [--] command` (the `--` optional): the command is free,
    run in the instance (it was read as an `lxc` command on the box)."""
    ran = run(command, ("free",))
    assert (ran.head, ran.container, ran.started) == (["free", "-h"], engine, False)


# the 2-socket EPYC 9374F server's `lscpu` (64 CPUs, no CPU offline)
EPYC_LSCPU = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"


@pytest.mark.parametrize(
    ("capture", "command", "order"),
    [
        (LXCFS_LSCPU, "kubectl exec gpu-0 -- lscpu", "cpu_cores: 64\n"),
        (EPYC_LSCPU, "docker exec app lscpu", "cpu_cores: 96\n"),
        (H200_LSCPU, "docker exec app lscpu", "cpu_cores: 256\n"),
    ],
)
def test_an_lscpu_shortfall_of_the_box_stands_inside_a_container(
    tmp_path: Path, capture: str, command: str, order: str
) -> None:
    """lxcfs changes only which CPUs are online; lscpu's `CPU(s):` (sysfs' possible/present) is
    the box's, and with no CPU offline the whole view is the host's (no lxcfs). The lxcfs k8s
    lscpu (32 CPUs, 4 online) against 64 cores, and the EPYC's and the H200 VM's lscpu (no CPU
    offline) against more cores than they have, each under the copied command put above it
    in-test, were unverified; now they fail as in the box's own shell."""
    verdict, actual, _ = _box(tmp_path, "lscpu.txt", capture, command, order)
    assert verdict == "fail", (verdict, actual)


@pytest.mark.parametrize(
    ("capture", "tool", "order", "rule"),
    [
        (H200_FREE, "free -h", "ram: 256GB\n", "ram"),
        (LXCFS_LSCPU, "lscpu", "cpu_cores: 8\n", "cpu_cores"),
    ],
)
@pytest.mark.parametrize("container_first", [True, False])
def test_the_same_output_in_a_container_and_on_the_box_judges_the_boxs(
    tmp_path: Path, capture: str, tool: str, order: str, rule: str, container_first: bool
) -> None:
    """One saved session holding the capture twice, in-test: once under `docker exec app TOOL` and
    once under the plain `TOOL` (what a container without lxcfs prints is the host's own answer).
    The session kept the first copy, so the container's came first and its shortfall was
    unverified; now the box's own answer is judged, failing as in the box's own shell, and the
    container's copy is noted as the same output."""
    text = (REAL / capture).read_text()
    runs = [f"$ docker exec app {tool}\n{text}", f"$ {tool}\n{text}"]
    session = "".join(runs if container_first else runs[::-1])
    _, by_rule = judged_box(tmp_path, {"session.txt": session}, order)
    assert by_rule[rule].verdict == "fail", by_rule[rule]
    assert "shows" not in by_rule[rule].actual, by_rule[rule].actual
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box")], notes)
    other = 2 + len(text.splitlines()) if container_first else 1  # (the plain run's prompt line)
    said = f"(`docker exec app {tool}`): the same output as line {other} (`{tool}`)"
    assert any(said in note for note in notes), notes


@pytest.mark.parametrize("container_name", ["a-container.txt", "z-container.txt"])
@pytest.mark.parametrize(
    ("in_container", "tool", "box", "order", "verdict"),
    [
        (H200_FREE, "free -h", ("free-h.txt", H200_FREE), "ram: 256GB\n", "fail"),
        (LXD_FREE, "free -h", ("free-k.txt", "free-k__h200-vm__procps-4.0.2.txt"), "ram: 64GB\n", "pass"),
        (H200_LSCPU, "lscpu", ("lscpu.txt", H200_LSCPU), "cpu_cores: 256\n", "fail"),
        (LXCFS_LSCPU, "lscpu", ("lscpu.txt", EPYC_LSCPU), "cpu_cores: 64\n", "pass"),
    ],
)  # fmt: skip
def test_a_containers_answer_beside_the_boxs_own_judges_the_boxs(
    tmp_path: Path,
    container_name: str,
    in_container: str,
    tool: str,
    box: tuple[str, str],
    order: str,
    verdict: str,
) -> None:
    """A folder holding a free or lscpu run in a container (`docker exec app TOOL` put above the
    capture in-test, read before or after the other file) beside the box's own: the container's
    shows its share (lxcfs: the LXD container's 3.7Gi, the k8s pod's 4 online CPUs) or the host's,
    no rival view of the box. The two were refused (exit 2), the refusal saying the matching
    H200 totals were "not the first's"; now the box's own is judged and the container's noted."""
    files = {container_name: f"$ docker exec app {tool}\n" + (REAL / in_container).read_text()}
    files[box[0]] = (REAL / box[1]).read_text()
    _, by_rule = judged_box(tmp_path, files, order)
    rule = "ram" if order.startswith("ram") else "cpu_cores"
    assert by_rule[rule].verdict == verdict, by_rule[rule]
    assert "shows" not in by_rule[rule].actual, by_rule[rule].actual
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box")], notes)
    assert any(f"one run in a container (`docker exec app {tool}` shows" in note for note in notes), notes


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (
            {"a.txt": f"$ lscpu | head -12\n{''.join((REAL / H200_LSCPU).read_text().splitlines(True)[:12])}",
             "lscpu.txt": (REAL / H200_LSCPU).read_text()},
            "(`lscpu | head -12` keeps only the lines head let through)",
        ),
        (
            {"a.txt": f"$ docker exec app free -h\n{(REAL / H200_FREE).read_text()}",
             "b.txt": f"$ kubectl exec pod -- free -h\n{(REAL / LXD_FREE).read_text()}"},
            "(`docker exec app free -h` shows the memory of the container it ran in, not the box's;"
            " `kubectl exec pod -- free -h` shows",
        ),
    ],
)  # fmt: skip
def test_a_refusal_names_the_narrowed_or_container_view_not_two_boxes(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    """Two outputs of one kind that are not joined because one shows part of the box (`lscpu |
    head -12` beside the whole lscpu, cut in-test) or both a container's view (two containers'
    free, the H200's and the LXD container's): the refusal said their matching or unrelated
    totals were "not the first's (two boxes ...)"; now it names what each shows."""
    with pytest.raises(UsageError) as err:
        judged_box(tmp_path, files, "cpu_cores: 8\nram: 8GB\n")
    assert said in str(err.value), str(err.value)
    assert "not the first's" not in str(err.value)


@pytest.mark.parametrize(
    ("name", "capture", "command", "order"),
    [
        ("free.txt", LXD_FREE, "lxc-attach -n c1 -- free -h", "ram: 8GB\n"),
        ("free.txt", LXD_FREE, "lxc-attach -n c1 free -h", "ram: 8GB\n"),
        ("free.txt", LXD_FREE, "pct exec 101 -- free -h", "ram: 8GB\n"),
        ("lscpu.txt", LXCFS_LSCPU, "sudo pct exec 101 lscpu", "cpu_cores: 8\n"),
        ("lscpu.txt", LXCFS_LSCPU, "lxc-attach --name=c1 -- lscpu", "cpu_cores: 8\n"),
    ],
)
def test_lxc_attach_and_pct_exec_run_the_tool_in_a_container(
    tmp_path: Path, name: str, capture: str, command: str, order: str
) -> None:
    """LXC's own `lxc-attach [-n NAME] [--] command` and Proxmox's `pct exec VMID [--] command`
    (its LXC containers get lxcfs by default): the LXD container's 3.7Gi free and the lxcfs k8s
    lscpu under them, in-test, failed as the box's with no container noted; now unverified,
    naming the command, as under `lxc exec`."""
    verdict, actual, _ = _box(tmp_path, name, capture, command, order)
    assert verdict == "unverified", (verdict, actual)
    assert f"`{command}` shows" in actual, actual


@pytest.mark.parametrize(
    ("name", "capture", "command", "order"),
    [
        ("free.txt", LXD_FREE, "docker exec app true | free -h", "ram: 8GB\n"),
        ("lscpu.txt", LXCFS_LSCPU, "kubectl exec pod -- date | lscpu", "cpu_cores: 8\n"),
    ],
)
def test_a_tool_piped_after_a_container_command_ran_on_the_box(
    tmp_path: Path, name: str, capture: str, command: str, order: str
) -> None:
    """`docker exec app true | free -h`: only `true` ran in the container, free on the box (its
    standard input unread); the LXD container's 3.7Gi under it, in-test, was unverified as the
    container's; now it fails as the box's, as without the command."""
    verdict, actual, _ = _box(tmp_path, name, capture, command, order)
    assert verdict == "fail", (verdict, actual)


@pytest.mark.parametrize(
    ("command", "inside"),
    [
        ("docker exec app true | free -h", 1),
        ("docker exec app sh -c 'echo x | free -h'", 2),
        ("ssh box 'docker exec app free -h | head'", 1),
        ("free -h", 0),
    ],
)
def test_a_run_says_how_many_of_its_stages_ran_in_the_container(command: str, inside: int) -> None:
    assert run(command, ("free",)).inside == inside


def test_a_session_with_a_containers_free_before_the_boxs_own_judges_the_boxs(tmp_path: Path) -> None:
    """One saved session, in-test: `docker exec app free -h` printing the LXD container's 3.7Gi,
    then the plain `free -k` printing the H200 VM's 125.85 GiB: it was refused as two free
    outputs (exit 2); now the box's own passes 64 GB, the container's noted beside it."""
    session = (
        f"$ docker exec app free -h\n{(REAL / LXD_FREE).read_text()}"
        f"$ free -k\n{(REAL / 'free-k__h200-vm__procps-4.0.2.txt').read_text()}"
    )
    _, by_rule = judged_box(tmp_path, {"session.txt": session}, "ram: 64GB\n")
    assert by_rule["ram"].verdict == "pass", by_rule["ram"]
    notes: list[str] = []
    outputs = offline.load_outputs([str(tmp_path / "box")], notes)
    assert outputs["free"].in_container == "" and len(outputs["free"].beside) == 1
    assert any("are the box's own `free` output and one run in a container" in note for note in notes), notes


def test_the_note_of_a_second_containers_answer_names_that_container(tmp_path: Path) -> None:
    """One saved session, in-test: the plain `free -k` (the H200 VM's), then `docker exec app
    free -h` and `lxc exec c2 -- free -h`, each printing the LXD container's 3.7Gi. The note
    about the second join named the docker one (the first kept beside); now it names `lxc exec
    c2 -- free -h`, the output it joined."""
    lxd = (REAL / LXD_FREE).read_text()
    session = (
        f"$ free -k\n{(REAL / 'free-k__h200-vm__procps-4.0.2.txt').read_text()}"
        f"$ docker exec app free -h\n{lxd}$ lxc exec c2 -- free -h\n{lxd}"
    )
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "session.txt").write_text(session)
    notes: list[str] = []
    outputs = offline.load_outputs([str(tmp_path / "box")], notes)
    assert outputs["free"].in_container == "" and len(outputs["free"].beside) == 2
    said = [note for note in notes if "one run in a container" in note]
    assert len(said) == 2 and "`docker exec app free -h`" in said[0], said
    assert "`lxc exec c2 -- free -h`" in said[1] and "docker" not in said[1], said


def test_a_session_refusal_of_two_free_outputs_says_how_they_differ(tmp_path: Path) -> None:
    """One saved session, in-test: the H200 VM's plain `free -k`, then `free -h` printing the
    CentOS 7.7 VM's (another box's total). The refusal said only "two free outputs"; now it says
    the second's Mem total is not the first's, as a folder's refusal does."""
    session = (
        f"$ free -k\n{(REAL / 'free-k__h200-vm__procps-4.0.2.txt').read_text()}"
        f"$ free -h\n{(REAL / 'free-h__centos-7.7-vm.txt').read_text()}"
    )
    with pytest.raises(UsageError) as err:
        judged_box(tmp_path, {"session.txt": session}, "ram: 8GB\n")
    assert "is not the first's" in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "command",
    [
        "docker run --runtime=runsc --cpuset-cpus=0-15 ubuntu lscpu",
        "docker run --runtime=kata-runtime ubuntu lscpu",
        "podman run --runtime=/usr/bin/runsc ubuntu lscpu",
    ],
)
def test_an_lscpu_in_a_sandbox_with_its_own_kernel_is_not_the_boxs(tmp_path: Path, command: str) -> None:
    """The real H200 VM's lscpu (16 CPUs, none offline) under a copied command that ran it in
    gVisor (runsc) or a Kata VM, put above it in-test, against 24 cores: such a sandbox shows
    its own CPUs (a `--cpuset-cpus` set, the VM's vCPUs) with none offline, so the shortfall is
    not the box's: unverified (before: a fail, read as the host's view); under `docker exec
    app lscpu` (a shared kernel) it still fails."""
    verdict, actual, _ = _box(tmp_path, "lscpu.txt", H200_LSCPU, command, "cpu_cores: 24\n")
    assert verdict == "unverified", (verdict, actual)
    verdict, actual, _ = _box(
        tmp_path / "shared", "lscpu.txt", H200_LSCPU, "docker exec app lscpu", "cpu_cores: 24\n"
    )
    assert verdict == "fail", (verdict, actual)
