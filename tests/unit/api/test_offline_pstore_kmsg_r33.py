"""Two saved shapes of a box's kernel log (measure33d 01, 03):

- a pstore crash record (`/sys/fs/pstore/dmesg-erst-<id>`: `Panic#1 Part2`, `Oops#1 Part1`) is the
  kernel log of an EARLIER boot, kept as it crashed: it passed gpu_xid as this boot's log and its
  driver was judged as the one running now. Now gpu_xid warns naming the crash, the other
  since-boot rules and min_driver are unverified (facts/kernel_pstore.py);
- raw `/dev/kmsg` records (`6,4001,261573217,-;nvidia-nvswitch0: open (major=510)`) were refused
  as no recognised output; now read as dmesg prints them (facts/kernel_shapes.py).

Real captures: tests/fixtures/real/SOURCES.md (leptonai/gpud's testdata)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_oops import crash_sentence, nvidia_crashes
from gpuonboard.facts.kernel_pstore import pstore_record
from gpuonboard.facts.kernel_shapes import plain_kernel_text

from ..offline_judge import checks, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PSTORE = sorted(p.name for p in REAL.glob("dmesg-pstore-*"))
KMSG = sorted(p.name for p in REAL.glob("dmesg-devkmsg-raw__*"))
ORDER = "gpu_count: 1\nmin_driver: '560'\n"
PANIC = "Kernel panic - not syncing: Test panic triggered by crash_test module"


def test_the_captures_are_found() -> None:
    assert len(PSTORE) == 2 and len(KMSG) == 2


@pytest.mark.parametrize("name", PSTORE)
def test_a_pstore_record_is_an_earlier_boot_that_crashed(tmp_path: Path, name: str) -> None:
    judged = {c.name: c for c in checks(tmp_path, name, (REAL / name).read_text(), ORDER)}
    xid = judged["gpu_xid"]
    assert xid.verdict == "warn", xid.actual
    assert "pstore crash record" in xid.actual and f"crashed then: `{PANIC}`" in xid.actual, xid.actual
    assert "/sys/fs/pstore" in xid.detail and "sudo dmesg -T" in xid.detail
    assert judged["nvswitch_sxid"].verdict == "unverified", judged["nvswitch_sxid"].actual
    # (its driver, 550.144.03, older than the order's 560, is an earlier boot's: no claim of now)
    driver = judged["min_driver"]
    assert driver.verdict == "unverified" and "550.144.03" in driver.actual, driver.actual
    assert "earlier boot" in driver.actual


def test_a_pstore_record_names_its_file_and_part() -> None:
    text = (REAL / PSTORE[1]).read_text()
    assert pstore_record(text) == "dmesg-erst-7530486857247752194: Panic#1 Part2"
    assert pstore_record((REAL / PSTORE[0]).read_text()) == "Panic#1 Part1"


@pytest.mark.parametrize("reason", ["Oops#1 Part1", "Emergency#2 Part3", "Panic#1 Part1"])
def test_each_reason_kmsg_dump_gives_is_a_record(reason: str) -> None:
    assert pstore_record(f"{reason}\n<6>[    2.6] usb 1-2: reset\n") == reason


def test_a_kernel_panic_is_a_crash_the_reader_knows() -> None:
    crashes = nvidia_crashes((REAL / PSTORE[0]).read_text())
    assert [c.line for c in crashes] == [PANIC]
    assert crash_sentence(crashes[0]).startswith(f"a kernel panic in the log: `{PANIC}`")


def test_a_panic_after_an_oops_is_that_crash_not_a_second() -> None:
    """An Oops's `Kernel panic - not syncing: Fatal exception` ends the Oops's report."""
    text = "".join(
        f"[ 9.{i}] {line}\n"
        for i, line in enumerate(
            [
                "BUG: kernel NULL pointer dereference, address: 0000000000000008",
                "Oops: 0000 [#1] SMP NOPTI",
                "CPU: 3 PID: 812 Comm: python3 Tainted: P           OE     5.15.0-136-generic",
                "RIP: 0010:_nv011486rm+0x48/0x60 [nvidia]",
                "Kernel panic - not syncing: Fatal exception",
                "---[ end Kernel panic - not syncing: Fatal exception ]---",
            ]
        )
    )
    assert [c.line for c in nvidia_crashes(text)] == [
        "BUG: kernel NULL pointer dereference, address: 0000000000000008"
    ]


@pytest.mark.parametrize("name", KMSG)
def test_raw_dev_kmsg_records_are_a_kernel_log(tmp_path: Path, name: str) -> None:
    judged = verdicts(tmp_path, name, (REAL / name).read_text())
    # (round 38: GPUd's peermem capture is 2 kinds of record within 1 s, `nvidia-peermem` and a
    # `test` line: records picked from the log, read as a kernel log but no pass of the boot)
    picked = "peermem" in name
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert judged[rule][0] == ("unverified" if picked else "pass"), judged[rule]
        assert not picked or "picked from the log" in judged[rule][1], judged[rule]


def test_a_kmsg_record_is_read_as_dmesg_prints_it() -> None:
    """Its stamp from the microseconds since boot; its dictionary lines (` SUBSYSTEM=pci`) left out."""
    text = (
        "6,4001,261573217,-;nvidia-nvswitch0: open (major=510)\n SUBSYSTEM=pci\n DEVICE=+pci:0000:05:00.0\n"
        "3,4002,261600001,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    )
    assert plain_kernel_text(text) == (
        "[  261.573217] nvidia-nvswitch0: open (major=510)\n"
        "[  261.600001] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    )


def test_an_xid_in_kmsg_records_fails(tmp_path: Path) -> None:
    xid = "3,4100,300000001,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    text = (REAL / KMSG[0]).read_text() + xid
    verdict, actual = verdicts(tmp_path, "kmsg.log", text)["gpu_xid"]
    assert verdict == "fail" and "79" in actual, actual
