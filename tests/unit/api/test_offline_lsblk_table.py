"""A saved plain `lsblk` table (the form users paste most) is read as the box's block devices,
as `lsblk -J` is, beside its df (tests/fixtures/real/SOURCES.md, round 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind, load_outputs
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
# (a table below lsblk's own stderr lines, read once they are split back to stderr: its own test)
WITH_STDERR = "lsblk__debian-8-loop-root__dm-failed-to-get-device-path-lines__quickbox-2.txt"
TABLES = sorted(
    p.name
    for p in REAL.glob("lsblk*.txt")
    # (a table stored cut inside a row: facts/test_lsblk_table.py; round 36: nor one saved under its
    # `$ lsblk` line, read below it through the saved text's clean-up: api/test_host_readers_r36.py)
    if not p.name.startswith("lsblk-P")
    and p.name != WITH_STDERR
    and "__line-cut-as-stored__" not in p.name
    and "__copied-command__" not in p.name
    # (round 37: one saved under its own `$ lsblk` prompt line, read below it through the saved
    # text's clean-up: integration/test_live_offline_same_box.py lo-acer)
    and "__prompt__" not in p.name
)


@pytest.mark.parametrize("name", TABLES)
def test_a_pasted_table_is_read_as_lsblk(tmp_path: Path, name: str) -> None:
    """Each was refused, exit 2: "a plain `lsblk` table, which this tool does not read"."""
    text = (REAL / name).read_text()
    assert detect_kind(text) == "lsblk"
    (tmp_path / name).write_text(text)
    assert parse_facts(load_outputs([str(tmp_path / name)])).block_devices


def test_the_table_beside_its_df_tells_which_disk_a_mount_is_on(tmp_path: Path) -> None:
    """jc's CentOS 7.7 VM: its `df -h` and its plain `lsblk` (one box's, one repository's
    fixtures). With the df alone, a data disk ordered at /boot (/dev/sda1) was `warn` ("could
    not tell whether /dev/sda1 is on another physical disk than /", / on an LV): a GO. The
    table beside it, refused before (and with it the whole folder), shows / on an LV of
    sda2: /boot shares sda with /, a fail naming the disk."""
    files = {
        "df-h.txt": (REAL / "df-h__centos-7.7-vm__lvm-root.txt").read_text(),
        "lsblk.txt": (FIXTURES / "public" / "lsblk-plain__centos-7.7-vm-lvm__jc.txt").read_text(),
    }
    order = "data_disk: {mount: /boot}\n"
    _, alone = judged_box(tmp_path / "alone", {"df-h.txt": files["df-h.txt"]}, order)
    assert alone["data_disk"].verdict == "warn"
    facts, checks = judged_box(tmp_path / "both", files, order)
    assert (checks["data_disk"].verdict, checks["data_disk"].actual) == (
        "fail",
        "/dev/sda1 at /boot, 1.1 GB (same disk as / on sda)",
    )
    assert [d.name for d in facts.block_devices if d.type == "disk"] == ["sda"]


def test_an_idle_disk_is_named_with_its_size_as_lsblk_rounds_it(tmp_path: Path) -> None:
    """chef/ohai#351's box (/ on sda3 of a 1.8T disk, two 670.6G Fusion-io cards with nothing
    mounted), with a df of its / edited in-test from the table's own row (`/dev/sda3 1.8T ...
    /`): the data disk ordered at /data is not mounted, and the detail names the idle cards by
    the range their rounded `670.6G` may be (670.55-670.65 GiB), not one exact size."""
    lsblk = (REAL / "lsblk__sda-1.8t_2x-fusionio-670g-unmounted__ohai-351.txt").read_text()
    df = "Filesystem Size Used Avail Use% Mounted on\n/dev/sda3 1.8T 1.0T 0.8T 56% /\n"
    _, checks = judged_box(tmp_path, {"df.txt": df, "lsblk.txt": lsblk}, "data_disk: {mount: /data}\n")
    assert checks["data_disk"].verdict == "fail"
    said = "fioa (720.0 GB to 720.1 GB, as lsblk rounds it), fiob (720.0 GB to 720.1 GB, as lsblk rounds it)"
    assert said in checks["data_disk"].detail


def test_a_table_with_a_row_cut_inside_its_cells_is_refused(tmp_path: Path) -> None:
    """The ovs paste with the row its thread's excerpt ends inside put back (`├─sdb1 ... 1.9G`,
    no TYPE): never a box without that device, a bad input naming the row."""
    name = "lsblk__2x-sas-md-raid1-boot_md1-lvm-root__cut-after-sdb__openvstorage-1379.txt"
    path = tmp_path / "lsblk.txt"
    path.write_text((REAL / name).read_text() + "├─sdb1               8:17   0   1.9G\n")
    with pytest.raises(UsageError, match="this lsblk table cannot be read \\(its row of sdb1 cannot be read"):
        load_outputs([str(path)])


def test_lsblks_own_warnings_above_its_table_are_its_stderr(tmp_path: Path) -> None:
    """QuickBox/QB#2's lsblk, its 14 `lsblk: dm-N: failed to get device path` lines (lsblk's
    stderr, a paste keeps them) above the table, verbatim: it was refused as "not a recognised
    command output"; the lines go back to lsblk's stderr and the table is read, as df's own lines
    are (facts/stderr_lines.py)."""
    name = WITH_STDERR
    (tmp_path / name).write_text((REAL / name).read_text())
    devices = parse_facts(load_outputs([str(tmp_path / name)])).block_devices
    assert devices is not None and len(devices) == 13
    assert next(d for d in devices if d.name == "loop6").mountpoints == ("/",)
