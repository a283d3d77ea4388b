"""Whether the rented box is a slice of a bigger machine: a container (Docker, Podman, a
Kubernetes pod; RunPod, Vast.ai, AutoDL) or a Slurm job, which sees only some of the host's GPUs
(NVML lists only the GPUs whose device nodes the slice may open) but may read the host's whole
kernel log. Told from facts the probe already gathers: df's `/` is an overlay (a container's
root), or the cgroup the login runs in is a Slurm job's (the limit files the cgroup probe read
sit under `/slurm/uid_N/job_N/` (cgroup v1) or `.../slurmstepd.scope/job_N/` (v2)).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts

# a Slurm job's cgroup, as /proc/self/cgroup names it: v1 `/slurm/uid_2101171/job_280678/...`,
# v2 `/system.slice/slurmstepd.scope/job_1392969/step_0/...` (a node's own prefix allowed:
# `node_slurmstepd.scope`)
_SLURM_JOB = re.compile(r"/(?:slurm/uid_\d+|[\w.-]*slurmstepd\.scope)/job_(\d+)(?:/|$)")


def container_root(facts: Facts) -> bool:
    """df's `/` is an overlay: the login is inside a container."""
    root = next((m for m in facts.mounts if m.mountpoint == "/"), None)
    return root is not None and "overlay" in (root.fstype or "", root.device)


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
    if container_root(facts):
        return "/ is an overlay: a container"
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
