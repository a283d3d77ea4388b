"""The throttling rule of gpu_health (steps/checks/gpu_health/clocks.py) on the clocks a GPU runs
at: a busy GPU whose SM clock a setting holds far below its max, judged in each nvidia-smi
format's own reading (its clock beside its own load), on real captures edited in-test."""

from __future__ import annotations

from pathlib import Path

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
