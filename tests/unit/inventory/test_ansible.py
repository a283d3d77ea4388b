"""An existing Ansible inventory (YAML or INI) loads as it is, to the same Host objects."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory import Host, Inventory, OrderSpec
from gpuonboard.inventory.ansible import convert_vars, expand_host_pattern, is_native, looks_like_ini
from gpuonboard.inventory.sshargs import parse_ssh_args, route

from .test_loader import load_error

GB = 1000**3

ANSIBLE_YAML = """\
all:
  vars:
    ansible_user: root
    ntp_server: ntp.example.cn
  hosts:
    localhost:
      ansible_connection: local
  children:
    wuhan:
      vars:
        ansible_port: 2222
        gpuonboard_vendor: wuhan-idc
        ansible_ssh_common_args: "-o ProxyJump=bastion"
        datacenter: wuhan
      hosts:
        wuhan-a100-1:
          ansible_host: 10.20.0.11
          ansible_ssh_private_key_file: /keys/wuhan
          gpu_slot: 3
          gpuonboard_order: {gpu_model: A100 80GB SXM, gpu_count: 8, vram: 80GB}
        wuhan-a100-2:
          ansible_host: 10.20.0.12
          order: {gpu_count: 4}
      children:
        wuhan_special:
          vars:
            ansible_port: 2200
            datacenter: wuhan-b
          hosts:
            wuhan-a100-2:
    bastions:
      hosts:
        bastion:
          ansible_host: 203.0.113.5
          ansible_user: jump
"""

# The same inventory as INI; the child group is written before its parent on purpose:
# a child's vars must still override the parent's, as in Ansible.
ANSIBLE_INI = """\
localhost ansible_connection=local

[all:vars]
ansible_user=root
ntp_server=ntp.example.cn

[wuhan_special]
wuhan-a100-2

[wuhan_special:vars]
ansible_port=2200
datacenter=wuhan-b

[wuhan]
wuhan-a100-1 ansible_host=10.20.0.11 ansible_ssh_private_key_file=/keys/wuhan gpu_slot=3
wuhan-a100-2 ansible_host=10.20.0.12

[wuhan:children]
wuhan_special

; group vars
[wuhan:vars]
ansible_port=2222
gpuonboard_vendor=wuhan-idc
ansible_ssh_common_args='-o ProxyJump=bastion'
datacenter=wuhan

