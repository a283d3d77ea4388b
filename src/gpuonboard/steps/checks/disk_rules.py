"""The data disk rule of the `acceptance` step: the data disk must be another physical disk than
/'s, of the ordered size, read from df (and lsblk: which disk each mount is on)."""

from __future__ import annotations

import dataclasses
import re

from gpuonboard.connection.gather import Facts
from gpuonboard.facts import disks, lsblk_table
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.host_facts import answered as _answered
from gpuonboard.steps.checks.host_facts import tool_failed as _tool_failed
from gpuonboard.steps.checks.host_facts import unread as _unread
from gpuonboard.steps.checks.missing_facts import not_judged
from gpuonboard.units import format_bytes

_NOT_DISKS = {"tmpfs", "overlay", "devtmpfs", "ramfs", "none", "shm"}
# file systems that live on one block device only, so never larger than it (not btrfs, ZFS,
# bcachefs, f2fs or erofs, which may span devices, nor XFS, whose realtime device adds to it)
_ONE_DEVICE_FS = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "vfat",
        "msdos",
        "exfat",
        "ntfs",
        "ntfs3",
        "jfs",
        "hfsplus",
        "iso9660",
        "udf",
        "squashfs",
    }
)


def _separate_mounts(root: disks.Mount, facts: Facts) -> list[disks.Mount]:
    """Mounts df lists on a known other physical disk than /'s (not tmpfs/overlay, not under
    /boot), largest first: where a vendor may have mounted the data disk instead."""
    found: list[disks.Mount] = []
    for mount in facts.mounts:
        if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS or mount is root:
            continue
        if mount.mountpoint == "/boot" or mount.mountpoint.startswith("/boot/"):
            continue
        shared = disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if shared is False and all(m.device != mount.device for m in found):
            found.append(mount)
    return sorted(found, key=lambda m: -(m.size_bytes or 0))


def _device_size(device: disks.BlockDevice) -> str:
    """A block device's size as lsblk gave it: exact, or the range a human size (`1.8T`) may be."""
    size, rounding = device.size_bytes, device.size_rounding
    if size is None or not rounding:
        return format_bytes(size, binary=False)
    low, high = (format_bytes(n, binary=False) for n in (size - rounding, size + rounding))
    return f"{low} to {high}, as lsblk rounds it" if low != high else low


def _no_mount_detail(path: str, root: disks.Mount | None, facts: Facts) -> str:
    """What to do when nothing is mounted at the ordered path: name the disks lsblk shows with
    nothing mounted (a data disk delivered but not formatted/mounted), when lsblk sees this
    system's mounts (it resolves /; in a container it may not)."""
    # only an lsblk that shows / mounted sees this system's mounts (one run in a container
    # shows the host's system disk with nothing mounted); a disk under any mount df lists
    # (/ included) is never offered
    sees_root = any("/" in d.mountpoints for d in facts.block_devices)
    in_use: set[str] = set()
    for mount in facts.mounts:
        in_use |= disks.physical_disks(mount, facts.block_devices, facts.mounts, facts.loop_backing) or set()
    idle = [
        d
        for d in (disks.unmounted_disks(facts.block_devices) if sees_root and root is not None else [])
        if disks.short_name(d.name) not in in_use
    ]
    elsewhere = _separate_mounts(root, facts) if root is not None else []
    if elsewhere:
        shown = ", ".join(
            f"{m.mountpoint} ({m.device}, {format_bytes(m.size_bytes, binary=False)})" for m in elsewhere[:3]
        )
        more = f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else ""
        return (
            f"another disk than / is mounted elsewhere: {shown}{more}; if one is the ordered data"
            f" disk, set the order's data_disk mount to its path, or mount it at {path}"
        )
    if idle:
        # (in a table or `-P` pairs, unlike a JSON, a cut after a row cannot be seen: the device
        # listed last may have lost its rows below, a RAID leg of / whose partitions were not
        # copied, openvstorage#1379)
        json = _answered(facts, "lsblk").lstrip().startswith("{")
        last = "" if json else facts.block_devices[-1].name
        cut = "; the lsblk output ends at it: what is below it may be cut off"
        names = ", ".join(f"{d.name} ({_device_size(d)}{cut if d.name == last else ''})" for d in idle)
        one = len(idle) == 1
        return (
            f"lsblk shows {'a disk' if one else 'disks'} with nothing mounted: {names}; if"
            f" {'it is' if one else 'one is'} the ordered data disk and nothing is on it, format it and"
            f" mount it at {path} (or ask the vendor to)"
        )
    return f"no disk is mounted there: ask the vendor to attach the ordered data disk and mount it at {path}"


