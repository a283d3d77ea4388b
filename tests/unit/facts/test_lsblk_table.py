"""The plain `lsblk` table read into the block devices `lsblk -J` gives (facts/lsblk_table.py),
on tables users pasted in public threads (tests/fixtures/real/SOURCES.md, round 27)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.disks import BlockDevice, Mount, physical_disks, size_rounding, unmounted_disks
from gpuonboard.facts.lsblk_table import (
    looks_like_lsblk_table,
    parse_lsblk_table,
    read_lsblk,
    table_cut,
    table_unread,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (a table below lsblk's own stderr lines, read once they are split back to stderr: its own test)
WITH_STDERR = "lsblk__debian-8-loop-root__dm-failed-to-get-device-path-lines__quickbox-2.txt"
# (a table stored cut inside a row: its own test; round 36: nor one saved under its `$ lsblk` line,
# read below it through the saved text's clean-up: api/test_host_readers_r36.py)
TABLES = sorted(
    p.name
    for p in REAL.glob("lsblk*.txt")
    if not p.name.startswith("lsblk-P")
    and p.name != WITH_STDERR
    and "__line-cut-as-stored__" not in p.name
    and "__copied-command__" not in p.name
    # (round 37: one saved under its own `$ lsblk` prompt line, read below it through the saved
    # text's clean-up: integration/test_live_offline_same_box.py lo-acer)
    and "__prompt__" not in p.name
)
TiB, GiB = 2**40, 2**30


def _read(name: str) -> tuple[BlockDevice, ...]:
    text = (REAL / name).read_text()
    assert looks_like_lsblk_table(text)
    assert table_unread(text) is None
    return parse_lsblk_table(text)


def _row(devices: tuple[BlockDevice, ...], name: str) -> BlockDevice:
    return next(d for d in devices if d.name == name)


@pytest.mark.parametrize("name", TABLES)
def test_every_pasted_table_is_read_whole(name: str) -> None:
    """Each pasted table (UTF-8 and ASCII trees, `-f`, `-o` columns, a re-flowed paste) is read,
    one device a row; none was read before (refused as "a plain `lsblk` table")."""
    text = (REAL / name).read_text()
    # (a further mount point's line: its path alone after blanks, or after the ASCII tree's `|`)
    further = [line for line in text.splitlines() if re.fullmatch(r"[|│ ]*/\S*", line.rstrip())]
    # (a row's cells on the line below its name, where lsblk put a long name on a line of its own)
    cells_below = [line for line in text.splitlines() if re.match(r"[|│ ]+\d+:\d+ ", line)]
    rows = [line for line in text.splitlines()[1:] if line.strip() and line not in further + cells_below]
    assert len(_read(name)) == len(rows)
    assert read_lsblk(text) == _read(name)


def test_a_human_size_keeps_its_rounding() -> None:
    """`1.8T` is 1.75-1.85 TiB (lsblk rounds to the nearest tenth of its unit), never exactly
    1.8 TiB; `477G` 476.95-477.05 GiB; a size in bytes (`lsblk -b`) is exact."""
    sda = _row(_read("lsblk__sda-1.8t_2x-fusionio-670g-unmounted__ohai-351.txt"), "sda")
    assert sda.size_bytes == round(1.8 * TiB) and sda.size_rounding == TiB // 20
    assert size_rounding("477G") == GiB // 20
    nvme = _row(_read("lsblk-b__mountpoints-continuation-lines__bottlerocket-2920.txt"), "nvme1n1")
    assert (nvme.size_bytes, nvme.size_rounding) == (21474836480, 0)


def test_unmounted_disks_of_a_table() -> None:
    """The two Fusion-io cards with nothing mounted are the disks a data disk may be."""
    devices = _read("lsblk__sda-1.8t_2x-fusionio-670g-unmounted__ohai-351.txt")
    assert [d.name for d in unmounted_disks(devices)] == ["fioa", "fiob"]
    assert _row(devices, "sda3").mountpoints == ("/",) and _row(devices, "sda3").parent == "sda"


def test_further_mount_points_on_their_own_lines() -> None:
    """util-linux 2.37+ prints a device's further mount points one a line under MOUNTPOINTS."""
    devices = _read("lsblk-b__mountpoints-continuation-lines__bottlerocket-2920.txt")
    assert _row(devices, "nvme1n1p1").mountpoints == ("/var", "/opt", "/mnt", "/local")


