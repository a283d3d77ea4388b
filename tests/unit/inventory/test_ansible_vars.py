"""Ansible's variable precedence: group_vars/ and host_vars/ beside the inventory, groups
applied by depth, then ansible_group_priority, then name; a group's own ssh args replace an
inherited jump; an escaped ProxyCommand; groups at the top of a YAML file; an empty INI file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError


def test_group_vars_and_host_vars_directories_follow_ansible(tmp_path: Path, ssh_config: Path) -> None:
    (tmp_path / "hosts.ini").write_text(
        "[gpus]\ng1\ng2\n[all:vars]\nansible_user=inv\n[gpus:vars]\nansible_port=2201\n"
    )
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "a.yml").write_text("ansible_user: from_all\nzone: a\n")
    (tmp_path / "group_vars" / "all" / "b.yml").write_text("zone: b\n")
    (tmp_path / "group_vars" / "gpus.yml").write_text("ansible_port: 2202\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "g2").write_text("ansible_host: 10.0.0.2\nansible_port: 2203\n")
    inv = inventory.load(tmp_path / "hosts.ini", ssh_config=ssh_config)
    g1, g2 = inv.hosts["g1"], inv.hosts["g2"]
    assert (g1.address, g1.port, g1.user, g1.vars) == ("g1", 2202, "from_all", {"zone": "b"})
    assert (g2.address, g2.port) == ("10.0.0.2", 2203)


def test_same_depth_groups_apply_by_priority_then_name(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[zeta]\nh\n[alpha]\nh\n[zeta:vars]\nansible_port=2001\n[alpha:vars]\nansible_port=2002\n"
    )
    assert inventory.load(path, ssh_config=ssh_config).hosts["h"].port == 2001  # zeta after alpha
    path.write_text(path.read_text() + "ansible_group_priority=5\n")
    assert inventory.load(path, ssh_config=ssh_config).hosts["h"].port == 2002


def test_a_groups_own_ssh_args_replace_an_inherited_jump(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[bastions]\nb1 ansible_host=203.0.113.5\n[nodes]\nn1 ansible_host=10.0.0.1\n"
        "[all:vars]\nansible_ssh_common_args='-o ProxyJump=b1'\n"
        "[bastions:vars]\nansible_ssh_common_args='-o StrictHostKeyChecking=no'\n"
    )
    inv = inventory.load(path, ssh_config=ssh_config)
    assert (inv.hosts["b1"].jump, inv.hosts["n1"].jump) == ((), ("b1",))


def test_an_escaped_proxy_command_is_read_whole(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(
        "n1 ansible_host=10.0.0.1\n[all:vars]\n"
        "ansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p -q ubuntu@10.0.0.9\"'\n"
    )
    assert inventory.load(path, ssh_config=ssh_config).hosts["n1"].jump == ("ubuntu@10.0.0.9",)


def test_groups_at_the_top_of_a_yaml_file_are_ansible(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("calico-rr:\nkube-master:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
    assert inventory.load(path, ssh_config=ssh_config).hosts["n1"].groups == ("kube-master",)


def test_an_empty_ini_file_gets_advice_for_ini(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("# node1 ansible_host=10.0.0.1\n[gpus]\n")
    with pytest.raises(
        InventoryError, match=r"this Ansible INI inventory defines no hosts.*under a \[group\]"
    ):
        inventory.load(path, ssh_config=ssh_config)
