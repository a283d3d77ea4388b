"""A wrong value in an Ansible group_vars/ or host_vars/ file is one sentence naming that file
and the line the value is on there. The sentence named the inventory file (hosts.ini,
hosts.yml) with the line number from the vars file: `host_vars/gpu1.yml`'s misspelt
`gpu_modle` on its line 2 was blamed on `hosts.yml, line 2`, and `group_vars/gpus.yml`'s
`gpu_count: 0` on its line 3 on `hosts.ini, line 3`, the line of another host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpuonboard
from gpuonboard import inventory
from gpuonboard.errors import InventoryError

SRC = Path(gpuonboard.__file__).resolve().parents[1]
INI = "[gpus]\ngpu1 ansible_host=10.0.0.1\ngpu2 ansible_host=10.0.0.2 ansible_port=2202\n"
YAML = "all:\n  children:\n    gpus:\n      hosts:\n        gpu1:\n          ansible_host: 10.0.0.1\n"


def _error(inventory_file: Path, ssh_config: Path) -> str:
    with pytest.raises(InventoryError) as err:
        inventory.load(inventory_file, ssh_config=ssh_config)
    return str(err.value)


@pytest.mark.parametrize(
    ("sub", "text", "expected"),
    [
        # an order field misspelt, in a host's own vars file: named at its line there
        (
            "host_vars/gpu1.yml",
            "# ordered 2026-12\norder:\n  gpu_modle: H200\n  gpu_count: 8\n",
            "host_vars/gpu1.yml, line 3: host 'gpu1' order has an unknown key 'gpu_modle'; did you mean",
        ),
        # a value out of range, in a group's vars file
        (
            "group_vars/gpus.yml",
            "order:\n  gpu_model: H200\n  gpu_count: 0\n",
            "group_vars/gpus.yml, line 3: host 'gpu1' order field 'gpu_count' must be a whole number",
        ),
        # the order not a mapping
        (
            "host_vars/gpu1.yml",
            "zone: a\norder: [H200, 8]\n",
            "host_vars/gpu1.yml, line 2: host 'gpu1' 'order'",
        ),
        # a connection setting, in a vars file under a host's own folder (Ansible's NAME/ form)
        (
            "host_vars/gpu1/main.yml",
            "\nansible_port: huge\n",
            "host_vars/gpu1/main.yml, line 2: host 'gpu1' field 'port'",
        ),
    ],
)
@pytest.mark.parametrize("form", ["hosts.ini", "hosts.yml"])
def test_a_bad_value_in_a_vars_file_names_that_file_and_its_line(
    tmp_path: Path, ssh_config: Path, form: str, sub: str, text: str, expected: str
) -> None:
    (tmp_path / form).write_text(INI if form == "hosts.ini" else YAML)
    (tmp_path / sub).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / sub).write_text(text)
    message = _error(tmp_path / form, ssh_config)
    assert message.startswith(f"{tmp_path / sub}, line"), message
    assert expected in message, message


def test_a_vars_file_that_overrides_the_inventory_is_the_one_named(tmp_path: Path, ssh_config: Path) -> None:
    """gpu2's port is set in hosts.ini and again (wrongly) in its host_vars file, which wins."""
    (tmp_path / "hosts.ini").write_text(INI)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "gpu2.yml").write_text("ansible_port: 0\n")
    message = _error(tmp_path / "hosts.ini", ssh_config)
    assert message.startswith(f"{tmp_path / 'host_vars' / 'gpu2.yml'}, line 1: host 'gpu2' field 'port'"), (
        message
    )


def test_a_bad_value_in_the_inventory_itself_still_names_the_inventory(
    tmp_path: Path, ssh_config: Path
) -> None:
    (tmp_path / "hosts.ini").write_text(INI.replace("2202", "huge"))
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpus.yml").write_text("order:\n  gpu_model: H200\n")
    message = _error(tmp_path / "hosts.ini", ssh_config)
    assert message.startswith(f"{tmp_path / 'hosts.ini'}, line 3: host 'gpu2' field 'port'"), message


def test_the_cli_says_it_in_one_sentence_exit_2(tmp_path: Path, ssh_config: Path) -> None:
    (tmp_path / "hosts.yml").write_text(YAML)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "gpu1.yml").write_text("order:\n  gpu_modle: H200\n")
    done = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "inventory", "-i", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        # (the gpuonboard these tests import, whatever the directory the command runs in)
        env={**os.environ, "GPUONBOARD_SSH_CONFIG": str(ssh_config), "PYTHONPATH": str(SRC)},
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        f"error: {tmp_path / 'host_vars' / 'gpu1.yml'}, line 2: host 'gpu1' order has an unknown key"
        " 'gpu_modle'; did you mean 'gpu_model'?\n"
    ), done.stderr


SEMAPHORE = Path(__file__).parents[2] / "fixtures" / "ansible" / "semaphore-vagrant" / "hosts"


