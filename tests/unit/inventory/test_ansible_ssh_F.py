"""An Ansible host whose ssh args name a config with `-F FILE` (ansible_ssh_common_args or
ansible_ssh_extra_args: `-F /dev/null`, `-F ./ssh_config`, as real Terraform-written, RKE2 and
Aerospike inventories do) is looked up in that file, as Ansible's `ssh -F FILE ADDRESS` looks it
up, never in ~/.ssh/config; checked against OpenSSH's own `ssh -G -F FILE`, on the real config
of tests/fixtures/ssh_config/23 (a cloud VPC: `Host 10.0.*.*` via a bastion)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshlookup import config_file_arg
from gpuonboard.inventory.sshresolve import parse_dump

SSH = shutil.which("ssh")
CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "ssh_config"
VPC = (CORPUS / "23-bastion-private-subnet" / "config").read_text()
BAD = "Host 10.0.*\n  User ubuntu\n  BogusKeyword yes\n"  # (a line OpenSSH refuses)


def _load(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ini: str,
    user_config: str,
    local: str = "",
    name: str = "hosts.ini",
) -> inventory.Inventory:
    """The inventory as loaded where ~/.ssh/config is `user_config` and ./ssh_config `local`."""
    tmp_path.mkdir(exist_ok=True)
    home = tmp_path / "user_config"
    home.write_text(user_config)
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(home))
    work = tmp_path / "project"
    work.mkdir()
    if local:
        (work / "ssh_config").write_text(local)
    monkeypatch.chdir(work)
    (work / name).write_text(ini)
    return inventory.load(work / name)


def _ssh_g(config: str, address: str) -> dict[str, tuple[str, ...]]:
    argv = [str(SSH), "-G", "-F", config, "--", address]
    return parse_dump(subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True).stdout)


needs_ssh = pytest.mark.skipif(SSH is None, reason="OpenSSH's ssh client is not installed")


@needs_ssh
@pytest.mark.parametrize("key", ["ansible_ssh_common_args", "ansible_ssh_extra_args"])
def test_dev_null_means_no_config_as_under_ssh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    ini = f"[gpus]\ngpu1 ansible_host=10.0.1.15\n[all:vars]\n{key}='-F /dev/null'\n"
    h = _load(tmp_path, monkeypatch, ini, VPC).hosts["gpu1"]
    g = _ssh_g("/dev/null", "10.0.1.15")
    # (was ubuntu via the bastion with cluster.pem: ~/.ssh/config's `Host 10.0.*.*`)
    assert (h.address, h.port, h.jump, h.key_file) == (g["hostname"][0], int(g["port"][0]), (), None)


@needs_ssh
def test_a_relative_F_file_is_the_config_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ini = (
        "[gpus]\ngpu1 ansible_host=10.0.1.15\n[all:vars]\n"
        "ansible_ssh_common_args='-F ./ssh_config -o StrictHostKeyChecking=no'\n"
    )
    h = _load(tmp_path, monkeypatch, ini, "", VPC).hosts["gpu1"]
    g = _ssh_g(str(tmp_path / "project" / "ssh_config"), "10.0.1.15")
    assert (h.user, ",".join(h.jump)) == (g["user"][0], g["proxyjump"][0]) == ("ubuntu", "bastion")


@needs_ssh
def test_a_host_named_by_an_alias_is_looked_up_in_its_F_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (no ansible_host: the alias `bastion` is a Host of ./ssh_config, not of ~/.ssh/config)
    ini = "[gpus]\nbastion\n[all:vars]\nansible_ssh_common_args='-F ./ssh_config'\n"
    h = _load(tmp_path, monkeypatch, ini, "", VPC).hosts["bastion"]
    assert (h.address, h.user) == ("203.0.113.50", "ubuntu")


def test_a_hosts_own_args_replace_its_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the host's ansible_ssh_common_args (a jump, no -F) replaces [all:vars]'s whole, as in Ansible
    ini = (
        "[gpus]\ngpu1 ansible_host=10.0.1.15 ansible_ssh_common_args='-J ops@jump.example.com'\n"
        "gpu2 ansible_host=10.0.2.20\n[all:vars]\nansible_ssh_common_args='-F /dev/null'\n"
    )
    inv = _load(tmp_path, monkeypatch, ini, VPC)
    # gpu1's ssh reads ~/.ssh/config (its User ubuntu; the inventory's jump beats ProxyJump)
    assert (inv.hosts["gpu1"].user, inv.hosts["gpu1"].jump) == ("ubuntu", ("ops@jump.example.com",))
    assert (inv.hosts["gpu2"].user, inv.hosts["gpu2"].jump) == ("root", ())  # (-F /dev/null)


def test_an_F_file_that_is_missing_is_said_naming_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = "[gpus]\ngpu1 ansible_host=10.0.1.15\n[all:vars]\nansible_ssh_common_args='-F ./ssh_config'\n"
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, monkeypatch, ini, VPC)
    assert "host 'gpu1' has `-F ./ssh_config` in the ansible_ssh_common_args of the `all` vars, and" in (
        err.value.message
    )


@needs_ssh
def test_a_broken_user_config_names_the_host_and_its_ansible_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = "[gpus]\ngpu1 ansible_host=10.0.1.15\n"
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, monkeypatch, ini, BAD)
    message = err.value.message
    assert "'10.0.1.15' (the ansible_host of host 'gpu1')" in message and "boguskeyword" in message
    assert "its address in the inventory" not in message and "-F /dev/null" in message
    # with -F /dev/null Ansible's ssh reads no config: neither does the loader
    ini += "[all:vars]\nansible_ssh_common_args='-F /dev/null'\n"
    assert _load(tmp_path / "again", monkeypatch, ini, BAD).hosts["gpu1"].address == "10.0.1.15"


@pytest.mark.parametrize(
    ("args", "file"),
    [
        ("-F /dev/null", "/dev/null"),
        ("-F ./ssh_config -o StrictHostKeyChecking=no", "./ssh_config"),
        ("-o StrictHostKeyChecking=no -F'/opt/my cfg'", "/opt/my cfg"),
        ("-qF ssh.cfg", "ssh.cfg"),
        ("-F a -F b", "b"),  # (ssh takes the last)
        ("-o ProxyCommand='ssh -F x -W %h:%p bastion'", None),  # (the proxy's own ssh)
        ("-i -Fkey -J bastion", None),  # (-i's value)
        ("-o StrictHostKeyChecking=no", None),
        ("-F {{ playbook_dir }}/ssh_config_control", "{{ playbook_dir }}/ssh_config_control"),  # (one word)
        ("-o A={{ a }} -F '{{ x }}/c d' -q", "{{ x }}/c d"),
    ],
)
def test_config_file_arg(args: str, file: str | None) -> None:
    assert config_file_arg(args) == file


@pytest.mark.parametrize(
    "inventory",
    [
        "[gpus]\ngpu1 ansible_host=10.0.1.15\n[gpus:vars]\n"
        'ansible_ssh_common_args="-F {{ playbook_dir }}/ssh_config"\n',
        # (a real YAML inventory, search index file 71551600946: its ssh hosts' group vars)
        "all:\n  children:\n    ssh_hosts:\n      vars:\n        ansible_user: admin\n"
        '        ansible_ssh_common_args: "-F {{ playbook_dir }}/ssh_config_control"\n'
        "      hosts:\n        gpu1:\n",
    ],
)
def test_an_F_file_given_by_a_template_is_said_not_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inventory: str
) -> None:
    """`-F {{ playbook_dir }}/ssh_config` (Ansible renders it when a play connects; ansible-inventory
    --list keeps it as written): was refused as `-F {{` ... `{{ is no file`."""
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, monkeypatch, inventory, VPC, name="hosts.yml" if "all:" in inventory else "hosts.ini")
    message = err.value.message
    assert "host 'gpu1' has `-F {{ playbook_dir }}/ssh_config" in message, message
    assert "an Ansible template" in message and "is no file" not in message
