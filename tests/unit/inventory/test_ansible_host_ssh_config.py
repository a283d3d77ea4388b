"""An Ansible host's address (`ansible_host`) is looked up in the SSH config, as Ansible's
`ssh ADDRESS` looks it up: the config's `Host test1` / `Host 10.0.*.*` block gives what the
inventory leaves unset (HostName, User, Port, IdentityFile, ProxyJump), and the inventory's own
connection vars, `all` included, beat it (Ansible passes them on ssh's command line). Checked
against OpenSSH's own `ssh -G` with the options Ansible adds, on the real configs of
tests/fixtures/ssh_config/ (23: a cloud VPC by address pattern; 27: a published note whose
inventory names the config's alias as `ansible_ssh_host`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.inventory.sshresolve import parse_dump

SSH = shutil.which("ssh")
CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "ssh_config"


def _load(tmp_path: Path, shape: str, ini: str) -> inventory.Inventory:
    config = tmp_path / "ssh_config"
    config.write_text((CORPUS / shape / "config").read_text())
    config.chmod(0o600)
    (tmp_path / "hosts.ini").write_text(ini)
    return inventory.load(tmp_path / "hosts.ini", ssh_config=config)


def _ssh_g(config: Path, address: str, *options: str) -> dict[str, tuple[str, ...]]:
    """What `ssh -G` resolves for the command line Ansible runs (`ssh -o User=... ADDRESS`)."""
    argv = [str(SSH), "-G", "-F", str(config), *options, "--", address]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True)
    return parse_dump(done.stdout)


@pytest.fixture
def no_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without ssh: gpuonboard's own reader reads the config."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


NOTE_INI = "test1 ansible_ssh_host=test1 ansible_ssh_port=22\n"
VPC_INI = "[gpus]\ngpu1 ansible_host=10.0.1.15\ngpu2 ansible_host=10.0.2.20 ansible_user=root\n"


def _reads(h: inventory.Host) -> tuple[str, int, str, tuple[str, ...], str | None]:
    return (h.address, h.port, h.user, h.jump, h.key_file and Path(h.key_file).name)


@pytest.mark.parametrize("reader", ["ssh", "own"])
def test_an_ansible_host_named_by_the_configs_alias_is_reached_as_ssh_reaches_it(
    tmp_path: Path, reader: str, request: pytest.FixtureRequest
) -> None:
    if reader == "own":
        request.getfixturevalue("no_ssh")
    elif SSH is None:
        pytest.skip("OpenSSH's ssh client is not installed")
    inv = _load(tmp_path, "27-ansible-host-alias", NOTE_INI)
    # (was root@test1:22, dialled directly: a DNS lookup of the alias, no jump host)
    assert _reads(inv.hosts["test1"]) == ("172.2.0.10", 22, "root", ("jumphost",), "id_ed25519")
    assert inv.jump_hosts["jumphost"].address == "192.168.19.91"
    assert inv.jump_hosts["jumphost"].user == "floki"


@pytest.mark.parametrize("reader", ["ssh", "own"])
def test_an_ansible_host_address_takes_the_configs_address_pattern_block(
    tmp_path: Path, reader: str, request: pytest.FixtureRequest
) -> None:
    if reader == "own":
        request.getfixturevalue("no_ssh")
    elif SSH is None:
        pytest.skip("OpenSSH's ssh client is not installed")
    inv = _load(tmp_path, "23-bastion-private-subnet", VPC_INI)
    # `Host 10.0.*.*`: User ubuntu, ProxyJump bastion, cluster.pem (was root, direct, no key)
    assert _reads(inv.hosts["gpu1"]) == ("10.0.1.15", 22, "ubuntu", ("bastion",), "cluster.pem")
    assert _reads(inv.hosts["gpu2"]) == ("10.0.2.20", 22, "root", ("bastion",), "cluster.pem")
    assert inv.hosts["gpu1"].connect_timeout == 15


@pytest.mark.skipif(SSH is None, reason="OpenSSH's ssh client is not installed")
@pytest.mark.parametrize(
    ("shape", "ini", "host", "address", "options"),
    [
        ("27-ansible-host-alias", NOTE_INI, "test1", "test1", ("-o", "Port=22")),
        ("23-bastion-private-subnet", VPC_INI, "gpu1", "10.0.1.15", ()),
        ("23-bastion-private-subnet", VPC_INI, "gpu2", "10.0.2.20", ("-o", "User=root")),
        (
            "23-bastion-private-subnet",
            "[gpus]\ngpu3 ansible_host=10.0.3.3\n[all:vars]\nansible_user=admin\nansible_port=2222\n",
            "gpu3",
            "10.0.3.3",
            ("-o", "User=admin", "-o", "Port=2222"),
        ),
    ],
)
def test_the_connection_is_what_ssh_g_resolves_for_ansibles_command_line(
    tmp_path: Path, shape: str, ini: str, host: str, address: str, options: tuple[str, ...]
) -> None:
    h = _load(tmp_path, shape, ini).hosts[host]
    g = _ssh_g(tmp_path / "ssh_config", address, *options)
    assert (h.address, str(h.port), h.user) == (g["hostname"][0], g["port"][0], g["user"][0])
    assert ",".join(h.jump) == g.get("proxyjump", ("",))[0]
    assert h.key_file is not None
    assert os.path.normpath(h.key_file) == os.path.normpath(os.path.expanduser(g["identityfile"][0]))


def test_all_vars_beat_the_config_for_a_host_named_by_its_alias(tmp_path: Path) -> None:
    # `[all:vars] ansible_user=ubuntu`: Ansible runs `ssh -o User=ubuntu test1` (was the
    # config's root)
    inv = _load(tmp_path, "27-ansible-host-alias", "test1\n[all:vars]\nansible_user=ubuntu\n")
    assert (inv.hosts["test1"].user, inv.hosts["test1"].address) == ("ubuntu", "172.2.0.10")


def test_our_own_format_still_takes_nothing_from_the_config_for_an_address(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text((CORPUS / "23-bastion-private-subnet" / "config").read_text())
    (tmp_path / "hosts.yml").write_text("hosts:\n  gpu1: {address: 10.0.1.15}\n")
    h = inventory.load(tmp_path / "hosts.yml", ssh_config=config).hosts["gpu1"]
    assert (h.user, h.jump, h.key_file) == ("root", (), None)
