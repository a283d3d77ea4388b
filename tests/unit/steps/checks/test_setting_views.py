"""A GPU setting two nvidia-smi formats of one box read otherwise, judged over each format's
reading (steps/checks/setting_views.py; each format's reading kept by facts/gpu_merge.py in
`GpuInfo.readings`, the settings they read otherwise by `gpu_agree.setting_reads`): the worst
verdict, naming every format's value, never the first format's pass."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.facts.gpu_agree import setting_reads
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import Check

from ...facts.test_gpu_merge import SAME_BOX, _judged, csv_edited

# one H200 box (driver 580.159.04): -q -x, -q, the table and a CSV (ECC mode only)
H200 = SAME_BOX[0]
# one H100 80GB HBM3 box in MIG mode (driver 590.48.01): -L, -q, the table and a CSV of ~200 fields
H100 = SAME_BOX[3]


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
    assert "the formats disagree" in check.actual
    assert "rerun `nvidia-smi -q -x`, `nvidia-smi -q` and the plain `nvidia-smi` table" in check.detail
    assert facts.gpu is not None
    assert ("persistence_mode", "table", "Disabled") in setting_reads(facts.gpu.gpus[0].readings)
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
            {"fabric.state": "Not Started"},
            "fabric_manager",
            "fail",
            "fabric state Completed in -q, Not Started in the CSV query",
        ),
    ],
    ids=[
        "persistence-disabled-in-csv",
        "ecc-disabled-in-csv",
        "power-limit-500-in-csv",
        "fabric-not-started",
    ],
)
def test_a_setting_the_csv_reads_otherwise_than_q_is_judged_by_both(
    tmp_path: Path, cells: dict[str, str], rule: str, verdict: str, said: str
) -> None:
    """The real -L, -q, table and CSV of one H100 box, the CSV edited in-test: the named cells
    set (persistence mode Disabled; ECC mode Disabled; the enforced and requested power limit
    500 W of the 700 W default; the fabric state Not Started) while -q, read first, says
    Enabled, Enabled, 700 W and Completed. Before: each setting came from -q alone, so the rule
    passed."""
    (tmp_path / "a").mkdir()
    _, clean = _judged(tmp_path / "a", H100)
    assert clean[rule].verdict == "pass"
    (tmp_path / "b").mkdir()
    _, got = _judged(tmp_path / "b", csv_edited(tmp_path, H100, cells))
    assert got[rule].verdict == verdict, got[rule]
    assert said in got[rule].actual


def test_formats_that_agree_keep_no_setting_reads(tmp_path: Path) -> None:
    """The real H100 box unedited: every format reads the same settings, none kept."""
    facts, got = _judged(tmp_path, H100)
    assert facts.gpu is not None and setting_reads(facts.gpu.gpus[0].readings) == ()
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
        readings=(
            ("xml", GpuInfo(index=0, name="NVIDIA H100", persistence_mode="Disabled")),
            ("table", GpuInfo(index=0, name="NVIDIA H100", persistence_mode="Enabled")),
        ),
    )
    (check,) = judged_per_reading([g], _persistence)
    assert check.verdict == "warn"
    assert "GPU 0: persistence mode Disabled in -q -x, Enabled in the table" in check.actual
    plain = GpuInfo(index=0, name="NVIDIA H100", persistence_mode="Enabled")
    assert judged_per_reading([plain], _persistence) == _persistence([plain])


def test_a_csv_power_limit_without_its_enforced_column_is_no_enforced_reading() -> None:
    """`power.limit` alone in a CSV is the requested limit (query_csv reads it as the limit where
    `enforced.power.limit` was not asked, `power_limit_requested`): beside -q's lower enforced
    limit (a BMC's cap, as the real GH200 -q's 700 W of 900 W) it is no disagreement about the
    enforced one."""
    q = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=700.0, requested_power_limit_w=900.0)
    bare = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=900.0, power_limit_requested=True)
    assert setting_reads([("text", q), ("csv", bare)]) == ()
    enforced = GpuInfo(index=0, name="NVIDIA GH200 480GB", power_limit_w=900.0, requested_power_limit_w=900.0)
    assert ("power_limit_w", "csv", 900.0) in setting_reads([("text", q), ("csv", enforced)])


def _csv_added(tmp_path: Path, box: tuple[Path, ...], name: str, value: str) -> tuple[Path, ...]:
    """`box` with a column `name` of `value` appended to its real CSV's header and one GPU row."""
    source = box[-1]
    header, row = source.read_text().splitlines()[:2]
    (tmp_path / "edit").mkdir()
    edited = tmp_path / "edit" / source.name
    edited.write_text(f"{header}, {name}\n{row}, {value}\n")
    return (*box[:-1], edited)


