"""An order of `vram: 0GB`, `ram: 0TB` or a data disk of `min_size: 0TB` checked nothing (the box
passed whatever it held): it is an input error naming the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError


@pytest.mark.parametrize(
    ("order", "field"),
    [
        ("{vram: 0GB}", "order field 'vram' is '0GB'"),
        ("{ram: 0TB}", "order field 'ram' is '0TB'"),
        ("{data_disk: {mount: /data, min_size: 0TB}}", "order data_disk field 'min_size' is '0TB'"),
    ],
)
def test_a_size_of_zero_is_refused(tmp_path: Path, order: str, field: str) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text(f"hosts:\n  gpu-1:\n    address: 10.0.0.7\n    order: {order}\n")
    with pytest.raises(InventoryError) as exc:
        inventory.load(f)
    assert str(exc.value) == (
        f"{f}, line 4: host 'gpu-1' {field}, which checks nothing; give the size ordered, or remove the line."
    )


def test_real_sizes_still_load(tmp_path: Path) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text(
        "hosts:\n  gpu-1:\n    address: 10.0.0.7\n"
        "    order: {vram: 80GB, ram: 1TB, data_disk: {mount: /data, min_size: 7TB}}\n"
    )
    order = inventory.load(f).hosts["gpu-1"].order
    assert order.vram_bytes == 80 * 10**9 and order.ram_bytes == 1024**4
    assert order.data_disk is not None and order.data_disk.min_size_bytes == 7 * 10**12


def test_a_data_disk_shorthand_merges_with_a_mapping_in_another_layer(tmp_path: Path) -> None:
    """A group's `data_disk: /data` with the host's `data_disk: {min_size: 7TB}` was replaced whole
    ("'mount' must be an absolute path"); the shorthand is `{mount: /data}`, merged key by key."""
    f = tmp_path / "hosts.yml"
    f.write_text(
        "groups:\n  g:\n    vars: {order: {data_disk: /data}}\n    hosts: [gpu-1, gpu-2]\n"
        "hosts:\n  gpu-1:\n    address: 10.0.0.7\n    order: {data_disk: {min_size: 7TB}}\n"
        "  gpu-2:\n    address: 10.0.0.8\n    order: {data_disk: /nvme}\n"
    )
    hosts = inventory.load(f).hosts
    one, two = hosts["gpu-1"].order.data_disk, hosts["gpu-2"].order.data_disk
    assert one is not None and (one.mount, one.min_size_bytes) == ("/data", 7 * 10**12)
    assert two is not None and (two.mount, two.min_size_bytes) == ("/nvme", None)
