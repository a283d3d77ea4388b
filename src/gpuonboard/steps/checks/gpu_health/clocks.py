"""The power, throttle and heat rules of gpu_health: the enforced power limit against the card's
default, active clock-event (throttle) reasons, and the hottest GPU's temperature."""

from __future__ import annotations

from gpuonboard.facts.gpu_agree import FORMAT_NAMES, own_readings
from gpuonboard.facts.nvidia_smi import CLOCK_EVENT_REASONS, GpuInfo
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.gpu_health.common import (
    HARD_THROTTLE,
    IDLE_PSTATES,
    gpu_label,
    gpu_list,
    is_idle,
)
from gpuonboard.steps.checks.gpu_health.readings import temperature_unreal


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
        return Check("power_limit", "default power limit", _uncapped(gpus), "pass")
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


def _uncapped(gpus: list[GpuInfo]) -> str:
    """The passing row of GPUs none capped: "at default", or the figures read of each GPU whose
    limit is not its default ("GPU 0 61.24 W, above its 55.00 W default": a laptop's Dynamic
    Boost; before, "at default" of it was false)."""
    off = [
        f"{gpu_label(g)} {g.power_limit_w:.2f} W,"
        f" {'above' if g.power_limit_w > g.default_power_limit_w else 'below'}"
        f" its {g.default_power_limit_w:.2f} W default"
        for g in gpus
        if g.power_limit_w
        and g.default_power_limit_w
        and abs(g.power_limit_w - g.default_power_limit_w) >= 0.5
    ]
    if not off:
        return "at default"
    return "; ".join(off) + ("; the others at default" if len(off) < len(gpus) else "")


def rule_throttle(gpus: list[GpuInfo]) -> Check:
    """No hardware slowdown or thermal throttling active; a software power cap is a warning,
    except on an idle GPU drawing far below its limit (P8 at 15 W of 150 W: A10, A40 and RTX
    A6000 report it so), where it holds nothing back (named in a passing row)."""
    hard, soft, idle, other, undecided = _reasons(gpus)
    held, unread = _held_clocks(gpus)
    # (the application clocks at their default: nothing set, no warning; named in a pass)
    at_default = [text for text, kind in held if kind == "default"]
    held = [(text, kind) for text, kind in held if kind != "default"]
    advice_held = _held_advice(held)
    texts = [text for text, _kind in held]
    if hard:
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(hard + soft + other + texts + unread),
            "fail",
            "the GPU slows itself down (heat, power brake or a hardware fault);"
            " ask the vendor to check cooling and power" + (f"; {advice_held}" if held else ""),
        )
    if soft or other or held:
        advice = [advice_held] if held else []
        if soft:
            advice.append("clocks are held at the power limit; normal under full load, suspicious at idle")
        if other:
            advice.append(
                "nvidia-smi reports a clock-event reason active that this tool cannot judge: something"
                " holds the clocks back; `nvidia-smi -q -d PERFORMANCE,CLOCK` under load shows whether"
                " they reach their maximum"
            )
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(soft + other + texts + unread),
            "warn",
            "; ".join(advice),
        )
    known = any(g.clock_event_reasons_known for g in gpus)
    if undecided:
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(undecided + unread),
            "unverified",
            "a power cap at idle holds nothing back where the GPU draws far below it, which the part"
            " of the output cut away says: save the whole `nvidia-smi -q`",
        )
    if known and unread:
        return Check("throttling", "no slowdown active", "; ".join(unread), "unverified", UNREAD_HELD_ADVICE)
    if known:
        settings = _settings_named(gpus) + "".join(f"; {text}" for text in at_default)
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
        "not reported" + (f" ({'; '.join(unread)})" if unread else ""),
        "unverified",
        "this nvidia-smi output gives no clock-event (throttle) reasons; `nvidia-smi -q -d PERFORMANCE`"
        " shows them" + (f"; {UNREAD_HELD_ADVICE}" if unread else ""),
    )


