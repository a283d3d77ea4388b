"""What the shipped scripts share: the result line, their private temp dir, the signal exit, the
nvidia-smi sampler and NVML's clock-event reason names.

A part, not a script: a script imports from it as `from gpuonboard.remote._common import ...`
at the top level of its file, and `steps.prove.bundle` replaces that statement with this file's
code when the script is shipped, so that the host gets one stdin script needing only the stdlib
(and torch). Here: stdlib only, no `__file__` (a script passes its own)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

MARK = "GPUONBOARD_RESULT "
# NVML clock-event reason bits (same order as gpuonboard.facts.nvidia_smi.CLOCK_EVENT_REASONS)
REASONS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
)


def emit(data: dict[str, Any], mark: str = MARK, allow_nan: bool = True) -> None:
    """One machine-readable line gpuonboard parses: `mark` then the JSON (keys sorted)."""
    sys.stdout.write(mark + json.dumps(data, sort_keys=True, allow_nan=allow_nan) + "\n")
    sys.stdout.flush()


def private_dir(script: str) -> str | None:
    """The private temp dir gpuonboard shipped `script` (its `__file__`) into (removed by its
    shell on every exit, a kill included), else None (the system's temp dir) for a script run
    by hand."""
    here = os.path.dirname(os.path.abspath(script))
    return here if os.path.basename(here).startswith("gpuonboard-") else None


def exit_on_signal(signum: int, frame: Any) -> None:
    """SIGTERM / SIGHUP (the host's `timeout`, a `kill`): unwind through `finally`, so the
    nvidia-smi sampler (which samples for ever) and the workers are stopped, not left running."""
    raise SystemExit(128 + signum)


def reason_names(mask: int) -> list[str]:
    """A clock-event reasons bitmask -> names (bits past the table: 'bit N')."""
    return [REASONS[i] if i < len(REASONS) else f"bit {i}" for i in range(mask.bit_length()) if mask >> i & 1]


def start_sampler(
    fields: tuple[str, ...], sample_ms: int, log: str, stderr: int
) -> subprocess.Popen[bytes] | None:
    """`nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits -lms=N` into `log` (its
    stderr to `stderr`: subprocess.STDOUT or DEVNULL); None: no nvidia-smi here."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    query = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", f"-lms={sample_ms}"]
    with open(log, "w") as f:
        return subprocess.Popen([smi, *query], stdout=f, stderr=stderr)


def stop_sampler(sampler: subprocess.Popen[bytes], log: str) -> str:
    """Stop the sampler (killed after 5 s); the text it wrote."""
    sampler.terminate()
    try:
        sampler.wait(timeout=5)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait(timeout=5)
    with open(log, errors="replace") as f:
        return f.read()