def _no_mounts(expected: str, facts: Facts) -> Check:
    """data_disk when no mount was read: df not given (not judged), given but not understood, or
    df did not run or failed on the host (unverified: nothing is known of the disks)."""
    if not facts.given("df"):
        return not_judged("data_disk", expected, "df", "df -P -k")
    if _unread(facts, "df"):
        return Check(
            "data_disk",
            expected,
            "unknown: no filesystem could be read from the df output",
            "unverified",
            "the df output was given but no mount and size could be read from it: save"
            " `df -P -k` of the box (in the C locale: `LC_ALL=C df -P -k`) to judge the data disk",
        )
    return _tool_failed("data_disk", expected, facts, "df", "df -P -k")


def _from_lsblk(order: OrderSpec, expected: str, facts: Facts, tolerance: float) -> Check | None:
    """data_disk where no df was given (offline) but an lsblk was: the fail lsblk alone proves,
    else None (unverified as without it). A file system that lives on one device only (its FSTYPE
    shown: ext4, vfat ...) is no larger than that device, so such a device at the ordered path
    whose size, its rounding included, is under the order fails; one that shares /'s physical
    disk fails. A file system that may span devices (btrfs, ZFS, bcachefs; FSTYPE not shown) may be
    larger than the device lsblk shows it on (lsblk before 2.42 shows its mount on one member
    only, util-linux#4145), and where several devices hold the ordered mount lsblk cannot tell
    which is judged: no fail. A size that meets the order passes nothing: the file system on it
    may be smaller (an image not grown to its disk)."""
    spec = order.data_disk
    assert spec is not None
    at = [d for d in facts.block_devices if spec.mount in d.mountpoints]
    if not facts.given("df") and not at:
        return _none_at_per_lsblk(spec.mount, expected, facts)
    if facts.given("df"):
        return None
    if len({disks.short_name(d.name) for d in at}) > 1:
        return _several_at(expected, at, spec.mount)
    if len(at) != 1:
        return None
    dev = at[0]
    actual = f"{dev.name} at {spec.mount}, {_device_size(dev)} (lsblk, no df given"
    need = (spec.min_size_bytes or 0) * (1 - tolerance)
    small = dev.size_bytes is not None and dev.size_bytes + dev.size_rounding < need
    if small and (dev.fstype or "") in _ONE_DEVICE_FS:
        most = format_bytes((dev.size_bytes or 0) + dev.size_rounding, binary=False)
        return Check(
            "data_disk",
            expected,
            actual + f", {dev.fstype})",
            "fail",
            f"the device mounted at {spec.mount} (at most {most}) is smaller than ordered, and the"
            f" {dev.fstype} file system on it is no larger: a smaller disk than the order; ask the"
            " vendor for the ordered size",
        )
    root = next((d for d in facts.block_devices if "/" in d.mountpoints), None)
    mounted = disks.Mount(f"/dev/{disks.short_name(dev.name)}", None, None, None, spec.mount)
    system = disks.Mount(f"/dev/{disks.short_name(root.name)}", None, None, None, "/") if root else None
    if (
        root is None
        or system is None
        or not disks.shares_disk(system, mounted, facts.block_devices, cache=False)
    ):
        return _lsblk_unjudged(expected, actual, dev, small, spec.mount)
    under = disks.physical_disks(system, facts.block_devices) or {disks.short_name(root.name)}
    return Check(
        "data_disk",
        expected,
        f"{actual}; same disk as / on {', '.join(sorted(under))})",
        "fail",
        f"lsblk shows {spec.mount} on the system disk: a full dataset or checkpoint fills / and stops the"
        " box; ask the vendor for the separate data disk that was ordered",
    )


