"""A pstore crash record saved with this boot's log (review of round 33, findings 2 and 3):

- in ONE file (`dmesg -T` then `cat /sys/fs/pstore/dmesg-erst-*`, either order), the record's
  head anywhere in the file marked the whole file an earlier boot: this boot's Xid 79 fail became
  a warning "logged before the log's last reboot". Now a text is an earlier boot's only where it
  starts with the record; a mixed file is split at the record (the record an earlier boot's log,
  the rest this boot's);
- beside this boot's log (two files, a saved session, one file of both), the record's panic was
  named nowhere: gpu_xid now names it.

Inputs built from real captures (tests/fixtures/real/SOURCES.md): the Titan V's `dmesg -T` with
its Xid 79 and leptonai/gpud's ERST record of a test panic."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.kernel_pstore import pstore_parts, pstore_record

from ..offline_judge import checks

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DMESG = (REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt").read_text()
RECORD_NAME = "dmesg-erst-7530486857247752194"
RECORD = (
    REAL / "dmesg-pstore-erst__panic-part1-record-file__tainted-p-crash-test__driver550__gpud.txt"
).read_text()
ORDER = "gpu_count: 1\n"
PANIC = "Kernel panic - not syncing: Test panic triggered by crash_test module"
SESSION = f"$ sudo dmesg -T\n{DMESG}$ sudo cat /sys/fs/pstore/{RECORD_NAME}\n{RECORD}"


def _xid_said(xid_actual: str) -> None:
    assert "Xid 79" in xid_actual and "logged before" not in xid_actual, xid_actual
    assert f"crashed then: `{PANIC}`" in xid_actual, xid_actual


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("dmesg-then-pstore.txt", DMESG + RECORD),
        ("pstore-then-dmesg.txt", RECORD + DMESG),
        ("dmesg-then-named-pstore.txt", f"{DMESG}{RECORD_NAME}:\n{RECORD}"),
        ("session.txt", SESSION),
    ],
)
def test_this_boots_xid_79_in_a_file_with_a_crash_record_still_fails(
    tmp_path: Path, name: str, text: str
) -> None:
    """The Xid 79 of this boot's lines fails; the record's panic is named, an earlier boot's."""
    xid = {c.name: c for c in checks(tmp_path, name, text, ORDER)}["gpu_xid"]
    assert xid.verdict == "fail", xid.actual
    _xid_said(xid.actual)


def test_a_crash_record_in_a_file_of_its_own_beside_this_boots_log_is_named(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(DMESG)
    (tmp_path / RECORD_NAME).write_text(RECORD)
    (tmp_path / "order.yml").write_text(ORDER)
    facts = parse_facts(offline.load_outputs([str(tmp_path / "dmesg.txt"), str(tmp_path / RECORD_NAME)]))
    judged = {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}
    assert judged["gpu_xid"].verdict == "fail", judged["gpu_xid"].actual
    _xid_said(judged["gpu_xid"].actual)


def test_a_record_is_said_only_where_the_text_starts_with_it() -> None:
    assert pstore_record(DMESG + RECORD) == ""
    assert pstore_record(RECORD + DMESG) == "Panic#1 Part1"
    assert pstore_record(f"\n{RECORD_NAME}:\n{RECORD}") == f"{RECORD_NAME}: Panic#1 Part1"


@pytest.mark.parametrize("text", [DMESG + RECORD, RECORD + DMESG, f"{DMESG}{RECORD_NAME}:\n{RECORD}{DMESG}"])
def test_a_mixed_file_splits_at_the_record(text: str) -> None:
    rest, records = pstore_parts(text)
    assert len(records) == 1 and records[0].rstrip("\n").endswith(RECORD.rstrip("\n").splitlines()[-1])
    assert records[0].splitlines()[-1] == RECORD.splitlines()[-1]
    assert set(rest.splitlines()) == set(DMESG.splitlines())
    assert pstore_parts(RECORD) == ("", (RECORD,))
