"""QA round 3 (Ansible inventory import): host ranges, `host:port`, and ProxyCommand bastions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible import expand_host_pattern


def load(tmp_path: Path, name: str, text: str) -> inventory.Inventory:
    path = tmp_path / name
    path.write_text(text)
    return inventory.load(path)


def test_ini_host_range_expands_like_ansible(tmp_path: Path) -> None:
    inv = load(
        tmp_path, "hosts.ini", "[gpus]\ngpu-[01:03] ansible_host=10.0.0.1\n[gpus:vars]\nansible_user=ubuntu\n"
    )
    assert list(inv.hosts) == ["gpu-01", "gpu-02", "gpu-03"]
    assert inv.groups["gpus"] == ("gpu-01", "gpu-02", "gpu-03")
    assert {h.user for h in inv.hosts.values()} == {"ubuntu"}


def test_yaml_host_range_and_letters(tmp_path: Path) -> None:
    inv = load(
        tmp_path,
        "hosts.yml",
        "all:\n  children:\n    rack:\n      hosts:\n"
        "        node[a:b]-[1:3:2]:\n          ansible_host: 10.0.0.5\n",
    )
    assert list(inv.hosts) == ["nodea-1", "nodea-3", "nodeb-1", "nodeb-3"]
    assert inv.groups["rack"] == ("nodea-1", "nodea-3", "nodeb-1", "nodeb-3")


def test_host_port_suffix_sets_the_port_unless_given(tmp_path: Path) -> None:
    inv = load(
        tmp_path,
        "hosts.ini",
        "[gpus]\ngpu1:2222 ansible_host=10.0.0.9\ngpu2:2222 ansible_host=10.0.0.9 ansible_port=22\n",
    )
    assert (inv.hosts["gpu1"].port, inv.hosts["gpu2"].port) == (2222, 22)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("gpu-[01:3]", "same number of digits"),
        ("gpu-[5:3]", "is empty"),
        ("gpu-[1:x]", "two numbers or two letters"),
        ("gpu-[1:3:0]", "positive whole step"),
    ],
)
def test_bad_range_names_file_line_and_pattern(tmp_path: Path, pattern: str, why: str) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(f"[gpus]\n{pattern} ansible_host=10.0.0.1\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert str(info.value).startswith(f"{path}, line 2: host pattern {pattern!r}: range")
    assert why in str(info.value)


def test_ipv6_is_not_a_port_suffix() -> None:
    assert expand_host_pattern("fe80::1") == (["fe80::1"], None)
    assert expand_host_pattern("10.0.0.5:2222") == (["10.0.0.5"], 2222)


@pytest.mark.parametrize(
    ("args", "jump"),
    [
        ('-o ProxyCommand="ssh -W %h:%p -q ops@bastion"', "ops@bastion"),
        ("-o 'ProxyCommand=ssh -q -W %h:%p bastion -p 2200'", "bastion:2200"),
        ('-oProxyCommand="/usr/bin/ssh -l ops -o Port=2022 -W [%h]:%p -i k bastion"', "ops@bastion:2022"),
    ],
)
def test_proxy_command_through_ssh_is_a_jump(tmp_path: Path, args: str, jump: str) -> None:
    inv = load(
        tmp_path,
        "hosts.yml",
        "all:\n  hosts:\n    g1:\n      ansible_host: 10.0.0.3\n"
        f"      ansible_ssh_common_args: {json.dumps(args)}\n",
    )
    assert list(inv.hosts["g1"].jump) == [jump]


@pytest.mark.parametrize(
    "args",
    ['-o ProxyCommand="nc -x proxy:1080 %h %p"', '-o ProxyCommand="ssh bastion nc %h %p"'],
)
def test_other_proxy_commands_are_refused_before_any_connection(tmp_path: Path, args: str) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(f"[gpus]\n\ng1 ansible_host=10.0.0.3 ansible_ssh_extra_args='{args}'\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert str(info.value).startswith(f"{path}, line 3: ansible_ssh_extra_args has ProxyCommand")
    assert "write the bastion as ProxyJump" in str(info.value)
