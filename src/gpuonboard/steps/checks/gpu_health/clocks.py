"""The power, throttle and heat rules of gpu_health: the enforced power limit against the card's
default, active clock-event (throttle) reasons, and the hottest GPU's temperature."""

from __future__ import annotations

from gpuonboard.facts.gpu_agree import FORMAT_NAMES, own_readings
from gpuonboard.facts.nvidia_smi import CLOCK_EVENT_REASONS, GpuInfo
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.gpu_health.common import HARD_THROTTLE, gpu_label, gpu_list, is_idle


def rule_power_limit(gpus: list[GpuInfo], warn_ratio: float, fail_ratio: float) -> Check:
    """Enforced power limit not capped below the card's default."""
    capped: list[tuple[GpuInfo, float]] = []
    for g in gpus:
        if (
            g.power_limit_w
            and g.default_power_limit_w
            and g.power_limit_w < g.default_power_limit_w * warn_ratio
        ):
            capped.append((g, g.power_limit_w / g.default_power_limit_w))
    if capped:
        text = "; ".join(
            f"{gpu_label(g)} {g.power_limit_w:.0f} W of {g.default_power_limit_w:.0f} W{_requested(g)}"
            for g, _ in capped
        )
        verdict: Verdict = "fail" if any(r < fail_ratio for _, r in capped) else "warn"
        # the limit asked for is the default, yet a lower one is enforced: a cap nvidia-smi does
        # not set (the BMC's out-of-band power cap; a Grace Hopper module's budget shared with
        # its CPU), which `nvidia-smi -pl` cannot lift
        outside = all(
            g.requested_power_limit_w is not None
            and g.requested_power_limit_w >= g.default_power_limit_w * warn_ratio
            for g, _ in capped
            if g.default_power_limit_w
        )
        advice = (
            "a capped power limit lowers training speed; the limit software requests is the default,"
            " so the cap is set outside nvidia-smi (the BMC's out-of-band power cap, or a module's"
            " power budget): ask the vendor to lift it (`nvidia-smi -pl` cannot)"
            if outside
            else "a capped power limit lowers training speed; ask the vendor to restore it (nvidia-smi -pl)"
        )
        return Check("power_limit", "default power limit", text, verdict, advice)
    # "at default" needs the default: the plain table prints only the enforced cap
    # ("Pwr:Usage/Cap"), which cannot tell a capped card from one at its default
    if any(g.power_limit_w and g.default_power_limit_w for g in gpus):
        return Check("power_limit", "default power limit", "at default", "pass")
    enforced = sorted({f"{g.power_limit_w:.0f} W" for g in gpus if g.power_limit_w})
    return Check(
        "power_limit",
        "default power limit",
        f"enforced {', '.join(enforced)}; default not reported" if enforced else "not reported",
        "unverified",
        "this nvidia-smi output does not give the default power limit, so a capped card cannot be"
        " told from one at its default; `nvidia-smi -q -d POWER` shows both"
        if enforced
        else "this nvidia-smi output gives no power limit; `nvidia-smi -q -d POWER` shows the enforced"
        " and the default limits",
    )


