"""The note a row of an nvidia-smi output cut short carries ("(of what was read; incomplete
probe: ... was cut off)"): said once, and only where the part cut away could have held what the
row judges. Real table captures that end without their closing border (tests/fixtures/real),
judged as saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
A30 = "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt"
H100 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver580.95.05__indented__no-processes.txt"
CUT_NOTE = "incomplete probe: nvidia-smi's output lists 8 GPU(s) and was cut off"


@pytest.mark.parametrize("name", [A30, H100])
def test_foreign_processes_says_the_cut_once(tmp_path: Path, name: str) -> None:
    """foreign_processes of a table cut short (busy GPUs, no process list read; review O of
    round 24) said the cut twice: "(the output was cut short: its process list may be in the
    part cut away) (of what was read; incomplete probe: ... was cut off)"; now once. Round 33:
    the busy GPUs hold GiBs (a job's, whatever list the cut took): a fail of what was read, the
    cut said in one parenthesis."""
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text())["foreign_processes"]
    assert verdict == "fail", actual
    assert actual.endswith(f"(of what was read; {CUT_NOTE}; its process list cut away)")
    assert actual.count("(of what was read") == 1 and "the output was cut short" not in actual


@pytest.mark.parametrize("name", [A30, H100])
def test_a_field_the_table_never_carries_is_unverified_without_the_cut_note(
    tmp_path: Path, name: str
) -> None:
    """The table carries no PCIe link, replay counter, clock event reason, virtualization mode
    or memory repair state, whole or cut (review O of round 24): those rows are unverified for
    that, and said the cut too ("not reported (of what was read; incomplete probe: ...)"),
    as though the part cut away might have held them; a field the table carries (ECC mode)
    still names the cut."""
    rows = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text())
    for rule in ("pcie_link", "pcie_replays", "throttling", "virtualization", "memory_repair"):
        verdict, actual = rows[rule]
        assert verdict == "unverified" and CUT_NOTE not in actual, (rule, actual)
    assert CUT_NOTE in rows["ecc_mode"][1]