[bastions]
bastion ansible_host=203.0.113.5 ansible_user=jump
"""

VENDOR = "name: Wuhan Optics Valley IDC\nssh: {user: root}\nbilling: {unit: hour, rate: 58.0}\n"


@pytest.fixture
def inv_dir(tmp_path: Path) -> Path:
    d = tmp_path / "inv"
    (d / "vendors").mkdir(parents=True)
    (d / "vendors" / "wuhan-idc.yml").write_text(VENDOR)
    (d / "hosts.yml").write_text(ANSIBLE_YAML)
    (d / "hosts.ini").write_text(ANSIBLE_INI)
    return d


def expected_hosts(inv: Inventory) -> dict[str, Host]:
    """Every host as resolved, without order specs (INI cannot hold a mapping)."""
    vendor = inv.vendors["wuhan-idc"]
    common = {"ntp_server": "ntp.example.cn"}
    args = {"ansible_ssh_common_args": "-o ProxyJump=bastion"}  # (kept as written beside the jump)
    return {
        "localhost": Host(
            name="localhost", address="localhost", connection="local", user="root", vars=common
        ),
        "wuhan-a100-1": Host(
            name="wuhan-a100-1",
            address="10.20.0.11",
            port=2222,
            user="root",
            key_file="/keys/wuhan",
            jump=("bastion",),
            vendor=vendor,
            groups=("wuhan",),
            vars={**common, **args, "datacenter": "wuhan", "gpu_slot": 3},
        ),
        "wuhan-a100-2": Host(
            name="wuhan-a100-2",
            address="10.20.0.12",
            port=2200,  # child group 'wuhan_special' overrides its parent 'wuhan'
            user="root",
            jump=("bastion",),
            vendor=vendor,
            groups=("wuhan", "wuhan_special"),
            vars={**common, **args, "datacenter": "wuhan-b"},
        ),
        "bastion": Host(
            name="bastion", address="203.0.113.5", user="jump", groups=("bastions",), vars=common
        ),
    }


def without_order(hosts: dict[str, Host]) -> dict[str, Host]:
    return {name: dataclasses.replace(h, order=OrderSpec()) for name, h in hosts.items()}


def test_ansible_yaml_inventory(inv_dir: Path) -> None:
    inv = inventory.load(inv_dir / "hosts.yml")
    assert without_order(inv.hosts) == expected_hosts(inv)
    assert inv.hosts["wuhan-a100-1"].order == OrderSpec(
        gpu_model="A100 80GB SXM", gpu_count=8, vram_bytes=80 * 2**30
    )
    assert inv.hosts["wuhan-a100-2"].order == OrderSpec(gpu_count=4)
    assert inv.groups == {
        "wuhan": ("wuhan-a100-1", "wuhan-a100-2"),
        "wuhan_special": ("wuhan-a100-2",),
        "bastions": ("bastion",),
    }


def test_ansible_ini_inventory_gives_the_same_hosts(inv_dir: Path) -> None:
    inv = inventory.load(inv_dir / "hosts.ini")
    assert inv.hosts == expected_hosts(inv)
    assert set(inv.groups) == {"wuhan", "wuhan_special", "bastions"}
    assert set(inv.groups["wuhan"]) == {"wuhan-a100-1", "wuhan-a100-2"}
    yaml_inv = inventory.load(inv_dir / "hosts.yml")
    assert inv.hosts == without_order(yaml_inv.hosts)


def test_ini_detected_without_suffix(inv_dir: Path) -> None:
    plain = inv_dir / "hosts"
    plain.write_text("# team inventory\n" + ANSIBLE_INI)
    assert looks_like_ini(plain)
    assert inventory.load(plain).hosts["bastion"].user == "jump"


@pytest.mark.parametrize(
    ("text", "ini"),
    [
        ("[gpus]\ng1\n", True),
        ("g1 ansible_host=10.0.0.1\n", True),
        ("# comment\n; comment\n\ng1\n", True),
        ("hosts:\n  g1: {address: x}\n", False),
        ("---\nall: {}\n", False),
        ("- a\n", False),
        ("{hosts: {g1: {}}}\n", False),
    ],
)
def test_looks_like_ini_without_suffix(tmp_path: Path, text: str, ini: bool) -> None:
    path = tmp_path / "hosts"
    path.write_text(text)
    assert looks_like_ini(path) is ini


def test_ansible_yaml_without_all_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("gpus:\n  hosts:\n    g1: {ansible_host: 10.0.0.1, ansible_port: 2022}\n")
    h = inventory.load(path).hosts["g1"]
    assert (h.address, h.port, h.groups) == ("10.0.0.1", 2022, ("gpus",))


def test_selection_by_ansible_group(inv_dir: Path) -> None:
    inv = inventory.load(inv_dir / "hosts.ini")
    assert [h.name for h in inv.select(group="wuhan", limit="!wuhan_special")] == ["wuhan-a100-1"]


@pytest.mark.parametrize(
    ("args", "jump"),
    [
        ("-o ProxyJump=bastion", "bastion"),
        ("-oProxyJump=ops@bastion:2222", "ops@bastion:2222"),
        ("-J ops@bastion", "ops@bastion"),
        ("-o StrictHostKeyChecking=no -o 'ProxyJump=a,b'", "a,b"),
        ("-o StrictHostKeyChecking=no", None),
    ],
)
def test_proxy_jump_from_ssh_common_args(args: str, jump: str | None) -> None:
    """The args stay as written under `vars` (a `-F` beside the jump names the host's SSH
    config); the jump is read from them where the host is resolved, all args together."""
    converted = convert_vars({"ansible_ssh_common_args": args})
    assert converted == {"vars": {"ansible_ssh_common_args": args}}
    assert route(parse_ssh_args([args]), {}) == (None if jump is None else ("jump", jump))


def test_convert_vars_maps_ansible_names_and_keeps_the_rest() -> None:
    converted = convert_vars(
        {
            "ansible_ssh_host": "h",
            "ansible_ssh_port": 22,
            "ansible_ssh_user": "u",
            "ansible_private_key_file": "/k",
            "gpuonboard_host_key": "SHA256:x",
            "vendor": "v",
            "ansible_python_interpreter": "/usr/bin/python3",
        }
    )
    assert converted == {
        "address": "h",
        "port": 22,
        "user": "u",
        "key_file": "/k",
        "host_key": "SHA256:x",
        "vendor": "v",
        "vars": {"ansible_python_interpreter": "/usr/bin/python3"},
    }


def test_is_native() -> None:
    assert is_native({"hosts": {"a": {"address": "x"}}})
    assert not is_native({"all": {}})
    assert not is_native({"gpus": {"hosts": {"a": None}}})


def test_ini_group_cycle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[a:children]\nb\n[b:children]\na\n[b]\nh ansible_host=x\n")
    with pytest.raises(InventoryError, match="is its own child; remove the cycle"):
        inventory.load(path)


def test_ansible_vars_that_are_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  vars: [a, b]\n  hosts: {g: {ansible_host: x}}\n")
    assert load_error(path) == f"{path}, line 2: Ansible group 'all' 'vars' must be a mapping of name: value."


def test_ansible_host_field_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    g:\n      ansible_host: x\n      ansible_port: abc\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert (
        str(info.value)
        == f"{path}, line 5: host 'g' field 'port' must be a number from 1 to 65535, not 'abc'."
    )


# An Ansible inventory host without ansible_host is reached at its own name (the SSH config's
# Host entry still applies first), as Ansible does; our own format keeps its clear error.

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


def test_a_bracketed_ipv6_ansible_host_is_refused_as_ansibles_ssh_refuses_it(tmp_path: Path) -> None:
    """`ansible_host=[fd2e::1]` (the edit of the line above: brackets as a host pattern writes
    them): Ansible hands it to ssh as written, and `ansible -m ping` fails ("Failed to connect to
    the host via ssh: hostname contains invalid characters"); gpuonboard took it without the
    brackets and connected where Ansible cannot. Refused, saying what to write. As a host name
    (`[2001:db8::8]:2022`, the test above) the brackets are Ansible's pattern syntax and stay read."""
    (tmp_path / "ssh_config").write_text("")
    path = tmp_path / "hosts"
    path.write_text("[gpus]\ngpu1 ansible_host=[fd2e::1]\n")
    assert load_error(path, ssh_config=tmp_path / "ssh_config") == (
        f"{path}, line 2: host 'gpu1' field 'address' '[fd2e::1]' (ansible_host) holds an IPv6 address"
        " in brackets, which Ansible's ssh dials as written and refuses (ssh: \"hostname contains invalid"
        ' characters"); write it without the brackets: fd2e::1.'
    )
    path.write_text("[gpus]\ngpu1 ansible_ssh_common_args='-o HostName=[fd2e::1]'\n")
    with pytest.raises(InventoryError, match=r"\(-o HostName= of its ssh args\) holds an IPv6 address"):
        inventory.load(path, ssh_config=tmp_path / "ssh_config")
    path.write_text("[gpus]\ngpu1 ansible_host=fd2e::1\n")
    assert inventory.load(path, ssh_config=tmp_path / "ssh_config").hosts["gpu1"].address == "fd2e::1"


def test_our_own_format_still_needs_an_address(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    gpu1.example.com:\n")
    assert inventory.load(path).hosts["gpu1.example.com"].address == "gpu1.example.com"
    native = tmp_path / "native.yml"
    native.write_text("hosts:\n  gpu1.example.com: {}\n")
    assert load_error(native) == (
        f"{native}, line 2: host 'gpu1.example.com' has no 'address' and no Host entry in the SSH"
        " config; add address: <IP or DNS name>."
    )


# Passwords in an imported Ansible inventory (`ansible_password`, `ansible_become_password`,
# ...) are never kept: gpuonboard logs in with keys, and a kept password could reach a template,
# a log line or a report through the host's vars.


def test_ansible_passwords_are_not_imported(tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text("")
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[gpus]\n"
        "box1 ansible_host=10.0.0.9 ansible_password=hunter2 ansible_ssh_pass=hunter3\n"
        "[gpus:vars]\n"
        "ansible_become_password=s3cret\n"
        "ansible_sudo_pass=s3cret2\n"
        "train_timeout=900\n"
    )
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    host = inv.hosts["box1"]
    assert host.address == "10.0.0.9"
    assert host.vars.get("train_timeout") in (900, "900")
    text = repr(host)
    for secret in ("hunter2", "hunter3", "s3cret"):
        assert secret not in text and secret not in repr(host.vars), secret


# QA round 3 (Ansible inventory import): host ranges, `host:port`, and ProxyCommand bastions.


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
        ('-oProxyCommand="/usr/bin/ssh -l ops -o Port=2022 -W [%h]:%p bastion"', "ops@bastion:2022"),
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
    ("args", "command"),
    [
        ('-o ProxyCommand="nc -x proxy:1080 %h %p"', "nc -x proxy:1080 %h %p"),
        ('-o ProxyCommand="ssh bastion nc %h %p"', "ssh bastion nc %h %p"),
        # the bastion's own key (DeepOps' escaped form): a jump would reach it with the host's key
        (
            '-o ProxyCommand="ssh -W %h:%p -q -i ~/.ssh/bastion.pem ubuntu@bastion"',
            "ssh -W %h:%p -q -i ~/.ssh/bastion.pem ubuntu@bastion",
        ),
        (
            '-oProxyCommand="/usr/bin/ssh -l ops -o Port=2022 -W [%h]:%p -i k bastion"',
            "/usr/bin/ssh -l ops -o Port=2022 -W [%h]:%p -i k bastion",
        ),
    ],
)
def test_other_proxy_commands_are_carried_whole_to_the_connection(
    tmp_path: Path, args: str, command: str
) -> None:
    """A ProxyCommand that is more than `ssh -W %h:%p bastion` is the host's proxy_command, run
    by the connection as OpenSSH runs it (it was refused; earlier, a bastion's `-i` was dropped)."""
    path = tmp_path / "hosts.ini"
    path.write_text(f"[gpus]\n\ng1 ansible_host=10.0.0.3 ansible_ssh_extra_args='{args}'\n")
    host = inventory.load(path).hosts["g1"]
    assert (host.proxy_command, host.jump) == (command, ())


def test_an_inventory_proxy_command_is_checked(tmp_path: Path) -> None:
    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  a: {address: 10.0.0.1, proxy_command: 'ssh -W %h:%p -i k bastion'}\n"
        "  b: {address: 10.0.0.2, proxy_command: 'nc %C %p'}\n"
    )
    with pytest.raises(InventoryError, match=r"proxy_command.*token %C"):
        inventory.load(tmp_path)
    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  a: {address: 10.0.0.1, proxy_command: 'ssh -W %h:%p -i k bastion', jump: bastion}\n"
        "  bastion: {address: 10.0.0.9}\n"
    )
    with pytest.raises(InventoryError, match=r"proxy_command.*'jump' both say how to reach the host"):
        inventory.load(tmp_path)
    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  a: {address: 10.0.0.1, proxy_command: 'ssh -W %h:%p -i k b'}\n"
    )
    assert inventory.load(tmp_path).hosts["a"].proxy_command == "ssh -W %h:%p -i k b"


