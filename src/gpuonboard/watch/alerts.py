"""When a GPU or a host raises an alert: the thresholds (host vars `monitor_*` override the
defaults), a GPU's alerts and a host's as a whole (fewer GPUs than ordered). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.inventory import Host
from gpuonboard.steps.base import StepArgsError, truthy
from gpuonboard.watch.samples import GpuSample

# Clock event reasons that mean the GPU is held back by heat or hardware (an alert);
# gpu_idle, sw_power_cap, sync_boost and the clock settings are normal operation.
THROTTLE_ALERT_REASONS = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)


@dataclass(frozen=True)
class Thresholds:
    """When a GPU raises an alert (host vars `monitor_*` override the defaults)."""

    mem_pct: float = 95.0
    temp_c: float = 85.0
    idle_util_pct: float = 5.0
    expect_busy: bool = False

    @classmethod
    def for_host(cls, host: Host) -> Thresholds:
        """Defaults overridden by `vars.expect_busy`, `vars.monitor_mem_pct`, `_temp_c`, `_idle_pct`."""
        v: Mapping[str, Any] = host.vars or {}
        t = cls()
        try:
            expect_busy = truthy(v.get("expect_busy", False), "expect_busy")
        except StepArgsError:
            value = v.get("expect_busy")
            raise UsageError(
                f"host {host.name}: vars.expect_busy must be true or false, not {value!r}."
            ) from None
        try:
            return cls(
                mem_pct=float(v.get("monitor_mem_pct", t.mem_pct)),
                temp_c=float(v.get("monitor_temp_c", t.temp_c)),
                idle_util_pct=float(v.get("monitor_idle_pct", t.idle_util_pct)),
                expect_busy=expect_busy,
            )
        except (TypeError, ValueError):
            raise UsageError(
                f"host {host.name}: vars.monitor_mem_pct, monitor_temp_c and monitor_idle_pct"
                " must be numbers."
            ) from None


def gpu_alerts(s: GpuSample, t: Thresholds) -> tuple[str, ...]:
    """Alerts of one GPU sample (short texts, most urgent first)."""
    out: list[str] = []
    if s.faults:
        out.append(f"unreadable: nvidia-smi reads {', '.join(s.faults)}")
    hot = sorted(THROTTLE_ALERT_REASONS.intersection(s.throttle))
    if hot:
        out.append("throttled: " + ",".join(hot))
    if s.temp_c is not None and s.temp_c >= t.temp_c:
        out.append(f"temperature {s.temp_c}C >= {t.temp_c:g}C")
    pct = s.mem_pct
    if pct is not None and pct > t.mem_pct:
        out.append(f"memory {pct:.0f}% > {t.mem_pct:g}%")
    if t.expect_busy and s.util_pct is not None and s.util_pct <= t.idle_util_pct:
        out.append(f"idle ({s.util_pct}%) while a job is expected")
    return tuple(out)


def host_alerts(gpus_seen: int, ordered: int | None, reported: int | None = None) -> tuple[str, ...]:
    """Alerts of a host as a whole: fewer GPUs than the order (or than nvidia-smi counts)."""
    out: list[str] = []
    if ordered and gpus_seen < ordered:
        out.append(f"GPU missing: {gpus_seen} of {ordered} ordered")
    elif reported and gpus_seen < reported:
        out.append(f"GPU missing: {gpus_seen} of {reported} reported")
    return tuple(out)
