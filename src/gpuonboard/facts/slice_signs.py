"""Whether the login is inside a container: ONE reader of the evidence, used by the checks
(steps/checks/slice_view.py: a slice of a bigger machine, whose kernel log is the host's) and by
the autostop install (steps/autostop: a power command there stops the container at most, never
the machine the vendor bills for).

The evidence is what SIGNS_SH prints, as `FILE<TAB>VALUE` lines (first in the cgroup probe,
connection/probe_commands.py; in the autostop state probe), plus df's rows where there are some:

- PID 1's name (/proc/1/comm) and its cgroups (/proc/1/cgroup);
- the container type systemd saw (/run/systemd/container: systemd writes it only in a container,
  an LXC/LXD/Proxmox one too), the manager's name (/run/host/container-manager: nspawn, podman);
- the engines' marks (/.dockerenv, /run/.containerenv) and Kubernetes' service account;
- the filesystem of `/` and the mounts only a container has (/proc/self/mountinfo): LXD's and
  Incus' /dev/.lxd-mounts and /dev/.incus-mounts, lxcfs over /proc/meminfo.

An overlay `/` (a container engine's root) is a container unless PID 1 is systemd with nothing
beside it that says container (a whole machine booted diskless or from a live image: Warewulf,
xCAT), or PID 1's name is hidden from the login (the probe read its own mounts, not
/proc/1/comm: `hidepid=2` and a non-root login) with nothing beside it that says container: the
overlay alone is then no claim either way. Any other
`/` (an LXD container on zfs, btrfs, lvm or a dir; Proxmox's subvol) is a container only where
something a whole machine never has says so (systemd's word, the manager's, a container's
cgroup for PID 1, LXD's or lxcfs' mounts); an engine's mark alone is not (a Docker image booted
as a microVM keeps its /.dockerenv). Nothing read is no container: never a claim either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gpuonboard.facts.container import INIT_SYSTEMS

COMM, CGROUP, MOUNTINFO = "/proc/1/comm", "/proc/1/cgroup", "/proc/self/mountinfo"
SYSTEMD_SAYS, MANAGER_SAYS = "/run/systemd/container", "/run/host/container-manager"
# the files read whole (their first line): PID 1's name, the container type systemd and the
# manager wrote; then the files only a container has (the engines', Kubernetes' service account)
READ_FILES = (COMM, SYSTEMD_SAYS, MANAGER_SAYS)
MARKS = ("/.dockerenv", "/run/.containerenv", "/var/run/secrets/kubernetes.io")
# mounts only a container has: LXD's and Incus' own (every container of theirs, whatever its
# storage pool: canonical/lxd#8600's df), and lxcfs' view of /proc (LXC, LXD, Proxmox's pct)
LXD_MOUNTS = ("/dev/.lxd-mounts", "/dev/.incus-mounts")
LXCFS_AT = "/proc/meminfo"
# The one PID 1 taken for a whole machine's: systemd, which, run in a container, says so
# (/run/systemd/container). The other inits run as a container's PID 1 with no mark: s6-svscan
# (s6-overlay, every linuxserver.io image), runit, OpenRC, busybox's `init`, and `init` is what
# `docker run --init` starts (docker-init mounted as /dev/init); so only systemd says "machine".
MACHINE_INIT = "systemd"
# a container's cgroup in /proc/1/cgroup: v1 `/docker/ID`, `/kubepods/burstable/podUID/ID`,
# `kubepods-besteffort-podUID.slice:cri-containerd:ID`, `/crio/ID`, `/lxc/NAME`; v2 without a
# cgroup namespace `/system.slice/docker-ID.scope`, `/machine.slice/libpod-ID.scope`. (With one,
# the default on cgroup v2, a container reads just `0::/`: no sign either way.)
_CONTAINER_CGROUP = re.compile(r"(?:^|[/:._-])(?:kubepods|docker|containerd|libpod|lxc|crio)(?:$|[/:._-])")

# Shell, builtins only: the evidence as `FILE<TAB>VALUE` lines (a mark `FILE<TAB>present`; PID 1's
# cgroups one a line; `/proc/self/mountinfo<TAB>MOUNTPOINT FSTYPE` for `/` and the mounts above)
_MOUNTED = "|".join(("/", *LXD_MOUNTS, LXCFS_AT))
SIGNS_SH = (
    f'for f in {" ".join(READ_FILES)}; do v=; [ -r "$f" ] && '
    '{ read -r v <"$f" || :; } && [ -n "$v" ] && printf \'%s\\t%s\\n\' "$f" "$v"; done; '
    f'for f in {" ".join(MARKS)}; do [ -e "$f" ] && '
    "printf '%s\\tpresent\\n' \"$f\"; done; "
    "[ -r /proc/1/cgroup ] && while IFS= read -r v; do printf '/proc/1/cgroup\\t%s\\n' \"$v\"; "
    "done </proc/1/cgroup; "
    "[ -r /proc/self/mountinfo ] && while read -r _ _ _ _ gm _ gr; do case $gm in "
    f'{_MOUNTED}) gt=${{gr#*- }}; printf \'/proc/self/mountinfo\\t%s %s\\n\' "$gm" "${{gt%% *}}";; '
    "esac; done </proc/self/mountinfo; "
)


def read_signs(text: str) -> dict[str, str]:
    """The evidence in SIGNS_SH's lines (other lines are skipped): FILE -> its value (the first);
    under "/proc/1/cgroup" the first of PID 1's cgroups that is a container's; under
    "/proc/self/mountinfo MOUNTPOINT" that mount's filesystem type (the last: the one on top)."""
    signs: dict[str, str] = {}
    for line in text.splitlines():
        path, tab, value = line.partition("\t")
        value = value.strip()
        if not tab or not value:
            continue
        if path in READ_FILES or path in MARKS:
            signs.setdefault(path, value)
        elif path == CGROUP and _CONTAINER_CGROUP.search(value.split(":", 2)[-1]):
            signs.setdefault(path, value.split(":", 2)[-1].strip())
        elif path == MOUNTINFO:
            point, _, fstype = value.partition(" ")
            signs[f"{MOUNTINFO} {point}"] = fstype.strip()
    return signs