def test_a_jump_and_ssh_args_of_two_layers_take_the_more_specific(tmp_path: Path) -> None:
    """`all: vars: jump:` beside one host's own `ansible_ssh_common_args: -o ProxyJump=...`:
    before, the whole inventory was refused ("defaults field 'jump' and `-o ProxyJump=...` both
    say how to reach the host"); the host's args beat the `all` jump (gpu2 via 10.0.0.9, gpu1
    via 10.0.0.1); one layer saying both is still refused."""
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n  vars:\n    jump: ubuntu@10.0.0.1\n  hosts:\n    gpu1: {ansible_host: 10.0.0.11}\n"
        "    gpu2: {ansible_host: 10.0.0.12, ansible_ssh_common_args: '-o ProxyJump=ubuntu@10.0.0.9'}\n"
    )
    hosts = inventory.load(path).hosts
    assert hosts["gpu1"].jump == ("ubuntu@10.0.0.1",)
    assert hosts["gpu2"].jump == ("ubuntu@10.0.0.9",)
    path.write_text(
        "all:\n  hosts:\n    gpu2: {ansible_host: 10.0.0.12, jump: ubuntu@10.0.0.1,"
        " ansible_ssh_common_args: '-o ProxyJump=ubuntu@10.0.0.9'}\n"
    )
    with pytest.raises(InventoryError, match=r"'jump' and `-o ProxyJump=ubuntu@10.0.0.9`.*both say"):
        inventory.load(path)


CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "ansible"


@pytest.mark.parametrize(
    ("written", "kind"),
    [
        ("ansible.builtin.local", "local"),
        ("ansible.legacy.local", "local"),
        ("ansible.builtin.ssh", "ssh"),
        ("paramiko_ssh", "ssh"),
        ("ansible.builtin.paramiko_ssh", "ssh"),
    ],
)
def test_a_connection_written_as_its_fqcn_is_that_connection(tmp_path: Path, written: str, kind: str) -> None:
    """Ansible's own connection_local test inventory (tests/fixtures/ansible, SOURCES.md) with its
    `ansible_connection=local` written as another name of the same plugin, its FQCN
    (`ansible.builtin.local`, the edit): Ansible runs these hosts on this machine (`-vvv`: ESTABLISH
    LOCAL CONNECTION); was: every name but a bare `local` read as ssh, so they were dialled as
    root at localhost:22."""
    text = (CORPUS / "ansible-connection-local" / "test_connection.inventory").read_text()
    assert "ansible_connection=local\n" in text
    path = tmp_path / "test_connection.inventory"
    path.write_text(text.replace("ansible_connection=local\n", f"ansible_connection={written}\n"))
    (tmp_path / "ssh_config").write_text("")
    hosts = inventory.load(path, ssh_config=tmp_path / "ssh_config").hosts
    assert {h.connection for h in hosts.values()} == {kind}