def rule_throttle(gpus: list[GpuInfo]) -> Check:
    """No hardware slowdown or thermal throttling active; a software power cap is a warning,
    except on an idle GPU drawing far below its limit (P8 at 15 W of 150 W: A10, A40 and RTX
    A6000 report it so), where it holds nothing back (named in a passing row)."""
    hard, soft, idle, other = [], [], [], []
    for g in gpus:
        active = [r for r in g.clock_event_reasons if r in HARD_THROTTLE]
        if active:
            hard.append(f"{gpu_label(g)}: {', '.join(active)}")
        # a reason this tool does not know (R3xx's `Unknown`: "some other unspecified factor is
        # reducing the clocks", or a newer driver's): active, so the clocks are held back
        if unknown := [r for r in g.clock_event_reasons if r not in CLOCK_EVENT_REASONS]:
            other.append(f"{gpu_label(g)}: {', '.join(unknown)} (a reason this tool does not know)")
        if "sw_power_cap" in g.clock_event_reasons:
            if _idle_far_below_cap(g):
                idle.append(
                    f"{gpu_label(g)}: sw_power_cap at idle ({g.power_draw_w:g} W of {g.power_limit_w:g} W)"
                )
            else:
                soft.append(f"{gpu_label(g)}: sw_power_cap")
    held = _held_clocks(gpus)
    if hard:
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(hard + soft + other + held),
            "fail",
            "the GPU slows itself down (heat, power brake or a hardware fault);"
            " ask the vendor to check cooling and power" + (f"; {HELD_ADVICE}" if held else ""),
        )
    if soft or other or held:
        advice = [HELD_ADVICE] if held else []
        if soft:
            advice.append("clocks are held at the power limit; normal under full load, suspicious at idle")
        if other:
            advice.append(
                "nvidia-smi reports a clock-event reason active that this tool cannot judge: something"
                " holds the clocks back; `nvidia-smi -q -d PERFORMANCE,CLOCK` under load shows whether"
                " they reach their maximum"
            )
        return Check(
            "throttling", "no slowdown active", "; ".join(soft + other + held), "warn", "; ".join(advice)
        )
    known = any(g.clock_event_reasons_known for g in gpus)
    if known:
        settings = _settings_named(gpus)
        said = (
            f"none holding clocks back; {'; '.join(idle)}, no effect at that draw"
            if idle
            else ("no slowdown active" if settings else "none active")
        )
        return Check("throttling", "no slowdown active", said + settings, "pass")
    # no clock-event reasons in this output (the plain table): an active hardware slowdown could
    # hide there, so unverified rather than a plain warning
    return Check(
        "throttling",
        "no slowdown active",
        "not reported",
        "unverified",
        "this nvidia-smi output gives no clock-event (throttle) reasons; `nvidia-smi -q -d PERFORMANCE`"
        " shows them",
    )


# a GPU at this utilisation or more whose SM clock is below this share of its max, with no
# slowdown, power cap or unknown reason active in the same reading, is held there by a setting:
# a clock lock (`nvidia-smi -lgc`, which sets no clock-event reason) or the application clocks
# (`-ac`); a GPU under load otherwise boosts to its max (the real H200 at 100 %: 1980 of 1980 MHz)
_BUSY_PCT = 50
_HELD_SHARE = 0.75
HELD_ADVICE = (
    "a clock setting holds the SM clock far below its max under load (not heat or power): the box"
    " runs slower than ordered; ask the vendor to reset it (`sudo nvidia-smi -rgc` for locked"
    " clocks, `sudo nvidia-smi -rac` for the application clocks) and check that the SM clock"
    " reaches its max under load (`nvidia-smi -q -d CLOCK`)"
)


def _held_clocks(gpus: list[GpuInfo]) -> list[str]:
    """'GPU 0: SM clock 1095 of 1980 MHz at 100 % utilisation (no clock-event reason active: a
    locked clock)' for each GPU one of whose formats read it busy with its SM clock far below
    its max and nothing but a setting active to explain it; each format's clock is judged beside
    its own load (gpu_agree.own_readings), the max (a property of the card) from any."""
    out = []
    for g in gpus:
        for label, c in own_readings(g):
            sm, top, util = c.clocks_sm_mhz, c.clocks_sm_max_mhz or g.clocks_sm_max_mhz, c.utilization_gpu_pct
            if sm is None or not top or util is None or util < _BUSY_PCT or sm >= top * _HELD_SHARE:
                continue
            if any(
                r == "sw_power_cap" or r in HARD_THROTTLE or r not in CLOCK_EVENT_REASONS
                for r in c.clock_event_reasons
            ):
                continue  # (a slowdown, a power cap or an unknown reason: named as such)
            where = f" in {FORMAT_NAMES.get(label, label)}" if label else ""
            out.append(
                f"{gpu_label(g)}: SM clock {sm} of {top} MHz at {util} % utilisation{where} ({_holder(c, g)})"
            )
            break
    return out


