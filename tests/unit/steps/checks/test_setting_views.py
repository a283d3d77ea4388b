"""A GPU setting two nvidia-smi formats of one box read otherwise, judged over each format's
reading (steps/checks/setting_views.py; the readings kept by facts/gpu_merge.py as
`setting_reads`): the worst verdict, naming every format's value, never the first format's pass."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import Check

from ...facts.test_gpu_merge import SAME_BOX, _judged

# one H200 box (driver 580.159.04): -q -x, -q, the table and a CSV (ECC mode only)
H200 = SAME_BOX[0]
# one H100 80GB HBM3 box in MIG mode (driver 590.48.01): -L, -q, the table and a CSV of ~200 fields
H100 = SAME_BOX[3]


def _csv_edited(tmp_path: Path, box: tuple[Path, ...], cells: dict[str, str]) -> tuple[Path, ...]:
    """`box` with its real CSV's named cells of its one GPU row set to `cells`."""
    source = box[-1]
    rows = list(csv.reader(io.StringIO(source.read_text())))
    header = [h.strip() for h in rows[0]]
    for name, value in cells.items():
        rows[1][header.index(name)] = f" {value}"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    (tmp_path / "edit").mkdir()
    edited = tmp_path / "edit" / source.name
    edited.write_text(text.getvalue())
    return (*box[:-1], edited)


def _table_edited(tmp_path: Path, old: str, new: str) -> tuple[Path, ...]:
    """The H200 box with its real table's `old` text (once) replaced by `new`, same width."""
    table = H200[2]
    text = table.read_text()
    assert text.count(old) == 1 and len(old) == len(new)
    (tmp_path / "edit").mkdir()
    edited = tmp_path / "edit" / table.name
    edited.write_text(text.replace(old, new))
    return (H200[0], H200[1], edited, H200[3])


def test_persistence_off_in_the_table_beside_on_in_q_x_is_no_pass(tmp_path: Path) -> None:
    """The real -q -x, -q, table and CSV of one H200 box, the table edited in-test: its
    Persistence-M cell `On` set to `Off` (the box as read after `nvidia-smi -pm 0`, or before
    `-pm 1`), while -q -x and -q say Enabled. Before: persistence_mode passed "Enabled" (-q -x's,
    the table's Off dropped silently)."""
    box = _table_edited(
        tmp_path, "NVIDIA H200                    On  |", "NVIDIA H200                    Off |"
    )
    facts, got = _judged(tmp_path, box)
    check = got["persistence_mode"]
    assert check.verdict == "warn", check
    assert "persistence mode Enabled in -q -x and -q, Disabled in the table" in check.actual
    assert "the formats disagree" in check.actual and "rerun nvidia-smi" in check.detail
    assert facts.gpu is not None
    assert ("persistence_mode", "table", "Disabled") in facts.gpu.gpus[0].setting_reads
    # the rules that read no persistence mode are judged as before, with no note
    assert got["ecc_mode"].verdict == "pass" and "disagree" not in got["ecc_mode"].actual


def test_mig_enabled_in_the_table_beside_disabled_in_q_x_is_no_pass(tmp_path: Path) -> None:
    """The H200 box, its table's MIG M. cell `Disabled` set to `Enabled` (edited in-test, same
    width). Before: mig_mode passed "Disabled" (-q -x's)."""
    box = _table_edited(tmp_path, "|             Disabled |", "|              Enabled |")
    _, got = _judged(tmp_path, box)
    check = got["mig_mode"]
    assert check.verdict == "warn", check
    assert "MIG mode Disabled in -q -x and -q, Enabled in the table" in check.actual