def _none_at_per_lsblk(path: str, expected: str, facts: Facts) -> Check | None:
    """data_disk from an lsblk alone (no df) that shows / mounted and no device at `path` nor at
    a mount point above it but /: no local disk is mounted there, said with the disks it shows
    unmounted; unverified, never a fail, as a mount of no block device (a network share, tmpfs)
    is in no lsblk (m36b 20: a 3.5T partition not yet mounted at /mnt/data). None where lsblk
    cannot say it (no lsblk, no / in it, a mount point above `path`: judged as before)."""
    root = next((d for d in facts.block_devices if "/" in d.mountpoints), None)
    above = [
        m
        for d in facts.block_devices
        for m in d.mountpoints
        if m not in ("/", "[SWAP]") and path.startswith(m.rstrip("/") + "/")
    ]
    if root is None or above or lsblk_table.lacks_mountpoints(_answered(facts, "lsblk")):
        return None
    system = disks.Mount(f"/dev/{disks.short_name(root.name)}", None, None, None, "/")
    return Check(
        "data_disk",
        expected,
        f"unknown: lsblk shows no device mounted at {path} (it would be a directory on /, {root.name};"
        " no df given)",
        "unverified",
        "a mount of no local disk (a network share, tmpfs) is in no lsblk, so only df can tell:"
        f" save `df -P -k` of the box; {_no_mount_detail(path, system, facts)}",
    )


def _several_at(expected: str, at: list[disks.BlockDevice], path: str) -> Check:
    """data_disk from an lsblk alone that shows `path` on several devices (m37b 15: util-linux's
    bcachefs sdc1 and sdc2 both at /mnt/test): one file system over them all (bcachefs, btrfs,
    ZFS) or one mount over another; lsblk gives each device's size, not the file system's:
    unverified, what it shows said."""
    listed = ", ".join(f"{d.name} ({_device_size(d)})" for d in at)
    return Check(
        "data_disk",
        expected,
        f"unknown: lsblk shows {len(at)} devices mounted at {path}: {listed} (no df given)",
        "unverified",
        f"a file system over several devices (bcachefs, btrfs, ZFS) or one mounted over another:"
        f" lsblk gives each device's size, not the size of the file system at {path}, which only df"
        " tells: save `df -P -k` of the box to judge it",
    )


def _lsblk_unjudged(expected: str, actual: str, dev: disks.BlockDevice, small: bool, path: str) -> Check:
    """data_disk from an lsblk alone that proves nothing of the file system at `path`: a device
    as large as ordered may hold a smaller file system, a smaller one a file system that spans
    other devices (FSTYPE not shown, or one that may)."""
    if dev.size_bytes is None:
        why = f"lsblk gives no size for the device at {path}, nor the file system's"
    elif not small:
        why = (
            f"lsblk shows the device at {path} as large as ordered, but not the file system on it,"
            " which may be smaller (an image not grown to its disk)"
        )
    else:
        fs = (
            f"its {dev.fstype} file system" if dev.fstype else "the file system on it (lsblk shows no FSTYPE)"
        )
        why = (
            f"lsblk shows the device at {path} smaller than ordered, but {fs} may span other devices,"
            " which lsblk before 2.42 shows with nothing mounted"
        )
    return Check(
        "data_disk",
        expected,
        f"{actual}; its file system's size not known)",
        "unverified",
        f"{why}: save `df -P -k` of the box to judge it",
    )


def _df_unread_mounts(stderr: str) -> list[str]:
    """The mount points a df that exited 1 names as not read."""
    return disks.DF_UNREAD.findall(stderr)


def _cut_short(
    path: str, mount: disks.Mount | None, root: disks.Mount | None, expected: str, facts: Facts
) -> Check | None:
    """data_disk unverified where the df output is cut short and the verdict depends on the
    part that may be missing: a row cut (df_cut) and no mount at exactly `path` read, or an
    output that ends without df's final newline (df_open_row) where the verdict depends on its
    last row, whose mount point may be cut short (`/mnt` of `/mnt/nvme0n1p1`): that mount point
    starts `path` (the whole one may be `path`, a mount holding it or another path) and no
    other row is mounted at exactly `path`, or the row is read as / (the system disk)."""
    text = _answered(facts, "df")
    cut = disks.df_cut(text)
    partial = facts.raw["df"].partial if text else ""
    unread = _df_unread_mounts(facts.raw["df"].stderr)
    if partial and unread and not any(path == u or path.startswith(u.rstrip("/") + "/") for u in unread):
        partial = ""  # (df names each mount it could not read: the ordered path is none of them)
    if (cut or partial) and (mount is None or mount.mountpoint != path):
        which, why = "lists only some filesystems", partial
        if cut:
            which, why = "is cut short", f"the df output is cut short ({cut})"
        return Check(
            "data_disk",
            expected,
            f"unknown: {path} is not in the df output, which {which}",
            "unverified",
            f"{why}, so a mount at {path} may be in the part that is missing: save the whole"
            " `df -P -k` of the box",
        )
    last = disks.df_open_row(text)
    if last is None:
        return None
    elsewhere = mount is not None and mount != last and mount.mountpoint == path
    if not (path.startswith(last.mountpoint) and not elsewhere) and last != root:
        return None
    return Check(
        "data_disk",
        expected,
        f"unknown: the df output may be cut short inside its last row ({last.device} at {last.mountpoint})",
        "unverified",
        f"the df output ends without the newline df prints after each row, so the mount point of"
        f" its last row ({last.mountpoint}) may be cut short, and the verdict for {path} depends"
        " on that row: save the whole `df -P -k` of the box",
    )