def _reasons(gpus: list[GpuInfo]) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """The GPUs' active reasons, each said per GPU: (hardware slowdowns, power caps, power caps
    at idle far below the cap, reasons this tool does not know, power caps at idle whose power
    readings a cut took). A power draw of N/A printed above a cut is nvidia-smi's, never the
    cut's (`power_read`): that cap is judged as any other."""
    hard: list[str] = []
    soft: list[str] = []
    idle: list[str] = []
    other: list[str] = []
    undecided: list[str] = []
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
            elif (
                is_idle(g) and g.record_cut and not g.power_read and None in (g.power_draw_w, g.power_limit_w)
            ):
                # (an idle GPU whose power readings its output's cut took: far below its cap or not)
                undecided.append(f"{gpu_label(g)}: sw_power_cap at idle, its power draw cut from the output")
            else:
                soft.append(f"{gpu_label(g)}: sw_power_cap")
    return hard, soft, idle, other, undecided


# a GPU at this utilisation or more whose SM clock is below this share of its max, with no
# slowdown, power cap or unknown reason active in the same reading, is held there by a setting:
# a clock lock (`nvidia-smi -lgc`, which sets no clock-event reason) or the application clocks
# (`-ac`); a GPU under load otherwise boosts to its max (the real H200 at 100 %: 1980 of 1980 MHz)
_BUSY_PCT = 50
_HELD_SHARE = 0.75
# the reasons a reading must have read the state of (Active / Not Active) before "none of them
# active" says a setting holds its clock: the power cap and every slowdown. A reading that
# printed one N/A, or no reasons at all (a CSV that did not ask them), could hide a power cap
# (an L4 under its 72 W cap runs so) or a slowdown: its low clock is no claim of a setting
MUST_READ = ("sw_power_cap", *HARD_THROTTLE)
HELD_ADVICE = (
    "a clock setting holds the SM clock far below its max under load (not heat or power): the box"
    " runs slower than ordered; ask the vendor to reset it (`sudo nvidia-smi -rgc` for locked"
    " clocks, `sudo nvidia-smi -rac` for the application clocks) and check that the SM clock"
    " reaches its max under load (`nvidia-smi -q -d CLOCK`)"
)
# what holds the clock where the driver names a setting other than the clocks set by nvidia-smi
_OTHER_HOLDERS = {
    "sync_boost": (
        "sync_boost active: the clock follows the slowest GPU of its sync-boost group",
        "a sync-boost group holds the SM clock to its slowest GPU's under load: ask the vendor to"
        " check that group's GPUs (one held back holds all) and that the SM clock reaches its max"
        " under load (`nvidia-smi -q -d CLOCK`)",
    ),
    "display_clock_setting": (
        "display_clock_setting active: the display clock setting holds it",
        "the display clock setting holds the SM clock below its max under load: ask the vendor to"
        " check the display settings of this GPU (a compute box drives no display)",
    ),
}
UNREAD_HELD_ADVICE = (
    "a busy GPU's SM clock reads far below its max in an output that did not read its clock-event"
    " reasons (the power cap and the slowdowns): a power cap, a slowdown or a clock setting could"
    " hold it; `nvidia-smi -q -d PERFORMANCE,CLOCK` under load says which"
)


def _held_clocks(gpus: list[GpuInfo]) -> tuple[list[tuple[str, str]], list[str]]:
    """(text, holder) per GPU one of whose formats read it busy with its SM clock far below its
    max and nothing but a setting active to explain it ('GPU 0: SM clock 1095 of 1980 MHz at 100 %
    utilisation (no clock-event reason active: a locked clock ...)', 'lock'), and the notes of
    the GPUs whose only such reading did not read the power cap and slowdowns (MUST_READ): no
    claim of a setting there. Each format's clock is judged beside its own load and reasons
    (gpu_agree.own_readings); an idle reading (gpu_idle, P5 or slower) holds no load back."""
    held: list[tuple[str, str]] = []
    unread: list[str] = []
    for g in gpus:
        notes = []
        for label, c in own_readings(g):
            sm, top, util = c.clocks_sm_mhz, c.clocks_sm_max_mhz or g.clocks_sm_max_mhz, c.utilization_gpu_pct
            if sm is None or not top or util is None or util < _BUSY_PCT or sm >= top * _HELD_SHARE:
                continue
            if "gpu_idle" in c.clock_event_reasons or c.performance_state in IDLE_PSTATES:
                continue  # (an idle moment beside a trailing utilisation average)
            if any(
                r == "sw_power_cap" or r in HARD_THROTTLE or r not in CLOCK_EVENT_REASONS
                for r in c.clock_event_reasons
            ):
                continue  # (a slowdown, a power cap or an unknown reason: named as such)
            where = f" in {FORMAT_NAMES.get(label, label)}" if label else ""
            said = f"{gpu_label(g)}: SM clock {sm} of {top} MHz at {util} % utilisation{where}"
            if not c.clock_event_reasons_known or not set(MUST_READ) <= set(c.clock_event_reasons_read):
                notes.append(f"{said} with its power-cap and slowdown reasons not read")
                continue
            text, kind = _holder(c, g, sm)
            held.append((f"{said} ({text})", kind))
            break
        else:
            unread += notes[:1]
    return held, unread


