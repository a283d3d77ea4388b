"""An overlay `/` was taken alone for a container's root (a slice of a bigger machine). A whole
machine booted diskless or from a live image (Warewulf, xCAT, dracut's LiveOS_rootfs, a custom
initrd: NVIDIA/nvidia-docker#1567's host) has an overlay root too: an Xid on a GPU it no longer
lists (fallen off the bus) was said as another tenant's and only warned. The cgroup probe now
reads PID 1's name first: systemd there is a whole machine unless something beside it says
container (an engine's mark, Kubernetes' service account, a container's cgroup in /proc/1/cgroup);
an entry command (bash), an init containers run too (s6-svscan, runit, OpenRC, `init`) or a name
not read stays a container.

Real captures: the custom-initrd host's `df -h` (tests/fixtures/real), AutoDL's container
`df -h` (tests/fixtures/public), a RunPod pod's `nvidia-smi`, the Dell XE9680's Xid 119 on
0000:9b:00; PID 1's names as `cat /proc/1/comm` printed them, put in the `grep .` form the
offline judge reads (`/proc/1/comm:NAME`): `systemd` on a machine (search index file
6146978918, a 2015 note "Am I running systemd or good old init?"), `bash` in a UCloud k3s pod
(search index file 43041894513: "Root filesystem is overlay ... PID 1 is bash, NOT systemd")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.slice_view import container_said

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL, PUBLIC = FIXTURES / "real", FIXTURES / "public"
POD_SMI = PUBLIC / "nvidia-smi__a100-80gb-pcie__runpod-pod__driver580.159.04__one-line-processes.txt"
CONTAINER_DF = PUBLIC / "df-h__autodl-rtx4090-container__overlay-root.txt"
INITRD_DF = REAL / "df-h__overlay-root__custom-initrd.txt"  # a host: / an overlay, /var on sda6
XID_119 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"  # on 0000:9b:00
MACHINE_PID1 = "/proc/1/comm:systemd\n"
POD_PID1 = "/proc/1/comm:bash\n"


def judged(tmp_path: Path, *files: Path, texts: dict[str, str] | None = None) -> dict[str, Check]:
    folder = tmp_path / "box"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).write_bytes(f.read_bytes())
    for name, text in (texts or {}).items():
        (folder / name).write_text(text)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, None)}


def test_a_whole_machine_with_an_overlay_root_fails_an_xid_on_a_gpu_it_does_not_list(tmp_path: Path) -> None:
    """systemd as PID 1: the box is the machine, and 0000:9b:00 may be its GPU off the bus."""
    row = judged(tmp_path, POD_SMI, INITRD_DF, XID_119, texts={"pid1.txt": MACHINE_PID1})["gpu_xid"]
    assert row.verdict == "fail", row
    assert row.actual.startswith("GPU at PCI 0000:9b:00: Xid 119")


def test_a_pod_whose_pid1_is_its_entry_command_is_a_slice(tmp_path: Path) -> None:
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, XID_119, texts={"pid1.txt": POD_PID1})["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.detail.startswith(
        "The box is a slice of a bigger machine (/ is an overlay and PID 1 is 'bash', no init system:"
        " a container)"
    )


def test_an_overlay_root_whose_pid1_is_not_known_stays_a_container(tmp_path: Path) -> None:
    """Nothing read of PID 1 (a saved df alone): as before, a container (round 20)."""
    row = judged(tmp_path, POD_SMI, INITRD_DF, XID_119)["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.detail.startswith("The box is a slice of a bigger machine (/ is an overlay: a container)")


def _live(df: Path, cgroup_probe: str) -> str:
    raw = {"df": ProbeOutput(df.read_text(), "", 0), "cgroup_limits": ProbeOutput(cgroup_probe, "", 0)}
    return container_said(parse_facts(raw))


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        ("/proc/1/comm\tsystemd\n", ""),
        ("/proc/1/comm\tbash\n", "/ is an overlay and PID 1 is 'bash', no init system"),
        ("", "/ is an overlay"),
        # PID 1 hidden from the login (hidepid=2, a non-root login: the probe read its own mounts,
        # not /proc/1/comm): the overlay alone says nothing (a diskless whole machine: Warewulf)
        ("/proc/self/mountinfo\t/ overlay\n", ""),
        (
            "/proc/self/mountinfo\t/ overlay\n/.dockerenv\tpresent\n",
            "/ is an overlay and /.dockerenv is there",
        ),
        (
            "/proc/self/mountinfo\t/ overlay\n/run/systemd/container\tlxc\n",
            "/ is an overlay and systemd runs in a container (lxc)",
        ),
        # systemd run in a container says so (its /run/systemd/container), as do the engines' marks
        (
            "/proc/1/comm\tsystemd\n/run/systemd/container\tdocker\n",
            "/ is an overlay and systemd runs in a container (docker)",
        ),
        (
            "/proc/1/comm\tsystemd\n/run/.containerenv\tpresent\n",
            "/ is an overlay and /run/.containerenv is there",
        ),
    ],
)
def test_the_live_probes_signs(probe: str, said: str) -> None:
    assert _live(INITRD_DF, probe) == said


def test_a_mark_without_an_overlay_root_is_no_container() -> None:
    """This build machine (2026-12-05): a Firecracker microVM booted from a Docker image, its own
    kernel, `/` on /dev/vda, PID 1 its agent `process_api`, and the image's /.dockerenv: the
    cgroup probe's first lines there, real. A whole (virtual) machine, not a slice."""
    df = REAL / "df__ubuntu-18.04-vm__snap-loops.txt"  # (/ on a disk)
    assert _live(df, "/proc/1/comm\tprocess_api\n/.dockerenv\tpresent\n") == ""


