"""A container whose `/` is no overlay was never a slice: an LXD or Incus container (on a zfs,
btrfs, lvm or dir pool), a Proxmox container (its subvol), systemd-nspawn. Its GPUs passed through
were judged as a whole machine's: an Xid on a GPU it does not list (another tenant's, read from
the host's kernel log) failed the rental. Now what a whole machine never has says container
whatever `/` is (facts/slice_signs.py): systemd's word (/run/systemd/container), the manager's
(/run/host/container-manager), a container's cgroup for PID 1, LXD's and Incus' own mounts,
lxcfs over /proc/meminfo. An engine's mark alone still is not (a microVM booted from an image).

Real captures: an LXD container's `df -h` (canonical/lxd#8600, tests/fixtures/real), a RunPod
pod's `nvidia-smi`, the Dell XE9680's Xid 119 on 0000:9b:00; `systemd-detect-virt` printing
`lxc` in a Proxmox LXC container (CISOfy/lynis#1298), the id systemd writes to
/run/systemd/container; mountinfo lines of an LXD container (canonical/lxd#4348)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import slice_signs
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks.slice_view import container_said

from .test_container_evidence import POD_SMI, REAL, XID_119, judged

LXD_DF = REAL / "df-h__lxd-container__zfs-pool-root__dev-lxd-mounts.txt"
DISK_DF = REAL / "df__ubuntu-18.04-vm__snap-loops.txt"  # (/ on a disk: a VM, or a Proxmox CT)


def test_an_lxd_container_on_a_zfs_pool_only_warns_of_another_gpus_xid(tmp_path: Path) -> None:
    """Its df alone: LXD's /dev/.lxd-mounts (every LXD container has it, whatever the pool)."""
    row = judged(tmp_path, POD_SMI, LXD_DF, XID_119)["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.detail.startswith(
        "The box is a slice of a bigger machine (/dev/.lxd-mounts is mounted (an LXD or Incus"
        " container's): a container)"
    )


def test_systemd_saying_lxc_makes_a_disk_root_a_container(tmp_path: Path) -> None:
    """A Proxmox container (no LXD mounts): systemd, its PID 1, wrote `lxc`."""
    texts = {"signs.txt": "/proc/1/comm:systemd\n/run/systemd/container:lxc\n"}
    row = judged(tmp_path, POD_SMI, DISK_DF, XID_119, texts=texts)["gpu_xid"]
    assert row.verdict == "warn", row
    assert "(systemd runs in a container (lxc): a container)" in row.detail


def test_a_disk_root_with_systemd_and_nothing_else_is_a_whole_machine(tmp_path: Path) -> None:
    row = judged(tmp_path, POD_SMI, DISK_DF, XID_119, texts={"pid1.txt": "/proc/1/comm:systemd\n"})["gpu_xid"]
    assert row.verdict == "fail", row


def _live(df: Path, cgroup_probe: str) -> str:
    raw = {"df": ProbeOutput(df.read_text(), "", 0), "cgroup_limits": ProbeOutput(cgroup_probe, "", 0)}
    return container_said(parse_facts(raw))


MI = "/proc/self/mountinfo\t"


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        (f"/proc/1/comm\tsystemd\n/run/systemd/container\tsystemd-nspawn\n{MI}/ ext4\n", "systemd runs in a"),
        # systemd-nspawn where /run/systemd/container was not read: what nspawn itself writes
        ("/proc/1/comm\tsystemd\n/run/host/container-manager\tsystemd-nspawn\n", "its container manager is"),
        # PID 1 unreadable (/proc mounted hidepid=2): the mounts the login reads of itself
        (f"{MI}/ zfs\n{MI}/dev/.lxd-mounts tmpfs\n", "/dev/.lxd-mounts is mounted"),
        (f"{MI}/ btrfs\n{MI}/dev/.incus-mounts tmpfs\n", "/dev/.incus-mounts is mounted"),
        (
            f"/proc/1/comm\tinit\n{MI}/ zfs\n{MI}/proc/meminfo fuse.lxcfs\n",
            "lxcfs is mounted on /proc/meminfo",
        ),
        (
            "/proc/1/comm\tinit\n/proc/1/cgroup\t4:memory:/lxc/ct101\n",
            "PID 1's cgroup is a container's (/lxc/",
        ),
        # nothing a whole machine lacks: no claim (a mark alone, hidepid's nothing, a host's cgroups)
        ("/proc/1/comm\tprocess_api\n/.dockerenv\tpresent\n", ""),
        (f"{MI}/ ext4\n", ""),
        ("/proc/1/comm\tsystemd\n/proc/1/cgroup\t0::/init.scope\n", ""),
    ],
)
def test_what_says_container_whatever_the_root(probe: str, said: str) -> None:
    got = _live(DISK_DF, probe)
    assert got.startswith(said) and bool(got) == bool(said), got


def test_a_rootless_engines_fuse_overlayfs_root_is_an_overlay() -> None:
    """`fuse-overlayfs  fuse.fuse-overlayfs ... /` (rootless Podman or Docker), PID 1 bash."""
    assert slice_signs.container_said(
        {"/proc/1/comm": "bash"}, ("fuse-overlayfs", "fuse.fuse-overlayfs")
    ) == ("/ is an overlay and PID 1 is 'bash', no init system")


# two of an LXD container's mountinfo lines (canonical/lxd#4348, "from inside the container"),
# then root lines written for the test in proc(5)'s mountinfo format (with and without an
# optional field before the ` - ` separator): not captures
LXD_MOUNTINFO = (
    "134 86 0:41 / /dev rw,relatime - tmpfs none rw,size=492k,mode=755,uid=100000,gid=100000\n"
    "135 86 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
)


@pytest.mark.parametrize(
    ("lines", "want"),
    [
        (
            "86 65 0:40 / / rw,relatime shared:1 - zfs default/containers/c1 rw,xattr,posixacl\n",
            {"/proc/self/mountinfo /": "zfs"},
        ),
        (
            "86 65 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/l\n"
            "140 134 0:44 / /dev/.lxd-mounts rw,relatime master:7 - tmpfs tmpfs rw,size=100k\n",
            {"/proc/self/mountinfo /": "overlay", "/proc/self/mountinfo /dev/.lxd-mounts": "tmpfs"},
        ),
    ],
)
def test_the_probe_reads_the_mounts_filesystem_type_after_the_separator(
    tmp_path: Path, lines: str, want: dict[str, str]
) -> None:
    """SIGNS_SH itself, run by /bin/sh, reading a saved mountinfo in place of /proc/self's."""
    saved = tmp_path / "mountinfo"
    saved.write_text(LXD_MOUNTINFO + lines)
    script = slice_signs.SIGNS_SH.replace("/proc/self/mountinfo ]", f"{saved} ]").replace(
        "done </proc/self/mountinfo", f"done <{saved}"
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30).stdout
    got = {k: v for k, v in slice_signs.read_signs(out).items() if k.startswith("/proc/self/mountinfo")}
    assert got == want, out


def test_the_probe_reads_this_machines_root() -> None:
    """This build machine, real: its root's type as /proc/self/mountinfo's last `/` line has it."""
    rows = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    root = [r[r.index("-") + 1] for r in rows if r[4] == "/"][-1]
    out = subprocess.run(
        ["sh", "-c", slice_signs.SIGNS_SH], capture_output=True, text=True, timeout=30
    ).stdout
    assert slice_signs.read_signs(out)["/proc/self/mountinfo /"] == root