def _rounded_size(mount: disks.Mount, need: float, expected: str, actual: str) -> Check:
    """data_disk unverified where df printed the size rounded up (`df -h`) and the size needed
    lies within that rounding: `3.5T` may be 3.75 TB or 3.85 TB, around 3.80 TB needed."""
    size = mount.size_bytes or 0
    low, high = (format_bytes(n, binary=False) for n in (size - mount.size_step, size))
    return Check(
        "data_disk",
        expected,
        f"{actual} (rounded up by df: between {low} and {high})",
        "unverified",
        f"df prints {mount.mountpoint}'s size rounded up, and the {format_bytes(int(need), binary=False)}"
        " the order needs (less the tolerance) lies within that rounding: save `df -P -k` of the box"
        " to judge it",
    )


# network and cluster filesystems df names by type (`df -T`), and the `host:/export` /
# `//host/share` form of a network share's device. IBM Spectrum Scale (`gpfs`), WekaFS
# (`wekafs`), BeeGFS under its old name (`fhgfs`), PanFS and OrangeFS (`pvfs2`) print the
# cluster's whole size as df's, never the quota rented on it (ibm-spectrum-scale-csi#80: a
# 1 GB volume shown as `gpfs 15T`)
_NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "glusterfs", "ceph", "lustre", "beegfs", "fhgfs", "9p",
     "gpfs", "wekafs", "panfs", "pvfs2", "orangefs", "afs", "ncpfs"}
)  # fmt: skip
# FUSE network filesystems by their `fuse.<name>` type (not lxcfs, gvfs, overlayfs: local)
_NETWORK_FUSE = frozenset(
    {"mfs", "moosefs", "s3fs", "juicefs", "gcsfuse", "goofys", "rclone", "sshfs", "glusterfs", "ceph",
     "cephfs", "ceph-fuse", "alluxio-fuse", "geesefs", "mountpoint-s3", "blobfuse", "blobfuse2",
     "quobyte", "weka"}
)  # fmt: skip
# a network share's device: `host:/export`, `user@host:/path` (sshfs), CephFS's kernel client
# `mon:6789:/path` or `mon1:6789,mon2:6789:/path` (a monitor list with ports, or `mon1,mon2:/`
# without) and its newer `user@fsid.fsname=/path`, Lustre's list of servers' NIDs
# (`10.73.20.11@tcp:10.73.20.12@tcp:/fs`, `@o2ib`, a server's NIDs joined by `,`),
# `//host/share`, MooseFS's `mfs#host:port` (a RunPod network volume), and the FUSE clients'
# own names (s3fs, JuiceFS:vol, ceph-fuse, BeeGFS's beegfs_nodev)
_NETWORK_DEVICE = re.compile(
    r"^(?:[\w.@,-]+:/|[\w.-]+@\w+(?:[,:][\w.-]+@\w+)*:/|[\w.\[\]-]+:\d+(?:,[\w.\[\]-]+:\d+)*:/|[\w.-]+@[\w-]+\.[\w-]+=/|//[\w.-]+/"
    r"|[\w.-]+#[\w.-]+:\d+|s3fs$|JuiceFS:|gcsfuse$|rclone$|ceph-fuse$|beegfs_nodev$)"
)