# PID 1's cgroups (/proc/1/cgroup) as real boxes printed them (`cat /proc/1/cgroup` or
# `/proc/self/cgroup`, which is PID 1's inside a container), quoted from the issue threads:
# a Docker container on cgroup v1 (d2iq-archive/kubernetes-mesos#565, "from inside the slave CT"),
# a Kubernetes pod on Docker (duckdb/duckdb#16608), a pod under containerd's CRI
# (open-telemetry/opentelemetry-java#4507), the host side of that mesos issue (every cgroup "/",
# systemd 219's PID 1), a cgroup-v2 host's systemd (spiffe/spire#2578: `0::/init.scope`), and a
# Docker container on Debian 11's cgroup v2 (docker/for-linux#1293: just `0::/`, the cgroup
# namespace's root, which says nothing either way).
DOCKER_V1 = (
    "12:name=systemd:/\n"
    "11:hugetlb:/docker/611a8d133d2c636e777745e4dbb1d5866a068fe0f6cc87033e52fe139fca5ba1\n"
    "10:net_prio:/docker/611a8d133d2c636e777745e4dbb1d5866a068fe0f6cc87033e52fe139fca5ba1\n"
)
K8S_DOCKER = (
    "12:rdma:/\n"
    "11:freezer:/kubepods/burstable/podc101fead-5fa2-4525-97af-5894973b336e/"
    "2b7a2f7fb72575bb50a46d68cceaf43a12a597184714cb33af2f6420f5314293\n"
)
K8S_CONTAINERD = (
    "11:perf_event:/kubepods-besteffort-pod0125ec2f_b64a_4868_8f5b_94b56cbab864.slice:cri-containerd:"
    "ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459\n"
)
HOST_V1 = "12:name=systemd:/\n11:hugetlb:/\n4:memory:/\n2:cpu:/\n1:cpuset:/\n"
HOST_V2 = "0::/init.scope\n"
NAMESPACED_V2 = "0::/\n"


