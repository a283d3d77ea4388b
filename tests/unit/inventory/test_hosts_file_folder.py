"""An inventory's hosts file that is a folder (`inventory/hosts.yml/`, made by a copy or an
unpacking gone wrong, or given itself with `-i inventory/hosts.yml`) is said to be one: the
sentence was "no hosts.yml in this inventory directory", beside a hosts.yml."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError


@pytest.mark.parametrize("name", ["hosts.yml", "hosts.ini", "hosts"])
def test_a_hosts_file_that_is_a_folder_is_named_as_one(tmp_path: Path, name: str) -> None:
    (tmp_path / "inventory" / name).mkdir(parents=True)
    for given in (tmp_path / "inventory", tmp_path / "inventory" / name):
        with pytest.raises(InventoryError) as err:
            inventory.load(given)
        assert str(err.value).startswith(
            f"{tmp_path / 'inventory' / name}: this inventory file is a directory, not a file;"
        ), err.value


def test_a_folder_beside_the_hosts_file_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()  # (a folder named like a hosts file, beside the real one)
    (tmp_path / "hosts.yml").write_text("hosts:\n  gpu1: {address: 10.0.0.1}\n")
    assert list(inventory.load(tmp_path).hosts) == ["gpu1"]