def test_raid_and_lvm_below_partitions_lead_to_their_disks() -> None:
    """md RAID and LVM under partitions: / (an LV on md1 on sda2) lives on sda; md0, listed
    under both of its legs, on sdb (both legs are sdb's partitions)."""
    ovs = _read("lsblk__2x-sas-md-raid1-boot_md1-lvm-root__cut-after-sdb__openvstorage-1379.txt")
    root = Mount("/dev/mapper/68dsd5j-root", None, None, None, "/")
    assert physical_disks(root, ovs) == frozenset({"sda"})
    md0 = _read("lsblk__md0-on-two-partitions-of-sdb__util-linux-874.txt")
    assert [d.parent for d in md0 if d.name == "md0"] == ["sdb1", "sdb2"]
    luks = _read("lsblk-bipo__kname-pkname-tran-fstype-label-size__md127-luks__rear-2726.txt")
    crypt = Mount("/dev/mapper/cr_root", None, None, None, "/")
    assert physical_disks(crypt, luks) == frozenset({"sda", "sdb"})


def test_columns_chosen_with_empty_and_spaced_cells() -> None:
    """`-o` columns with empty cells amid them and a model with a blank; `-f` with no SIZE and
    no TYPE (a type is never guessed); a mount point with blanks."""
    imsm = _read(
        "lsblk-o__hctl-type-mountpoint-fstype-vendor-model-serial__imsm-md126-lvm__decisions-238.txt"
    )
    assert (_row(imsm, "sda").type, _row(imsm, "sda").model) == ("disk", "INTEL_SSDSC2BB15")
    assert _row(imsm, "md126p1").mountpoints == ("/boot/efi",) and _row(imsm, "md126p2").mountpoints == ()
    model = _read("lsblk-o__serial-tran-model-subsystems__model-with-blank__util-linux-305.txt")
    assert model[0].model == "G7101 BN102"
    fs = _read("lsblk-Afi__fstype-fsver-label-uuid-fsavail-mountpoints__mmcblk__libreelec-10834.txt")
    assert _row(fs, "mmcblk0p2") == BlockDevice(
        "mmcblk0p2", None, None, ("/storage",), parent="mmcblk0", fstype="ext4"
    )
    spaced = _read("lsblk-d__4.6t-part-mount-with-blanks__drivelist-69.txt")
    assert spaced[0].mountpoints == ("/media/dave/Seagate Expansion Drive",)


def test_a_paste_that_changed_the_blanks_is_read_by_order_without_guessed_parents() -> None:
    """Blanks collapsed to one (the columns out of line) are read in the header's order; the
    branches whose blanks before them were lost (`├─centos-root` under sda2, drawn as if under
    sda) get no parent, never a guessed one; rows out of line in one place (names shortened
    by the user) are read likewise."""
    flat = _read("lsblk__blanks-collapsed__centos-lvm-6-disks__laitimes.txt")
    assert (_row(flat, "sda2").parent, _row(flat, "centos-root").parent) == ("sda", None)
    assert _row(flat, "centos-root").mountpoints == ("/",) and _row(flat, "sdb1").parent == "sdb"
    root = Mount("/dev/mapper/centos-root", None, None, None, "/")
    assert physical_disks(root, flat) is None  # (which disk it is on is not told)
    fqdn = _read("lsblk__nvme-md0-lvm__redacted-names-misaligned__installimage-70.txt")
    assert (_row(fqdn, "$FQDN-boot").mountpoints, _row(fqdn, "$FQDN-boot").parent) == (("/boot",), "md0")


def test_a_row_that_cannot_be_read_says_so() -> None:
    """A row cut inside its cells (the ovs paste's `├─sdb1 ... 1.9G` line, as the thread's
    excerpt ends) is not read as a device without its type: the table is unread, saying which."""
    name = "lsblk__2x-sas-md-raid1-boot_md1-lvm-root__cut-after-sdb__openvstorage-1379.txt"
    text = (REAL / name).read_text() + "├─sdb1               8:17   0   1.9G\n"
    assert table_unread(text) == "its row of sdb1 cannot be read into its columns"
    assert parse_lsblk_table(text) == ()


LIBREELEC = "lsblk-Afi__fstype-fsver-label-uuid-fsavail-mountpoints__mmcblk__libreelec-10834.txt"


