"""The `gpu_perf` sustained-load window, judged (pure): per GPU the SM clock holds with no
hardware or thermal slowdown and power reaching the cap when the clock is low
(`perf_sustained_gpu<N>`), the temperature spread between GPUs under load (`perf_temp_spread`),
and a power median's check when the sampler saw only part of the window (`partly_sampled`).
The floors and the whole result's checks are steps/prove/floors.py's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.gpu_health import HARD_THROTTLE
from gpuonboard.units import finite_number

CLOCK_DROP_WARN = 0.10
SAMPLED_GAP_S = 2.0  # a window's samples may miss this much of it (a sample every 0.5 s)
TEMP_SPREAD_WARN_C = 5.0
POWER_SHARE_WARN = 0.6  # median power below this share of the cap ...
CLOCK_SHARE_WARN = 0.8  # ... while the SM clock is below this share of its first figure


def sustained_check(idx: int, s: Mapping[str, Any]) -> Check:
    """`perf_sustained_gpu<N>`: the SM clock holds, no hardware or thermal slowdown, and power
    reaches the cap when the clock is low (else power delivery)."""
    first, last = finite_number(s.get("sm_clock_first_mhz")), finite_number(s.get("sm_clock_last_mhz"))
    unread = _unread_in_window(s, first, last)
    power, cap = finite_number(s.get("power_median_w")), finite_number(s.get("power_limit_w"))
    reasons = {k: v for k, v in (s.get("reasons") or {}).items() if (finite_number(v) or 0) > 0}
    hard = sorted(k for k in reasons if k in HARD_THROTTLE)
    problems: list[str] = []
    verdict: Verdict = "pass"
    drop = 1 - last / first if first and last else 0.0
    if hard:
        verdict = "fail"
        problems.append(f"{', '.join(hard)} seen under load: cooling or power delivery; ask the vendor")
    if drop > CLOCK_DROP_WARN:
        verdict = "fail" if verdict == "fail" else "warn"
        problems.append(f"the SM clock fell {drop * 100:.0f} % over the window")
    low_clock = first and last and last < CLOCK_SHARE_WARN * first
    if power is not None and cap and power < POWER_SHARE_WARN * cap and low_clock:
        verdict = "fail" if verdict == "fail" else "warn"
        problems.append(
            f"median power {power:.0f} W is below {POWER_SHARE_WARN * 100:.0f} % of the {cap:.0f} W cap"
            " while the clock is low: power delivery (PSU, cables) or a board limit"
        )
    note = ""
    if reasons.get("sw_power_cap") and not hard:
        note = (
            f"sw_power_cap in {reasons['sw_power_cap']:.0f} samples: the GPU ran at its power cap"
            " (expected under full load)"
        )
    if short := _short_sampling(s):
        verdict = "unverified" if verdict == "pass" else verdict
        problems.append(short)
    if verdict == "pass" and unread:
        verdict = "unverified"
        problems.append(
            f"under load nvidia-smi gave no number for {' and '.join(unread)} ([N/A], [Not Supported]"
            " or no sample), so a slowdown there could not be seen: no claim either way"
        )
    elif unread:
        problems.append(f"under load nvidia-smi gave no number for {' and '.join(unread)}")
    actual = (
        f"GPU {idx}: SM clock {_num(first)} -> {_num(last)} MHz (min {_num(s.get('sm_clock_min_mhz'))}),"
        f" max {_num(s.get('temp_max_c'))} °C, median {_num(power)} of {_num(cap)} W"
    )
    return Check(
        f"perf_sustained_gpu{idx}",
        f"SM clock drop <= {CLOCK_DROP_WARN * 100:.0f} % over {_num(s.get('seconds'))} s,"
        " no hardware or thermal slowdown",
        actual,
        verdict,
        "; ".join([*problems, *([note] if note else [])]),
    )


def _short_sampling(s: Mapping[str, Any]) -> str:
    """'' or why the samples saw only part of the sustained window (the sampler stopped, or
    nvidia-smi hung, part-way): what came after is unread, so no claim about it."""
    window, sampled = finite_number(s.get("window_s")), finite_number(s.get("sampled_s"))
    if window is None or sampled is None or window - sampled <= max(SAMPLED_GAP_S, 0.2 * window):
        return ""
    return (
        f"nvidia-smi's samples span only {sampled:.0f} s of the {window:.0f} s window (its sampler"
        " stopped or hung part-way): the clock, power and slowdown reasons of the rest were not"
        " read, so no claim about them"
    )


def partly_sampled(check: Check, s: Mapping[str, Any] | None) -> Check:
    """A check of a GPU's sustained power median (`perf_power_w_gpu<N>`) when the sampler saw only
    part of the window (`_short_sampling`): the samples seen may be the ramp-up, whose power is
    below what the GPU draws at full load, so their median is a lower bound. At or above the floor
    it passes (the GPU did draw it; a later slowdown is perf_sustained's, `unverified` then);
    below it, neither a pass nor a failure is claimed (`unverified`)."""
    short = _short_sampling(s or {})
    if not short:
        return check
    if check.verdict == "pass":
        said = "the median of the part seen is a lower bound (the ramp-up draws less), and it meets the floor"
        return replace(check, detail="; ".join(d for d in (check.detail, f"{short}; {said}") if d))
    said = f"the samples seen may be the ramp-up, so their {check.verdict} against the floor is no claim"
    return replace(check, verdict="unverified", detail=f"{short}; {said}")


def _unread_in_window(s: Mapping[str, Any], first: float | None, last: float | None) -> list[str]:
    """What the sampler did not read for a GPU over the window: no sample at all, the SM clock
    (no first or last figure), the clock-event reasons (no sample held a mask; a result from
    before `reasons_samples` was counted is taken as read)."""
    if finite_number(s.get("samples")) == 0:
        return ["any field (no sample of this GPU in the window)"]
    unread = [] if first is not None and last is not None else ["the SM clock"]
    if s.get("reasons_samples") == 0:
        unread.append("the clock-event reasons")
    return unread


def _num(value: Any) -> str:
    v = finite_number(value)
    return "?" if v is None else f"{v:.0f}"


def temp_spread_check(per_gpu: Mapping[str, Mapping[str, Any]]) -> Check | None:
    """`perf_temp_spread`: the median temperatures under load differ by <= 5 °C between GPUs.
    A GPU whose window the sampler saw only part of (`_short_sampling`) has a median of the part
    seen, and the ramp-up runs cooler: a lower bound. Such a GPU may be the hot side, never the
    cold one (only GPUs sampled over the whole window are): a warning when the hottest reading
    exceeds the coolest whole-window one by more than 5 °C (hard evidence); `unverified` when
    a pass would rest on a partly-sampled GPU being no hotter than it read."""
    temps = {
        k: t
        for k, s in per_gpu.items()
        if (t := finite_number(s.get("temp_median_c", s.get("temp_max_c")))) is not None
    }
    if len(temps) < 2:
        return None
    partial = sorted((k for k in temps if _short_sampling(per_gpu[k])), key=int)
    coolable = {k: t for k, t in temps.items() if k not in partial} or temps
    hot = max(temps, key=lambda k: temps[k])
    cold = min(coolable, key=lambda k: coolable[k])
    spread = temps[hot] - temps[cold]
    verdict: Verdict = "warn" if spread > TEMP_SPREAD_WARN_C and cold not in partial else "pass"
    detail = (
        f"GPU {hot} runs hotter than its peers: uneven airflow, a failing fan or a blocked inlet;"
        " it throttles first"
    )
    if partial and verdict == "pass":
        verdict = "unverified"
        detail = (
            f"nvidia-smi's samples of GPU {', '.join(partial)} span only part of the window (its"
            " sampler stopped or hung part-way): their median temperature is of the part seen (a"
            " lower bound), so no claim about the spread"
        )
    elif partial:
        detail += (
            f"; GPU {', '.join(partial)} sampled over part of the window only: its median is a lower"
            " bound, so the spread is at least this"
        )
    return Check(
        "perf_temp_spread",
        f"<= {TEMP_SPREAD_WARN_C:.0f} °C between GPUs under load (median temperatures)",
        f"{spread:.0f} °C: GPU {hot} {temps[hot]:.0f} °C, GPU {cold} {temps[cold]:.0f} °C"
        + (f" (GPU {hot} sampled over part of the window: at least)" if hot in partial else ""),
        verdict,
        "" if verdict == "pass" else detail,
    )