@pytest.mark.parametrize(
    ("box", "rule", "verdict", "said", "not_said"),
    [
        (
            lambda tmp: _table_edited(tmp, "|             Disabled |", "|              Enabled |"),
            "mig_mode",
            "warn",
            "Enabled on GPU 0; the formats disagree",
            "pending",
        ),
        (
            lambda tmp: _table_edited(tmp, "77W /  700W", "77W /  500W"),
            "power_limit",
            "fail",
            "GPU 0 500 W of 700 W; the formats disagree",
            "requested",
        ),
        (
            lambda tmp: csv_edited(tmp, H100, {"fabric.state": "Not Started", "fabric.status": "[N/A]"}),
            "fabric_manager",
            "fail",
            "GPU 0: Not Started; the formats disagree",
            "Success;",
        ),
    ],
    ids=["table-mig-enabled", "table-cap-500", "csv-fabric-not-started-status-na"],
)
def test_a_format_s_reading_is_judged_with_its_own_pair_never_another_format_s(
    tmp_path: Path, box: Any, rule: str, verdict: str, said: str, not_said: str
) -> None:
    """A setting read as a pair (MIG mode and its pending mode, the enforced and the requested
    power limit, the fabric state and its status), one format reading one field otherwise than
    -q: the real H200 box's table edited in-test (its MIG M. cell `Disabled` set to `Enabled`, no
    `*`; its power cap `700W` set to `500W`), the real H100 box's CSV edited in-test (fabric.state
    `Not Started`, fabric.status `[N/A]`). That format's view keeps its own reading of the pair's
    other field (none). Before: the view took -q's other field, a pair no format printed: "Enabled
    (Disabled pending a GPU reset)", "500 W of 700 W (700 W requested)" blaming a BMC cap, "Not
    Started / Success"."""
    (tmp_path / "box").mkdir()
    _, got = _judged(tmp_path / "box", box(tmp_path))
    check = got[rule]
    assert check.verdict == verdict, check
    assert said in check.actual
    assert not_said not in check.actual.split("; the formats disagree")[0], check
    assert "outside nvidia-smi" not in check.detail and ".;" not in check.detail


@pytest.mark.parametrize(
    ("box", "said"),
    [
        (
            lambda tmp: _csv_added(tmp, H200, "enforced.power.limit [W]", "500.00 W"),
            "enforced power limit 700 W in -q -x and -q and the table, 500 W in the CSV query",
        ),
        (
            lambda tmp: csv_edited(
                tmp, H100, {"enforced.power.limit [W]": "500.00 W", "power.limit [W]": "[N/A]"}
            ),
            "enforced power limit 700 W in -q and the table, 500 W in the CSV query",
        ),
    ],
    ids=["h200-csv-enforced-only", "h100-csv-power-limit-na"],
)
def test_a_csv_s_enforced_power_limit_without_a_requested_one_is_compared(
    tmp_path: Path, box: Any, said: str
) -> None:
    """The real H200 box's CSV given an `enforced.power.limit [W]` column of `500.00 W` (no
    `power.limit` column), the real H100 box's CSV edited to `enforced.power.limit` 500.00 W and
    `power.limit` `[N/A]` (in-test edits): the CSV's enforced limit is 500 W of -q's 700 W.
    Before: a CSV limit with no requested one beside it was taken for a bare `power.limit` and
    left out: power_limit passed "at default"."""
    (tmp_path / "box").mkdir()
    _, got = _judged(tmp_path / "box", box(tmp_path))
    check = got["power_limit"]
    assert check.verdict == "fail", check
    assert said in check.actual


