"""The kernel's mount table (/proc/self/mounts) read for the types a df without -T left out:
by mount point, where the table's mount there is of the same device."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.disks import parse_df
from gpuonboard.facts.mount_table import looks_like_mount_table, parse_mount_table, with_mount_types

GPFS_DF_HT = (
    Path(__file__).parents[2]
    / "fixtures"
    / "real"
    / "df-hT__k8s-pod__gpfs-15t-volume__ibm-spectrum-scale-csi.txt"
)


def _untyped_and_table() -> tuple[str, str]:
    """ibm-spectrum-scale-csi#80's real `df -hT`, edited in-test: its rows less the Type column,
    and the mount table of its rows (`DEVICE MOUNTPOINT TYPE rw,relatime 0 0`, from its cells)."""
    rows = [line.split() for line in GPFS_DF_HT.read_text().splitlines()]
    df = "".join(" ".join(r[:1] + r[2:]) + "\n" for r in rows)
    return df, "".join(f"{r[0]} {r[-1]} {r[1]} rw,relatime 0 0\n" for r in rows[1:])


def test_each_mount_takes_its_type_by_mount_point() -> None:
    df, table = _untyped_and_table()
    typed = {m.mountpoint: m.fstype for m in with_mount_types(parse_df(df), parse_mount_table(table))}
    assert typed == {m.mountpoint: m.fstype for m in parse_df(GPFS_DF_HT.read_text())}


def test_another_device_at_the_mount_point_gives_no_type() -> None:
    """The table's mount at /var/lib/mongodb/data of another device (edited in-test): another
    mount than the one df read, so its type says nothing of df's row."""
    df, table = _untyped_and_table()
    table = table.replace("remote_fs0_1m ", "other_fs ")
    typed = {m.mountpoint: m.fstype for m in with_mount_types(parse_df(df), parse_mount_table(table))}
    assert typed["/var/lib/mongodb/data"] is None and typed["/"] == "overlay"


def test_the_last_mount_at_a_point_counts_and_escapes_are_read() -> None:
    """Two mounts at one point (the later over the earlier, as df reads it), a blank written
    `\\040` by the kernel, and a last line without its newline (cut: not read)."""
    table = parse_mount_table(
        "/dev/sda1 /data ext4 rw 0 0\nhost:/x /data nfs4 rw 0 0\n"
        "/dev/sdb1 /mnt/my\\040disk xfs rw 0 0\nh:/y /z nf"
    )
    assert table == {"/data": ("host:/x", "nfs4"), "/mnt/my disk": ("/dev/sdb1", "xfs")}


def test_a_mount_table_is_told_from_a_df_or_os_release() -> None:
    df, table = _untyped_and_table()
    assert looks_like_mount_table(table)
    assert not looks_like_mount_table(df) and not looks_like_mount_table(
        'NAME="Ubuntu"\nVERSION_ID="22.04"\n'
    )