def _held_advice(held: list[tuple[str, str]]) -> str:
    """The advice for what holds the clocks: reset the setting (lock, application clocks), or
    check the sync-boost group or the display setting the driver names."""
    kinds = dict.fromkeys(kind for _text, kind in held)
    advice = [HELD_ADVICE] if {"lock", "app"} & set(kinds) else []
    return "; ".join(advice + [_OTHER_HOLDERS[k][1] for k in kinds if k in _OTHER_HOLDERS])


def _holder(c: GpuInfo, g: GpuInfo, sm: int) -> tuple[str, str]:
    """What holds the clock and its kind: the application clocks where they are set below their
    default (or their reason is active), a sync-boost group or the display clock where their
    reason is active, else a locked clock (which sets no reason). Kind 'default' where the SM
    clock runs at the application clocks at their default (a Kepler Tesla's default sits below
    its max, a K80 with auto boost off runs 562 of 875 MHz): nothing was set and `-rac` would
    change nothing, so the row names it and passes."""
    app = c.clocks_applications_mhz or g.clocks_applications_mhz
    default = c.clocks_default_applications_mhz or g.clocks_default_applications_mhz
    if app and default and app == default and abs(sm - app) <= app * 0.05:
        return f"at its default application clocks, {app} MHz: nothing set, no boost above them", "default"
    if "applications_clocks_setting" in c.clock_event_reasons or (app and default and app < default):
        shown = f" {app} MHz" + (f" (default {default} MHz)" if default else "") if app else ""
        return f"the application clocks set{shown}: `nvidia-smi -ac`", "app"
    for reason, (text, _advice) in _OTHER_HOLDERS.items():
        if reason in c.clock_event_reasons:
            return text, reason
    return "no clock-event reason active: a locked clock, `nvidia-smi -lgc`", "lock"


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
    # (above any temperature a GPU runs at, 255 C: a sensor's sentinel, no reading either)
    zero = [
        g
        for g in gpus
        if g.temperature_c is not None and (g.temperature_c <= 0 or temperature_unreal(g.temperature_c))
    ]
    temps = [(g, g.temperature_c) for g in gpus if g.temperature_c is not None and g not in zero]
    if not temps:
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            f"{zero[0].temperature_c} C on {gpu_list(zero, gpus)}: no reading" if zero else "not reported",
            "unverified",
            "nvidia-smi reads 0 C where the sensor cannot be read (a vGPU guest, a driver fault),"
            " and a figure above any a GPU runs at is a sensor's sentinel;"
            " the host's own `nvidia-smi -q -d TEMPERATURE` shows it"
            if zero
            else "no nvidia-smi format that answered reports the GPU temperature",
        )
    g, hottest = max(temps, key=lambda x: x[1] or 0)
    assert hottest is not None
    limit = fail_c if g.temperature_slowdown_c is None else min(fail_c, g.temperature_slowdown_c - 2)
    # (an `-l` log's hottest sample of the GPU, its row named)
    row = f" (CSV row {g.temperature_row}, its hottest sample)" if g.temperature_row else ""
    actual = f"{hottest} C on {gpu_label(g)}{row}" + (
        "".join(
            f" ({gpu_list(same, gpus)}: {same[0].temperature_c} C, no reading)"
            for t in dict.fromkeys(z.temperature_c for z in zero)
            if (same := [z for z in zero if z.temperature_c == t])
        )
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
    if zero:
        # (a GPU whose sensor gave no reading is never inside a pass: it may be the hot one)
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            actual,
            "unverified",
            f"{gpu_list(zero, gpus)}: no temperature reading (0 C where the sensor cannot be read, or"
            " a figure above any a GPU runs at, a sensor's sentinel); the host's own `nvidia-smi -q"
            " -d TEMPERATURE` shows it",
        )
    return Check("temperature", f"< {warn_c:.0f} C", actual, "pass")
