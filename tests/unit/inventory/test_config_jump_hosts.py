"""A jump host named by a Host of the SSH config (`ProxyJump bastion`, `ssh -W %h:%p bastion`,
the inventory's `jump: bastion`) is resolved through that config as OpenSSH applies it to a
jump host (HostName, User, Port, IdentityFile, its own ProxyJump): before, `bastion` was
refused as "neither an inventory host nor an address", naming hosts.yml, and `jump.example`
was dialled by its bare name as root on port 22. A hop the config does not cover and that is
no address is refused naming the file the hop was written in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.connection.login import _hop_host
from gpuonboard.errors import InventoryError

BASTION = "Host bastion\n  HostName 127.0.0.9\n  User jumper\n  Port 2200\n  IdentityFile /k/jump\n"
CASES = {
    "proxyjump": "Host gpu1\n  HostName 127.0.0.1\n  ProxyJump bastion\n" + BASTION,
    "proxycommand -W": "Host gpu1\n  HostName 127.0.0.1\n  ProxyCommand ssh -W %h:%p bastion\n" + BASTION,
    "dotted alias": ("Host gpu1\n  HostName 127.0.0.1\n  ProxyJump bastion\n" + BASTION).replace(
        "bastion", "jump.example"
    ),
}


@pytest.fixture(params=["ssh -G", "own reader"])
def reader(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test under OpenSSH's `ssh -G` and under the own reader (no ssh on PATH)."""
    if request.param == "ssh -G" and shutil.which("ssh") is None:
        pytest.skip("OpenSSH's ssh client is not installed")
    if request.param == "own reader":
        empty = tmp_path / "empty-bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
    return str(request.param)


def _inv(tmp_path: Path, config: str, hosts: str = "  gpu1: {}\n") -> Path:
    (tmp_path / "sshcfg").write_text(config)
    d = tmp_path / "inv"
    d.mkdir(exist_ok=True)
    (d / "hosts.yml").write_text(f"ssh_config: {tmp_path / 'sshcfg'}\nhosts:\n{hosts}")
    return d


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_jump_host_of_the_ssh_config_takes_its_settings_from_it(
    tmp_path: Path, reader: str, case: str
) -> None:
    inv = inventory.load(_inv(tmp_path, CASES[case]))
    gpu1 = inv.hosts["gpu1"]
    hop = _hop_host(gpu1.jump[0], inv, gpu1)  # (what the connection dials first)
    assert (hop.address, hop.user, hop.port, hop.key_file) == ("127.0.0.9", "jumper", 2200, "/k/jump")
    assert (gpu1.address, gpu1.user, gpu1.port) == ("127.0.0.1", "root", 22)


def test_the_inventorys_jump_naming_a_config_host_and_a_user_and_port_of_the_hop(
    tmp_path: Path, reader: str
) -> None:
    hosts = (
        "  gpu1: {address: 10.0.0.5, jump: ops@bastion:2222}\n  gpu2: {address: 10.0.0.6, jump: bastion}\n"
    )
    inv = inventory.load(_inv(tmp_path, BASTION, hosts))
    first = _hop_host(inv.hosts["gpu1"].jump[0], inv, inv.hosts["gpu1"])
    assert (first.address, first.user, first.port, first.key_file) == ("127.0.0.9", "ops", 2222, "/k/jump")
    second = _hop_host(inv.hosts["gpu2"].jump[0], inv, inv.hosts["gpu2"])
    assert (second.address, second.user, second.port) == ("127.0.0.9", "jumper", 2200)


def test_a_config_jump_hosts_own_proxyjump_is_followed(tmp_path: Path, reader: str) -> None:
    config = (
        "Host gpu1\n  HostName 10.1.0.1\n  ProxyJump inner\n"
        "Host inner\n  HostName 10.0.0.2\n  User in\n  ProxyJump outer\n"
        "Host outer\n  HostName 203.0.113.1\n  User out\n"
    )
    inv = inventory.load(_inv(tmp_path, config))
    gpu1 = inv.hosts["gpu1"]
    assert gpu1.jump == ("outer", "inner")
    chain = [_hop_host(j, inv, gpu1) for j in gpu1.jump]
    assert [(h.address, h.user) for h in chain] == [("203.0.113.1", "out"), ("10.0.0.2", "in")]


def test_a_hop_the_config_does_not_cover_is_refused_naming_the_config(tmp_path: Path, reader: str) -> None:
    config = "Host gpu1\n  HostName 127.0.0.1\n  ProxyJump bastoin\nHost bastion\n  HostName 127.0.0.9\n"
    with pytest.raises(InventoryError) as err:
        inventory.load(_inv(tmp_path, config))
    text = err.value.message
    assert text.startswith(
        f"{tmp_path / 'sshcfg'}: host 'gpu1' jump host 'bastoin' is neither an inventory host,"
    )
    assert "hosts.yml" not in text and "\n" not in text


def test_a_jump_loop_through_the_config_is_refused(tmp_path: Path, reader: str) -> None:
    config = "Host gpu1\n  HostName 10.1.0.1\n  ProxyJump a\nHost a\n  HostName 10.0.0.2\n  ProxyJump b\n"
    config += "Host b\n  HostName 10.0.0.3\n  ProxyJump a\n"
    with pytest.raises(InventoryError, match="makes a loop of jump hosts"):
        inventory.load(_inv(tmp_path, config))


def test_a_missing_identity_file_of_a_config_jump_host_names_the_config(tmp_path: Path, reader: str) -> None:
    inv = inventory.load(_inv(tmp_path, CASES["proxyjump"]))
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.hosts.values())
    assert err.value.message.startswith(
        f"{tmp_path / 'sshcfg'}: jump host 'bastion' (in front of host 'gpu1'"
    )