def _holder(c: GpuInfo, g: GpuInfo) -> str:
    """What holds the clock: the application clocks where they are set below their default (or
    their reason is active), else a locked clock (which sets no reason) or a reason not read."""
    app = c.clocks_applications_mhz or g.clocks_applications_mhz
    default = c.clocks_default_applications_mhz or g.clocks_default_applications_mhz
    if "applications_clocks_setting" in c.clock_event_reasons or (app and default and app < default):
        shown = f" {app} MHz" + (f" (default {default} MHz)" if default else "") if app else ""
        return f"the application clocks set{shown}: `nvidia-smi -ac`"
    if not c.clock_event_reasons_known:
        return "the clock-event reasons not read: a locked clock or a slowdown"
    return "no clock-event reason active: a locked clock, `nvidia-smi -lgc`"


# reasons that are a setting, not a slowdown: clocks held at the application clocks (`-ac`; a
# Kepler Tesla's default ones sit below its max clocks, K20m 705 of 758 MHz), a sync-boost group,
# the display clock
_SETTINGS = ("applications_clocks_setting", "sync_boost", "display_clock_setting")


def _settings_named(gpus: list[GpuInfo]) -> str:
    """'; GPU 0: applications_clocks_setting active (a clock setting, no slowdown)' for the setting
    reasons active beside a passing row (it said "none active" with them active), else ''."""
    named = [
        f"{gpu_label(g)}: {', '.join(held)}"
        for g in gpus
        if (held := [r for r in g.clock_event_reasons if r in _SETTINGS])
    ]
    return f"; {'; '.join(named)} active (a clock setting)" if named else ""


def _requested(g: GpuInfo) -> str:
    """' (900 W requested)' where the requested limit differs from the enforced one, else ''."""
    asked = g.requested_power_limit_w
    return f" ({asked:.0f} W requested)" if asked is not None and asked != g.power_limit_w else ""


def _idle_far_below_cap(g: GpuInfo) -> bool:
    """An idle GPU (is_idle: P8, gpu_idle) drawing under half its enforced limit: a power cap
    the driver reports then slows nothing."""
    draw, cap = g.power_draw_w, g.power_limit_w
    return is_idle(g) and draw is not None and cap is not None and cap > 0 and draw < cap / 2


def rule_temperature(gpus: list[GpuInfo], warn_c: float, fail_c: float) -> Check:
    """GPU temperature below the thresholds (lower of the configured and the card's slowdown point).
    0 C or below is no reading (a GPU that runs is warmer than that): a vGPU guest's nvidia-smi
    prints 0 C with every threshold N/A, as a sensor the driver cannot read does."""
    zero = [g for g in gpus if g.temperature_c is not None and g.temperature_c <= 0]
    temps = [(g, g.temperature_c) for g in gpus if g.temperature_c is not None and g.temperature_c > 0]
    if not temps:
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            f"{zero[0].temperature_c} C on {gpu_list(zero, gpus)}: no reading" if zero else "not reported",
            "unverified",
            "nvidia-smi reads 0 C where the sensor cannot be read (a vGPU guest, a driver fault);"
            " the host's own `nvidia-smi -q -d TEMPERATURE` shows it"
            if zero
            else "no nvidia-smi format that answered reports the GPU temperature",
        )
    g, hottest = max(temps, key=lambda x: x[1] or 0)
    assert hottest is not None
    limit = fail_c if g.temperature_slowdown_c is None else min(fail_c, g.temperature_slowdown_c - 2)
    actual = f"{hottest} C on {gpu_label(g)}" + (
        f" ({gpu_list(zero, gpus)}: 0 C, no reading)" if zero else ""
    )
    if hottest >= limit:
        return Check(
            "temperature",
            f"< {limit:.0f} C",
            actual,
            "fail",
            "the GPU is near its slowdown point; ask the vendor to check airflow and fans",
        )
    if hottest >= warn_c:
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            actual,
            "warn",
            "hot for a delivery check; watch it under load",
        )
    return Check("temperature", f"< {warn_c:.0f} C", actual, "pass")