def _with_paths(text: str, utf8: bool) -> str:
    """LibreELEC#10834's `lsblk -Afi` as `lsblk -Afp` prints it: `/dev/` before each name, the
    header's NAME column widened by as much; with `utf8`, its ASCII branches drawn in UTF-8."""
    head, *rows = text.splitlines()
    rows = [re.sub(r"^([|`]-)?", lambda m: f"{m.group(0)}/dev/", row) for row in rows]
    table = "\n".join([head.replace("NAME ", "NAME      ", 1), *rows]) + "\n"
    return table.replace("|-", "├─").replace("`-", "└─") if utf8 else table


@pytest.mark.parametrize("utf8", [False, True])
def test_a_device_path_alone_on_its_line_is_a_device_not_a_further_mount_point(utf8: bool) -> None:
    """`lsblk -fp` prints a disk with no file system as its path alone (`/dev/mmcblk0`): a row
    in the name column, never a further mount point of the row above (util-linux 2.37+ indents
    those to MOUNTPOINTS). LibreELEC#10834's `lsblk -Afi` edited to `-p` names (and UTF-8
    branches); it was read with mmcblk0p1/p2 under loop0, the disks swallowed (review RR-2)."""
    devices = parse_lsblk_table(_with_paths((REAL / LIBREELEC).read_text(), utf8))
    assert [(d.name, d.parent, d.mountpoints) for d in devices] == [
        ("/dev/loop0", None, ("/",)),
        ("/dev/mtdblock0", None, ()),
        ("/dev/mmcblk0", None, ()),
        ("/dev/mmcblk0p1", "/dev/mmcblk0", ("/flash",)),
        ("/dev/mmcblk0p2", "/dev/mmcblk0", ("/storage",)),
        ("/dev/mmcblk0boot0", None, ()),
        ("/dev/mmcblk0boot1", None, ()),
    ]


BOTTLEROCKET = "lsblk-b__mountpoints-continuation-lines__bottlerocket-2920.txt"


def test_further_mount_points_that_lost_their_blanks_stay_mount_points() -> None:
    """bottlerocket#2920's table with each line trimmed (a paste that lost the blanks before
    `/opt`, `/mnt`, `/local`): still nvme1n1p1's further mount points (no device name starts `/`
    but `/dev/`)."""
    text = (REAL / BOTTLEROCKET).read_text()
    trimmed = "\n".join(line.strip() for line in text.splitlines()) + "\n"
    assert _row(parse_lsblk_table(trimmed), "nvme1n1p1").mountpoints == ("/var", "/opt", "/mnt", "/local")


@pytest.mark.parametrize("cut", [6, 20, 43])
def test_a_further_mount_point_indented_short_of_its_column_is_read(cut: int) -> None:
    """bottlerocket#2920's table with `cut` of the 44 blanks before `/opt` removed in-test (a
    paste that re-flowed one line): still nvme1n1p1's further mount point. It made the whole
    table unread ("a line lsblk does not print (/opt)"): every disk judged without lsblk."""
    text = (REAL / BOTTLEROCKET).read_text().replace(" " * cut + "/opt", "/opt", 1)
    assert table_unread(text) is None
    assert _row(parse_lsblk_table(text), "nvme1n1p1").mountpoints == ("/var", "/opt", "/mnt", "/local")


def test_an_old_lsblk_prints_a_kernel_name_after_a_mapped_device() -> None:
    """insights-core's LSBLK_DATA2, a RHEL 6 lsblk (util-linux before 2.20) that prints a
    device-mapper device's kernel name after its name (`vg_root-lv_root (dm-0)`), verbatim: it
    was refused as "cut short or damaged"; the kernel name is part of the name's cell, the row
    read under its columns, the tree's parents kept."""
    devices = _read("lsblk__rhel6-multipath-lvm__dm-kernel-names__insights-core.txt")
    root = _row(devices, "vg_root-lv_root")
    assert (root.parent, root.type, root.mountpoints) == ("sda2", "lvm", ("/",))
    app = [d for d in devices if d.name == "appdg-app"]
    assert {d.parent for d in app} == {"mpathbp1", "mpathap1", "mpathcp1"}
    assert all(d.mountpoints == ("/splunk",) and d.size_bytes == round(2.8 * TiB) for d in app)