def _network_share(mount: disks.Mount) -> bool:
    """Whether a mount is a network share (NFS, SMB, Lustre, a FUSE network filesystem ...), by
    df's type or device form."""
    fstype = mount.fstype or ""
    return (
        fstype in _NETWORK_FS
        or fstype.removeprefix("fuse.") in _NETWORK_FUSE
        or bool(_NETWORK_DEVICE.match(mount.device))
    )


def _network_check(mount: disks.Mount, expected: str, actual: str, sized: bool = True) -> Check:
    """data_disk on a network share: a warning saying it is one (lsblk never lists one); where a
    size was ordered, unverified: df shows the share's whole size, not the quota rented on it."""
    said = (
        f"{mount.mountpoint} is a network share, not a disk in the box: its speed is the network's"
        " and it is shared; ask the vendor whether the ordered data disk is meant to be network storage"
    )
    if not sized:
        said += (
            "; df shows the share's whole size, not the quota rented on it, so the ordered size"
            " cannot be read here: ask the vendor for the volume's quota"
        )
    return Check(
        "data_disk",
        expected,
        actual + f" (a network share{f', {mount.fstype}' if mount.fstype else ''})",
        "warn" if sized else "unverified",
        said,
    )


def _in_container(check: Check, facts: Facts) -> Check:
    """data_disk of a df run inside a container (ProbeOutput.in_container: `docker exec app df
    -h`, a session's prompt in a container's shell): it shows the container's own root (an
    overlay) and the mounts given to it, a view of the box's disks, so no verdict of its sizes is
    the box's: unverified, saying so (as free's and lscpu's container views are)."""
    out = facts.raw.get("df")
    if out is None or not out.in_container or check.verdict not in ("pass", "warn", "fail"):
        return check
    return dataclasses.replace(
        check,
        actual=f"{check.actual} ({out.in_container})",
        verdict="unverified",
        detail=(
            "a container's df shows its own root file system (an overlay) and the mounts given to"
            " it, not the box's disks: save `df -P -k` run in the box's own shell"
        ),
    )


def rule_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """A data disk is mounted at the ordered path, on another physical disk than /, big enough.
    An lsblk output given but not read (a JSON cut short) is judged as no lsblk, and said so."""
    check = _in_container(_judge_data_disk(order, facts, tolerance), facts)
    if not facts.given("df") and lsblk_table.lacks_mountpoints(_answered(facts, "lsblk")):
        # (an lsblk without mount points beside no df: m35b 18, `lsblk --topology`)
        said = "the lsblk given has no MOUNTPOINT column, so it shows no mount point either"
        check = dataclasses.replace(check, detail="; ".join(filter(None, [check.detail, said])))
    unread = lsblk_table.unread(_answered(facts, "lsblk"))
    if unread is None and (cut := lsblk_table.table_cut(_answered(facts, "lsblk"))):
        # (an lsblk cut short: its rows read are judged, what it alone could show is not known)
        return dataclasses.replace(check, detail="; ".join(filter(None, [check.detail, cut])))
    if unread is None:
        return check
    note = (
        f"the lsblk output could not be read ({unread}), so the disks were judged without it:"
        " save `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL` of the box again"
    )
    return dataclasses.replace(check, detail="; ".join(filter(None, [check.detail, note])))


def _size_check(
    ordered: int, mount: disks.Mount, tolerance: float, expected: str, actual: str
) -> Check | None:
    """data_disk's size verdict when the size is not enough or not known to be (None: it is).
    A size df did not give (`-`: `df -a`'s row of an autofs mount point not mounted yet,
    `systemd-1  -  -  -  -  /path`) is no size: unverified, never a warning a GO passes over."""
    if mount.size_bytes is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "unverified",
            f"the size of {mount.mountpoint} could not be read from the df output (df prints `-`"
            " for a file system it did not read, such as an automount point not mounted yet);"
            f" save `df -P -k {mount.mountpoint}` (or `df -P -B1`) to judge it",
        )
    need = ordered * (1 - tolerance)
    if mount.size_bytes < need:
        short = format_bytes(ordered - mount.size_bytes, binary=False)
        return Check(
            "data_disk",
            expected,
            actual,
            "fail",
            f"{short} smaller than ordered, more than the {tolerance:.0%} a filesystem keeps: a smaller"
            " disk than the order; ask the vendor for the ordered size",
        )
    if mount.size_bytes - mount.size_step < need:
        return _rounded_size(mount, need, expected, actual)
    return None


