"""Whether the rented box is a slice of a bigger machine: a container (Docker, Podman, a
Kubernetes pod; RunPod, Vast.ai, AutoDL) or a Slurm job, which sees only some of the host's GPUs
(NVML lists only the GPUs whose device nodes the slice may open) but may read the host's whole
kernel log. Told from facts the probe already gathers (facts/slice_signs.py, the one reader the
autostop install uses too): df's `/` is an overlay (a container's root) unless PID 1 is systemd
with nothing beside it that says container (the container type systemd saw,
/run/systemd/container; Docker's /.dockerenv, Podman's /run/.containerenv, Kubernetes' service
account, a container's cgroup in /proc/1/cgroup): a diskless or live-booted whole machine
(Warewulf, xCAT, dracut's LiveOS_rootfs, a custom initrd) has an overlay root too, with systemd
as PID 1; any other `/` (an LXD or Proxmox container on zfs, btrfs, lvm) where something a whole
machine never has says container (systemd's word, the manager's, PID 1's cgroup, LXD's or
lxcfs' mounts); or the cgroup the login runs in is a Slurm job's (the limit files the
cgroup probe read sit under `/slurm/uid_N/job_N/` (cgroup v1) or `.../slurmstepd.scope/job_N/`
(v2)).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpuonboard.facts import slice_signs

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts

# a Slurm job's cgroup, as /proc/self/cgroup names it: v1 `/slurm/uid_2101171/job_280678/...`,
# v2 `/system.slice/slurmstepd.scope/job_1392969/step_0/...` (a node's own prefix allowed:
# `node_slurmstepd.scope`)
_SLURM_JOB = re.compile(r"/(?:slurm/uid_\d+|[\w.-]*slurmstepd\.scope)/job_(\d+)(?:/|$)")


def container_signs(facts: Facts) -> dict[str, str]:
    """What the cgroup probe (or a saved `grep .` of the files) read of whether the login is in a
    container (facts/slice_signs.py read_signs)."""
    out = facts.raw.get("cgroup_limits")
    return slice_signs.read_signs(out.stdout) if out is not None else {}


def container_said(facts: Facts) -> str:
    """Why the login is inside a container ("/ is an overlay", "/ is an overlay and PID 1 is
    'bash', no init system", "systemd runs in a container (lxc)"); "" where nothing says so: the
    one reader (facts/slice_signs.py container_said) of the cgroup probe's signs and df's rows."""
    root = next((m for m in facts.mounts if m.mountpoint == "/"), None)
    fs = (root.device, root.fstype or "") if root is not None else ()
    return slice_signs.container_said(container_signs(facts), fs, (m.mountpoint for m in facts.mounts))


def container_root(facts: Facts) -> bool:
    """The login is inside a container (container_said)."""
    return bool(container_said(facts))


def slurm_job(facts: Facts) -> str | None:
    """The Slurm job whose cgroup the cgroup probe read limits in, or None."""
    out = facts.raw.get("cgroup_limits")
    if out is None or out.exit_code != 0:
        return None
    for line in out.stdout.splitlines():
        m = _SLURM_JOB.search(line.partition("\t")[0])
        if m:
            return m.group(1)
    return None


def slice_said(facts: Facts) -> str:
    """Why the box is a slice of a bigger machine ("/ is an overlay: a container", "the login
    runs in Slurm job 42's cgroup"); "" where nothing says so (bare metal, a VM, not known)."""
    if said := container_said(facts):
        return f"{said}: a container"
    job = slurm_job(facts)
    return f"the login runs in Slurm job {job}'s cgroup" if job is not None else ""


def whole_listing_slice(facts: Facts) -> str:
    """Why the box is a slice of a bigger machine (slice_said), where its GPU listing is whole
    (every GPU nvidia-smi says the box has is listed); "" otherwise."""
    report = facts.gpu
    if report is None or not report.complete or not report.gpus:
        return ""
    if report.attached_gpus is not None and report.attached_gpus > len(report.gpus):
        return ""
    return slice_said(facts)