RPI_DF = "df-h__arch-nvme-root-usb-disk-run-media__rpi-documentation-806.txt"
RPI_LSBLK = "lsblk__header-then-sda-cut__line-cut-as-stored__rpi-documentation-806.txt"
RPI_ORDER = (
    "data_disk:\n  mount: /run/media/username/4238abc6-1234-5678-ffff-2934fcab8a0c\n  min_size: 400GB\n"
)


def test_a_table_cut_inside_a_row_is_read_up_to_it(tmp_path: Path) -> None:
    """Round 30 (rpidoc806): raspberrypi/documentation#806's whole `df -h` (/ on nvme0n1p3, a USB
    disk /dev/sda1 458G at /run/media/...) beside its `lsblk` cut after its header and `sda`, no
    newline: the folder was refused (exit 2, "its row of sda cannot be read into its columns"),
    the whole df thrown away. The lsblk is an output cut short: its rows before the cut are read
    (none here), data_disk is judged from the df (pass) and says the lsblk was cut. Edited
    in-test: the table cut inside a later row of its own (a row whole, then `sda1`) reads that
    row; a row that cannot be read with a newline after it is still no row lsblk prints, but a
    name alone (no row lsblk prints either) is the cut it shows."""
    text = (REAL / RPI_LSBLK).read_text()
    assert text.endswith("MOUNTPOINT\nsda") and table_unread(text) is None
    assert table_cut(text).startswith("the lsblk table ends inside its row of sda, cut short")
    assert read_lsblk(text) == ()
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "df.txt").write_text((REAL / RPI_DF).read_text())
    (folder / "lsblk.txt").write_text(text)
    (tmp_path / "order.yml").write_text(RPI_ORDER)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    (check,) = [
        c
        for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
        if c.name == "data_disk"
    ]
    assert check.verdict == "pass" and check.actual.startswith("/dev/sda1 at /run/media/"), check
    assert "the lsblk table ends inside its row of sda, cut short" in check.detail
    longer = text + "    8:0    0 465.8G  0 disk\n`-sda1   8:"
    assert [d.name for d in read_lsblk(longer)] == ["sda"] and table_cut(longer).endswith(
        "row of sda1, cut short: the rows from there on are not known"
    )
    assert table_unread(longer + "\n") is not None
    # a row of a name alone is cut by its own shape, a newline after it too (a code fence's)
    assert table_unread(text + "\n") is None and table_cut(text + "\n") == table_cut(text)


HARVESTER = "lsblk__loop-root_sda5-longhorn-14-mountpoints__ascii-tree__harvester-6224.txt"


def test_a_table_cut_inside_the_tree_before_a_line_is_read_up_to_it(tmp_path: Path) -> None:
    """Round 31 (fresh16): harvester/harvester#6224's `lsblk` (util-linux 2.37+, ASCII tree), sda5
    at /var/lib/longhorn and 13 further mount points, each on a line of its own under the tree's
    `|`. Pasted so that it ends on a `|` alone, no newline (a paste cut inside the tree drawn
    before the next line: edited in-test), the folder was refused, exit 2, "a line lsblk does
    not print (|)"; that `|` is the cut it shows: the rows before it are read, the data disk
    judged from them, the cut said."""
    text = (REAL / HARVESTER).read_text()
    sda5 = _row(_read(HARVESTER), "sda5")
    assert sda5.parent == "sda" and len(sda5.mountpoints) == 14 and sda5.mountpoints[-1] == "/etc/cni"
    cut = text + "|"
    assert table_unread(cut) is None and read_lsblk(cut) == read_lsblk(text)
    assert table_cut(cut).startswith("the lsblk table ends inside the tree drawn before its next line")
    assert table_cut(text) == ""
    assert table_unread(cut + "\n") is not None  # (a `|` alone with a newline after it: damaged)
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "lsblk.txt").write_text(cut)
    (tmp_path / "order.yml").write_text("data_disk: {mount: /var/lib/longhorn, min_size: 100GB}\n")
    facts = parse_facts(offline.load_outputs([str(folder)]))
    (check,) = [
        c
        for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
        if c.name == "data_disk"
    ]
    assert check.verdict == "unverified" and "ends inside the tree drawn before its next line" in check.detail


