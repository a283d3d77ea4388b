"""data_disk when nothing is mounted at the ordered path: the failure says where the data disk
is (mounted elsewhere, or attached with nothing mounted) and never offers /'s own disk."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.disks import parse_lsblk_json, unmounted_disks
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.checks.acceptance import evaluate

FIX = Path(__file__).parents[1] / "fixtures"


def _check(mount: str, **files: str) -> object:
    raw = {k: ProbeOutput((FIX / v).read_text(), "", 0) for k, v in files.items()}
    return evaluate(OrderSpec(data_disk=DataDiskSpec(mount)), parse_facts(raw))[-1]


def test_disks_mounted_elsewhere_are_named() -> None:
    """Real MI300X df: seven 14T NVMe disks under /mnt, nothing at /data."""
    check = _check("/data", df="real/df-h__8gpu-server-mi300x.txt")
    assert check.verdict == "fail"  # type: ignore[attr-defined]
    assert check.detail.startswith(  # type: ignore[attr-defined]
        "another disk than / is mounted elsewhere: /mnt/nvme0n1p1 (/dev/nvme2n1p1, 15.4 TB)"
    )
    assert "and 4 more" in check.detail and "/boot/efi" not in check.detail  # type: ignore[attr-defined]


def test_an_attached_disk_with_nothing_mounted_is_named() -> None:
    check = _check(
        "/data",
        df="real/df-P-B1__h200-vm.txt",
        lsblk="edited/lsblk-J-b__h200-vm__vdb-unmounted__edited.json",
    )
    assert check.verdict == "fail"  # type: ignore[attr-defined]
    assert "lsblk shows a disk with nothing mounted: vdb (318.3 MB)" in check.detail  # type: ignore[attr-defined]


def test_a_box_without_a_second_disk_says_so() -> None:
    check = _check("/data", df="real/df-P-B1__h200-vm.txt", lsblk="real/lsblk-J-b__h200-vm.json")
    assert check.verdict == "fail"  # type: ignore[attr-defined]
    assert check.detail.startswith("no disk is mounted there")  # type: ignore[attr-defined]


def test_an_lsblk_that_does_not_see_root_never_offers_the_system_disk() -> None:
    """The real gpud lsblk was taken where no mount of / shows (nvme0n1p2 unmounted): offering
    nvme0n1 to be formatted would wipe the system disk."""
    devices = parse_lsblk_json((FIX / "real/lsblk-J-b__gpu-node-8x-nvme.json").read_text())
    assert {d.name for d in unmounted_disks(devices)} == {"/dev/nvme0n1", "/dev/nvme1n1"}
    # with a df whose / is on a disk this lsblk does not show, nothing is offered
    check = _check("/data", df="real/df-P-B1__h200-vm.txt", lsblk="real/lsblk-J-b__gpu-node-8x-nvme.json")
    assert check.verdict == "fail"  # type: ignore[attr-defined]
    assert "nvme0n1" not in check.detail and "format" not in check.detail  # type: ignore[attr-defined]


def test_unmounted_disks_leaves_out_used_trees_zram_and_loops() -> None:
    devices = parse_lsblk_json(
        (FIX / "edited/lsblk-J-b__h200-vm__lvm-data-spans-vda-and-vdb__edited.json").read_text()
    )
    assert unmounted_disks(devices) == []  # vda and vdb hold mounted LVs; zram0 is size 0
    real = parse_lsblk_json(
        (FIX / "edited/lsblk-J-b__gpu-node-8x-nvme__nvme0n1p2-at-root__edited.json").read_text()
    )
    assert [d.name for d in unmounted_disks(real)] == ["/dev/nvme1n1"]
