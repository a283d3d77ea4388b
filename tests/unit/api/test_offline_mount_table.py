"""A saved kernel mount table (`cat /proc/mounts`) given beside a df without types (`df -P -k`,
a BusyBox or toybox df, which has no -T) gives each mount df listed its file system type, as the
live probe reads /proc/self/mounts: a GPFS share whose device looks local is a network share."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.offline import detect_kind

from ..offline_judge import judged_box

GPFS_DF_HT = (
    Path(__file__).parents[2]
    / "fixtures"
    / "real"
    / "df-hT__k8s-pod__gpfs-15t-volume__ibm-spectrum-scale-csi.txt"
)


def _untyped_and_table() -> tuple[str, str]:
    """ibm-spectrum-scale-csi#80's real `df -hT` (a pod given a 1 GB GPFS volume shown as the
    cluster's 15T), edited in-test: its rows less the Type column (as a df without -T prints
    them), and the kernel's mount table of those rows (`DEVICE MOUNTPOINT TYPE rw,relatime 0 0`,
    from the capture's device, type and mount point cells)."""
    rows = [line.split() for line in GPFS_DF_HT.read_text().splitlines()]
    df = "".join(" ".join(r[:1] + r[2:]) + "\n" for r in rows)
    table = "".join(f"{r[0]} {r[-1]} {r[1]} rw,relatime 0 0\n" for r in rows[1:])
    return df, table


def test_a_mount_table_is_its_own_kind() -> None:
    assert detect_kind(_untyped_and_table()[1]) == "mounts"


def test_the_gpfs_share_of_a_typeless_df_is_read_with_the_table(tmp_path: Path) -> None:
    """Without the table, `remote_fs0_1m` at the ordered path looked like a local disk (`warn`:
    could not tell whether it is on another disk than /; its 15T passed the 1 TB ordered). The
    table given beside it (a file the tool refused before: not a known output) types it gpfs:
    unverified, a network share whose size is the cluster's, not the rented quota."""
    df, table = _untyped_and_table()
    order = "data_disk: {mount: /var/lib/mongodb/data, min_size: 1TB}\n"
    facts, checks = judged_box(tmp_path, {"df.txt": df, "mounts.txt": table}, order)
    check = checks["data_disk"]
    assert check.verdict == "unverified", check
    assert check.actual.endswith("(a network share, gpfs)")
    _, alone = judged_box(tmp_path / "alone", {"df.txt": df}, order)
    assert alone["data_disk"].verdict == "warn"


def test_a_saved_mount_tables_options_are_not_kept(tmp_path: Path) -> None:
    """The same pair, the table with a CIFS share's line as the kernel writes it (its options
    naming the user, the domain and the server's address; added in-test): the table was kept
    whole in the facts, whose raw outputs a report writes (raw/<host>/mounts.txt, the HTML).
    Now only each line's device, mount point and type are kept, and the GPFS share still read."""
    df, table = _untyped_and_table()
    table += "//10.0.0.5/share /mnt/share cifs rw,vers=3.1.1,username=alice,domain=CORP,addr=10.0.0.5 0 0\n"
    order = "data_disk: {mount: /var/lib/mongodb/data, min_size: 1TB}\n"
    facts, checks = judged_box(tmp_path, {"df.txt": df, "mounts.txt": table}, order)
    assert checks["data_disk"].verdict == "unverified"
    kept = facts.raw["mounts"].stdout
    assert "username=" not in kept and "rw," not in kept
    assert "//10.0.0.5/share /mnt/share cifs\n" in kept
    assert detect_kind(kept) == "mounts"
