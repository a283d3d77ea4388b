"""An Ansible inventory host without ansible_host is reached at its own name (the SSH config's
Host entry still applies first), as Ansible does; our own format keeps its clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError

SSH_CONFIG = "Host gpu-alias\n  HostName 10.9.9.9\n  Port 2201\n\nHost *\n  User nobody\n"


def _addresses(inv: inventory.Inventory) -> dict[str, tuple[str, int]]:
    return {name: (h.address, h.port) for name, h in inv.hosts.items()}


def test_ini_host_names_are_the_addresses(tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text(SSH_CONFIG)
    path = tmp_path / "hosts.ini"
    path.write_text(
        "10.0.0.7\n"
        "gpu1.example.com ansible_user=ubuntu\n"
        "[gpus]\n"
        "gpu-[01:02].example.com\n"
        "10.0.0.8:2222\n"
        "gpu-alias\n"
        "2001:db8::7\n"
        "[2001:db8::8]:2022\n"
        "[local]\n"
        "here ansible_connection=local\n"
        "[named]\n"
        "box ansible_host=10.0.0.9\n"
    )
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    assert _addresses(inv) == {
        "10.0.0.7": ("10.0.0.7", 22),
        "gpu1.example.com": ("gpu1.example.com", 22),
        "gpu-01.example.com": ("gpu-01.example.com", 22),
        "gpu-02.example.com": ("gpu-02.example.com", 22),
        "10.0.0.8": ("10.0.0.8", 2222),
        "gpu-alias": ("10.9.9.9", 2201),  # the SSH config's Host entry, as ssh would use it
        "2001:db8::7": ("2001:db8::7", 22),
        "2001:db8::8": ("2001:db8::8", 2022),
        "here": ("localhost", 22),
        "box": ("10.0.0.9", 22),
    }
    assert inv.hosts["gpu1.example.com"].user == "ubuntu"
    assert inv.groups["gpus"] == (
        "gpu-01.example.com",
        "gpu-02.example.com",
        "10.0.0.8",
        "gpu-alias",
        "2001:db8::7",
        "2001:db8::8",
    )


def test_yaml_host_keys_without_vars_are_the_addresses(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n"
        "  vars: {ansible_user: ops}\n"
        "  hosts:\n"
        "    10.0.0.7:\n"
        "    gpu1.example.com: {ansible_port: 2200}\n"
        "  children:\n"
        "    gpus:\n"
        "      hosts:\n"
        "        gpu-[a:b].example.com:\n"
        "        2001:db8::7:\n"
        "        '[2001:db8::8]:2022':\n"
        "        box: {ansible_host: 10.0.0.9}\n"
    )
    inv = inventory.load(path)
    assert _addresses(inv) == {
        "10.0.0.7": ("10.0.0.7", 22),
        "gpu1.example.com": ("gpu1.example.com", 2200),
        "gpu-a.example.com": ("gpu-a.example.com", 22),
        "gpu-b.example.com": ("gpu-b.example.com", 22),
        "2001:db8::7": ("2001:db8::7", 22),
        "2001:db8::8": ("2001:db8::8", 2022),
        "box": ("10.0.0.9", 22),
    }
    assert {h.user for h in inv.hosts.values()} == {"ops"}


def test_our_own_format_still_needs_an_address(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    gpu1.example.com:\n")
    assert inventory.load(path).hosts["gpu1.example.com"].address == "gpu1.example.com"
    native = tmp_path / "native.yml"
    native.write_text("hosts:\n  gpu1.example.com: {}\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(native)
    assert str(info.value) == (
        f"{native}, line 2: host 'gpu1.example.com' has no 'address' and no Host entry in the SSH"
        " config; add address: <IP or DNS name>."
    )