def _filled(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_the_first_lines_read_from_the_head_are_the_whole_text_s_first_lines() -> None:
    """disks.first_filled_lines against the whole text split: every lsblk capture, and texts
    whose 4 KiB head ends inside a line, on a CRLF's CR, on a line blank in the head that goes
    on with words, with fewer filled lines than asked in the head, or with no line break."""
    from gpuonboard.facts.disks import first_filled_lines

    fixtures = Path(__file__).parents[2] / "fixtures"
    captures = [p.read_text() for p in fixtures.rglob("lsblk*") if p.is_file()]
    assert len(captures) >= 10
    made = []
    for at in range(4080, 4100):
        made.append("x" * at + "\r\nNAME SIZE\r\nsda 1G\r\n")
        made.append("\n" * (at - 3) + "   \t" + "   words\nnext\n")
        made.append("NAME\n" + " " * at + "sda\nsdb\n")
        made.append("a\n\n" + "b" * at + "\u2028c\x85d\n")
    made += ["x" * 9000, "", "\n\n", "one\r\ntwo\rthree\x0cfour"]
    for text in [*captures, *made]:
        for count in (1, 2, 3):
            assert first_filled_lines(text, count) == _filled(text)[:count], (text[:20], count)


SESSIONS = REAL.parent / "sessions"
BUDGIE = (
    "transcript__lsblk-b-CUT__long-lvm-names-on-their-own-lines__zsh-arrow-prompt__budgie-welcome-224.txt"
)
RHEL6_LUKS = "lsblk__rhel6-luks-name-on-its-own-line__dm-kernel-names__insights-core-3912.txt"


def test_a_long_name_on_its_own_line_is_read_with_the_cells_below_it(tmp_path: Path) -> None:
    """Round 32 (m32b 06): lsblk puts a tree name too long for its column on a line of its own
    and the row's cells on the next line, after blanks (or the tree's `│`) up to where they
    start: budgie-welcome#224's `  └─butank-butank--lvm` / `253:0 0 4000787202048 0 lvm
    /mnt/butank` (the zsh prompt above it, cut at `└─sdd1`), and a RHEL 6 luks name with its
    kernel name (insights-core#3912). The table was refused, exit 2, "its row of boop--lvm-lv1
    cannot be read into its columns; the file is cut short or damaged". Each such row is one
    device with its parent; a table cut inside the line of cells is cut (its rows before read),
    and a line of cells that cannot be read with a newline after it is still damage."""
    text = (SESSIONS / BUDGIE).read_text().split("\n", 1)[1]  # (the prompt line left out here)
    assert table_unread(text) is None
    devices = read_lsblk(text)
    lvm = _row(devices, "butank-butank--lvm")
    assert (lvm.size_bytes, lvm.type, lvm.mountpoints, lvm.parent) == (
        4000787202048,
        "lvm",
        ("/mnt/butank",),
        "sdb1",
    )
    assert [d.parent for d in devices if d.name == "boop--lvm-lv1"] == ["sda1", "sdc"]
    assert _row(devices, "sdd").type == "disk" and devices[-1].name == "sdd"
    assert table_cut(text).startswith("the lsblk table ends inside its row of sdd1, cut short")
    luks = _read(RHEL6_LUKS)
    crypt = _row(luks, "luks-c666666c-e999-4666-8888-333333333333")
    assert (crypt.type, crypt.size_bytes, crypt.parent) == ("crypt", round(136.2 * GiB), "sda2")
    assert _row(luks, "vg0-lv_root").parent == crypt.name and len(luks) == 14
    # cut inside the line of cells, no newline: the rows before it read, the cut said
    inside = text[: text.index("253:0    0 4000") + 12]
    assert table_unread(inside) is None and devices[:15] == read_lsblk(inside)[:15]
    assert table_cut(inside).startswith("the lsblk table ends inside its row of butank-butank--lvm")
    assert table_unread(inside + "\n") == "its row of butank-butank--lvm cannot be read into its columns"
    # the folder with the prompt line: read, data_disk unverified (LVM with no df), not refused
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "lsblk.txt").write_text((SESSIONS / BUDGIE).read_text())
    (tmp_path / "order.yml").write_text("data_disk: {mount: /mnt/butank, min_size: 4TB}\n")
    facts = parse_facts(offline.load_outputs([str(folder)]))
    order = offline.load_order(str(tmp_path / "order.yml"))
    (check,) = [c for c in offline.judge(facts, order) if c.name == "data_disk"]
    assert check.verdict == "unverified" and check.actual.startswith("butank-butank--lvm at /mnt/butank")
    assert "ends inside its row of sdd1, cut short" in check.detail