def _pid1(comm: str, cgroup: str = "") -> str:
    """The cgroup probe's first lines: PID 1's name, then its cgroups one a line."""
    return f"/proc/1/comm\t{comm}\n" + "".join(f"/proc/1/cgroup\t{line}\n" for line in cgroup.splitlines())


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        # inits a container runs as PID 1 with no mark: s6-overlay's (linuxserver.io images),
        # runit, OpenRC, and `init`: busybox's, and what `docker run --init` starts (docker-init
        # mounted as /dev/init: microsoft/pai#1435, "the pid 1 process looks like `/dev/init --
        # /bin/bash ...`")
        (
            _pid1("s6-svscan"),
            "/ is an overlay and PID 1 is 's6-svscan', which containers run too (not systemd)",
        ),
        (_pid1("init"), "/ is an overlay and PID 1 is 'init', which containers run too (not systemd)"),
        (_pid1("runit"), "/ is an overlay and PID 1 is 'runit', which containers run too (not systemd)"),
        (
            _pid1("openrc-init"),
            "/ is an overlay and PID 1 is 'openrc-init', which containers run too (not systemd)",
        ),
        # systemd in a container's cgroup (cgroup v1, or v2 without a cgroup namespace)
        (
            _pid1("systemd", DOCKER_V1),
            "/ is an overlay and PID 1's cgroup is a container's"
            " (/docker/611a8d133d2c636e777745e4dbb1d5866a068fe0f6cc87033e52fe139fca5ba1)",
        ),
        (
            _pid1("systemd", K8S_DOCKER),
            "/ is an overlay and PID 1's cgroup is a container's (/kubepods/burstable/",
        ),
        (
            _pid1("systemd", K8S_CONTAINERD),
            "/ is an overlay and PID 1's cgroup is a container's (/kubepods-besteffort",
        ),
        # a pod's service account (mounted in every pod that does not turn it off)
        (
            _pid1("systemd", NAMESPACED_V2) + "/var/run/secrets/kubernetes.io\tpresent\n",
            "/ is an overlay and /var/run/secrets/kubernetes.io is there",
        ),
        # systemd at a machine's cgroups: a whole machine; under a cgroup namespace's `0::/`
        # systemd itself says container (/run/systemd/container: its detect_container() counts
        # a cgroup namespace, systemd/systemd src/basic/virt.c, search index file 9535316994)
        (_pid1("systemd", HOST_V1), ""),
        (_pid1("systemd", HOST_V2), ""),
        (_pid1("systemd", NAMESPACED_V2), ""),
        (
            _pid1("systemd", NAMESPACED_V2) + "/run/systemd/container\tcontainer-other\n",
            "/ is an overlay and systemd runs in a container (container-other)",
        ),
    ],
)
def test_only_systemd_with_nothing_that_says_container_is_a_whole_machine(probe: str, said: str) -> None:
    assert _live(INITRD_DF, probe).startswith(said) and bool(said) == bool(_live(INITRD_DF, probe))


@pytest.mark.parametrize("pid1", ["s6-svscan", "init"])
def test_a_pod_whose_pid1_is_an_init_containers_run_only_warns(tmp_path: Path, pid1: str) -> None:
    """Another tenant's Xid (0000:9b:00, a GPU the pod does not show) does not fail the rental."""
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, XID_119, texts={"pid1.txt": f"/proc/1/comm:{pid1}\n"})[
        "gpu_xid"
    ]
    assert row.verdict == "warn", row
    assert f"PID 1 is {pid1!r}, which containers run too (not systemd): a container" in row.detail


def test_a_saved_grep_of_pid1s_cgroup_is_read(tmp_path: Path) -> None:
    """`grep . /proc/1/comm /proc/1/cgroup` saved beside the rest: a Kubernetes pod's systemd."""
    saved = "/proc/1/comm:systemd\n" + "".join(f"/proc/1/cgroup:{line}\n" for line in K8S_DOCKER.splitlines())
    row = judged(tmp_path, POD_SMI, INITRD_DF, XID_119, texts={"pid1.txt": saved})["gpu_xid"]
    assert row.verdict == "warn", row
    assert "PID 1's cgroup is a container's (/kubepods/burstable/" in row.detail


def test_the_live_probe_prints_pid1s_cgroups_as_read() -> None:
    """The real cgroup probe on this machine: /proc/1/cgroup's lines, each after its file."""
    from gpuonboard.connection.probe_commands import _cgroup_limits_command

    out = subprocess.run(["sh", "-c", _cgroup_limits_command()], capture_output=True, text=True, timeout=30)
    got = [v for f, _, v in (ln.partition("\t") for ln in out.stdout.splitlines()) if f == "/proc/1/cgroup"]
    assert got == Path("/proc/1/cgroup").read_text().splitlines()