def test_a_connection_that_is_not_ssh_is_refused_naming_it(tmp_path: Path) -> None:
    """community.docker's connection test inventory (real, unedited): its hosts are containers
    Ansible reaches with `docker exec` at `ansible_host=ubuntu-latest`; was: dialled over SSH at
    ubuntu-latest:22 as root, now one sentence naming the connection, the group line that set
    it and what to do, when a selection that connects includes one of them."""
    (tmp_path / "ssh_config").write_text("")
    path = CORPUS / "community-docker-connection" / "test_connection.inventory"
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    assert inv.hosts["docker-pipelining"].connection == "community.docker.docker"
    with pytest.raises(
        InventoryError,
        match=r"test_connection.inventory, line 6: host 'docker-pipelining' is reached by Ansible's"
        r" 'community.docker.docker' connection \(ansible_connection of group 'docker'\).*"
        r" set ansible_connection=ssh for it\.$",
    ):
        inv.check_connections(inv.select(group="docker"))


def test_a_host_of_another_connection_is_not_read_with_sshs_rules(tmp_path: Path) -> None:
    """The lxc_ssh plugin's real hosts example (its README), beside a GPU server (the edit): its
    `ansible_ssh_extra_args=container` is the container's name for the plugin, not ssh options;
    ssh's reading of it ("a word that is no option") refused the whole inventory, the GPU server
    too. Now the container host is listed with the sentence that refuses it where selected."""
    text = (CORPUS / "lxc-ssh-readme" / "hosts").read_text()
    path = tmp_path / "hosts"
    path.write_text("[gpus]\ngpu1 ansible_host=10.0.0.1\n[containers]\n" + text)
    (tmp_path / "ssh_config").write_text("")
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    assert (inv.hosts["gpu1"].address, inv.hosts["gpu1"].not_used) == ("10.0.0.1", None)
    inv.check_connections(inv.select(group="gpus"))
    assert inv.hosts["container"].connection == "lxc_ssh"
    with pytest.raises(
        InventoryError,
        match=r"hosts, line 4: host 'container' is reached by Ansible's 'lxc_ssh' connection"
        r" \(ansible_connection of host 'container'\)",
    ):
        inv.check_connections(inv.select(group="containers"))


def test_a_local_host_reads_no_ssh_args_and_an_ssh_based_one_does(tmp_path: Path) -> None:
    """DeepOps' real inventory (uncommented: `[all:vars]` ansible_ssh_common_args, a ProxyCommand
    through ubuntu@10.0.0.1) with kubespray's real local host line (`node1
    ansible_connection=local`) first: Ansible's local connection reads no ssh args, yet node1
    was given the jump of every ssh host; with `ansible_ssh_extra_args='container'` on node1
    (the edit: no ssh option) the whole inventory was refused naming node1. Now node1 has no
    jump and loads; ssh, smart, paramiko and their FQCNs still read the args with ssh's rules."""
    import shutil

    shutil.copytree(CORPUS / "deepops-uncommented", tmp_path / "deepops")
    hosts = tmp_path / "deepops" / "inventory"
    text = hosts.read_text()
    local = (CORPUS / "kubespray-local" / "hosts.ini").read_text().splitlines()[0]
    hosts.write_text(f"{local}\n{text}")
    (tmp_path / "ssh_config").write_text("")
    inv = inventory.load(hosts, ssh_config=tmp_path / "ssh_config")
    assert (inv.hosts["node1"].connection, inv.hosts["node1"].jump) == ("local", ())
    assert inv.hosts["gpu01"].jump == ("ubuntu@10.0.0.1",)
    hosts.write_text(f"{local} ansible_ssh_extra_args='container'\n{text}")
    assert inventory.load(hosts, ssh_config=tmp_path / "ssh_config").hosts["node1"].connection == "local"
    for ssh_based in ("smart", "paramiko", "ansible.builtin.paramiko_ssh", "ansible.legacy.ssh"):
        edited = local.replace("ansible_connection=local", f"ansible_connection={ssh_based}")
        hosts.write_text(f"{edited} ansible_ssh_extra_args='container'\n{text}")
        with pytest.raises(
            InventoryError, match=r"host 'node1' gets `container` from its ansible_ssh_extra_args"
        ):
            inventory.load(hosts, ssh_config=tmp_path / "ssh_config")


