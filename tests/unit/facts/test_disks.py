"""df / lsblk parsers and the mount helpers against the real captures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.facts import disks
from gpuonboard.facts.disks import Mount, mount_for, parse_df, parse_lsblk_json, parse_size, same_device

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
TIB = 1024**4
GIB = 1024**3


H200_DF = "df-P-B1__h200-vm.txt"
H200_LSBLK = "lsblk-J-b__h200-vm.json"


def test_every_real_df_and_lsblk_is_covered() -> None:
    from .audit_captures import covered  # the truth audit's captures: tested there

    # zh_CN `df -h`, `df -i` and the same box's `df -hT`: tested in test_translated_free_df.py
    elsewhere = {
        "df-h__zh-cn__vda1-80g-root_vdb1-500g-data.txt",
        "df-i__sda2-xfs-root_sdb1-ext4-mydata.txt",
        "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt",
        # an LXD container's `df -h` (its / a ZFS dataset): tested in test_container_slices_lxc.py
        "df-h__lxd-container__zfs-pool-root__dev-lxd-mounts.txt",
        # `df -h` pastes that lost their newlines: tested in test_offline_df_rows_joined.py
        "df-h__ubuntu-12.04-forum__5-disks__rows-joined-on-one-line.txt",
        "df-h__nvme-root-home-efi__blog-rows-joined-on-one-line.txt",
        "df-h__16g-vm-sda1-32g__blanks-collapsed__jishuzhan.txt",
        # `df -ah`'s autofs row, its sizes `-`: tested in steps/checks/test_data_disk_size_unread.py
        "df-ah-sorted__vagrant-ubuntu-20.04__autofs-systemd-1-dash-size.txt",
        # a k8s pod's `df -hT` of an IBM Spectrum Scale volume: steps/checks/test_host_rules_network_shares.py
        "df-hT__k8s-pod__gpfs-15t-volume__ibm-spectrum-scale-csi.txt",
        # a Lustre client's `df -h` (its device the servers' NIDs): the same file
        "df-h-paths__lustre-client-two-nids__iml-1808.txt",
        # `df -alP` with `/bin/df: ...` lines (its stderr): api/test_offline_df_unread.py
        "df-alP__rhel6-satellite__bin-df-no-such-file-lines__insights-core.txt",
        # `df -h` copied from a CI log viewer with its gutter lines: api/test_viewer_lines.py
        "df-h__drone-ci-log-view-gutter__harness-1801.txt",
        # `df -h` in es, ru, pt_BR: test_translated_free_df.py; in it (unread): api/test_offline_df_grep.py
        "df-h__es-es__rocky-9.1-kvm__lvm-root-home.txt",
        "df-h__ru-ru__ubuntu-laptop__sda2-root.txt",
        "df-h-path__pt-br__lvm-opt-10g.txt",
        "df-h__it-it__raspberry-pi-sd-card__markdown-line-breaks.txt",
        # df rows with no header line above them (the paste's top cut off): refused, same file
        "df-h__k3s-node__kubelet-tmpfs-overlay-rows__top-cut-no-header__shkeeper-16.txt",
        # BusyBox `df -h` of `docker run --rm -it alpine df -h`: api/test_offline_narrowed.py
        "df-h__busybox-alpine-container-none-root__docker-run__moby-22677.txt",
        # `docker run alpine:2.7 df` under docker's pull lines: api/test_offline_paste.py
        "df__alpine-2.7-container__overlay-root__official-images-1449.txt",
        # a mail-quoted `df -h` whose header the paste split (`Files` / `ystem  Size ...`): refused,
        # api/test_offline_df_broken_header.py
        "df-h__vda3-99g-root__mail-quoted__copied-command__header-split-files-ystem__cvat-9608.txt",
        # a whole `df -h` beside an lsblk cut inside a row: test_lsblk_table.py
        "df-h__arch-nvme-root-usb-disk-run-media__rpi-documentation-806.txt",
    }
    assert {p.name for p in REAL.glob("df*")} == {
        "df-h__8gpu-server-mi300x.txt",
        H200_DF,
    } | elsewhere | covered("df")
    # `lsblk -P` (pairs): tested in test_disks_lsblk_pairs.py; the plain tables (`*.txt` but -P's)
    # in test_lsblk_table.py
    tables = {p.name for p in REAL.glob("lsblk*.txt") if not p.name.startswith("lsblk-P")}
    lsblk = {
        "lsblk-J-b__gpu-node-8x-nvme.json",
        H200_LSBLK,
        "lsblk-P__qemu-vm-ubuntu-core-ab-partitions__snappy.txt",
    } | tables
    assert {p.name for p in REAL.glob("lsblk*")} == lsblk | covered("lsblk")


def test_df_p_b1_h200_vm() -> None:
    # GNU df -P -B1 heads its size column "1-blocks" (not "1B-blocks")
    text = (REAL / H200_DF).read_text()
    assert text.split()[1] == "1-blocks"
    mounts = parse_df(text)
    assert mounts == (
        Mount("tmpfs", 137438953472, 0, 137438953472, "/dev/shm"),
        Mount("/dev/vda", 270553174016, 17326297088, 68662640640, "/"),
    )
    root = mount_for(mounts, "/data/checkpoints")
    assert root is not None and root.device == "/dev/vda"
    assert root.avail_bytes is not None and 63 < root.avail_bytes / GIB < 64  # of a 252 GiB disk
    shm = mount_for(mounts, "/dev/shm/x")
    assert shm is not None and shm.size_bytes == 128 * GIB


def test_lsblk_h200_vm() -> None:
    devices = parse_lsblk_json((REAL / H200_LSBLK).read_text())
    assert [(d.name, d.type, d.size_bytes, d.mountpoint) for d in devices] == [
        ("zram0", "disk", 0, None),
        ("vda", "disk", 256 * GIB, "/"),
        ("vdb", "disk", 318332928, "/usr/local/nvidia"),  # driver files on their own disk
    ]
    # virtio disks report rotational; no model, no partitions
    assert [d.rota for d in devices] == [False, True, True]
    assert {d.model for d in devices} == {None} and {d.parent for d in devices} == {None}


def test_df_h_mi300x() -> None:
    mounts = parse_df((REAL / "df-h__8gpu-server-mi300x.txt").read_text())
    assert len(mounts) == 14
    root = mount_for(mounts, "/")
    # (df -h rounds up: 438G is more than 437 GiB, at most 438)
    assert root == Mount("/dev/nvme0n1p2", 438 * GIB, 43 * GIB, 374 * GIB, "/", size_step=GIB)
    data = [m for m in mounts if m.mountpoint.startswith("/mnt/")]
    assert len(data) == 7  # the capture shows 7 of the 8 NVMe data disks
    assert {m.size_bytes for m in data} == {14 * TIB}
    assert {m.used_bytes for m in data} == {28 * 1024}
    shm = mount_for(mounts, "/dev/shm/x")
    assert shm is not None and shm.size_bytes == 1008 * GIB and shm.device == "tmpfs"
    efi = mount_for(mounts, "/sys/firmware/efi/efivars")
    assert efi is not None and (efi.size_bytes, efi.used_bytes) == (304 * 1024, 167 * 1024)
    run = mount_for(mounts, "/run")
    assert run is not None and run.used_bytes == round(5.1 * 1024**2)
    lock = mount_for(mounts, "/run/lock")
    assert lock is not None and lock.used_bytes == 0


def test_df_block_forms_and_type_column() -> None:
    b1 = (
        "Filesystem        1B-blocks        Used   Available Capacity Mounted on\n"
        "/dev/nvme0n1p2 470298918912 46170898432 401579442176      11% /\n"
        "/dev/md0     15393162788864       28672 15393162760192       1% /data set\n"
    )
    mounts = parse_df(b1)
    assert mounts[0].size_bytes == 470298918912
    assert mounts[1].mountpoint == "/data set"
    k = "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda1 1000 10 990 1% /\n"
    assert parse_df(k)[0] == Mount("/dev/sda1", 1024000, 10240, 1013760, "/")
    kb = "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/sda1 1000 10 990 1% /\n"
    assert parse_df(kb)[0].size_bytes == 1024000
    typed = (
        "Filesystem     Type  1024-blocks  Used Available Capacity Mounted on\n"
        "overlay        overlay   2000   100      1900       5% /\n"
        "/dev/nvme1n1p1 xfs       4000     0      4000       0% /data\n"
    )
    parsed = parse_df(typed)
    assert [m.fstype for m in parsed] == ["overlay", "xfs"]
    assert parsed[1] == Mount("/dev/nvme1n1p1", 4096000, 0, 4096000, "/data", "xfs")


def test_df_wrapped_long_device_name() -> None:
    text = (
        "Filesystem     1K-blocks  Used Available Use% Mounted on\n"
        "/dev/mapper/ubuntu--vg-ubuntu--lv\n"
        "                100   10    90  10% /\n"
    )
    assert parse_df(text) == (Mount("/dev/mapper/ubuntu--vg-ubuntu--lv", 102400, 10240, 92160, "/"),)


def test_lsblk_real_capture() -> None:
    devices = parse_lsblk_json((REAL / "lsblk-J-b__gpu-node-8x-nvme.json").read_text())
    disks = [d for d in devices if d.type == "disk"]
    assert len(disks) == 8
    assert len([d for d in devices if d.type == "loop"]) == 6
    intel = [d for d in disks if d.model == "INTEL SSDPF2KX076T1O"]
    assert len(intel) == 6
    assert {d.size_bytes for d in intel} == {7681501126656}
    assert all(d.rota is False for d in devices)
    part = next(d for d in devices if d.name == "/dev/nvme2n1p1")
    assert part.parent == "/dev/nvme2n1"
    assert part.mountpoint == "/mnt/local-volume/vol-0"
    assert part.size_bytes == 7681499725824
    boot = next(d for d in devices if d.name == "/dev/nvme0n1p2")
    assert boot.mountpoints == ()  # the capture shows no mountpoint for the OS disk


def test_lsblk_old_and_new_util_linux_forms() -> None:
    old = (
        '{"blockdevices": [{"name": "sda", "size": "1000204886016", "type": "disk",'
        ' "mountpoint": null, "rota": "1", "model": "ST1000DM010-2EP1",'
        ' "children": [{"name": "sda1", "size": "1000203837440", "type": "part",'
        ' "mountpoint": "/data", "rota": "1", "model": null}]}]}'
    )
    sda, sda1 = parse_lsblk_json(old)
    assert (sda.size_bytes, sda.rota, sda.model, sda.parent) == (
        1000204886016,
        True,
        "ST1000DM010-2EP1",
        None,
    )
    assert (sda1.parent, sda1.mountpoint, sda1.rota) == ("sda", "/data", True)
    new = (
        '{"blockdevices": [{"name": "nvme0n1", "size": 1920383410176, "type": "disk",'
        ' "mountpoints": [null], "rota": false, "model": "SAMSUNG MZQL21T9HCJR-00A07",'
        ' "children": [{"name": "nvme0n1p1", "size": 1920382361600, "type": "part",'
        ' "mountpoints": ["/var/lib/docker", "/data"], "rota": false, "model": null}]}]}'
    )
    disk, partition = parse_lsblk_json(new)
    assert disk.mountpoints == () and disk.rota is False
    assert partition.mountpoints == ("/var/lib/docker", "/data")


@pytest.mark.parametrize("text", ["", "garbage", "{}", '{"blockdevices": 5}', "[1, 2]", "{trunc"])
def test_garbage_lsblk(text: str) -> None:
    assert parse_lsblk_json(text) == ()


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "df: /mnt/x: No such file or directory\n", "Filesystem Foo Bar\nx y z\n"],
)
def test_garbage_df(text: str) -> None:
    assert parse_df(text) == ()


def test_mount_for_longest_prefix() -> None:
    mounts = parse_df((REAL / "df-h__8gpu-server-mi300x.txt").read_text())
    found = mount_for(mounts, "/mnt/nvme1n1p1/datasets/imagenet")
    assert found is not None and found.device == "/dev/nvme1n1p1"
    root = mount_for(mounts, "/mnt/nvme1n1p10")  # not inside /mnt/nvme1n1p1
    assert root is not None and root.mountpoint == "/"
    boot = mount_for(mounts, "/boot/efi/EFI")
    assert boot is not None and boot.device == "/dev/nvme0n1p1"
    assert mount_for((), "/") is None


def test_same_device() -> None:
    def m(device: str) -> Mount:
        return Mount(device, 1, 0, 1, "/x")

    assert same_device(m("/dev/nvme0n1p2"), m("/dev/nvme0n1p1"))
    assert not same_device(m("/dev/nvme0n1p1"), m("/dev/nvme1n1p1"))
    assert same_device(m("/dev/sda1"), m("/dev/sda2"))
    assert same_device(m("/dev/sda"), m("/dev/sda1"))
    assert not same_device(m("/dev/sda1"), m("/dev/sdb1"))
    assert same_device(m("/dev/mapper/vg-root"), m("/dev/mapper/vg-root"))
    assert not same_device(m("/dev/mapper/vg-root"), m("/dev/mapper/vg-data"))
    assert same_device(m("tmpfs"), m("tmpfs"))
    assert not same_device(m("overlay"), m("/dev/nvme0n1p2"))
    mounts = parse_df((REAL / "df-h__8gpu-server-mi300x.txt").read_text())
    root, boot = mount_for(mounts, "/"), mount_for(mounts, "/boot/efi")
    assert root is not None and boot is not None and same_device(root, boot)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("14T", 14 * TIB), ("5.1M", round(5.1 * 1024**2)), ("304K", 304 * 1024), ("0", 0),
     ("1008G", 1008 * GIB), ("1.8TiB", round(1.8 * TIB)), ("12", 12), ("x", None), ("", None)],
)  # fmt: skip
def test_parse_size(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


def test_physical_disks_through_the_lsblk_tree() -> None:
    from gpuonboard.facts.disks import BlockDevice, parse_lsblk_json, physical_disks, shares_disk

    edited = FIXTURES / "edited"

    def lsblk(name: str) -> tuple[BlockDevice, ...]:
        return parse_lsblk_json((edited / f"lsblk-J-b__h200-vm__{name}__edited.json").read_text())

    mounts = parse_df((edited / "df-P-B1__h200-vm__lvm__edited.txt").read_text())
    root, data = mount_for(mounts, "/"), mount_for(mounts, "/data")
    assert root is not None and data is not None
    on_vda = parse_lsblk_json(
        (edited / "lsblk-J-b__h200-vm__lvm-root-and-data-on-vda__edited.json").read_text()
    )
    assert physical_disks(root, on_vda) == physical_disks(data, on_vda) == frozenset({"vda"})
    assert shares_disk(root, data, on_vda) is True
    spans = parse_lsblk_json(
        (edited / "lsblk-J-b__h200-vm__lvm-data-spans-vda-and-vdb__edited.json").read_text()
    )
    assert physical_disks(data, spans) == frozenset({"vda", "vdb"})
    apart = lsblk("lvm-data-on-vdb")
    assert shares_disk(root, data, apart) is False
    assert shares_disk(root, data, ()) is None  # /dev/mapper names say nothing without lsblk
    # real captures: partitions by name, with and without lsblk (-p names in the gpud capture)
    mi300x = parse_df((REAL / "df-h__8gpu-server-mi300x.txt").read_text())
    r, d = mount_for(mi300x, "/"), mount_for(mi300x, "/mnt/nvme0n1p1")
    assert r is not None and d is not None
    gpud = parse_lsblk_json((REAL / "lsblk-J-b__gpu-node-8x-nvme.json").read_text())
    assert shares_disk(r, d, gpud) is False and shares_disk(r, d, ()) is False
    efi = mount_for(mi300x, "/boot/efi")
    assert efi is not None and shares_disk(r, efi, ()) is True


# --- bcache: the data lives on the backing device, the cache leg is another device (QA round 3)
def test_bcache_cache_leg_left_out_only_when_asked() -> None:
    from gpuonboard.facts.disks import physical_disks

    fix = FIXTURES
    devices = parse_lsblk_json(
        (fix / "edited/lsblk-J-b__h200-vm__bcache-cache-on-vda2__edited.json").read_text()
    )
    mounts = parse_df((fix / "edited/df-P-B1__h200-vm__bcache-at-data__edited.txt").read_text())
    data = next(m for m in mounts if m.mountpoint == "/data")
    assert physical_disks(data, devices, mounts) == frozenset({"vda", "vdb"})
    assert physical_disks(data, devices, mounts, cache=False) == frozenset({"vdb"})
    swapped = parse_lsblk_json(
        (fix / "edited/lsblk-J-b__h200-vm__bcache-backing-on-vda2__edited.json").read_text()
    )
    assert physical_disks(data, swapped, mounts, cache=False) == frozenset({"vda"})


# Saved `df` outputs with a block-size unit (`df -BG`, `df -B GB`, `df -B KiB`: GNU df prints
# the unit after every cell) are read, not taken as an unknown size that fails the data disk;
# a size df leaves out (`-`) is said in one sentence, with the output to save instead.

# Layout and cells of GNU coreutils 9 `df` on a real VM (the /dev/vda line), the data-disk line
# (a 14 TiB NVMe partition) written in the same units.
DF_OUTPUTS = {
    "-BG": (
        "Filesystem     1G-blocks  Used Available Use% Mounted on\n"
        "/dev/vda            252G   43G       60G  42% /\n"
        "/dev/nvme2n1p1    14306G    1G    14305G   1% /data\n",
        14306 << 30,
    ),
    "-B GB": (
        "Filesystem     1GB-blocks  Used Available Use% Mounted on\n"
        "/dev/vda            271GB  46GB      64GB  42% /\n"
        "/dev/nvme2n1p1    15362GB   1GB   15361GB   1% /data\n",
        15362 * 10**9,
    ),
    "-B KiB": (
        "Filesystem      1KiB-blocks        Used   Available Use% Mounted on\n"
        "/dev/vda       264212084KiB 44409916KiB 61980996KiB  42% /\n"
        "/dev/nvme2n1p1 15001927168KiB 28KiB 15001927140KiB 1% /data\n",
        15001927168 << 10,
    ),
}


@pytest.mark.parametrize("flag", sorted(DF_OUTPUTS))
def test_df_with_a_block_unit_is_read(flag: str) -> None:
    text, size = DF_OUTPUTS[flag]
    data = disks.mount_for(disks.parse_df(text), "/data")
    assert data is not None and data.size_bytes == size and data.avail_bytes is not None


def _facts(tmp_path: Path, df_text: str, min_size: str) -> dict[str, dict[str, str]]:
    (tmp_path / "df.txt").write_text(df_text)
    order = tmp_path / "order.yml"
    order.write_text(f"order:\n  data_disk: {{mount: /data, min_size: {min_size}}}\n")
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(tmp_path / "df.txt")]
        + ["--order", str(order), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode in (0, 1), r.stderr
    return {x["name"]: x for x in json.loads(r.stdout)["rules"]}


def test_offline_data_disk_size_from_df_bg_is_judged(tmp_path: Path) -> None:
    """15.4 TB meets a 15TB order (it was `unknown` and failed); 17TB is too much for it."""
    rule = _facts(tmp_path, DF_OUTPUTS["-BG"][0], "15TB")["data_disk"]
    assert rule["actual"] == "/dev/nvme2n1p1 at /data, 15.4 TB" and rule["verdict"] != "fail", rule
    rule = _facts(tmp_path, DF_OUTPUTS["-BG"][0], "17TB")["data_disk"]
    assert rule["verdict"] == "fail", rule


def test_a_size_df_does_not_give_is_said_with_what_to_save(tmp_path: Path) -> None:
    text = (
        "Filesystem     1K-blocks     Used Available Use% Mounted on\n"
        "/dev/vda       264212084 44409916  61980996  42% /\n"
        "/dev/nvme2n1p1         -        -         -    - /data\n"
    )
    rule = _facts(tmp_path, text, "7TB")["data_disk"]
    assert rule["verdict"] == "unverified", rule
    assert rule["detail"].startswith("the size of /data could not be read from the df output")
    assert rule["detail"].endswith("save `df -P -k /data` (or `df -P -B1`) to judge it")


def test_a_df_read_again_is_read_as_the_first_time() -> None:
    """Every real df capture, whole and cut after its second line: parse_df, df_cut and
    df_open_row read from the kept reading are the reading of the text itself."""
    paths = sorted(REAL.glob("df*"))
    assert paths
    for path in paths:
        text = path.read_text(errors="replace")
        for sample in (text, "\n".join(text.splitlines()[:2])):
            mounts, cut = disks._read_df.__wrapped__(sample)
            for _ in range(2):
                assert (parse_df(sample), disks.df_cut(sample)) == (mounts, cut)
            assert disks.df_open_row(sample) == disks.df_open_row(sample)


@pytest.mark.parametrize("end", ["/dev/sdc1       597G  517G", "/dev/sdc1       597G", "/dev/sdc1"])
def test_rows_run_together_cut_inside_a_row_are_cut_short(end: str) -> None:
    """The real forum `df -h` whose rows a page ran onto one line, cut (the test's edit) inside
    the `/dev/sdc1` row, after its device or some of its sizes, with a newline after the cut:
    that row's start was read as the mount point of the row before
    (`/media/sauvegarde /dev/sdc1 597G 517G`), and an order for `/media/Serie` said "not in the
    df output, which lists only ... /media/sauvegarde /dev/sdc1 597G 517G". The output is cut
    short; the whole row before it keeps its mount point."""
    real = (REAL / "df-h__ubuntu-12.04-forum__5-disks__rows-joined-on-one-line.txt").read_text()
    text = real[: real.index("/dev/sdc1")] + end + "\n"
    assert "cut short" in (disks.df_cut(text) or "")
    assert parse_df(text)[-1].mountpoint == "/media/sauvegarde"
