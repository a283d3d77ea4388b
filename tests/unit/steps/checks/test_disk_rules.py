"""data_disk judged from an lsblk table given without a df (offline, steps/checks/disk_rules.py
_from_lsblk): only what a block device proves of the file system on it (tables users pasted,
tests/fixtures/real/SOURCES.md, round 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import judged_box

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL = FIXTURES / "real"
SEAGATE = "lsblk-d__4.6t-part-mount-with-blanks__drivelist-69.txt"
BOTTLEROCKET = "lsblk-b__mountpoints-continuation-lines__bottlerocket-2920.txt"


def _data_disk(tmp_path: Path, lsblk: str, order: str) -> tuple[str, str, str]:
    _, checks = judged_box(tmp_path, {"lsblk.txt": lsblk}, order)
    check = checks["data_disk"]
    return check.verdict, check.actual, check.detail


def test_a_data_disk_lsblk_shows_on_the_system_disk_fails(tmp_path: Path) -> None:
    """jc's CentOS 7.7 VM's plain lsblk alone, a data disk ordered at /boot: /boot (sda1) and /
    (an LV on sda2) share sda. The table was refused (exit 2); read, it proves the shared disk."""
    lsblk = (FIXTURES / "public" / "lsblk-plain__centos-7.7-vm-lvm__jc.txt").read_text()
    verdict, actual, detail = _data_disk(tmp_path, lsblk, "data_disk: {mount: /boot}\n")
    assert (verdict, actual) == (
        "fail",
        "sda1 at /boot, 1.0 GB to 1.1 GB, as lsblk rounds it (lsblk, no df given; same disk as / on sda)",
    )
    assert detail.startswith("lsblk shows /boot on the system disk")


def test_a_device_smaller_than_ordered_fails_and_one_as_large_passes_nothing(tmp_path: Path) -> None:
    """bottlerocket#2920's `lsblk -b`: /mnt on nvme1n1p1, 21474836480 bytes exactly. A file system
    is no larger than its device, so 100 GB ordered fails; 20 GB ordered is not proven met (the
    file system may not fill its partition): unverified, as with no lsblk."""
    lsblk = (REAL / BOTTLEROCKET).read_text()
    verdict, actual, _ = _data_disk(tmp_path / "a", lsblk, "data_disk: {mount: /mnt, min_size: 100GB}\n")
    assert (verdict, actual) == ("fail", "nvme1n1p1 at /mnt, 21.5 GB (lsblk, no df given)")
    verdict, actual, _ = _data_disk(tmp_path / "b", lsblk, "data_disk: {mount: /mnt, min_size: 20GB}\n")
    assert (verdict, actual) == ("unverified", "not judged: no df output was given")


@pytest.mark.parametrize(("ordered", "verdict"), [("5.35TB", "unverified"), ("5.45TB", "fail")])
def test_a_rounded_size_fails_only_where_its_whole_range_is_under_the_order(
    tmp_path: Path, ordered: str, verdict: str
) -> None:
    """drivelist#69's `4.6T` partition (4.55-4.65 TiB: 5.003-5.113 TB) at its mount point with
    blanks; 5 % tolerance: 5.35 TB ordered needs 5.083 TB, within the rounding (not a fail); 5.45
    TB needs 5.178 TB, above its whole range (a fail)."""
    lsblk = (REAL / SEAGATE).read_text()
    order = f'data_disk: {{mount: "/media/dave/Seagate Expansion Drive", min_size: {ordered}}}\n'
    assert _data_disk(tmp_path, lsblk, order)[0] == verdict