# a mixed inventory (the review's): GPU servers over SSH, a Windows box over WinRM, this machine
MIXED = (
    "[gpus]\ngpu1 ansible_host=10.0.0.1\ngpu2 ansible_host=10.0.0.2\n"
    "[win]\nwinbox ansible_host=10.0.0.9 ansible_connection={connection}\n"
    "[local]\nlocalhost ansible_connection=local\n"
)


@pytest.mark.parametrize("connection", ["winrm", "ansible.netcommon.network_cli", "community.docker.docker"])
@pytest.mark.parametrize(
    ("selection", "names"),
    [
        ({"limit": "gpus"}, ["gpu1", "gpu2"]),
        ({"hosts": ["gpu1"]}, ["gpu1"]),
        ({"group": "gpus"}, ["gpu1", "gpu2"]),
        ({"limit": "all:!winbox"}, ["gpu1", "gpu2", "localhost"]),
    ],
)
def test_a_host_reached_without_ssh_stops_only_a_selection_including_it(
    tmp_path: Path, connection: str, selection: dict[str, Any], names: list[str]
) -> None:
    """A mixed inventory is valid: Ansible runs only the hosts selected. Was: the Windows box
    (or a switch's network_cli) refused the whole inventory at load ("host 'winbox' field
    'connection' is Ansible's 'winrm' connection ..."), even for `--limit gpus` and offline
    judging of gpu1; now the GPU servers are selected and used, and the box is listed as
    `winrm: not used` and refused only where the selection includes it."""
    from gpuonboard.api.listing import target_text

    (tmp_path / "ssh_config").write_text("")
    path = tmp_path / "hosts.ini"
    path.write_text(MIXED.format(connection=connection))
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    chosen = inv.select(**selection)
    inv.check_connections(chosen)
    assert [h.name for h in chosen] == names
    assert target_text(inv.hosts["winbox"]) == f"{connection}: not used"
    with pytest.raises(
        InventoryError,
        match=rf"hosts.ini, line 5: host 'winbox' is reached by Ansible's {connection!r} connection"
        r" \(ansible_connection of host 'winbox'\), which does not run over SSH, .* leave it out of"
        r" the selection \(--limit '!winbox'\)",
    ):
        inv.check_connections(inv.select(limit="all"))


DELEGATE_TO_LOCAL = "".join(
    (CORPUS / "ansible-delegate-to" / "inventory").read_text().splitlines(keepends=True)[:5]
)  # (its [local] group: two local hosts, testhost3 and 4 at `ansible_ssh_host=127.0.0.3`, `.4`)


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (
            (
                "testhost3 ansible_ssh_host=127.0.0.3",
                "testhost3 ansible_ssh_host=127.0.0.3 ansible_host=127.0.0.9",
            ),
            None,
        ),
        (
            ("testhost3 ansible_ssh_host=127.0.0.3", "testhost3 ansible_host=127.0.0.9"),
            "ansible_ssh_host=127.0.0.3",
        ),
        (
            ("testhost3 ansible_ssh_host=127.0.0.3", "testhost3 ansible_port=2201 ansible_user=hu"),
            "ansible_ssh_port=2202\nansible_ssh_user=gu",
        ),
    ],
)
def test_the_ssh_named_variable_wins_as_in_ansibles_ssh_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str], where: str | None
) -> None:
    """Ansible's delegate_to test inventory's [local] group (real; testhost3's line edited as
    `edit` says, and `where` added as the group's [local:vars]): Ansible's ssh connection takes
    `ansible_ssh_host` over `ansible_host` (`_ssh_port`, `_ssh_user` likewise) whichever layer set
    each, even a group's over the host's own (its `-vvv` ssh line, compared here); was: the one
    written last, or the host's, so testhost3 was dialled at 127.0.0.9 (or port 2201 as hu)."""
    from .test_ansible_cfg import ANSIBLE, SSH, _ansible_ssh_g

    if SSH is None or not Path(ANSIBLE).exists():
        pytest.skip("needs OpenSSH's ssh and ansible-core")
    text = DELEGATE_TO_LOCAL.replace(*edit) + (f"[local:vars]\n{where}\n" if where else "")
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_REMOTE_USER", "ANSIBLE_REMOTE_PORT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "inventory"
    path.write_text(text)
    h = inventory.load(path).hosts["testhost3"]
    g = _ansible_ssh_g(tmp_path, "testhost3", path)
    assert (h.address, h.port, h.user) == (g["hostname"][0], int(g["port"][0]), g["user"][0])


