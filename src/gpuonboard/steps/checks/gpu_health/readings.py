"""Readings no GPU can give: figures nvidia-smi printed in a cell that are no measurement of the
GPU (a driver's misreport, a sensor's sentinel value), named by sensor_faults and never judged
as the GPU's state."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo

# A board's averaged draw stays near its enforced limit (the real captures under load read at
# most a few % above it, a limit being enforced over time); twice the limit is no draw: laptop
# drivers from R550 print `312W /   35W` (RTX A1000 6GB Laptop, 595.71.05), `364W /   35W` (RTX
# 500 Ada, 550.144.03), `588W /   35W` (an idle RTX 4060 Laptop GPU at 0 %, 550.107.02).
DRAW_OVER_LIMIT = 2.0
# No GPU runs above this: their shutdown points are at most ~105 C (the captures' `GPU Shutdown
# Temp` 90-101 C); 255 C is a sensor's sentinel, never a temperature.
MAX_TEMPERATURE_C = 150


def temperature_unreal(celsius: int | float | None) -> bool:
    """A temperature above any a GPU runs at (MAX_TEMPERATURE_C): a sensor's sentinel."""
    return celsius is not None and celsius > MAX_TEMPERATURE_C


def impossible_readings(g: GpuInfo) -> list[str]:
    """'power draw reads 588 W against its 35 W power limit: no reading' for each of `g`'s cells
    whose figure no GPU can give: a draw more than DRAW_OVER_LIMIT times the limit the same
    output enforces, memory used above the total, utilisation above 100 %, a temperature above
    MAX_TEMPERATURE_C."""
    out = []
    draw, limit = g.power_draw_w, g.power_limit_w
    if draw is not None and limit and draw > DRAW_OVER_LIMIT * limit:
        out.append(f"power draw reads {draw:g} W against its {limit:g} W power limit: no reading")
    used, total = g.memory_used_mib, g.memory_total_mib
    if used is not None and total and used > total:
        out.append(f"memory used reads {used} MiB of its {total} MiB total: no reading")
    if g.utilization_gpu_pct is not None and g.utilization_gpu_pct > 100:
        out.append(f"utilization reads {g.utilization_gpu_pct} %: no reading")
    if temperature_unreal(g.temperature_c):
        out.append(f"temperature reads {g.temperature_c:g} C: no reading")
    return out


UNREAL_ADVICE = (
    "a figure no GPU can give (a draw many times its power limit, more memory used than it has, a"
    " temperature above any a GPU runs at) is no reading of the GPU: a driver's misreport (laptop"
    " drivers from R550 print such draws) or a failing sensor; that cell says nothing of the GPU's"
    " state: rerun `nvidia-smi -q -d POWER,TEMPERATURE,MEMORY,UTILIZATION` and, if it stays, ask"
    " the vendor (or update the driver)"
)
