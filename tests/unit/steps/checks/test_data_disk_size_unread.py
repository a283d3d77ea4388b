"""data_disk where the size of the ordered mount is `-` in the saved df: df did not read that
file system (`df -a`'s row of an autofs mount point not mounted yet, `systemd-1 - - - - /path`),
so the ordered size is unknown: unverified, naming the mount and what to save, never a warning
that a GO passes over. On a real capture (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DF_AUTOFS = "df-ah-sorted__vagrant-ubuntu-20.04__autofs-systemd-1-dash-size.txt"


def _data_disk(tmp_path: Path, mount: str, drop: str = "") -> tuple[str, str, str]:
    """data_disk of the capture for `mount`; `drop`: the start of a line taken out (an edit)."""
    text = "".join(
        line
        for line in (REAL / DF_AUTOFS).read_text().splitlines(True)
        if not (drop and line.startswith(drop))
    )
    [c] = [
        c
        for c in checks(tmp_path, DF_AUTOFS, text, f"data_disk: {{mount: {mount}, min_size: 1GB}}")
        if c.name == "data_disk"
    ]
    return c.verdict, c.actual, c.detail


def test_ordered_mount_whose_size_is_dash_is_unverified(tmp_path: Path) -> None:
    """The capture with the row of the file system mounted there taken out (an edit: the
    automount trigger's row alone, a mount point not mounted yet)."""
    verdict, actual, detail = _data_disk(tmp_path, "/proc/sys/fs/binfmt_misc", drop="binfmt_misc ")
    assert verdict == "unverified", (actual, detail)
    assert actual == "systemd-1 at /proc/sys/fs/binfmt_misc, unknown"
    assert "the size of /proc/sys/fs/binfmt_misc could not be read" in detail
    assert "`df -P -k /proc/sys/fs/binfmt_misc`" in detail


def test_a_mount_with_its_size_read_is_judged_by_it(tmp_path: Path) -> None:
    # control: the same capture's /vagrant (159G) has a size, judged on (not unverified for size)
    verdict, actual, _ = _data_disk(tmp_path, "/vagrant")
    assert actual.startswith("vagrant at /vagrant, 170.7 GB")
    assert verdict != "unverified"


def test_an_automount_trigger_sorted_after_the_mount_over_it_shadows_nothing(tmp_path: Path) -> None:
    """The real sorted `df -ah` lists binfmt_misc's own row (0 bytes) before the automount
    trigger's (`systemd-1 - - - -`) at the same path: the trigger is under the mount, so the
    size read is the file system's (review L of round 23: the trigger, listed last, was read as
    shadowing it, and the size was unknown)."""
    verdict, actual, _ = _data_disk(tmp_path, "/proc/sys/fs/binfmt_misc")
    assert actual.startswith("binfmt_misc at /proc/sys/fs/binfmt_misc"), actual
    assert verdict == "fail", actual


def test_a_sizeless_mount_over_a_disk_that_is_no_automount_trigger_is_unread(tmp_path: Path) -> None:
    """The capture with a row added after /vagrant's (an edit: an sshfs mount over it that df,
    as root, could not read: GNU df prints `-` sizes for it): /vagrant serves the share now,
    whose size is unknown; only an automount trigger (`systemd-1`, autofs) is under the mount
    (review M of round 23: every sizeless row was skipped, and /vagrant's disk was judged)."""
    text = (REAL / DF_AUTOFS).read_text()
    row = next(line for line in text.splitlines(True) if line.rstrip().endswith(" /vagrant"))
    edited = text.replace(row, row + "sshfs#u@h:/d       -     -     -    - /vagrant\n", 1)
    [c] = [
        c
        for c in checks(tmp_path, DF_AUTOFS, edited, "data_disk: {mount: /vagrant, min_size: 1GB}")
        if c.name == "data_disk"
    ]
    assert c.verdict == "unverified", c