def test_a_csv_s_requested_limit_never_stands_for_the_table_s_enforced_cap(tmp_path: Path) -> None:
    """The real H100 box without its -q (-L, the table and the CSV), in-test edits: the CSV's
    `enforced.power.limit` set to `[N/A]` (its `power.limit`, the requested limit, 700.00 W), the
    table's cap `700W` set to `500W`. The merged enforced limit is the table's. Before: the merge
    took the CSV's requested 700 W (the CSV ranks above the table) and power_limit passed "at
    default" with a 500 W cap enforced."""
    listing, _q, table, _csv = H100
    (tmp_path / "t").mkdir()
    capped = tmp_path / "t" / table.name
    text = table.read_text()
    assert text.count("432W /  700W") == 1
    capped.write_text(text.replace("432W /  700W", "432W /  500W"))
    box = csv_edited(tmp_path, (listing, capped, H100[3]), {"enforced.power.limit [W]": "[N/A]"})
    (tmp_path / "box").mkdir()
    facts, got = _judged(tmp_path / "box", box)
    assert facts.gpu is not None and facts.gpu.gpus[0].power_limit_w == 500
    assert got["power_limit"].verdict == "fail", got["power_limit"]
    assert "500 W of 700 W" in got["power_limit"].actual


def test_the_table_s_whole_watts_are_one_reading_with_a_fraction_within_1_w() -> None:
    """The real `nvidia-smi -q -i 0` of an A16 (Current Power Limit 62.50 W) beside a table row
    printing that cap in whole watts: the real H200 table's cap `700W` edited in-test to `62W`.
    The table rounds: no disagreement (one more format of a 62 W cap would warn a small card).
    Before: setting_reads kept 62.5 in -q beside 62 in the table."""
    from gpuonboard.facts.nvidia_smi import parse_table, parse_text_q

    real = Path(__file__).resolve().parents[3] / "fixtures" / "real"
    (a16, *_) = parse_text_q(
        (real / "nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt").read_text()
    ).gpus
    assert a16.power_limit_w == 62.5
    (row,) = parse_table(H200[2].read_text().replace("77W /  700W", "77W /   62W")).gpus
    assert row.power_limit_w == 62
    reads = setting_reads([("text", a16), ("table", row)])
    assert not [r for r in reads if r[0] == "power_limit_w"], reads
    apart = dataclasses.replace(row, power_limit_w=60.0)
    assert ("power_limit_w", "table", 60.0) in setting_reads([("text", a16), ("table", apart)])


@pytest.mark.parametrize("status", ["[N/A]", "Success"], ids=["status-na", "status-success"])
def test_a_fabric_registration_read_in_progress_and_completed_is_unverified_not_a_fail(
    tmp_path: Path, status: str
) -> None:
    """The real H100 box, its CSV edited in-test: fabric.state `In Progress` (fabric.status
    `[N/A]`, or `Success`) while -q reads Completed / Success. Registration moves from In Progress
    to Completed after boot by itself: the two calls read the box before and after it settled, so
    the rule is unverified, asking for a rerun. Before: fabric_manager failed (the worst reading),
    advising to install the fabric manager."""
    (tmp_path / "box").mkdir()
    box = csv_edited(tmp_path, H100, {"fabric.state": "In Progress", "fabric.status": status})
    _, got = _judged(tmp_path / "box", box)
    check = got["fabric_manager"]
    assert check.verdict == "unverified", check
    assert "fabric state Completed in -q, In Progress in the CSV query" in check.actual
    assert "rerun `nvidia-smi -q`" in check.detail and "install" not in check.detail


def test_a_fabric_in_transit_beside_a_failing_completed_reading_still_fails(tmp_path: Path) -> None:
    """The real H100 box, its CSV's fabric.state `In Progress` and its -q's fabric Status
    `Success` set to `Insufficient Resources` (in-test edits: a registration that completed with
    an error): the Completed reading fails on its own, so the rule fails as before."""
    q = H100[1]
    text = q.read_text()
    (tmp_path / "q").mkdir()
    edited = tmp_path / "q" / q.name
    assert text.count("Status                                         : Success") == 1
    edited.write_text(
        text.replace(
            "Status                                         : Success",
            "Status                                         : Insufficient Resources",
        )
    )
    box = csv_edited(tmp_path, (H100[0], edited, H100[2], H100[3]), {"fabric.state": "In Progress"})
    (tmp_path / "box").mkdir()
    _, got = _judged(tmp_path / "box", box)
    assert got["fabric_manager"].verdict == "fail", got["fabric_manager"]