def _overlay(fs: str) -> bool:
    """A container engine's root: overlayfs (`overlay`), rootless engines' `fuse-overlayfs`."""
    return fs in ("overlay", "fuse-overlayfs", "fuse.fuse-overlayfs")


def _conclusive(signs: Mapping[str, str], mounts: Iterable[str]) -> str:
    """What says container whatever `/` is, because a whole machine never has it ("" none)."""
    if kind := signs.get(SYSTEMD_SAYS):
        return f"systemd runs in a container ({kind})"
    if manager := signs.get(MANAGER_SAYS):
        return f"its container manager is {manager} ({MANAGER_SAYS})"
    if cgroup := signs.get(CGROUP):
        return f"PID 1's cgroup is a container's ({cgroup[:80]})"
    seen = set(mounts) | {k.split(" ", 1)[1] for k in signs if k.startswith(MOUNTINFO + " ")}
    if mount := next((m for m in LXD_MOUNTS if m in seen), None):
        return f"{mount} is mounted (an LXD or Incus container's)"
    if "lxcfs" in signs.get(f"{MOUNTINFO} {LXCFS_AT}", ""):
        return f"lxcfs is mounted on {LXCFS_AT} (a container's view of the host)"
    return ""


def container_said(signs: Mapping[str, str], root: Iterable[str] = (), mounts: Iterable[str] = ()) -> str:
    """Why the login is inside a container ("/ is an overlay and PID 1 is 'bash', no init system",
    "systemd runs in a container (lxc)"); "" where nothing says so. `signs`: read_signs' reading;
    `root`: what df says of `/` (its device, its type); `mounts`: df's mount points."""
    root_fs = [*root, signs.get(f"{MOUNTINFO} /", "")]
    if not any(_overlay(fs) for fs in root_fs):
        return _conclusive(signs, mounts)
    pid1 = signs.get(COMM)
    if pid1 is None and f"{MOUNTINFO} /" in signs:
        pid1 = MACHINE_INIT  # (PID 1 hidden from the login, hidepid=2: not known, claim nothing)
    if pid1 not in INIT_SYSTEMS:
        return "/ is an overlay" + (f" and PID 1 is {pid1!r}, no init system" if pid1 else "")
    if pid1 != MACHINE_INIT:
        return f"/ is an overlay and PID 1 is {pid1!r}, which containers run too (not systemd)"
    if kind := signs.get(SYSTEMD_SAYS):
        return f"/ is an overlay and systemd runs in a container ({kind})"
    if mark := next((m for m in MARKS if m in signs), None):
        return f"/ is an overlay and {mark} is there"
    said = _conclusive(signs, mounts)
    return f"/ is an overlay and {said}" if said else ""
