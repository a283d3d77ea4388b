"""gpu_health's `gpu_recovery` row: NVML's GPU Recovery Action as every format that carries it
prints it (real captures of drivers 570-610, all `None`), and the same captures with the action
NVIDIA's memory error guide names in place of `None` (the one change made to them)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.checks.gpu_health.recovery import rule_recovery_action

REAL = Path(__file__).parents[3] / "fixtures" / "real"
CARRY = [
    "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
    "nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
    "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
    "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
    "nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml",
    "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml",
    "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv",
    "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
]


def _with_action(name: str, action: str) -> str:
    """The capture with `action` where it says None."""
    text = (REAL / name).read_text()
    if name.endswith(".xml"):
        return text.replace("<gpu_recovery_action>None<", f"<gpu_recovery_action>{action}<")
    if name.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
        at = rows[0].index("gpu_recovery_action")
        rows[1][at] = action
        return "\n".join(", ".join(r) for r in rows) + "\n"
    old = "GPU Recovery Action                                : None"
    assert old in text
    return text.replace(old, old.replace("None", action))


@pytest.mark.parametrize("name", CARRY)
def test_every_format_reads_the_action_and_none_passes(name: str) -> None:
    gpus = list(parse_any((REAL / name).read_text()).gpus)
    assert [g.recovery_action for g in gpus] == ["None"]
    check = rule_recovery_action(gpus)
    assert check is not None and (check.verdict, check.actual) == ("pass", "None on GPU 0")


@pytest.mark.parametrize("name", CARRY)
@pytest.mark.parametrize(
    ("action", "asked"),
    [("Reset", "GPU reset"), ("Drain and Reset", "drained and the GPU reset"), ("Bus Reset", "PCIe bus")],
)
def test_a_pending_action_fails_naming_it(name: str, action: str, asked: str) -> None:
    gpus = list(parse_any(_with_action(name, action)).gpus)
    check = rule_recovery_action(gpus)
    assert check is not None and check.verdict == "fail", check
    assert check.actual == f"GPU 0: {action}" and asked in check.detail, check


def test_no_row_where_no_format_reports_it_and_an_unknown_action_is_quoted() -> None:
    table = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()
    assert rule_recovery_action(list(parse_any(table).gpus)) is None  # (not said: not judged)
    gpus = list(parse_any(_with_action(CARRY[0], "Recover IMEX Domain")).gpus)
    check = rule_recovery_action(gpus)
    assert check is not None and check.verdict == "fail" and "'Recover IMEX Domain'" in check.detail
