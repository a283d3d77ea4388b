"""The throttling rule of gpu_health (steps/checks/gpu_health/clocks.py) on the clocks a GPU runs
at: a busy GPU whose SM clock a setting holds far below its max, judged in each nvidia-smi
format's own reading (its clock beside its own load), on real captures edited in-test."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any

from ....facts.test_gpu_merge import REAL, _judged, csv_edited

# the real H200 under a ResNet-50 load (driver 590.48.01): a CSV of ~200 fields and its -q, at
# 100 % utilisation, SM 1980 of 1980 MHz, every clock-event reason Not Active
H200_LOAD_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"
H200_LOAD_Q = REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
K20M_XML = REAL / "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml"
# a lock to 1095 MHz (`nvidia-smi -lgc 1095`), as the CSV prints it
LOCKED = {"clocks.current.sm [MHz]": "1095 MHz", "clocks.current.graphics [MHz]": "1095 MHz"}


def test_the_clocks_are_read_in_each_format() -> None:
    """-q, -q -x and the CSV give the SM clock and its max; the application clocks where the
    driver still reports them (R580+ prints "Requested functionality has been deprecated": none)."""
    q = parse_any(H200_LOAD_Q.read_text()).gpus[0]
    assert (q.clocks_sm_mhz, q.clocks_sm_max_mhz, q.clocks_applications_mhz) == (1980, 1980, None)
    row = parse_any(H200_LOAD_CSV.read_text()).gpus[0]
    assert (row.clocks_sm_mhz, row.clocks_sm_max_mhz, row.clocks_applications_mhz) == (1980, 1980, None)
    k20m = parse_any(K20M_XML.read_text()).gpus[0]
    assert (k20m.clocks_sm_mhz, k20m.clocks_sm_max_mhz) == (705, 758)
    assert (k20m.clocks_applications_mhz, k20m.clocks_default_applications_mhz) == (705, 705)


def test_a_busy_gpu_at_its_max_clock_passes(tmp_path: Path) -> None:
    """The real H200 CSV unedited: 100 %, SM at its max, no reason active: pass."""
    _facts, got = _judged(tmp_path, (H200_LOAD_CSV,))
    assert got["throttling"].verdict == "pass", got["throttling"]


def test_a_locked_clock_on_a_busy_gpu_warns(tmp_path: Path) -> None:
    """The real H200 CSV at 100 % utilisation with its SM and graphics clocks edited from 1980 to
    1095 MHz (a `nvidia-smi -lgc 1095` lock, which sets no clock-event reason). Before: pass
    ("none active"): a box held at 55 % of its clock passed as unthrottled."""
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (H200_LOAD_CSV,), LOCKED))
    check = got["throttling"]
    assert check.verdict == "warn", check
    assert "GPU 0: SM clock 1095 of 1980 MHz at 100 % utilisation" in check.actual
    assert "a locked clock, `nvidia-smi -lgc`" in check.actual
    assert "`sudo nvidia-smi -rgc`" in check.detail and "`sudo nvidia-smi -rac`" in check.detail


def test_application_clocks_holding_a_busy_gpu_warn(tmp_path: Path) -> None:
    """The real H200 CSV with the SM clock edited to 1095 MHz and its Applications Clocks Setting
    reason edited to Active (mask 0x2, `nvidia-smi -ac`). Before: pass, the reason named only as
    "a clock setting"."""
    cells = {
        **LOCKED,
        "clocks_event_reasons.active": "0x0000000000000002",
        "clocks_event_reasons.applications_clocks_setting": "Active",
    }
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (H200_LOAD_CSV,), cells))
    check = got["throttling"]
    assert check.verdict == "warn", check
    assert "the application clocks set: `nvidia-smi -ac`" in check.actual


def test_a_clock_held_in_one_format_warns_beside_another_at_max(tmp_path: Path) -> None:
    """The real H200 -q (1980 of 1980 MHz at 100 %) beside its CSV edited to 1095 MHz at 100 %:
    the merged GPU takes -q's clock, but the CSV's own reading (its clock beside its own load,
    GpuInfo.readings) is judged too. Before: pass."""
    box = csv_edited(tmp_path, (H200_LOAD_Q, H200_LOAD_CSV), LOCKED)
    facts, got = _judged(tmp_path, box)
    assert facts.gpu is not None and facts.gpu.gpus[0].clocks_sm_mhz == 1980
    check = got["throttling"]
    assert check.verdict == "warn", check
    assert "1095 of 1980 MHz at 100 % utilisation in the CSV query" in check.actual


def test_a_setting_on_an_idle_gpu_passes(tmp_path: Path) -> None:
    """The real Tesla K20m -q -x: application clocks 705 MHz (its default, below the 758 MHz max)
    with their reason active, at 4 % utilisation: no load held back, pass as before."""
    _facts, got = _judged(tmp_path, (K20M_XML,))
    check = got["throttling"]
    assert check.verdict == "pass", check
    assert "applications_clocks_setting active (a clock setting)" in check.actual


T4_XML = REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml"
# the CSV's clock-event reason cells, each printed `[N/A]` (a driver or a vGPU guest that cannot
# read them): no reason's state read
REASONS_NA = {
    "clocks_event_reasons.active": "[N/A]",
    **{
        f"clocks_event_reasons.{r}": "[N/A]"
        for r in (
            "gpu_idle",
            "applications_clocks_setting",
            "sw_power_cap",
            "hw_slowdown",
            "hw_thermal_slowdown",
            "hw_power_brake_slowdown",
            "sw_thermal_slowdown",
            "sync_boost",
        )
    },
}


def _q_edited(tmp_path: Path, sm: int, reasons: dict[str, str] | None = None, drop: bool = False) -> Path:
    """The real H200 -q under load (100 %, P0) with its current SM and graphics clocks set to `sm`
    MHz, the named Clocks Event Reasons lines set to their value, or (drop) that section cut out."""
    lines = H200_LOAD_Q.read_text().splitlines(keepends=True)
    at = lines.index("    Clocks\n")
    for i in (at + 1, at + 2):
        lines[i] = lines[i].replace("1980 MHz", f"{sm} MHz")
    start = lines.index("    Clocks Event Reasons\n")
    for i in range(start + 1, start + 10):
        label = lines[i].split(":")[0].strip()
        if label in (reasons or {}):
            lines[i] = f"{lines[i].split(':')[0]}: {(reasons or {})[label]}\n"
    if drop:
        del lines[start : start + 10]
    (tmp_path / "q").mkdir(exist_ok=True)
    edited = tmp_path / "q" / H200_LOAD_Q.name
    edited.write_text("".join(lines))
    return edited


def test_a_low_clock_in_a_csv_without_reasons_read_claims_no_setting(tmp_path: Path) -> None:
    """The real H200 CSV with its SM clock edited to 1095 MHz at 100 % and every clock-event reason
    cell edited to `[N/A]` (an L4 under its power cap in a CSV that did not ask the reasons reads
    so). Before: warn "a locked clock or a slowdown" with the advice to reset the clocks (`-rgc`,
    `-rac`): a claim of a setting from reasons never read."""
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (H200_LOAD_CSV,), {**LOCKED, **REASONS_NA}))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "SM clock 1095 of 1980 MHz at 100 % utilisation with its power-cap and slowdown" in check.actual
    assert "-rgc" not in check.detail and "-rac" not in check.detail


def test_a_low_clock_in_a_q_without_its_reasons_section_claims_no_setting(tmp_path: Path) -> None:
    """The real H200 -q under load with SM 1100 MHz and its Clocks Event Reasons section cut out.
    Before: warn with the advice to reset a clock setting."""
    _facts, got = _judged(tmp_path, (_q_edited(tmp_path, 1100, drop=True),))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "-rgc" not in check.detail and "1100 of 1980 MHz" in check.actual


def test_a_power_cap_in_one_format_gets_no_setting_advice_from_another(tmp_path: Path) -> None:
    """The real H200 -q edited to SM 1400 MHz with SW Power Cap Active, beside its CSV edited to
    SM 1095 MHz with every reason `[N/A]`: one GPU under its power cap. Before: warn with both
    the power-cap advice and the advice to reset a clock setting (contradictory, in one row)."""
    q = _q_edited(tmp_path, 1400, {"SW Power Cap": "Active"})
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (q, H200_LOAD_CSV), {**LOCKED, **REASONS_NA}))
    check = got["throttling"]
    assert check.verdict == "warn" and "GPU 0: sw_power_cap" in check.actual, check
    assert "-rgc" not in check.detail and "power limit" in check.detail


@pytest.mark.parametrize(
    "reasons",
    [{"SW Power Cap": "N/A"}, {"SW Thermal Slowdown": "N/A"}],
    ids=["sw-power-cap-na", "sw-thermal-na"],
)
def test_a_partly_read_reasons_set_is_not_none_active(tmp_path: Path, reasons: dict[str, str]) -> None:
    """The real H200 -q under load at SM 1100 MHz with one reason (the power cap, a slowdown)
    edited to `N/A`, the others Not Active: that reason may be the one holding the clock. Before:
    warn "no clock-event reason active: a locked clock"."""
    _facts, got = _judged(tmp_path, (_q_edited(tmp_path, 1100, reasons),))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "locked clock" not in check.actual and "-rgc" not in check.detail


def test_a_partly_read_csv_reasons_set_is_not_none_active(tmp_path: Path) -> None:
    """The real H200 CSV at SM 1095 MHz with its mask and sw_power_cap cells edited to `[N/A]`
    (hw_slowdown and the others still Not Active). Before: warn "a locked clock"."""
    cells = {**LOCKED, "clocks_event_reasons.active": "[N/A]", "clocks_event_reasons.sw_power_cap": "[N/A]"}
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (H200_LOAD_CSV,), cells))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "locked clock" not in check.actual


def test_an_idle_reading_holds_no_load_back(tmp_path: Path) -> None:
    """The real H200 -q at SM 345 MHz with Idle Active (an idle moment beside a trailing
    utilisation average of 100 %). Before: warn "a locked clock"."""
    _facts, got = _judged(tmp_path, (_q_edited(tmp_path, 345, {"Idle": "Active"}),))
    assert got["throttling"].verdict == "pass", got["throttling"]


def test_a_reading_at_an_idle_p_state_holds_no_load_back(tmp_path: Path) -> None:
    """The real H200 CSV edited to P8 at SM 210 MHz (utilisation 100 % kept). Before: warn
    "a locked clock" (the P-state was never looked at)."""
    cells = {"pstate": "P8", "clocks.current.sm [MHz]": "210 MHz", "clocks.current.graphics [MHz]": "210 MHz"}
    _facts, got = _judged(tmp_path, csv_edited(tmp_path, (H200_LOAD_CSV,), cells))
    assert got["throttling"].verdict == "pass", got["throttling"]


@pytest.mark.parametrize(
    ("label", "named"),
    [("Sync Boost", "sync_boost active"), ("Display Clock Setting", "display_clock_setting active")],
)
def test_a_setting_reason_active_is_named_as_the_holder(tmp_path: Path, label: str, named: str) -> None:
    """The real H200 -q at SM 1100 MHz with Sync Boost (or Display Clock Setting) edited to Active.
    Before: warn "no clock-event reason active: a locked clock" with that reason active."""
    _facts, got = _judged(tmp_path, (_q_edited(tmp_path, 1100, {label: "Active"}),))
    check = got["throttling"]
    assert check.verdict == "warn", check
    assert named in check.actual and "locked clock" not in check.actual
    assert "-rgc" not in check.detail


def test_application_clocks_at_their_default_are_not_a_setting(tmp_path: Path) -> None:
    """The real Tesla T4 -q -x (SM 585 MHz = its default application clocks, max 1590 MHz) with
    its GPU utilisation edited from 0 % to 100 %: nothing was set, `-rac` changes nothing.
    Before: warn "a locked clock" with the advice `-rgc` / `-rac`."""
    text = T4_XML.read_text().replace("<gpu_util>0 %</gpu_util>", "<gpu_util>100 %</gpu_util>")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / T4_XML.name).write_text(text)
    _facts, got = _judged(tmp_path, (tmp_path / "x" / T4_XML.name,))
    check = got["throttling"]
    assert check.verdict == "pass", check
    assert "at its default application clocks, 585 MHz" in check.actual


# the real A10 at idle (P8, `Idle : Active`) whose driver reports `SW Power Cap : Active` at
# ~15 W of its 150 W limit: whole, throttling passes ("sw_power_cap at idle ... no effect")
IDLE_CAPPED = REAL / "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"


def test_an_idle_power_cap_whose_power_readings_were_cut_is_unverified(tmp_path: Path) -> None:
    """Edit: the real idle A10 `-q` cut after each line from its `SW Power Cap : Active` down to
    its `Power Readings` (the power draw and limit below the cut). Before: throttling warned
    "sw_power_cap" on each cut though the whole output passes it (far below its cap at idle);
    now unverified, naming the cut, and the whole output still passes."""
    lines = IDLE_CAPPED.read_text().splitlines(keepends=True)
    cap = next(i for i, line in enumerate(lines) if "SW Power Cap" in line)
    power = next(i for i in range(cap, len(lines)) if "Power Samples" in lines[i] or "Power Draw" in lines[i])
    for n in range(cap + 1, power + 1):
        folder = tmp_path / f"cut{n}"
        folder.mkdir()
        (folder / IDLE_CAPPED.name).write_text("".join(lines[:n]))
        _facts, got = _judged(folder, (folder / IDLE_CAPPED.name,))
        assert got["throttling"].verdict == "unverified", (n, got["throttling"])
        assert "its power draw cut from the output" in got["throttling"].actual, n
    _facts, got = _judged(tmp_path, (IDLE_CAPPED,))
    assert got["throttling"].verdict == "pass", got["throttling"]


def test_an_idle_power_cap_whose_power_draw_was_na_above_the_cut_is_no_cut_draw(tmp_path: Path) -> None:
    """Edit: the real idle A10 `-q`, its `GPU Power Readings` `Power Draw` edited from 15.65 W
    to N/A, cut after each line from the section after its power readings down to line 200 (in
    Clocks). Before: unverified "its power draw cut from the output", false: nvidia-smi printed
    N/A above the cut. Now the cap is said as read ("GPU 0: sw_power_cap"), a warn as the whole
    edited output's (an N/A draw cannot show the cap holds nothing back): the cut took no part
    that can fail throttling (its clock event reasons were read whole above it; round 28 made it
    unverified as any warn of a cut output, gpu_health `RULE_PARTS` keeps it)."""
    text = IDLE_CAPPED.read_text()
    assert "        Power Draw                        : 15.65 W\n" in text
    text = text.replace(
        "Power Draw                        : 15.65 W", "Power Draw                        : N/A", 1
    )
    lines = text.splitlines(keepends=True)
    power = next(i for i, line in enumerate(lines) if line.startswith("    GPU Power Readings"))
    after = next(
        i for i in range(power + 1, len(lines)) if lines[i].startswith("    ") and lines[i][4] != " "
    )
    for n in (after + 1, after + 3, 200):
        folder = tmp_path / f"cut{n}"
        folder.mkdir()
        (folder / IDLE_CAPPED.name).write_text("".join(lines[:n]))
        _facts, got = _judged(folder, (folder / IDLE_CAPPED.name,))
        assert (got["throttling"].verdict, got["throttling"].actual) == ("warn", "GPU 0: sw_power_cap"), n
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / IDLE_CAPPED.name).write_text(text)
    _facts, got = _judged(tmp_path / "whole", (tmp_path / "whole" / IDLE_CAPPED.name,))
    assert (got["throttling"].verdict, got["throttling"].actual) == ("warn", "GPU 0: sw_power_cap")


JESSE = (
    "session__nvidia-smi-L-q-i0__rtx-4070-laptop__driver566.36__limit-above-default"
    "__multilanguagelearning.txt"
)


def test_a_limit_above_its_default_passes_with_its_figures(tmp_path: Path) -> None:
    """Jesse3692/MultiLanguageLearning: an RTX 4070 Laptop GPU's `nvidia-smi -q -i 0`, Current
    Power Limit 61.24 W over a Default Power Limit of 55.00 W (the laptop's Dynamic Boost). Before,
    power_limit passed "at default", which is false; it passes saying the figures read now."""
    from ....offline_judge import verdicts

    got = verdicts(tmp_path, "session.txt", (REAL / JESSE).read_text(), "gpu_count: 1\n")
    assert got["power_limit"] == ("pass", "GPU 0 61.24 W, above its 55.00 W default")
