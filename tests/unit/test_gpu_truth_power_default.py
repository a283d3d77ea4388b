"""`power_limit` passes "at default" only when nvidia-smi gave the default limit.

The plain table prints only the enforced cap ("Pwr:Usage/Cap"): before, any table passed as
"at default", so an H100 SXM capped at 500 W of its 700 W would have passed too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[1] / "fixtures" / "real"


def power_check(text: str) -> gpu_health.Check:
    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return next(c for c in gpu_health.evaluate(facts) if c.name == "power_limit")


@pytest.mark.parametrize(
    ("fixture", "actual"),
    [
        ("nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt", "enforced 700 W; default not reported"),
        ("nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt", "enforced 500 W; default not reported"),
        ("nvidia-smi__l40s__1gpu__driver550.127.05.txt", "enforced 350 W; default not reported"),
    ],
)
def test_table_cannot_tell_the_default(fixture: str, actual: str) -> None:
    check = power_check((REAL / fixture).read_text())
    assert (check.verdict, check.actual) == ("unverified", actual)
    assert "nvidia-smi -q -d POWER" in check.detail


def test_capped_h100_in_a_table_is_not_at_default() -> None:
    """The real 8 x H100 table with GPU 0's cap lowered to 500 W (one edit, made here)."""
    text = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()
    assert text.count("/  700W |") == 8
    check = power_check(text.replace("/  700W |", "/  500W |", 1))
    assert check.verdict == "unverified" and check.actual == "enforced 500 W, 700 W; default not reported"


@pytest.mark.parametrize(
    "fixture",
    [
        "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
        "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
        "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
    ],
)
def test_forms_with_the_default_still_pass(fixture: str) -> None:
    check = power_check((REAL / fixture).read_text())
    assert (check.verdict, check.actual) == ("pass", "at default")