@pytest.mark.parametrize(
    ("line", "edit", "expected"),
    [
        # the port misspelt
        (6, "ansible_ssh_port=2z2", "line 6: host 'app' field 'port' must be a number from 1 to 65535"),
        # a jump with no host, in the group's ssh args
        (6, "ansible_ssh_common_args='-o ProxyJump=vagrant@'", "line 6: host 'app' jump host 'vagrant@'"),
        # a jump with no host, in gpuonboard's own var
        (6, "gpuonboard_jump=vagrant@", "line 6: host 'app' jump host 'vagrant@'"),
    ],
)
def test_a_bad_value_in_a_group_vars_section_names_that_line_not_the_hosts(
    tmp_path: Path, ssh_config: Path, line: int, edit: str, expected: str
) -> None:
    """semaphore-vagrant's real hosts file (host `app` on line 2, its address, port, user and key
    in [local:vars], lines 4-8) with its line 6 (`ansible_ssh_port=22`) replaced by `edit`: the
    error named line 2, the host's line, where nothing is wrong; now the [local:vars] line."""
    lines = SEMAPHORE.read_text().splitlines()
    lines[line - 1] = edit
    hosts = tmp_path / "hosts"
    hosts.write_text("\n".join(lines) + "\n")
    assert _error(hosts, ssh_config).startswith(f"{hosts}, {expected}")


def test_a_bad_value_in_a_yaml_groups_vars_names_that_line_not_the_hosts(
    tmp_path: Path, ssh_config: Path
) -> None:
    """k3s-ansible's real inventory-sample.yml (host 192.16.35.11 on line 6, its group
    k3s_cluster's `ansible_port: 22` on line 14), that port misspelt `2z` (the edit): the error
    named line 6, the host's; now line 14."""
    text = (
        Path(__file__).parents[2] / "fixtures" / "ansible" / "k3s-sample" / "inventory-sample.yml"
    ).read_text()
    assert "    ansible_port: 22\n" in text
    hosts = tmp_path / "inventory.yml"
    hosts.write_text(text.replace("    ansible_port: 22\n", "    ansible_port: 2z\n"))
    assert _error(hosts, ssh_config).startswith(f"{hosts}, line 14: host '192.16.35.11' field 'port'")


def test_a_bad_value_in_the_all_vars_names_its_line(tmp_path: Path, ssh_config: Path) -> None:
    """DeepOps' real inventory (uncommented; its `[all:vars]` `ansible_user=ubuntu` on line 85)
    with that line made `ansible_port=2z`, and k3s-ansible's real inventory-sample.yml with its
    top group renamed `all` (its `vars:` then the `all` vars; `ansible_port: 22` on line 14,
    made `2z`): the error named the file and no line; now the line of the value."""
    import shutil

    fixtures = Path(__file__).parents[2] / "fixtures" / "ansible"
    shutil.copytree(fixtures / "deepops-uncommented", tmp_path / "deepops")
    ini = tmp_path / "deepops" / "inventory"
    lines = ini.read_text().splitlines()
    assert lines[84] == "ansible_user=ubuntu"
    lines[84] = "ansible_port=2z"
    ini.write_text("\n".join(lines) + "\n")
    assert _error(ini, ssh_config).startswith(f"{ini}, line 85: the `all` vars' field 'port'")
    text = (fixtures / "k3s-sample" / "inventory-sample.yml").read_text()
    assert "\nk3s_cluster:\n" in text and "    ansible_port: 22\n" in text
    yml = tmp_path / "inventory.yml"
    yml.write_text(
        text.replace("\nk3s_cluster:\n", "\nall:\n").replace(
            "    ansible_port: 22\n", "    ansible_port: 2z\n"
        )
    )
    assert _error(yml, ssh_config).startswith(f"{yml}, line 14: the `all` vars' field 'port'")


def test_a_vars_file_encrypted_whole_with_ansible_vault_is_named_as_one(
    tmp_path: Path, ssh_config: Path
) -> None:
    """Princeton-CDH's real `ansible-vault encrypt`ed vars file as group_vars/gpus/vault.yml
    beside an inventory of one GPU host (the layout is the edit): it was refused as "must be a
    mapping of name: value", a wrong reason; now it is named as a Vault file, with the way out."""
    fixture = Path(__file__).parents[2] / "fixtures" / "ansible" / "cdh-vault-file"
    (tmp_path / "group_vars" / "gpus").mkdir(parents=True)
    vault = tmp_path / "group_vars" / "gpus" / "vault.yml"
    vault.write_text((fixture / "group_vars" / "gpus" / "vault.yml").read_text())
    hosts = tmp_path / "hosts"
    hosts.write_text("[gpus]\ngpu1 ansible_host=10.0.0.1\n")
    assert _error(hosts, ssh_config) == (
        f"{vault}: this vars file is encrypted with Ansible Vault, which gpuonboard does not decrypt;"
        " pass the inventory as `--inventory ansible-inventory:FILE` (Ansible decrypts it with your"
        " vault password)."
    )
