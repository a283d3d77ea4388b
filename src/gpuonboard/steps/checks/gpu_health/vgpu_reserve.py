"""A vGPU guest's reserved framebuffer, counted as used by drivers before R510 (and by a
MIG-backed vGPU's in every release): memory used that is no job's (gpu_health's
foreign_processes, steps/checks/gpu_health/usage.py)."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.usage_levels import BUSY_MEMORY_MIB, BUSY_UTIL_PCT
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import gpu_label
from gpuonboard.steps.checks.vgpu_name import is_vgpu, vgpu_profile

# A vGPU guest's driver before R510 counts the framebuffer the vGPU reserves (about 7 % of its
# profile, 13 % of a small one) as used: an idle GRID V100D-32Q reads 2192 MiB used, a P100-16Q
# 1040 MiB, a T4-4C 560 MiB (real guest tables, no process listed, 0 %); R510 on reports it
# apart (`-q`'s FB Memory Usage > Reserved: 2134 MiB of an RTXA6000-24Q) and reads 0 MiB used.
VGPU_RESERVE_SPLIT_MAJOR = 510
# The reserve is a bounded share of the profile: 6.3 % (P100-16Q), 6.7 % (V100D-32Q), 10.3 % (the
# MIG-backed A100X-2-10C), 13.7 % of the smallest (T4-4C, under 1 GiB anyway). More than 15 % of
# the profile used (29.5 GiB of a V100D-32Q) is no reserve but someone's job, or a total not read.
VGPU_RESERVE_MAX_SHARE = 0.15


def reserve_counted_as_used(driver_version: str | None) -> bool:
    """The driver (its version as nvidia-smi gives it) counts a vGPU's reserved framebuffer as
    used memory: a release before R510; an unread version is not known to."""
    major = (driver_version or "").split(".", 1)[0]
    return major.isdecimal() and int(major) < VGPU_RESERVE_SPLIT_MAJOR


def _mig_backed_vgpu(g: GpuInfo) -> bool:
    """A MIG-backed vGPU (`GRID A100X-2-10C`: 2 slices of an A100X): the driver reads its
    utilisation N/A, as any MIG device's, and counts the vGPU's reserve as used in every release
    (NVIDIA's vGPU guide shows an idle A100X-2-10C at 1058 MiB of 10235 MiB, R550)."""
    profile = vgpu_profile(g.name)
    return profile is not None and profile.slices is not None


def vgpu_reserve_only(g: GpuInfo, driver_version: str | None, engines_idle: bool) -> bool:
    """A vGPU guest's GPU whose only sign of work is its memory used (utilisation read under the
    busy mark, or N/A on a MIG-backed vGPU; no engine at work) under a driver that counts the
    vGPU's reserve as used (before R510; a MIG-backed vGPU's in any), and no more of it than the
    reserve takes (VGPU_RESERVE_MAX_SHARE of the profile's total): that memory is no job's.
    `engines_idle`: no other engine (encoder, decoder) of the GPU is at work."""
    mig_backed = _mig_backed_vgpu(g)
    util = g.utilization_gpu_pct
    return (
        is_vgpu(g.name, g.product_brand, g.virtualization_mode)
        and (mig_backed or reserve_counted_as_used(driver_version))
        and ((util is None and mig_backed) or (util is not None and util < BUSY_UTIL_PCT))
        and g.memory_used_mib is not None
        and g.memory_used_mib > BUSY_MEMORY_MIB
        and g.memory_total_mib is not None
        and g.memory_used_mib <= VGPU_RESERVE_MAX_SHARE * g.memory_total_mib
        and engines_idle
    )


def vgpu_reserve_check(reserve: list[GpuInfo], driver_version: str | None) -> Check:
    """foreign_processes where the only memory held with no process listed is on vGPUs whose
    driver counts the vGPU's reserve as used: neither a job nor idle, unverified."""
    held = "; ".join(
        f"{gpu_label(g)} ({g.name.strip()}) at "
        + ("N/A (MIG)" if g.utilization_gpu_pct is None else f"{g.utilization_gpu_pct} %")
        + f" utilisation with {(g.memory_used_mib or 0) / 1024:.1f} GiB used"
        for g in reserve
    )
    which = (
        "a MIG-backed vGPU's driver (any release)"
        if all(_mig_backed_vgpu(g) for g in reserve)
        else f"driver {driver_version} (before R510)"
    )
    return Check(
        "foreign_processes",
        "none",
        f"{held}, no process listed",
        "unverified",
        f"{which} counts the framebuffer a vGPU reserves as used, so an idle vGPU shows some of its"
        " memory used (about 7 % of its profile, 10 % of a MIG-backed one): no job is seen, but one"
        " in another container of this VM would show the same; a time-sliced vGPU's `nvidia-smi`"
        " under R510 or later reports the reserve apart",
    )
