"""An existing Ansible inventory (YAML or INI) loads as it is, to the same Host objects."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory import Host, Inventory, OrderSpec
from gpuonboard.inventory.ansible import convert_vars, is_native, looks_like_ini

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


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "no-such-ssh-config"))


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
            vars={**common, "datacenter": "wuhan", "gpu_slot": 3},
        ),
        "wuhan-a100-2": Host(
            name="wuhan-a100-2",
            address="10.20.0.12",
            port=2200,  # child group 'wuhan_special' overrides its parent 'wuhan'
            user="root",
            jump=("bastion",),
            vendor=vendor,
            groups=("wuhan", "wuhan_special"),
            vars={**common, "datacenter": "wuhan-b"},
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
        gpu_model="A100 80GB SXM", gpu_count=8, vram_bytes=80 * GB
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
        ("-o ProxyJump bastion", None),  # one word after -o is expected
        ("-oProxyJump=ops@bastion:2222", "ops@bastion:2222"),
        ("-J ops@bastion", "ops@bastion"),
        ("-o StrictHostKeyChecking=no -o 'ProxyJump=a,b'", "a,b"),
        ("-o StrictHostKeyChecking=no", None),
    ],
)
def test_proxy_jump_from_ssh_common_args(args: str, jump: str | None) -> None:
    converted = convert_vars({"ansible_ssh_common_args": args})
    if jump is None:
        assert "jump" not in converted
        assert converted["vars"] == {"ansible_ssh_common_args": args}
    else:
        assert converted == {"jump": jump}


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
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert str(info.value) == f"{path}, line 2: Ansible group 'all' 'vars' must be a mapping of name: value."


def test_ansible_host_field_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    g:\n      ansible_host: x\n      ansible_port: abc\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert (
        str(info.value)
        == f"{path}, line 5: host 'g' field 'port' must be a number from 1 to 65535, not 'abc'."
    )
