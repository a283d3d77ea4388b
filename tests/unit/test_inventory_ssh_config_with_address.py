"""The SSH config's `Host <name>` entry supplies a host's settings only when the inventory gives
no address: with `address:` (or Ansible's `ansible_host`) set, an entry of the same name (an old
rental, another machine) must not slip its Port, User or IdentityFile into the host, as in Ansible,
which then looks up the address, not the name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory

SSH_CONFIG = "Host gpu1\n  HostName 198.51.100.9\n  Port 2201\n  User olduser\n  IdentityFile /old/key\n"


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(SSH_CONFIG)
    return path


def test_a_native_host_with_an_address_ignores_the_ssh_config_entry(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("defaults: {user: ubuntu}\nhosts:\n  gpu1: {address: 10.0.0.5}\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("10.0.0.5", 22, "ubuntu", None)


def test_an_ansible_host_with_ansible_host_ignores_the_ssh_config_entry(
    tmp_path: Path, ssh_config: Path
) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[gpus]\ngpu1 ansible_host=10.0.0.5\n[all:vars]\nansible_user=ubuntu\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("10.0.0.5", 22, "ubuntu", None)


def test_a_host_without_an_address_still_takes_the_entry(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[gpus]\ngpu1\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("198.51.100.9", 2201, "olduser", "/old/key")