def _not_mounted(
    path: str, mount: disks.Mount | None, root: disks.Mount | None, expected: str, facts: Facts
) -> Check:
    """data_disk where no mount of its own holds `path` (`mount`: the one that does, /):
    unverified where df lists neither it nor / (a df of given paths), else a fail (it lives on
    the system disk /)."""
    if mount is None and root is None:  # a df of given paths (`df -h /opt/x`): / not among them
        listed = ", ".join(dict.fromkeys(m.mountpoint for m in facts.mounts))
        return Check(
            "data_disk",
            expected,
            f"unknown: {path} is not in the df output, which lists only {listed}",
            "unverified",
            f"the df output lists no / row (a df of given paths), so where {path} lives could"
            " not be told: save the whole `df -P -k` of the box",
        )
    return Check(
        "data_disk",
        expected,
        f"{path} is not a mount point; it lives on the system disk /",
        "fail",
        _no_mount_detail(path, root, facts),
    )


def _lsblk_said(facts: Facts) -> str:
    """Why lsblk could not tell two mounts' disks apart: none was given (offline: a df alone,
    m32b 39), or the one read does not show both."""
    if not facts.block_devices and not facts.given("lsblk"):
        return "no lsblk output was given (save `lsblk -J -b` of the box to tell)"
    return "lsblk does not show both"


def _judge_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """rule_data_disk from df and lsblk (when read)."""
    spec = order.data_disk
    assert spec is not None
    expected = f"separate disk at {spec.mount}"
    if spec.min_size_bytes:
        expected += f", >= {format_bytes(spec.min_size_bytes, binary=False)}"
    if not facts.mounts:
        return _from_lsblk(order, expected, facts, tolerance) or _no_mounts(expected, facts)
    root = disks.mount_for(facts.mounts, "/")
    mount = disks.mount_for(facts.mounts, spec.mount)
    if (cut := _cut_short(spec.mount, mount, root, expected, facts)) is not None:
        return cut
    if mount is None or mount.mountpoint == "/":
        return _not_mounted(spec.mount, mount, root, expected, facts)
    actual = f"{mount.device} at {mount.mountpoint}, {format_bytes(mount.size_bytes, binary=False)}"
    if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS:
        return Check(
            "data_disk",
            expected,
            actual + " (memory or overlay filesystem, not a disk)",
            "fail",
            "data on tmpfs or an overlay is lost at reboot; ask the vendor for the ordered disk",
        )
    shared = (
        disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if root is not None
        else None
    )
    cache_only = ""
    if shared:
        assert root is not None
        under = disks.physical_disks(root, facts.block_devices, facts.mounts, facts.loop_backing)
        on = f" {', '.join(sorted(under))}" if under else f" {root.device}"
        backing = disks.shares_disk(
            root, mount, facts.block_devices, facts.mounts, facts.loop_backing, cache=False
        )
        if backing is not False:
            return Check(
                "data_disk",
                expected,
                actual + f" (same disk as / on{on})",
                "fail",
                f"{mount.mountpoint} is on the system disk: a full dataset or checkpoint fills / and"
                " stops the box; ask the vendor for the separate data disk that was ordered",
            )
        # bcache: the data lives on its backing device; only the cache shares /'s disk
        cache_only = f"its cache device shares the system disk ({on.strip()}) with /"
    if spec.min_size_bytes and (
        sized := _size_check(spec.min_size_bytes, mount, tolerance, expected, actual)
    ):
        return sized
    if spec.min_size_bytes and _network_share(mount):
        # (df shows a share's whole size, a cluster's 448T, never the quota rented on it)
        return _network_check(mount, expected, actual, sized=False)
    if cache_only:
        return Check("data_disk", expected, actual, "warn", cache_only)
    if _network_share(mount):
        return _network_check(mount, expected, actual)
    if shared is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "warn",
            f"could not tell whether {mount.device} is on another physical disk than /"
            f" ({root.device if root else 'no / in df'}): {_lsblk_said(facts)}",
        )
    if mount.mountpoint != spec.mount:
        return Check(
            "data_disk", expected, actual, "warn", f"{spec.mount} lies inside the mount {mount.mountpoint}"
        )
    return Check("data_disk", expected, actual, "pass")