def test_a_relative_key_file_of_an_ansible_variable_is_read_where_ansible_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Vagrant project's inventory (bon3409/ansible-semaphore-ui, inventory/local/hosts,
    unedited): `ansible_ssh_private_key_file=./.vagrant/machines/app/virtualbox/private_key`, the
    key Vagrant writes at the project's top, where `ansible-playbook -i inventory/local/hosts`
    runs; Ansible hands ssh the path as written, ssh opens it there (its `-vvv` ssh line, read
    by `ssh -G` from that directory). Was: read from the inventory's folder
    (inventory/local/.vagrant/..., no such file: the project refused)."""
    import shutil

    from .test_ansible_cfg import ANSIBLE, SSH, _ansible_ssh_g

    if SSH is None or not Path(ANSIBLE).exists():
        pytest.skip("needs OpenSSH's ssh and ansible-core")
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    (tmp_path / "inventory" / "local").mkdir(parents=True)
    hosts = tmp_path / "inventory" / "local" / "hosts"
    shutil.copy(CORPUS / "semaphore-vagrant" / "hosts", hosts)
    key = tmp_path / ".vagrant" / "machines" / "app" / "virtualbox" / "private_key"
    key.parent.mkdir(parents=True)
    key.write_text("")
    inv = inventory.load(Path("inventory/local/hosts"))
    g = _ansible_ssh_g(tmp_path, "app", hosts)
    assert inv.hosts["app"].key_file == os.path.abspath(g["identityfile"][0]) == str(key)
    inv.check_key_files(inv.hosts.values())  # (no "does not exist")


@pytest.mark.parametrize(
    ("variable", "base"),
    [
        ("gpuonboard_key_file", "inventory/local"),
        ("key_file", "inventory/local"),
        ("ansible_ssh_private_key_file", "."),
        ("ansible_private_key_file", "."),
    ],
)
def test_a_relative_key_file_of_gpuonboards_own_variable_is_read_from_the_inventorys_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, base: str
) -> None:
    """The Vagrant project's real inventory (semaphore-vagrant) with its key file's variable
    renamed to `variable`, read from the project's top: only Ansible's own variables are read
    from the directory gpuonboard runs in (Ansible hands them to ssh as written); gpuonboard's
    own `gpuonboard_key_file` / `key_file` stays relative to the inventory file, as documented.
    Was: every key file of an Ansible inventory read from the working directory."""
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    (tmp_path / "inventory" / "local").mkdir(parents=True)
    text = (CORPUS / "semaphore-vagrant" / "hosts").read_text()
    assert "ansible_ssh_private_key_file=./.vagrant/" in text
    hosts = tmp_path / "inventory" / "local" / "hosts"
    hosts.write_text(text.replace("ansible_ssh_private_key_file=", f"{variable}="))
    key = tmp_path / base / ".vagrant" / "machines" / "app" / "virtualbox" / "private_key"
    inv = inventory.load(Path("inventory/local/hosts"))
    assert inv.hosts["app"].key_file == str(key.resolve())


@pytest.mark.parametrize(
    ("edit", "port", "user"),
    [
        (("ansible_ssh_port=22", "ansible_ssh_port=2222.0"), 2222, "vagrant"),
        (("ansible_ssh_port=22", 'ansible_ssh_port=" 2222"'), 2222, "vagrant"),
        (("ansible_user=vagrant", "ansible_user="), 22, None),
    ],
)
def test_a_port_and_user_ansible_reads_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str], port: int, user: str | None
) -> None:
    """The Vagrant project's real inventory (semaphore-vagrant) with its `[local:vars]` edited as
    `edit` says: Ansible's ssh takes `2222.0` (INI types it a float) and `" 2222"` as port 2222,
    and an empty `ansible_user` as none (no User on its ssh line: ssh's own default); was: the
    port refused ("must be a number"), the empty user refused ("must be a user name string").
    gpuonboard's user where none is set is root, as for any host without one."""
    import getpass

    from .test_ansible_cfg import ANSIBLE, SSH, _ansible_ssh_g

    if SSH is None or not Path(ANSIBLE).exists():
        pytest.skip("needs OpenSSH's ssh and ansible-core")
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_REMOTE_USER", "ANSIBLE_REMOTE_PORT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    text = (CORPUS / "semaphore-vagrant" / "hosts").read_text()
    assert edit[0] in text
    hosts = tmp_path / "hosts"
    hosts.write_text(text.replace(*edit))
    h = inventory.load(hosts).hosts["app"]
    g = _ansible_ssh_g(tmp_path, "app", hosts)
    assert h.port == int(g["port"][0]) == port
    assert h.user == g["user"][0] == (user or getpass.getuser())


def test_an_empty_ansible_ssh_host_is_refused_as_ansible_dials_no_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Vagrant project's real inventory (semaphore-vagrant), its host line given
    `ansible_host=192.0.2.1` and its group's `ansible_ssh_host` emptied: the empty one beats the
    host's, and ansible-core 2.19 hands ssh an empty destination (its `-vvv` EXEC line: `''`,
    "Could not resolve hostname"), never the host's ansible_host; so gpuonboard keeps refusing
    it (the review thought Ansible fell back to 192.0.2.1), now saying why and naming the group."""
    import shlex
    import subprocess

    from .test_ansible_cfg import ANSIBLE

    if not Path(ANSIBLE).exists():
        pytest.skip("needs ansible-core")
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    text = (CORPUS / "semaphore-vagrant" / "hosts").read_text()
    hosts = tmp_path / "hosts"
    hosts.write_text(
        text.replace("app\n", "app ansible_host=192.0.2.1\n", 1).replace(
            "ansible_ssh_host=192.168.50.50", 'ansible_ssh_host=""'
        )
    )
    env = {**os.environ, "ANSIBLE_SSH_EXECUTABLE": "/bin/false", "ANSIBLE_SSH_RETRIES": "0"}
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-tmp")
    done = subprocess.run(
        [ANSIBLE, "app", "-i", str(hosts), "-m", "ping", "-vvv"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    line = next(x for x in done.stdout.splitlines() if "SSH: EXEC /bin/false" in x)
    assert shlex.split(line.split("SSH: EXEC ", 1)[1])[-2] == ""  # (the destination)
    with pytest.raises(
        InventoryError,
        match=r"hosts, line 5: host 'app' field 'address' is empty \(an empty ansible_ssh_host or"
        r" ansible_host of group 'local'\), which Ansible's ssh dials as it is",
    ):
        inventory.load(hosts)


@pytest.mark.parametrize(
    ("edit", "config", "user"),
    [
        (("app\n", 'app ansible_user=""\n'), "Host 192.168.50.50\n  User cfguser\n", "cfguser"),
        (("app\n", "app ansible_ssh_user=''\n"), "Host 192.168.50.50\n  User cfguser\n", "cfguser"),
        (("app\n", 'app ansible_user=""\n'), "", None),
    ],
)
def test_an_empty_ansible_user_logs_in_as_ssh_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str], config: str, user: str | None
) -> None:
    """The Vagrant project's real inventory (semaphore-vagrant), its host line given an empty
    `ansible_user` (or `ansible_ssh_user`) under its group's `ansible_user=vagrant`: the empty
    one wins, and Ansible's ssh passes no User, so ssh logs in as its config's User for the host,
    else as the local login (`ssh -G` of Ansible's own command line). Was: dialled as root."""
    import pwd

    from .test_ansible_cfg import ANSIBLE, SSH, _ansible_ssh_g

    if SSH is None or not Path(ANSIBLE).exists():
        pytest.skip("needs OpenSSH's ssh and ansible-core")
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_REMOTE_USER"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user_config").write_text(config)
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    text = (CORPUS / "semaphore-vagrant" / "hosts").read_text()
    assert text.startswith("[local]\napp\n")
    hosts = tmp_path / "hosts"
    hosts.write_text(text.replace(*edit, 1))
    g = _ansible_ssh_g(tmp_path, "app", hosts)
    login = pwd.getpwuid(os.getuid()).pw_name  # (ssh's local login name)
    assert inventory.load(hosts).hosts["app"].user == g["user"][0] == (user or login)