@pytest.mark.parametrize(
    ("cells", "rule", "verdict", "said"),
    [
        ({"persistence_mode": "Disabled"}, "persistence_mode", "warn", "persistence mode Enabled in -q"),
        (
            {"ecc.mode.current": "Disabled"},
            "ecc_mode",
            "fail",
            "ECC mode Enabled in -q and the table, Disabled in the CSV query",
        ),
        (
            {"enforced.power.limit [W]": "500.00 W", "power.limit [W]": "500.00 W"},
            "power_limit",
            "fail",
            "enforced power limit 700 W in -q and the table, 500 W in the CSV query",
        ),
        (
            {"fabric.state": "In Progress"},
            "fabric_manager",
            "fail",
            "fabric state Completed in -q, In Progress in the CSV query",
        ),
    ],
    ids=[
        "persistence-disabled-in-csv",
        "ecc-disabled-in-csv",
        "power-limit-500-in-csv",
        "fabric-in-progress",
    ],
)
def test_a_setting_the_csv_reads_otherwise_than_q_is_judged_by_both(
    tmp_path: Path, cells: dict[str, str], rule: str, verdict: str, said: str
) -> None:
    """The real -L, -q, table and CSV of one H100 box, the CSV edited in-test: the named cells
    set (persistence mode Disabled; ECC mode Disabled; the enforced and requested power limit
    500 W of the 700 W default; the fabric state In Progress) while -q, read first, says
    Enabled, Enabled, 700 W and Completed. Before: each setting came from -q alone, so the rule
    passed."""
    (tmp_path / "a").mkdir()
    _, clean = _judged(tmp_path / "a", H100)
    assert clean[rule].verdict == "pass"
    (tmp_path / "b").mkdir()
    _, got = _judged(tmp_path / "b", _csv_edited(tmp_path, H100, cells))
    assert got[rule].verdict == verdict, got[rule]
    assert said in got[rule].actual


def test_formats_that_agree_keep_no_setting_reads(tmp_path: Path) -> None:
    """The real H100 box unedited: every format reads the same settings, none kept."""
    facts, got = _judged(tmp_path, H100)
    assert facts.gpu is not None and facts.gpu.gpus[0].setting_reads == ()
    assert not any("the formats disagree" in c.actual for c in got.values())


def _persistence(gpus: list[GpuInfo]) -> list[Check]:
    off = [g for g in gpus if g.persistence_mode == "Disabled"]
    return [Check("persistence_mode", "Enabled", "Disabled" if off else "Enabled", "warn" if off else "pass")]


def test_the_worst_reading_wins_whichever_format_ranks_first() -> None:
    """A GPU whose first format read the failing setting keeps that verdict, naming the other
    format's reading too; a rule no reading changes is left as it is."""
    from gpuonboard.steps.checks.setting_views import judged_per_reading

    g = GpuInfo(
        index=0,
        name="NVIDIA H100",
        persistence_mode="Disabled",
        power_limit_w=700.0,
        setting_reads=(
            ("persistence_mode", "xml", "Disabled"),
            ("persistence_mode", "table", "Enabled"),
        ),
    )
    (check,) = judged_per_reading([g], _persistence)
    assert check.verdict == "warn"
    assert "GPU 0: persistence mode Disabled in -q -x, Enabled in the table" in check.actual
    plain = GpuInfo(index=0, name="NVIDIA H100", persistence_mode="Enabled")
    assert judged_per_reading([plain], _persistence) == _persistence([plain])


def test_a_csv_power_limit_without_its_enforced_column_is_no_enforced_reading() -> None:
    """`power.limit` alone in a CSV is the requested limit (query_csv reads it as the limit where
    `enforced.power.limit` was not asked): beside -q's lower enforced limit (a BMC's cap, as the
    real GH200 -q's 700 W of 900 W) it is no disagreement about the enforced one."""
    from gpuonboard.facts.gpu_agree import setting_reads

    q = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=700.0, requested_power_limit_w=900.0)
    bare = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=900.0)
    assert setting_reads([("text", q), ("csv", bare)]) == ()
    enforced = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=900.0, requested_power_limit_w=900.0)
    assert ("power_limit_w", "csv", 900.0) in setting_reads([("text", q), ("csv", enforced)])
