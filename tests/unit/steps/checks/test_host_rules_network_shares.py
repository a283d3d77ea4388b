"""data_disk on a cluster or network filesystem that df names by a type or a device form other
than NFS's `host:/export`: df shows the cluster's whole size, never the quota rented on it, so
an ordered size is unverified, never a warning a GO passes over. Real captures
(tests/fixtures/real/SOURCES.md); each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
GPFS = "df-hT__k8s-pod__gpfs-15t-volume__ibm-spectrum-scale-csi.txt"
GPFS_ROW = "remote_fs0_1m          gpfs      15T   61G   15T   1% /var/lib/mongodb/data"
ORDER = "data_disk: {mount: /var/lib/mongodb/data, min_size: 1TB}"


def test_a_gpfs_volume_gives_no_size(tmp_path: Path) -> None:
    """IBM Spectrum Scale's `df -hT` in a pod given a 1 GB volume: `gpfs 15T`, the file
    system's size (the issue's own complaint). It was "could not tell whether remote_fs0_1m is
    on another physical disk than /" (warn), the 15T read as the ordered size met; it is a
    network share whose size says nothing of the quota: unverified."""
    text = (REAL / GPFS).read_text()
    verdict, actual = verdicts(tmp_path, "df-hT.txt", text, ORDER)["data_disk"]
    assert verdict == "unverified", actual
    assert actual.endswith("(a network share, gpfs)")
    assert "not the quota rented on it" in details(tmp_path, "df-hT.txt", text, ORDER)["data_disk"]


@pytest.mark.parametrize(
    ("row", "said"),
    [
        # ceph-fuse, WekaFS and BeeGFS under its old name by the type df -T prints
        ("ceph-fuse  fuse.ceph-fuse  15T  61G  15T  1% ", "fuse.ceph-fuse"),
        ("backend-1/default  wekafs  15T  61G  15T  1% ", "wekafs"),
        ("fhgfs_nodev  fhgfs  15T  61G  15T  1% ", "fhgfs"),
    ],
)
def test_a_cluster_filesystem_gives_no_size(tmp_path: Path, row: str, said: str) -> None:
    """The GPFS capture with its volume's row given another cluster filesystem's device and
    type (the rest of the row as captured): each was a warning that passed the 15T as the
    ordered size; each is a network share, unverified."""
    text = (REAL / GPFS).read_text().replace(GPFS_ROW, row + "/var/lib/mongodb/data")
    verdict, actual = verdicts(tmp_path, "df-hT.txt", text, ORDER)["data_disk"]
    assert verdict == "unverified", actual
    assert actual.endswith(f"(a network share, {said})")


@pytest.mark.parametrize(
    "device",
    [
        # CephFS's kernel client, as ceph/ceph-csi issue #3240's `df -h` names its volume (a
        # monitor's address and port), with a list of monitors, and in Ceph 17's syntax
        "10.97.50.161:6789:/volumes/csi/csi-vol-c923b795",
        "10.0.0.1:6789,10.0.0.2:6789:/volumes/csi/vol-1",
        "admin@4a3f6e1c-3a53-11ee-8b0e-0cc47a6c5f0e.cephfs=/",
        "ceph-fuse",
        "beegfs_nodev",
    ],
)
def test_a_cluster_filesystem_is_told_by_its_device_alone(tmp_path: Path, device: str) -> None:
    """The live probe's `df -P -k` prints no type: the GPFS capture with its Type column left
    out (as `df -h` prints it) and its volume's device one CephFS or BeeGFS names; a network
    share by that device alone."""
    lines = (REAL / GPFS).read_text().replace(GPFS_ROW, f"{device} gpfs 15T 61G 15T 1% /var/lib/mongodb/data")
    text = "\n".join(" ".join(line.split()[:1] + line.split()[2:]) for line in lines.splitlines()) + "\n"
    verdict, actual = verdicts(tmp_path, "df-h.txt", text, ORDER)["data_disk"]
    assert verdict == "unverified", actual
    assert actual.endswith("(a network share)")


LUSTRE_IML = "df-h-paths__lustre-client-two-nids__iml-1808.txt"


def test_a_lustre_mount_named_by_its_servers_nids_gives_no_size(tmp_path: Path) -> None:
    """integrated-manager-for-lustre#1808's `df -h /mnt/*` (its prompt line left out): two Lustre
    client mounts whose device is the list of the servers' NIDs,
    `10.73.20.11@tcp:10.73.20.12@tcp:/fs`. It was "could not tell whether ... on another physical
    disk than /" (warn) with the cluster's 47G read as the ordered size met; it is a network
    share, its size unverified."""
    text = (REAL / LUSTRE_IML).read_text()
    order = "data_disk: {mount: /mnt/fs, min_size: 40G}"
    verdict, actual = verdicts(tmp_path, "df-h.txt", text, order)["data_disk"]
    assert verdict == "unverified", actual
    assert actual.endswith("(a network share)")
    assert "not the quota rented on it" in details(tmp_path, "df-h.txt", text, order)["data_disk"]


@pytest.mark.parametrize(
    "device",
    [
        # Lustre over InfiniBand, a server's two NIDs joined by `,`; CephFS's monitors without
        # ports; sshfs's `user@host:/path`
        "10.2.0.1@o2ib:10.2.0.2@o2ib1:/lustre",
        "10.2.0.1@o2ib,10.3.0.1@tcp:10.2.0.2@o2ib:/lustre",
        "mon1,mon2,mon3:/volumes/csi",
        "alice@fileserver:/srv/data",
    ],
)
def test_a_network_device_list_is_told_by_its_device_alone(tmp_path: Path, device: str) -> None:
    """The Lustre capture with its first mount's device another network filesystem's form (the
    rest of the row as captured): a network share by that device alone."""
    text = (REAL / LUSTRE_IML).read_text().replace("10.73.20.11@tcp:10.73.20.12@tcp:/fs ", f"{device} ", 1)
    order = "data_disk: {mount: /mnt/fs, min_size: 40G}"
    verdict, actual = verdicts(tmp_path, "df-h.txt", text, order)["data_disk"]
    assert verdict == "unverified", actual
    assert actual.endswith("(a network share)")
