"""An lscpu narrowed by grep whose kept lines are the core count's own (Socket(s) x Core(s) per
socket): a line grep hid can only lower that count (offline CPUs; another CPU type prints lines of
the same labels, which the pattern keeps), so fewer cores than ordered is the box's, as the whole
lscpu says (steps/checks/host_rules._lscpu_narrowed; measure38e 01: `lscpu | grep -E
"^(Model name|CPU\\(s\\)|Thread|Core|Socket)"`, 4 cores / 8 threads, order 8: unverified)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
DSW = (
    "session__pai-dsw-prompt__nvidia-smi-a10+lscpu-grep-E-cpus-threads-cores-sockets-4c-8t__zh-nccl-notes.txt"
)
GREP = 'lscpu | grep -E "^(Model name|CPU\\(s\\)|Thread|Core|Socket)"'


def _cores(tmp_path: Path, text: str, ordered: int) -> tuple[str, str]:
    return verdicts(tmp_path, DSW, text, f"gpu_model: A10\ngpu_count: 1\ncpu_cores: {ordered}\n")["cpu_cores"]


def test_the_kept_lines_cap_the_cores_below_the_order(tmp_path: Path) -> None:
    text = (REAL / DSW).read_text(encoding="utf-8")
    assert GREP in text
    got = _cores(tmp_path, text, 8)
    whole = _cores(tmp_path, text.replace(GREP, "lscpu"), 8)
    assert whole[0] == "warn"
    assert got[0] == whole[0] and got[1].startswith("4 cores / 8 threads"), got
    assert _cores(tmp_path, text, 16)[0] == "fail"


def test_a_count_the_kept_lines_meet_stays_unverified(tmp_path: Path) -> None:
    """4 cores ordered: an Off-line CPU(s) line grep hid would make it fewer: not known."""
    text = (REAL / DSW).read_text(encoding="utf-8")
    assert _cores(tmp_path, text, 4)[0] == "unverified"


@pytest.mark.parametrize(
    "narrowed",
    [
        'lscpu | grep -m 4 -E "^(Model name|CPU\\(s\\)|Thread|Core|Socket)"',
        'lscpu | grep -E "^(Model name|CPU\\(s\\)|Thread|Core|Socket)" | head -5',
        'lscpu | sed -n "/^CPU(s)/,/^Socket/p"',
    ],
)
def test_a_filter_that_may_stop_early_proves_no_cap(tmp_path: Path, narrowed: str) -> None:
    """The family: a grep that stops after some matches, a head after it, a sed range: a second
    CPU type's lines may be among those hidden, so the shortfall is not known."""
    text = (REAL / DSW).read_text(encoding="utf-8").replace(GREP, narrowed)
    assert _cores(tmp_path, text, 8)[0] == "unverified"
