"""`lsblk -P` (`--pairs`: util-linux's only machine-readable form before `-J` came in 2.27, as
on RHEL 7 and Ubuntu 14.04) is read as lsblk, not taken for an /etc/os-release because its
lines start `NAME="sda"`. Real capture (tests/fixtures/real/SOURCES.md); each test fails on the
code before."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import disks

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PAIRS = "lsblk-P__qemu-vm-ubuntu-core-ab-partitions__snappy.txt"
DF = "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt"


def test_lsblk_pairs_are_block_devices() -> None:
    """Every device with its size (human, as printed), type, mount point, ROTA, MODEL (its
    padding dropped) and its parent from PKNAME."""
    devices = disks.parse_lsblk((REAL / PAIRS).read_text())
    assert [(d.name, d.type, d.parent, d.mountpoints) for d in devices] == [
        ("sda", "disk", None, ()),
        ("sda1", "part", "sda", ()),
        ("sda2", "part", "sda", ()),
        ("sda3", "part", "sda", ("/",)),
        ("sda4", "part", "sda", ()),
        ("sda5", "part", "sda", ("/writable",)),
    ]
    assert devices[0].model == "QEMU HARDDISK" and devices[0].rota is True
    assert devices[5].size_bytes == round(16.6 * 2**30)
    assert disks.lsblk_unread((REAL / PAIRS).read_text()) is None


def test_a_pairs_line_cut_short_is_not_read() -> None:
    """A last line without lsblk's newline may be cut inside a value (`/writ` of `/writable`)."""
    text = (REAL / PAIRS).read_text()
    cut = text[: text.index("/writable") + 5]
    assert [d.name for d in disks.parse_lsblk(cut)] == ["sda", "sda1", "sda2", "sda3", "sda4"]


def test_a_saved_lsblk_pairs_is_lsblk_not_os_release(tmp_path: Path) -> None:
    """The saved capture was taken for an /etc/os-release (`NAME=` first), the box's disks
    unread."""
    (tmp_path / "lsblk.txt").write_text((REAL / PAIRS).read_text())
    raw = offline.load_outputs([str(tmp_path / "lsblk.txt")])
    assert "lsblk" in raw and "os_release" not in raw
    assert len(parse_facts(raw).block_devices) == 6


def test_lsblk_pairs_tell_the_data_disk_shares_roots_disk(tmp_path: Path) -> None:
    """The capture saved beside a real `df -hT` whose `/` row names its device `/dev/root` (as
    df does on many images) and whose data row is the capture's `/writable` on /dev/sda5 (the
    two rows' devices and mount points edited to match the lsblk capture). It was "could not tell
    whether /dev/sda5 is on another physical disk than / (/dev/root)" (warn), the lsblk given
    unread; lsblk shows / on sda3 and /writable on sda5, partitions of one disk: a fail."""
    df = (REAL / DF).read_text()
    df = df.replace("/dev/sda2      xfs ", "/dev/root      xfs ").replace(
        "/dev/sdb1      ext4      9.3G   37M  8.8G   1% /mydata/data",
        "/dev/sda5      ext4       17G   37M   16G   1% /writable",
    )
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "df-hT.txt").write_text(df)
    (tmp_path / "box" / "lsblk.txt").write_text((REAL / PAIRS).read_text())
    facts = parse_facts(offline.load_outputs([str(tmp_path / "box")]))
    (tmp_path / "order.yml").write_text("data_disk: {mount: /writable}\n")
    check = next(
        c
        for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
        if c.name == "data_disk"
    )
    assert check.verdict == "fail", check
    assert "same disk as / on sda" in check.actual


# lsblk's default columns (`lsblk -P` with no -o): no PKNAME, no KNAME
_DEFAULT = ("NAME", "MAJ:MIN", "RM", "SIZE", "RO", "TYPE", "MOUNTPOINT")


def _default_columns(text: str) -> str:
    """The real capture with every pair but lsblk's default columns dropped from each line."""
    return "".join(
        " ".join(f'{k}="{v}"' for k, v in disks._pairs_of(line).items() if k in _DEFAULT) + "\n"
        for line in text.splitlines()
    )


def _data_disk(tmp_path: Path, df: str, lsblk: str, mount: str) -> tuple[str, str]:
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "df-hT.txt").write_text(df)
    (tmp_path / "box" / "lsblk.txt").write_text(lsblk)
    facts = parse_facts(offline.load_outputs([str(tmp_path / "box")]))
    (tmp_path / "order.yml").write_text(f"data_disk: {{mount: {mount}}}\n")
    order = offline.load_order(str(tmp_path / "order.yml"))
    [check] = [c for c in offline.judge(facts, order) if c.name == "data_disk"]
    return check.verdict, check.actual


def test_lsblk_pairs_without_pkname_give_a_partition_its_disk_from_the_line_order() -> None:
    """The capture cut to lsblk's default columns (no PKNAME): each partition's disk is the
    disk line above it (lsblk prints the tree in order)."""
    devices = disks.parse_lsblk(_default_columns((REAL / PAIRS).read_text()))
    assert [(d.name, d.parent) for d in devices] == [
        ("sda", None),
        *((f"sda{n}", "sda") for n in range(1, 6)),
    ]


def test_default_lsblk_pairs_keep_the_data_disk_fail(tmp_path: Path) -> None:
    """The df and lsblk of test_lsblk_pairs_tell_the_data_disk_shares_roots_disk, the lsblk cut
    to its default columns (no PKNAME; review O of round 24): the data partition sda5 and / on
    sda3 are one disk: still a fail (it was warn "could not tell", the lsblk weakening what df's
    names alone could not tell either)."""
    df = (REAL / DF).read_text()
    df = df.replace("/dev/sda2      xfs ", "/dev/root      xfs ").replace(
        "/dev/sdb1      ext4      9.3G   37M  8.8G   1% /mydata/data",
        "/dev/sda5      ext4       17G   37M   16G   1% /writable",
    )
    verdict, actual = _data_disk(tmp_path, df, _default_columns((REAL / PAIRS).read_text()), "/writable")
    assert verdict == "fail" and "same disk as / on sda" in actual, actual


def test_default_lsblk_pairs_keep_the_data_disk_pass(tmp_path: Path) -> None:
    """The real df (its / row's /dev/sda2 edited to /dev/sda3, the lsblk capture's / partition;
    /mydata/data on /dev/sdb1) beside the lsblk cut to its default columns (no PKNAME; review O
    of round 24): / on sda, the data on sdb: a pass, as df alone gives (it was warn "could not
    tell")."""
    df = (REAL / DF).read_text().replace("/dev/sda2      xfs ", "/dev/sda3      xfs ")
    assert "/dev/sda3" in df
    lsblk = _default_columns((REAL / PAIRS).read_text())
    verdict, actual = _data_disk(tmp_path, df, lsblk, "/mydata/data")
    assert verdict == "pass", actual
