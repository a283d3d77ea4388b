"""Native inventory: precedence (host > group > vendor > defaults), selection, sizes, jump hosts,
SSH config aliases, YAML merge keys, and the shipped example inventory."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from types import FrameType

import pytest
import yaml

from gpuonboard import inventory
from gpuonboard.errors import ExitCode, InventoryError, UsageError
from gpuonboard.inventory import DataDiskSpec, Inventory, OrderSpec, ansible_dir
from gpuonboard.inventory.loader import locate
from gpuonboard.steps.container import parse_ref
from gpuonboard.steps.teardown import mark_stale
from gpuonboard.yamlload import parse_yaml

REPO = Path(__file__).resolve().parents[3]
GB = 1000**3
TB = 1000**4


def write(root: Path, files: dict[str, str]) -> Path:
    """Write an inventory tree (relative path -> YAML text) and return its directory."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return root


def load_error(path: Path, ssh_config: Path | None = None) -> str:
    """The error sentence inventory.load raises (an InventoryError; none fails the test)."""
    with pytest.raises(InventoryError) as info:
        inventory.load(path, ssh_config=ssh_config)
    return str(info.value)


def load_text(tmp_path: Path, hosts_yml: str, **extra: str) -> Inventory:
    return inventory.load(write(tmp_path / "inv", {"hosts.yml": hosts_yml, **extra}))


# ---------------------------------------------------------------- precedence

LAYERED = {
    "hosts.yml": """\
        defaults:
          user: root
          port: 22
          connect_timeout: 5
          data_dir: /defaults
          vars: {state_dir: /var/lib/gpuonboard, tier: default}
        groups:
          a100:
            vars:
              vendor: acme
              port: 2200
              order: {gpu_count: 8, interconnect: nvlink}
              vars: {tier: group-a100}
            hosts: [gpu-1, gpu-2]
          half:
            vars:
              port: 2300
              order: {gpu_count: 4}
            hosts: [gpu-1]
        hosts:
          gpu-1:
            address: 10.0.0.1
            user: admin
            order:
              data_disk: {min_size: 2TB}
            vars: {rack: r7}
          gpu-2:
            address: 10.0.0.2
          plain:
            address: 10.0.0.3
        """,
    "vendors/acme.yml": """\
        name: ACME GPU Cloud
        ssh: {user: ubuntu, port: 2222, connect_timeout: 7}
        data_dir: /vendor-data
        order:
          gpu_model: A100 80GB SXM
          vram: 80GB
          data_disk: {mount: /data, min_size: 1TB}
        billing: {unit: second, rate: 9.8, currency: CNY}
        """,
}


@pytest.fixture
def layered(tmp_path: Path) -> Inventory:
    return inventory.load(write(tmp_path / "inv", LAYERED))


def test_host_beats_group_beats_vendor_beats_defaults(layered: Inventory) -> None:
    h = layered.hosts["gpu-1"]
    assert h.user == "admin"  # host
    assert h.port == 2300  # group 'half' (later group wins over 'a100', over vendor and defaults)
    assert h.connect_timeout == 7.0  # vendor over defaults
    assert h.data_dir == "/vendor-data"  # vendor over defaults
    assert h.vendor is not None and h.vendor.name == "ACME GPU Cloud"
    assert h.groups == ("a100", "half")

    g2 = layered.hosts["gpu-2"]
    assert (g2.user, g2.port) == ("ubuntu", 2200)  # vendor user, group port

    plain = layered.hosts["plain"]
    assert (plain.user, plain.port, plain.connect_timeout) == ("root", 22, 5.0)
    assert plain.vendor is None and plain.data_dir == "/defaults"
    assert plain.order == OrderSpec()


def test_order_is_deep_merged_across_layers(layered: Inventory) -> None:
    assert layered.hosts["gpu-1"].order == OrderSpec(
        gpu_model="A100 80GB SXM",  # vendor
        gpu_count=4,  # group 'half' over group 'a100'
        vram_bytes=80 * 2**30,  # vendor (GPU memory in binary sizes, as RAM)
        interconnect="nvlink",  # group 'a100'
        data_disk=DataDiskSpec(mount="/data", min_size_bytes=2 * TB),  # mount: vendor, size: host
    )
    assert layered.hosts["gpu-2"].order.gpu_count == 8
    assert layered.hosts["gpu-2"].order.data_disk == DataDiskSpec("/data", 1 * TB)


def test_vars_are_deep_merged(layered: Inventory) -> None:
    assert layered.hosts["gpu-1"].vars == {
        "state_dir": "/var/lib/gpuonboard",
        "tier": "group-a100",
        "rack": "r7",
    }
    assert layered.hosts["plain"].vars == {"state_dir": "/var/lib/gpuonboard", "tier": "default"}


def test_vendor_profile_fields(layered: Inventory) -> None:
    acme = layered.vendors["acme"]
    assert acme.billing.unit == "second" and acme.billing.rate == 9.8 and acme.billing.currency == "CNY"
    assert acme.shutdown_command == "shutdown -h now"
    assert acme.source.endswith("vendors/acme.yml")


def test_error_in_a_merged_order_points_at_the_layer_that_wrote_it(tmp_path: Path) -> None:
    inv_dir = write(
        tmp_path / "inv",
        {
            "hosts.yml": """\
                groups:
                  a100:
                    vars:
                      order: {gpu_model: A100, gpu_cnt: 8}
                    hosts: [gpu-1]
                hosts:
                  gpu-1:
                    address: 10.0.0.1
                    order: {vram: 80GB}
                """
        },
    )
    assert load_error(inv_dir) == (
        f"{inv_dir / 'hosts.yml'}, line 4: group 'a100' order has an unknown key 'gpu_cnt';"
        " did you mean 'gpu_count'?"
    )


def test_bad_vendor_ssh_value_names_the_vendor_file(tmp_path: Path) -> None:
    inv_dir = write(
        tmp_path / "inv",
        {
            "hosts.yml": "hosts:\n  gpu-1: {address: 10.0.0.1, vendor: acme}\n",
            "vendors/acme.yml": "name: ACME\nssh:\n  user: ubuntu\n  port: twenty-two\n",
        },
    )
    assert load_error(inv_dir) == (
        f"{inv_dir / 'vendors' / 'acme.yml'}, line 4: vendor 'acme' field 'port' must be a number"
        " from 1 to 65535, not 'twenty-two'."
    )


def test_unknown_vendor_names_the_vendors_dir_in_use(tmp_path: Path) -> None:
    inv_dir = write(
        tmp_path / "inv",
        {
            "hosts.yml": "vendors_dir: profiles\nhosts:\n  gpu-1: {address: 10.0.0.1, vendor: acm}\n",
            "profiles/acme.yml": "name: ACME\n",
        },
    )
    assert load_error(inv_dir) == (
        f"{inv_dir / 'hosts.yml'}, line 3: host 'gpu-1' names unknown vendor 'acm'; vendor profiles are"
        f" the files <name>.yml in {(inv_dir / 'profiles').resolve()}; did you mean 'acme'?"
    )


# ---------------------------------------------------------------- selection

SELECT = """\
    groups:
      wuhan: {hosts: [wuhan-a100-1, wuhan-a100-2, wuhan-a100-3, wuhan-bastion]}
      a100: {hosts: [wuhan-a100-1, wuhan-a100-2, wuhan-a100-3, sh-a100-1]}
      shanghai: {hosts: [sh-a100-1, sh-4090-1]}
    hosts:
      wuhan-bastion: {address: 203.0.113.5}
      wuhan-a100-1: {address: 10.0.0.1}
      wuhan-a100-2: {address: 10.0.0.2}
      wuhan-a100-3: {address: 10.0.0.3}
      sh-a100-1: {address: 10.1.0.1}
      sh-4090-1: {address: 10.1.0.2}
    """


@pytest.fixture
def fleet(tmp_path: Path) -> Inventory:
    return load_text(tmp_path, SELECT)


def names(hosts: list[inventory.Host]) -> list[str]:
    return [h.name for h in hosts]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"hosts": ["sh-4090-1", "wuhan-a100-2"]}, ["wuhan-a100-2", "sh-4090-1"]),  # inventory order
        ({"group": "shanghai"}, ["sh-a100-1", "sh-4090-1"]),
        ({"limit": "wuhan-a100-*"}, ["wuhan-a100-1", "wuhan-a100-2", "wuhan-a100-3"]),
        ({"limit": "wuhan,!wuhan-bastion"}, ["wuhan-a100-1", "wuhan-a100-2", "wuhan-a100-3"]),
        ({"limit": "a100,!wuhan-a100-3"}, ["wuhan-a100-1", "wuhan-a100-2", "sh-a100-1"]),
        ({"limit": "!wuhan"}, ["sh-a100-1", "sh-4090-1"]),
        ({"limit": "!shanghai, !wuhan-bastion"}, ["wuhan-a100-1", "wuhan-a100-2", "wuhan-a100-3"]),
        ({"group": "a100", "limit": "!wuhan"}, ["sh-a100-1"]),
        ({"hosts": ["wuhan-a100-1", "sh-4090-1"], "group": "wuhan"}, ["wuhan-a100-1"]),
        ({"limit": "no-such-*,sh-4090-1"}, ["sh-4090-1"]),
    ],
)
def test_select(fleet: Inventory, kwargs: dict[str, object], expected: list[str]) -> None:
    assert names(fleet.select(**kwargs)) == expected  # type: ignore[arg-type]


def test_select_nothing_means_everything(fleet: Inventory) -> None:
    assert names(fleet.select()) == list(fleet.hosts)


def test_select_unknown_host_suggests_a_name(fleet: Inventory) -> None:
    with pytest.raises(UsageError) as info:
        fleet.select(hosts=["wuhan-bastoin"])
    assert str(info.value) == (
        f"no host named 'wuhan-bastoin' in {fleet.source}; run `invoke inventory` to list hosts;"
        " did you mean 'wuhan-bastion'?"
    )
    with pytest.raises(UsageError) as info:
        fleet.select(hosts=["zzz"])
    assert str(info.value) == f"no host named 'zzz' in {fleet.source}; run `invoke inventory` to list hosts."


def test_select_unknown_group_suggests_a_name(fleet: Inventory) -> None:
    with pytest.raises(UsageError) as info:
        fleet.select(group="shanghia")
    assert str(info.value) == (
        f"no group named 'shanghia' in {fleet.source} (known groups: wuhan, a100, shanghai);"
        " did you mean 'shanghai'?"
    )


def test_select_matching_nothing_is_a_usage_error(fleet: Inventory) -> None:
    with pytest.raises(UsageError, match="matches the selection; nothing to do"):
        fleet.select(limit="wuhan,!wuhan")
    with pytest.raises(UsageError, match="nothing to do"):
        fleet.select(group="shanghai", limit="wuhan-*")


# ---------------------------------------------------------------- values


def test_sizes_are_parsed_to_bytes(tmp_path: Path) -> None:
    inv = load_text(
        tmp_path,
        """\
        hosts:
          gpu-1:
            address: 10.0.0.1
            order:
              vram: 80 GiB
              ram: 1.5TB
              data_disk: {mount: /data/, min_size: 7681502MiB}
              min_driver: "550.90"
              cpu_cores: 64
        """,
    )
    order = inv.hosts["gpu-1"].order
    assert order.vram_bytes == 80 * 1024**3
    assert order.ram_bytes == 1536 * 1024**3  # RAM is sold in binary sizes: 1.5TB is 1.5 TiB
    assert order.data_disk == DataDiskSpec(mount="/data", min_size_bytes=7681502 * 1024**2)
    assert order.min_driver == "550.90"
    assert order.cpu_cores == 64


def test_data_disk_may_be_just_a_mount_and_min_driver_an_int(tmp_path: Path) -> None:
    inv = load_text(tmp_path, "hosts:\n  g: {address: x, order: {data_disk: /mnt/nvme, min_driver: 535}}\n")
    assert inv.hosts["g"].order.data_disk == DataDiskSpec("/mnt/nvme")
    assert inv.hosts["g"].order.min_driver == "535"


@pytest.mark.parametrize(
    ("jump", "expected"),
    [
        ("bastion", ("bastion",)),
        ("ops@bastion:2222", ("ops@bastion:2222",)),
        ("bastion, ops@edge:2200", ("bastion", "ops@edge:2200")),
        ("[bastion, edge]", ("bastion", "edge")),
        ("none", ()),
        ('""', ()),
    ],
)
def test_jump_parsing(tmp_path: Path, jump: str, expected: tuple[str, ...]) -> None:
    bastions = "  bastion: {address: 203.0.113.5}\n  edge: {address: 203.0.113.6}\n"
    inv = load_text(tmp_path, f"hosts:\n  gpu-1:\n    address: 10.0.0.1\n    jump: {jump}\n{bastions}")
    assert inv.hosts["gpu-1"].jump == expected


@pytest.mark.parametrize(
    ("jump", "problem"),
    [
        ("bastoin", "is neither an inventory host nor an address; did you mean 'bastion'?"),
        ("ops@bastion:abc", "has a bad port 'abc'"),
        ("ops@bastion:0", "has a bad port '0'"),
    ],
)
def test_bad_jump_is_an_inventory_error(tmp_path: Path, jump: str, problem: str) -> None:
    text = f"hosts:\n  bastion: {{address: 203.0.113.5}}\n  gpu-1: {{address: 10.0.0.1, jump: '{jump}'}}\n"
    with pytest.raises(InventoryError) as info:
        load_text(tmp_path, text)
    assert f"host 'gpu-1' jump host {jump!r} {problem}" in str(info.value)


def test_jump_may_be_an_address_outside_the_inventory(tmp_path: Path) -> None:
    inv = load_text(
        tmp_path, "hosts:\n  gpu-1: {address: 10.0.0.1, jump: [bastion.example.com, 'root@10.0.0.9:2222']}\n"
    )
    assert inv.hosts["gpu-1"].jump == ("bastion.example.com", "root@10.0.0.9:2222")


def test_order_sizes_need_a_unit(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"field 'vram' needs a unit, like 80GB or 80GiB"):
        load_text(tmp_path, "hosts:\n  g: {address: 10.0.0.1, order: {vram: 80}}\n")
    with pytest.raises(InventoryError, match=r"'min_size' needs a unit, like 7TB"):
        load_text(
            tmp_path, "hosts:\n  g: {address: 10.0.0.1, order: {data_disk: {mount: /data, min_size: 7}}}\n"
        )


def test_jump_must_be_text_or_list_of_text(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="field 'jump' must be a host name, user@host:port, or a list"):
        load_text(tmp_path, "hosts:\n  gpu-1: {address: 10.0.0.1, jump: [bastion, 3]}\n")


def test_relative_key_file_is_relative_to_the_inventory(tmp_path: Path) -> None:
    inv = load_text(tmp_path, "hosts:\n  g: {address: x, key_file: keys/id_ed25519}\n")
    assert inv.hosts["g"].key_file == str((tmp_path / "inv" / "keys" / "id_ed25519").resolve())


def test_local_connection_needs_no_address(tmp_path: Path) -> None:
    inv = load_text(tmp_path, "hosts:\n  me: {connection: local}\n")
    assert (inv.hosts["me"].address, inv.hosts["me"].connection) == ("localhost", "local")


# ---------------------------------------------------------------- ssh config


def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(
        textwrap.dedent(
            f"""\
            Host myalias
                HostName 10.1.2.3
                Port 2200
                User ubuntu
                IdentityFile {tmp_path}/keys/id_myalias

            Host *
                ServerAliveInterval 30
            """
        )
    )
    return path


def test_ssh_config_alias_supplies_connection_settings(tmp_path: Path) -> None:
    inv_dir = write(tmp_path / "inv", {"hosts.yml": "hosts:\n  myalias: {}\n"})
    h = inventory.load(inv_dir, ssh_config=ssh_config(tmp_path)).hosts["myalias"]
    assert (h.address, h.port, h.user) == ("10.1.2.3", 2200, "ubuntu")
    assert h.key_file == f"{tmp_path}/keys/id_myalias"


def test_inventory_values_win_over_ssh_config(tmp_path: Path) -> None:
    inv_dir = write(
        tmp_path / "inv",
        {"hosts.yml": "hosts:\n  myalias: {address: 192.0.2.9, port: 22, user: root, key_file: /k/id}\n"},
    )
    h = inventory.load(inv_dir, ssh_config=ssh_config(tmp_path)).hosts["myalias"]
    assert (h.address, h.port, h.user, h.key_file) == ("192.0.2.9", 22, "root", "/k/id")


def test_ssh_config_beats_defaults_but_not_groups(tmp_path: Path) -> None:
    text = "defaults: {user: root, port: 22}\nhosts:\n  myalias: {}\n"
    h = inventory.load(write(tmp_path / "a", {"hosts.yml": text}), ssh_config=ssh_config(tmp_path))
    assert (h.hosts["myalias"].user, h.hosts["myalias"].port) == ("ubuntu", 2200)
    text = "groups:\n  g: {vars: {user: admin}, hosts: [myalias]}\nhosts:\n  myalias: {}\n"
    h = inventory.load(write(tmp_path / "b", {"hosts.yml": text}), ssh_config=ssh_config(tmp_path))
    assert (h.hosts["myalias"].user, h.hosts["myalias"].port) == ("admin", 2200)


def test_ssh_config_named_in_the_inventory_and_by_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ssh_config(tmp_path)
    inv_dir = write(tmp_path / "inv", {"hosts.yml": f"ssh_config: {config}\nhosts:\n  myalias: {{}}\n"})
    assert inventory.load(inv_dir).hosts["myalias"].address == "10.1.2.3"
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(config))
    inv_dir2 = write(tmp_path / "inv2", {"hosts.yml": "hosts:\n  myalias: {}\n"})
    assert inventory.load(inv_dir2).hosts["myalias"].port == 2200


def test_an_ssh_config_the_environment_names_with_a_tilde_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`GPUONBOARD_SSH_CONFIG='~/.ssh/gpu_config'` (quoted, so the shell left the `~`) names
    the file in the home folder, as OpenSSH's `-F ~/...` does (was: refused, "is not there")."""
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "gpu_config").write_text("Host myalias\n  HostName 10.1.2.3\n  Port 2200\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", "~/.ssh/gpu_config")
    inv_dir = write(tmp_path / "inv", {"hosts.yml": "hosts:\n  myalias: {}\n"})
    host = inventory.load(inv_dir).hosts["myalias"]
    assert (host.address, host.port) == ("10.1.2.3", 2200)


@pytest.mark.parametrize(("kind", "what"), [("missing", "not there"), ("directory", "a directory")])
def test_an_ssh_config_the_environment_names_that_is_no_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, what: str
) -> None:
    """A typo in $GPUONBOARD_SSH_CONFIG read no config at all: an Ansible host's address was
    dialled without the jump host, user and key its Host block gives (as `ssh -F FILE` never
    does: it refuses a FILE that is not there). /dev/null still means none."""
    named = tmp_path / "ssh-confg"
    if kind == "directory":
        named.mkdir()
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(named))
    inv_dir = write(tmp_path / "inv", {"hosts.ini": "[gpus]\ngpu1 ansible_host=10.0.1.15\n"})
    assert load_error(inv_dir / "hosts.ini") == (
        f"$GPUONBOARD_SSH_CONFIG names the SSH config {named}, which is {what}; fix the path, or name"
        " /dev/null to read no SSH config."
    )
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", "/dev/null")
    assert inventory.load(inv_dir / "hosts.ini").hosts["gpu1"].address == "10.0.1.15"


def test_wildcard_ssh_config_entry_is_no_address(tmp_path: Path) -> None:
    inv_dir = write(tmp_path / "inv", {"hosts.yml": "hosts:\n  other: {}\n"})
    assert load_error(inv_dir, ssh_config=ssh_config(tmp_path)) == (
        f"{inv_dir / 'hosts.yml'}, line 2: host 'other' has no 'address' and no Host entry in the SSH"
        " config; add address: <IP or DNS name>."
    )


# ---------------------------------------------------------------- YAML details


def test_merge_keys_may_override_without_a_duplicate_error(tmp_path: Path) -> None:
    inv = load_text(
        tmp_path,
        """\
        hosts:
          gpu-1: &a100 {address: 10.0.0.1, user: ubuntu, order: {gpu_count: 8}}
          gpu-2:
            <<: *a100
            address: 10.0.0.2
        """,
    )
    assert (inv.hosts["gpu-2"].address, inv.hosts["gpu-2"].user) == ("10.0.0.2", "ubuntu")
    assert inv.hosts["gpu-2"].order.gpu_count == 8


def test_a_real_duplicate_beside_a_merge_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"line 6: duplicate key 'address' \(first on line 5\)"):
        load_text(
            tmp_path,
            """\
            hosts:
              gpu-1: &a100 {address: 10.0.0.1}
              gpu-2:
                <<: *a100
                address: 10.0.0.2
                address: 10.0.0.3
            """,
        )


def test_missing_inventory_path(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="inventory not found; pass --inventory PATH"):
        inventory.load(tmp_path / "nope")
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(InventoryError, match="no hosts.yml in this inventory directory"):
        inventory.load(tmp_path / "emptydir")


# ---------------------------------------------------------------- shipped example


def test_shipped_example_inventory_loads() -> None:
    inv = inventory.load(REPO / "inventory")
    assert set(inv.hosts) == {"wuhan-bastion", "wuhan-a100-1", "wuhan-a100-2", "sh-4090-1"}
    h = inv.hosts["wuhan-a100-1"]
    assert h.vendor is not None and h.vendor.id == "wuhan-idc"
    assert h.jump == ("wuhan-bastion",)
    assert h.order.gpu_count == 8
    assert h.order.interconnect == "nvlink"
    assert h.order.data_disk == DataDiskSpec("/data", 7 * TB)
    assert h.host_key is not None and h.host_key.startswith("SHA256:")
    assert h.data_dir == "/data"
    sh = inv.hosts["sh-4090-1"]
    assert (sh.user, sh.port, sh.vendor_name) == ("ubuntu", 2222, "Shanghai GPU Cloud")  # vendor > defaults
    assert sh.order.gpu_count == 1 and sh.order.interconnect is None
    assert names(inv.select(group="wuhan", limit="!wuhan-bastion")) == ["wuhan-a100-1", "wuhan-a100-2"]


def test_a_vendor_may_offer_several_mirrors_tried_in_order(tmp_path: Path) -> None:
    """A vendor profile's `registry_mirror` may be a list (the container step tries each in
    turn); anything else in a list is an input error naming its line."""
    from gpuonboard.steps.container import ContainerStep

    inv_dir = write(
        tmp_path / "inv",
        {
            "hosts.yml": "vendors_dir: profiles\nhosts:\n  gpu-1: {address: 10.0.0.1, vendor: acme}\n",
            "profiles/acme.yml": "name: ACME\nregistry_mirror:\n  - https://a.acme.cn/\n  - b.acme.cn:5000\n",
        },
    )
    [host] = inventory.load(inv_dir).select([])
    assert host.vendor is not None and host.vendor.registry_mirror == ("https://a.acme.cn/", "b.acme.cn:5000")
    s = ContainerStep({}).settings(host.vars, host.vendor.registry_mirror)
    assert [x.source_name for x in s.sources()] == ["mirror a.acme.cn", "mirror b.acme.cn:5000"]
    (inv_dir / "profiles" / "acme.yml").write_text("name: ACME\nregistry_mirror: [a.acme.cn, 5]\n")
    with pytest.raises(InventoryError) as info:
        inventory.load(inv_dir)
    assert str(info.value).startswith(
        f"{(inv_dir / 'profiles' / 'acme.yml').resolve()}, line 2: vendor 'acme'"
    )
    assert "a mirror or a list of mirrors" in str(info.value)


# Inventory files as editors on other systems save them: a UTF-8 byte-order mark (Notepad),
# Windows line endings, Latin-1/GBK bytes, UTF-16 (PowerShell's `>`), in YAML and in Ansible INI;
# and an INI vars line without '=' whose value (a password) must not be echoed in the error.

BOM = b"\xef\xbb\xbf"
CLI = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"


@pytest.mark.parametrize("name", ["hosts.ini", "hosts"])
def test_an_ini_inventory_with_a_byte_order_mark_and_crlf_loads(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(BOM + b"[gpus]\r\ngpu-[1:2] ansible_host=10.0.0.1 ansible_user=ubuntu\r\n")
    inv = inventory.load(path)
    assert list(inv.hosts) == ["gpu-1", "gpu-2"]
    assert inv.groups == {"gpus": ("gpu-1", "gpu-2")}
    assert (inv.hosts["gpu-1"].address, inv.hosts["gpu-1"].user) == ("10.0.0.1", "ubuntu")


def test_a_yaml_inventory_with_a_byte_order_mark_and_crlf_loads(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_bytes(BOM + b"hosts:\r\n  h1: {address: 10.0.0.1, user: ubuntu}\r\n")
    assert inventory.load(path).hosts["h1"].user == "ubuntu"


@pytest.mark.parametrize("name", ["hosts.ini", "hosts", "hosts.yml"])
def test_latin1_bytes_name_the_line_and_what_to_do(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    text = b"[gpus]\ngpu1 ansible_host=10.0.0.1 note=caf\xe9\n"
    if name.endswith(".yml"):
        text = b"hosts:\n  gpu1: {address: 10.0.0.1, vars: {note: caf\xe9}}\n"
    path.write_bytes(text)
    assert load_error(path) == (
        f"{path}, line 2: byte 0xe9 is not UTF-8 text (a file saved in another encoding, such as"
        " Latin-1 or GBK?); save the inventory file as UTF-8."
    )


def test_non_utf8_ini_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """It was exit 70, `internal error (UnicodeDecodeError ...)`."""
    path = tmp_path / "hosts.ini"
    path.write_bytes(b"[gpus]\ngpu1 ansible_host=10.0.0.1 note=caf\xe9\n")
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "inventory", "--inventory", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "GPUONBOARD_SSH_CONFIG": "/dev/null", "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "line 2: byte 0xe9 is not UTF-8 text" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_utf16_file_says_to_save_it_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_bytes("hosts:\n  h1: {address: 10.0.0.1}\n".encode("utf-16"))
    assert load_error(path) == (
        f"{path}: the inventory file is UTF-16 text (as Windows PowerShell's `>` writes it);"
        " save it as UTF-8."
    )


def test_an_ini_vars_line_without_equals_does_not_echo_its_secret(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[gpus]\ngpu1 ansible_host=10.0.0.1\n[gpus:vars]\nansible_become_password: hunter2-secret\n"
    )
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert "hunter2" not in str(info.value)
    assert str(info.value) == (
        f"{path}, line 4: a line in [gpus:vars] must be written name=value (this one, starting"
        " 'ansible_become_password', has no '='); fix that line."
    )


# An order of `vram: 0GB`, `ram: 0TB` or a data disk of `min_size: 0TB` checked nothing (the box
# passed whatever it held): it is an input error naming the file, line and field.


@pytest.mark.parametrize(
    ("order", "field"),
    [
        ("{vram: 0GB}", "order field 'vram' is '0GB'"),
        ("{ram: 0TB}", "order field 'ram' is '0TB'"),
        ("{data_disk: {mount: /data, min_size: 0TB}}", "order data_disk field 'min_size' is '0TB'"),
    ],
)
def test_a_size_of_zero_is_refused(tmp_path: Path, order: str, field: str) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text(f"hosts:\n  gpu-1:\n    address: 10.0.0.7\n    order: {order}\n")
    with pytest.raises(InventoryError) as exc:
        inventory.load(f)
    assert str(exc.value) == (
        f"{f}, line 4: host 'gpu-1' {field}, which checks nothing; give the size ordered, or remove the line."
    )


def test_real_sizes_still_load(tmp_path: Path) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text(
        "hosts:\n  gpu-1:\n    address: 10.0.0.7\n"
        "    order: {vram: 80GB, ram: 1TB, data_disk: {mount: /data, min_size: 7TB}}\n"
    )
    order = inventory.load(f).hosts["gpu-1"].order
    assert order.vram_bytes == 80 * 2**30 and order.ram_bytes == 1024**4
    assert order.data_disk is not None and order.data_disk.min_size_bytes == 7 * 10**12


def test_a_data_disk_shorthand_merges_with_a_mapping_in_another_layer(tmp_path: Path) -> None:
    """A group's `data_disk: /data` with the host's `data_disk: {min_size: 7TB}` was replaced whole
    ("'mount' must be an absolute path"); the shorthand is `{mount: /data}`, merged key by key."""
    f = tmp_path / "hosts.yml"
    f.write_text(
        "groups:\n  g:\n    vars: {order: {data_disk: /data}}\n    hosts: [gpu-1, gpu-2]\n"
        "hosts:\n  gpu-1:\n    address: 10.0.0.7\n    order: {data_disk: {min_size: 7TB}}\n"
        "  gpu-2:\n    address: 10.0.0.8\n    order: {data_disk: /nvme}\n"
    )
    hosts = inventory.load(f).hosts
    one, two = hosts["gpu-1"].order.data_disk, hosts["gpu-2"].order.data_disk
    assert one is not None and (one.mount, one.min_size_bytes) == ("/data", 7 * 10**12)
    assert two is not None and (two.mount, two.min_size_bytes) == ("/nvme", None)


# A `key_file` that is not there is an input error (exit 2) raised before any connection, in one
# sentence naming the inventory file and line, the host, the field and the missing path; it was
# reported per host as unreachable (exit 3) after connecting.

ADVICE = "fix the path, or remove key_file to log in with the SSH agent and the default keys."


def _write(tmp_path: Path, text: str) -> Path:
    inv = tmp_path / "inv"
    inv.mkdir(exist_ok=True)
    (inv / "hosts.yml").write_text(textwrap.dedent(text))
    return inv


def test_a_missing_key_file_of_a_selected_host_is_an_input_error(tmp_path: Path) -> None:
    inv_dir = _write(
        tmp_path,
        """\
        hosts:
          ok: {address: 10.0.0.1}
          g:
            address: 10.0.0.2
            key_file: keys/nope
        """,
    )
    inv = inventory.load(inv_dir)  # loading, listing and selecting need no key
    inv.check_key_files(inv.select(["ok"]))
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.select())
    missing = inv_dir / "keys" / "nope"
    assert str(err.value) == (
        f"{inv_dir / 'hosts.yml'}, line 5: host 'g' field 'key_file' names {missing}, which does not exist; "
        + ADVICE
    )
    assert err.value.exit_code == ExitCode.USAGE == 2


def test_a_key_file_set_by_a_group_or_on_a_jump_host_names_where_it_was_set(tmp_path: Path) -> None:
    inv_dir = _write(
        tmp_path,
        """\
        groups:
          rack:
            vars: {key_file: /nonexistent/rack_key}
            hosts: [bastion]
        hosts:
          bastion: {address: 10.0.0.1}
          gpu: {address: 10.0.0.2, jump: bastion}
        """,
    )
    (tmp_path / "dir_key").mkdir()
    inv = inventory.load(inv_dir)
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.select(["gpu"]))
    assert str(err.value) == (
        f"{inv_dir / 'hosts.yml'}, line 3: group 'rack' (for host 'bastion') field 'key_file' names"
        " /nonexistent/rack_key, which does not exist; " + ADVICE
    )
    (inv_dir / "hosts.yml").write_text(
        f"hosts:\n  g: {{address: 10.0.0.2, key_file: {tmp_path / 'dir_key'}}}\n"
    )
    inv = inventory.load(inv_dir)
    with pytest.raises(InventoryError, match="which is not a file; fix the path"):
        inv.check_key_files(inv.select(["g"]))


def test_a_missing_identity_file_from_the_ssh_config_names_that_file(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host alias\n    HostName 10.1.2.3\n    IdentityFile {tmp_path}/keys/id_alias\n")
    inv_dir = _write(tmp_path, "hosts:\n  alias: {}\n")
    inv = inventory.load(inv_dir, ssh_config=cfg)
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.select(["alias"]))
    assert str(err.value) == (
        f"{cfg}: host 'alias' of the inventory {inv_dir / 'hosts.yml'} takes its key from this SSH config's"
        f" IdentityFile {tmp_path}/keys/id_alias, which does not exist; fix that path, or set key_file for"
        " the host in the inventory."
    )


def test_the_cli_exits_2_before_connecting_to_anything(tmp_path: Path) -> None:
    """The host listens on loopback: nothing may connect to it, and the exit is 2, not 3.
    (Needs api.load_hosts to call `inv.check_key_files(hosts)` after selecting.)"""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        inv_dir = _write(
            tmp_path,
            f"""\
            hosts:
              box: {{address: 127.0.0.1, port: {port}, key_file: {tmp_path}/gone, connect_timeout: 2}}
            """,
        )
        r = subprocess.run(
            [sys.executable, "-c", "from gpuonboard.cli import main; main()", "check"]
            + ["--inventory", str(inv_dir), "--connect-retries", "0"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(tmp_path),
                "GPUONBOARD_SSH_CONFIG": "/dev/null",
            },
        )
        with pytest.raises(TimeoutError):
            server.accept()[0].close()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip() == (
        f"error: {inv_dir / 'hosts.yml'}, line 2: host 'box' field 'key_file' names {tmp_path}/gone,"
        " which does not exist; " + ADVICE
    )
    assert not (tmp_path / "reports").exists()


# Review of this session's changes: a host that is a hop in its own flattened chain, a jump
# host's own literal hop (it would take the target's key), an unreadable inventory directory,
# `mark_stale` given names from the host that lead out of the copy, the tag target of a
# `registry-1.docker.io/...` reference, a YAML file mode.


def _error(tmp_path: Path, hosts: str) -> str:
    (tmp_path / "hosts.yml").write_text(hosts)
    with pytest.raises(InventoryError) as exc:
        inventory.load(tmp_path / "hosts.yml")
    return str(exc.value)


def test_a_host_in_its_own_flattened_chain_is_a_loop(tmp_path: Path) -> None:
    msg = _error(
        tmp_path,
        "hosts:\n  a: {address: 10.0.0.1, jump: b}\n  b: {address: 10.0.0.2, jump: [c, a]}\n"
        "  c: {address: 10.0.0.3}\n",
    )
    assert "makes a loop of jump hosts (c -> a -> b -> a)" in msg, msg


def test_a_jump_hosts_own_literal_hop_is_refused_not_given_the_targets_key(tmp_path: Path) -> None:
    msg = _error(
        tmp_path,
        "hosts:\n  bastion: {address: 10.0.0.2, jump: 'ops@198.51.100.9:2200'}\n"
        "  inner: {address: 10.0.0.3, jump: bastion}\n",
    )
    assert msg.endswith(
        "host 'inner' jumps through 'bastion', whose own jump 'ops@198.51.100.9:2200' is not an inventory"
        " host, so it would be reached with 'inner''s key and user; add 'ops@198.51.100.9:2200' as an"
        " inventory host (with its address, user and key_file) and name it in 'bastion''s jump."
    ), msg
    # the bastion alone still jumps through it (it gets the bastion's own key there)
    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  bastion: {address: 10.0.0.2, jump: 'ops@198.51.100.9:2200'}\n"
    )
    assert inventory.load(tmp_path / "hosts.yml").hosts["bastion"].jump == ("ops@198.51.100.9:2200",)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_inventory_directory_is_one_sentence(tmp_path: Path) -> None:
    d = tmp_path / "inv"
    d.mkdir()
    (d / "hosts.yml").write_text("hosts: {}\n")
    d.chmod(0o111)
    try:
        with pytest.raises(InventoryError, match="cannot read this inventory directory"):
            inventory.load(d)
    finally:
        d.chmod(0o755)


def test_mark_stale_never_touches_a_file_outside_the_copy(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    (dest / "sub").mkdir(parents=True)
    victim, inside = tmp_path / "victim", dest / "sub" / "a.txt"
    victim.write_text("x")
    inside.write_text("y")
    (dest / "out").symlink_to(tmp_path)  # a dir link in the copy leading out of it
    for p in (victim, inside):
        os.utime(p, (1000, 1000))
    names = ["../victim", str(victim), "out/victim", "sub/a.txt"]
    listing = [f"f 1 5000 ./{n}" for n in names]
    mark_stale(dest, names, listing)
    assert victim.stat().st_mtime == 1000  # not through `..`, an absolute path or a link
    assert inside.stat().st_mtime == 4999  # the copy's own file: one second off the host's


@pytest.mark.parametrize(
    ("image", "target"),
    [
        ("registry-1.docker.io/library/ubuntu:22.04", "registry-1.docker.io/library/ubuntu:22.04"),
        ("index.docker.io/library/ubuntu:22.04", "index.docker.io/library/ubuntu:22.04"),
        ("docker.io/ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        ("ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
    ],
)
def test_the_tag_target_is_a_name_the_probe_finds(image: str, target: str) -> None:
    assert parse_ref(image).tag_target == target


def test_a_yaml_file_mode_is_told_to_be_quoted() -> None:
    with pytest.raises(InventoryError) as exc:
        parse_yaml("mode: 0644", Path("p.yml"), InventoryError)
    assert 'quote it ("0644") where it is meant as written (a file mode, a time)' in str(exc.value)


def test_invokes_dry_flag_is_refused_by_monitor_too(tmp_path: Path) -> None:
    import subprocess
    import sys

    cli = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-c", cli, "--dry", "monitor", "--host", "nope"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--dry (-R) is Invoke's own flag" in r.stderr, r.stderr


def test_a_data_dir_in_a_system_directory_of_the_host_is_refused_at_load(tmp_path: Path) -> None:
    """A data_dir under /usr or /etc (a host's or a vendor profile's) loaded, and every upload
    then merged into that system tree; it is refused where it is written now, as `/` was."""
    root = write(
        tmp_path / "a",
        {"hosts.yml": "hosts:\n  a:\n    address: 10.0.0.1\n    data_dir: /usr/share/corpora\n"},
    )
    with pytest.raises(InventoryError) as caught:
        inventory.load(root)
    assert str(caught.value) == (
        f"{root}/hosts.yml, line 4: host 'a' field 'data_dir' must be a data directory like /data, not"
        " one in the host's system directory /usr (uploads would merge into what is there, and teardown"
        " never cleans it): '/usr/share/corpora'."
    )
    root = write(
        tmp_path / "b",
        {
            "hosts.yml": "hosts:\n  a: {address: 10.0.0.1, vendor: v}\n",
            "vendors/v.yml": "name: v\ndata_dir: //etc/\n",
        },
    )
    with pytest.raises(InventoryError, match=r"vendors/v.yml, line 2: vendor 'v' 'data_dir' must be a data"):
        inventory.load(root)
    for fine in ("/data", "/dev/shm/data", "/srv/etc", "/scratch/usr"):
        root = write(
            tmp_path / fine.replace("/", "_"),
            {"hosts.yml": f"hosts:\n  a: {{address: 10.0.0.1, data_dir: {fine}}}\n"},
        )
        assert inventory.load(root).hosts["a"].data_dir == fine


ANSIBLE_CORPUS = REPO / "tests" / "fixtures" / "ansible"
ANSIBLE_INVENTORY_EXE = Path(sys.executable).with_name("ansible-inventory")


def _deepops_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str | None = None) -> Path:
    """DeepOps' real ansible.cfg (`inventory = ./config/inventory`) at a project's top, its real
    config.example inventory (uncommented, with its group_vars/host_vars) in config/, no
    ./inventory; the current directory, the project."""
    import shutil

    for name in ("ANSIBLE_CONFIG", "ANSIBLE_INVENTORY"):
        monkeypatch.delenv(name, raising=False)
    tmp_path.chmod(0o755)
    text = (ANSIBLE_CORPUS / "deepops-ansible.cfg").read_text()
    (tmp_path / "ansible.cfg").write_text(text if cfg is None else text.replace("./config/inventory", cfg))
    shutil.copytree(ANSIBLE_CORPUS / "deepops-uncommented", tmp_path / "config")
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.skipif(not ANSIBLE_INVENTORY_EXE.exists(), reason="ansible-core is not installed")
def test_with_no_inventory_folder_the_ansible_configs_inventory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DeepOps checkout (real ansible.cfg and inventory, no ./inventory): `ansible-inventory
    --list` with no `-i` reads ./config/inventory, the config's `inventory`, from the config's
    folder; so does gpuonboard with no --inventory now (was: "inventory not found")."""
    import json

    project = _deepops_checkout(tmp_path, monkeypatch)
    done = subprocess.run(
        [str(ANSIBLE_INVENTORY_EXE), "--list"], capture_output=True, text=True, timeout=120, cwd=project
    )
    theirs = set(json.loads(done.stdout)["_meta"]["hostvars"])
    path = locate(project, "inventory")
    assert path == project / "config" / "inventory"
    assert set(inventory.load(path).hosts) == theirs and theirs


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        ("./config/inventory, ./config/other", "names 2 inventories"),
        ("./config/missing", "config/missing, does not exist"),
    ],
)
def test_an_ansible_config_inventory_gpuonboard_cannot_read_alone_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, words: str
) -> None:
    """DeepOps' ansible.cfg with its `inventory` edited to name two sources (Ansible reads both)
    or a missing one: one sentence naming ansible.cfg's line 4 and what to pass."""
    project = _deepops_checkout(tmp_path, monkeypatch, cfg)
    with pytest.raises(InventoryError, match=rf"ansible.cfg, line 4: .*{words}.*--inventory"):
        locate(project, "inventory")


def test_an_inventory_folder_beside_an_ansible_configs_other_inventory_is_refused_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepOps' real ansible.cfg (`inventory = ./config/inventory`, line 4) with a ./inventory
    folder added: the config is the user's explicit choice and gpuonboard's ./inventory only a
    default, so with no --inventory one sentence names both and what to pass (./inventory had
    silently won: other hosts than `ansible-playbook` reaches); a given --inventory is read."""
    project = _deepops_checkout(tmp_path, monkeypatch)
    (project / "inventory").mkdir()
    with pytest.raises(
        InventoryError,
        match=re.escape(
            f"{project}/ansible.cfg, line 4: the Ansible config names the inventory"
            f" {project}/config/inventory while gpuonboard's default inventory {project}/inventory"
            f" exists too; pass --inventory ./inventory or --inventory {project}/config/inventory"
            " to say which one to read."
        ),
    ):
        locate(project, "inventory")
    assert locate(project, "./inventory") == project / "inventory"
    assert locate(project, "config/inventory") == project / "config" / "inventory"


def test_an_inventory_folder_beats_a_user_wide_ansible_configs_inventory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepOps' real ansible.cfg moved to the user's ~/.ansible.cfg (its `inventory` made
    absolute: the edit), a project with its own ./inventory and no ansible.cfg: a config every
    project shares is no choice of this project, so ./inventory is read (it was refused, naming
    both), the config not even parsed (a duplicate option, two inventories: review VV); an empty
    or missing ANSIBLE_CONFIG chooses nothing (Ansible reads ~/.ansible.cfg); the same file
    chosen by ANSIBLE_CONFIG is the user's choice, refused beside ./inventory."""
    (tmp_path / "p").mkdir()
    project = _deepops_checkout(tmp_path / "p", monkeypatch)
    home = tmp_path / "home"
    home.mkdir()
    text = (project / "ansible.cfg").read_text().replace("./config/inventory", f"{project}/config/inventory")
    (home / ".ansible.cfg").write_text(text)
    (project / "ansible.cfg").unlink()
    (project / "inventory").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert locate(project, "inventory") == project / "inventory"
    for chose_nothing in ("", str(tmp_path / "missing.cfg")):  # (Ansible reads ~/.ansible.cfg)
        monkeypatch.setenv("ANSIBLE_CONFIG", chose_nothing)
        assert locate(project, "inventory") == project / "inventory"
    for unread in ("[defaults]\nforks = 10\nforks = 20\n", "[defaults]\ninventory = /a/hosts, /a\n"):
        monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
        (home / ".ansible.cfg").write_text(unread)  # (one Ansible refuses; one naming two: not read)
        assert locate(project, "inventory") == project / "inventory"
    (home / ".ansible.cfg").write_text(text)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(home / ".ansible.cfg"))
    with pytest.raises(InventoryError, match="exists too; pass --inventory ./inventory"):
        locate(project, "inventory")


@pytest.mark.parametrize("cfg", ["./inventory", "inventory/hosts.yml"])
def test_an_ansible_config_naming_the_inventory_folder_or_a_file_in_it_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str
) -> None:
    """DeepOps' real ansible.cfg with its `inventory` edited to name ./inventory or a file in it:
    no conflict, and the config's (more precise) source is read."""
    project = _deepops_checkout(tmp_path, monkeypatch, cfg)
    (project / "inventory").mkdir()
    (project / "inventory" / "hosts.yml").write_text("hosts:\n  a: {address: 10.0.0.1}\n")
    assert locate(project, "inventory") == project / cfg


@pytest.mark.skipif(not ANSIBLE_INVENTORY_EXE.exists(), reason="ansible-core is not installed")
def test_an_ini_groups_file_beside_the_hosts_file_is_named_as_ansible_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """StackHPC's Slurm appliance lays an inventory directory out as `hosts` plus `groups` (its
    real environments/common/inventory/groups: empty groups and their children, `compute` under
    `openhpc`); here beside a `hosts` with one compute node and a group_vars/openhpc.yml giving
    `ansible_user: rocky` (the edits). Ansible reads both files: gpu1 is in openhpc and logs in as
    rocky; gpuonboard read only `hosts` and logged in as root, without a word. Now one sentence
    names `groups` and what to pass; `ansible-inventory:DIR` then reads what Ansible reads."""
    import json
    import shutil

    inv = tmp_path / "inventory"
    (inv / "group_vars").mkdir(parents=True)
    shutil.copy(ANSIBLE_CORPUS / "slurm-appliance-groups" / "groups", inv / "groups")
    (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    (inv / "group_vars" / "openhpc.yml").write_text("ansible_user: rocky\n")
    (tmp_path / "ssh_config").write_text("")
    done = subprocess.run(
        [str(ANSIBLE_INVENTORY_EXE), "-i", str(inv), "--list"], capture_output=True, text=True, timeout=120
    )
    assert json.loads(done.stdout)["_meta"]["hostvars"]["gpu1"]["ansible_user"] == "rocky"
    with pytest.raises(InventoryError) as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    assert str(err.value) == (
        f"{inv / 'groups'}: Ansible reads this file too, an INI inventory of the directory (its hosts,"
        " groups, their children and vars), while gpuonboard reads only hosts; move what it defines into"
        f" hosts, or pass --inventory ansible-inventory:{inv} to read the directory as Ansible does."
    )
    monkeypatch.chdir(tmp_path)
    listed = inventory.load(f"ansible-inventory:{inv}", ssh_config=tmp_path / "ssh_config")
    assert listed.hosts["gpu1"].user == "rocky"


def test_a_readme_beside_the_hosts_file_changes_nothing(tmp_path: Path) -> None:
    """Files Ansible skips (`README.md`, `ansible.cfg`) or that hold no [section] (a README
    without suffix) are no second inventory source."""
    (tmp_path / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    (tmp_path / "README.md").write_text("[compute]\n")
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    (tmp_path / "README").write_text("The hosts of rack 3.\n[compute] holds the GPU nodes.\n")
    (tmp_path / "ssh_config").write_text("")
    assert list(inventory.load(tmp_path, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]


def _ansible_export(source: Path) -> dict[str, object]:
    """What `ansible-inventory -i SOURCE --list --export` reads: its hosts' vars and each group
    that holds anything (hosts, children or vars; an empty group, only named as a child, is
    nothing)."""
    import json

    done = subprocess.run(
        [str(ANSIBLE_INVENTORY_EXE), "-i", str(source), "--list", "--export"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(done.stdout)
    named = {c for d in data.values() for c in d.get("children", ())} | set(data) - {"_meta"}
    empty = {g for g in named if not any(data.get(g, {}).get(k) for k in ("hosts", "vars", "children"))}
    return {
        g: {k: sorted(set(v) - empty) if isinstance(v, list) else v for k, v in d.items()}
        for g, d in data.items()
        if g not in empty
    }


K3S_SAMPLE = ANSIBLE_CORPUS / "k3s-sample" / "inventory-sample.yml"
# an inventory script as Ansible's script plugin runs it (`--list`: JSON of groups and hostvars)
SCRIPT = (
    "#!/bin/sh\n"
    'echo \'{"gpus": {"hosts": ["gpu2"]}, "_meta": {"hostvars": {"gpu2": {"ansible_host": "10.0.0.2"}}}}\'\n'
)

# layouts beside `hosts` ([compute] gpu1): the sibling files (a str: its text; ("link", NAME): a
# symbolic link to NAME; a Path: a copy of that real file), and whether Ansible reads more
SIBLINGS: dict[str, tuple[dict[str, object], bool]] = {
    "a link to the hosts file": ({"current": ("link", "hosts")}, False),
    "the hosts file a link": (
        {"prod": "[compute]\ngpu1 ansible_host=10.0.0.1\n", "hosts": ("link", "prod")},
        False,
    ),
    "deepops' ansible.cfg as an example": (
        {"ansible.cfg.example": ANSIBLE_CORPUS / "deepops-ansible.cfg"},
        False,
    ),
    "kubespray's ansible.cfg as an example": (
        {"ansible.cfg.example": ANSIBLE_CORPUS / "kubespray-ansible.cfg"},
        True,
    ),
    "a pyproject.toml": ({"pyproject.toml": REPO / "pyproject.toml"}, False),
    "a TOML inventory": ({"more.toml": '[gpu.hosts.gpu2]\nansible_host = "10.0.0.2"\n'}, True),
    "an ungrouped host first": ({"extra": "gpu2 ansible_host=10.0.0.2\n[spare]\n"}, True),
    "children of a group in hosts": ({"site": "[cluster:children]\ncompute\n"}, True),
    "a vault-encrypted file, no vault password": (
        {"secrets": ANSIBLE_CORPUS / "cdh-vault-file" / "group_vars" / "gpus" / "vault.yml"},
        False,
    ),
    "a JSON inventory": ({"k3s.json": ("json", K3S_SAMPLE)}, True),
    "a YAML inventory without extension": ({"k3s": K3S_SAMPLE}, True),
    "a YAML inventory in a subfolder": ({"prod/hosts.yml": K3S_SAMPLE}, True),
    "an INI inventory in a subfolder": ({"prod/hosts": "[compute:vars]\nansible_user=ops\n"}, True),
    "an inventory script": ({"cloud.py": ("exec", SCRIPT)}, True),
    "an executable INI file without #!": ({"extra": ("exec", "gpu2 ansible_host=10.0.0.2\n")}, True),
    "an executable README without #!": ({"README": ("exec", "The hosts of rack 3.\n")}, False),
    "our vendor profiles in a subfolder": (
        {f"vendors/{p.name}": p for p in sorted((REPO / "inventory" / "vendors").iterdir())},
        False,
    ),
    "a subfolder's group_vars": ({"prod/group_vars/all.yml": "ansible_user: ops\n"}, False),
    "a YAML group with a list of hosts (refused by Ansible)": (
        {"more.json": '{"gpus": {"hosts": ["gpu2"]}}\n'},
        False,
    ),
}


@pytest.mark.skipif(not ANSIBLE_INVENTORY_EXE.exists(), reason="ansible-core is not installed")
@pytest.mark.parametrize("layout", list(SIBLINGS))
def test_a_file_beside_the_hosts_file_is_named_exactly_when_ansible_reads_something_from_it(
    tmp_path: Path, layout: str
) -> None:
    """Ansible tries each file of an inventory directory with its plugins (ini line by line,
    keeping what it added before a line it fails on; toml for .toml). Real files beside a
    `hosts`: DeepOps' ansible.cfg as `ansible.cfg.example` (an empty [defaults] group, then a
    failed line: nothing) was refused, kubespray's (`pipelining=True`, a host) is named; this
    repository's pyproject.toml (empty groups) was refused; links to the hosts file were refused
    as a second source; a file whose first line is a host was ignored. Ansible's yaml plugin reads
    a `.json` file and one without extension (k3s-ansible's real sample written as JSON, or copied
    as `k3s`), Ansible reads a subfolder's files (the sample as `prod/hosts.yml`) and runs an
    executable file starting with #!: gpuonboard read none of them, and dropped their hosts
    without a word. The oracle decides."""
    import json
    import shutil

    inv = tmp_path / "inventory"
    inv.mkdir()
    files, reads_more = SIBLINGS[layout]
    if "hosts" not in files:
        (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    for name, what in files.items():
        (inv / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, Path):
            shutil.copy(what, inv / name)
        elif isinstance(what, tuple) and what[0] == "link":
            (inv / name).symlink_to(str(what[1]))
        elif isinstance(what, tuple) and what[0] == "json":  # (the YAML file written as JSON)
            (inv / name).write_text(
                json.dumps(parse_yaml(Path(what[1]).read_text(), inv / name, InventoryError))
            )
        elif isinstance(what, tuple):  # ("exec", TEXT): an executable file
            (inv / name).write_text(str(what[1]))
            (inv / name).chmod(0o755)
        else:
            (inv / name).write_text(str(what))
    assert (_ansible_export(inv) != _ansible_export(inv / "hosts")) is reads_more
    (tmp_path / "ssh_config").write_text("")
    if not reads_more:
        assert list(inventory.load(inv, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]
        return
    with pytest.raises(InventoryError, match=r"Ansible reads this file too") as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    assert str(err.value).startswith(f"{inv / next(iter(files))}: ")


def test_an_inventory_script_beside_the_hosts_file_or_as_it_is_never_run_and_named(tmp_path: Path) -> None:
    """An executable file starting with #! in an Ansible inventory directory is run by Ansible's
    script plugin (`ansible-inventory -i DIR` lists the hosts it prints, the test above): beside
    `hosts` it was read as INI text (its hosts dropped), and as the hosts file itself it was
    refused with a sentence about its `echo` line. Each now names the file and the form that reads
    it as Ansible does; the script is never run (it would write `ran` here)."""
    (tmp_path / "ssh_config").write_text("")
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    script = inv / "cloud.py"
    script.write_text(SCRIPT.replace("echo", f"touch {tmp_path / 'ran'}; echo"))
    script.chmod(0o755)
    with pytest.raises(InventoryError) as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    assert str(err.value) == (
        f"{script}: Ansible reads this file too, an inventory script Ansible runs (an executable file"
        " starting with #!), while gpuonboard reads only hosts and never runs a script; pass --inventory"
        f" ansible-inventory:{inv} to read the directory as Ansible does, or move the script out of the"
        " directory."
    )
    (inv / "hosts").unlink()
    script.rename(inv / "hosts")
    for given in (inv, inv / "hosts"):
        with pytest.raises(InventoryError) as err:
            inventory.load(given, ssh_config=tmp_path / "ssh_config")
        assert str(err.value) == (
            f"{inv / 'hosts'}: this inventory is an executable script (it starts with #!), which Ansible"
            " runs to list its hosts while gpuonboard never runs one; pass --inventory"
            f" ansible-inventory:{inv / 'hosts'} to read what Ansible reads from it."
        )
    assert not (tmp_path / "ran").exists()


def test_a_directory_without_a_hosts_file_names_the_inventory_it_holds(tmp_path: Path) -> None:
    """Kubespray's real sample directory (`inventory/sample/`: inventory.ini and group_vars/), as
    its README has one copy it and pass the folder: "no hosts.yml in this inventory directory;
    create one", as if nothing were there. Now the file it holds and the two forms that read it
    are named."""
    import shutil

    sample = tmp_path / "sample"
    shutil.copytree(ANSIBLE_CORPUS / "kubespray-sample", sample)
    with pytest.raises(InventoryError) as err:
        inventory.load(sample)
    assert str(err.value) == (
        f"{sample}: no hosts file (hosts.yml, hosts.yaml, hosts.ini or hosts) in this inventory"
        f" directory, which holds inventory.ini; pass --inventory {sample / 'inventory.ini'} to read"
        f" that file, or --inventory ansible-inventory:{sample} to read the directory as Ansible does."
    )
    # one level up (`-i inventory` over kubespray's inventory/mycluster/): Ansible reads the subfolder
    with pytest.raises(InventoryError) as err:
        inventory.load(tmp_path)
    assert str(err.value).startswith(
        f"{tmp_path}: no hosts file (hosts.yml, hosts.yaml, hosts.ini or hosts) in this inventory"
        f" directory, which holds sample/inventory.ini; pass --inventory {sample / 'inventory.ini'} "
    )


@pytest.mark.skipif(not ANSIBLE_INVENTORY_EXE.exists(), reason="ansible-core is not installed")
def test_a_saved_ansible_inventory_listing_is_named_as_one(tmp_path: Path) -> None:
    """`ansible-inventory -i kubespray-sample --list > inventory.json` (the real sample's listing,
    made here by the oracle) given as the inventory: Ansible's yaml plugin fails on it (`children`
    is a list) and its ini plugin reads one host named `{`; gpuonboard said "Ansible group 'all'
    'children' must be a mapping". Now one sentence says what the file is and what to pass."""
    listed = tmp_path / "inventory.json"
    done = subprocess.run(
        [str(ANSIBLE_INVENTORY_EXE), "-i", str(ANSIBLE_CORPUS / "kubespray-sample"), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    listed.write_text(done.stdout)
    with pytest.raises(InventoryError) as err:
        inventory.load(listed)
    assert str(err.value) == (
        f"{listed}: this is what `ansible-inventory --list` prints (its _meta.hostvars), which Ansible"
        " does not read back as an inventory; pass --inventory ansible-inventory:SOURCE with the"
        " inventory it was listed from, or that inventory itself."
    )


def test_an_ansible_host_list_as_the_inventory_points_to_the_form_that_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-i 10.0.0.1,10.0.0.2,` is how Ansible's docs run ad hoc commands without an inventory
    file (its host_list plugin); given to gpuonboard it said only "inventory not found; pass
    --inventory PATH". The sentence now names the form that reads such a list."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InventoryError) as err:
        inventory.load("10.0.0.1,10.0.0.2,")
    assert str(err.value) == (
        "10.0.0.1,10.0.0.2,: inventory not found; a comma-separated host list, as Ansible's -i takes"
        " it, is read with --inventory ansible-inventory:10.0.0.1,10.0.0.2, (or write the hosts into an"
        " inventory file)."
    )


def test_an_inventory_plugins_configuration_is_named_as_one(tmp_path: Path) -> None:
    """An `aws_ec2.yml` as amazon.aws documents it (`plugin: amazon.aws.aws_ec2`, its regions and
    keyed_groups): Ansible's auto plugin runs that plugin, which lists the cloud's hosts. Given as
    the inventory it was refused as our format ("unknown key 'plugin'; allowed keys: defaults,
    groups, ..."); beside `hosts` it was refused advising `--inventory aws_ec2.yml`, which then
    failed so. Both now name the plugin and point to `ansible-inventory:`, which runs it."""
    inv = tmp_path / "inventory"
    inv.mkdir()
    config = inv / "aws_ec2.yml"
    config.write_text(
        "plugin: amazon.aws.aws_ec2\nregions:\n  - us-east-1\nkeyed_groups:\n  - key: tags.Role\n"
        "    prefix: role\n"
    )
    with pytest.raises(InventoryError) as err:
        inventory.load(config)
    assert str(err.value) == (
        f"{config}: this file configures Ansible's inventory plugin amazon.aws.aws_ec2, which Ansible"
        " runs to list the hosts (from a cloud's API or another source) while gpuonboard never runs a"
        f" plugin; pass --inventory ansible-inventory:{config} to read the hosts it lists."
    )
    (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    with pytest.raises(InventoryError) as err:
        inventory.load(inv)
    assert str(err.value) == (
        f"{config}: this file configures Ansible's inventory plugin amazon.aws.aws_ec2, which Ansible"
        " runs to list hosts beside those of hosts while gpuonboard reads only hosts and never runs a"
        f" plugin; pass --inventory ansible-inventory:{inv} to read the directory as Ansible does."
    )


@pytest.mark.parametrize(
    ("text", "plugin"),
    [
        ('"plu\\x67in": amazon.aws.aws_ec2\nregions: [us-east-1]\n', "amazon.aws.aws_ec2"),  # an escape
        ("? plugin\n: netbox.netbox.nb_inventory\n", "netbox.netbox.nb_inventory"),
        ("x: &p plugin\n*p : community.general.proxmox\n", "community.general.proxmox"),  # an alias
        ("hosts:\n  gpu-1: {address: 10.0.0.1}\n", None),
        ("plugins: x\n", None),
    ],
)
def test_the_plugin_a_yaml_file_names_is_read_however_its_key_is_written(
    text: str, plugin: str | None
) -> None:
    """An inventory plugin's key read as YAML reads it (plain, `? ` explicit, escaped in quotes, an alias),
    whether or not the text holds the word `plugin` as written."""
    assert ansible_dir.plugin_named(text) == plugin


def test_a_yaml_inventory_without_a_plugin_key_is_parsed_once(tmp_path: Path) -> None:
    """A check's YAML inventory was parsed twice by PyYAML's Python parser, the second time (its
    nodes: 9 ms of a 50-host inventory's load) only to look for a `plugin:` key; a text that cannot
    hold one (no `plugin` in it, no escape) is not parsed again."""
    hosts = "".join(f"  gpu-{i:02d}: {{address: 10.0.0.{i}, port: 22}}\n" for i in range(1, 51))
    (tmp_path / "hosts.yml").write_text(f"defaults: {{user: root}}\nhosts:\n{hosts}")
    composed = 0

    def count(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal composed
        composed += event == "call" and frame.f_code is yaml.composer.Composer.compose_document.__code__

    sys.setprofile(count)
    try:
        inv = inventory.load(tmp_path / "hosts.yml")
    finally:
        sys.setprofile(None)
    assert inv.hosts["gpu-50"].address == "10.0.0.50"
    assert composed == 1


def test_a_subfolder_of_an_ansible_inventory_directory_is_walked_within_bounds(tmp_path: Path) -> None:
    """Ansible reads an inventory directory's subfolders as inventories too (a file in
    `prod/` is named, the test above); a link looping back is read once, and past the walk's
    bound (2,000 entries) the directory is refused in one sentence rather than judged in part."""
    (tmp_path / "ssh_config").write_text("")
    inv = tmp_path / "inventory"
    (inv / "prod").mkdir(parents=True)
    (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    (inv / "prod" / "again").symlink_to(inv / "prod")
    (inv / "prod" / "notes").write_text("The hosts of rack 3.\n")
    assert list(inventory.load(inv, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]
    many = inv / "prod" / "many"
    many.mkdir()
    for i in range(2001):
        (many / f"n{i}").touch()
    with pytest.raises(InventoryError) as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    assert str(err.value) == (
        f"{inv}: this Ansible inventory directory holds more than 2,000 entries beside its hosts file"
        f" (the last in {many}), all of which Ansible reads as inventories, too many to judge here;"
        " move the other files out, or"
        f" pass --inventory ansible-inventory:{inv} to read the directory as Ansible does."
    )


@pytest.mark.skipif(not ANSIBLE_INVENTORY_EXE.exists(), reason="ansible-core is not installed")
def test_the_ansible_configs_own_ignored_extensions_decide_what_beside_the_hosts_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kubespray's real ansible.cfg sets `inventory_ignore_extensions` (`.creds` added; `.txt`,
    `.md` no longer skipped). Beside `hosts`: `join.creds` holding INI group vars (the edit):
    Ansible skips it, gpuonboard refused it; `notes.txt` holding one host line: Ansible reads
    gpu2 from it, gpuonboard skipped it by the default list."""
    import shutil

    shutil.copy(ANSIBLE_CORPUS / "kubespray-ansible.cfg", tmp_path / "ansible.cfg")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    (inv / "join.creds").write_text("[compute:vars]\nansible_user=ops\n")
    (tmp_path / "ssh_config").write_text("")
    assert _ansible_export(inv) == _ansible_export(inv / "hosts")
    assert list(inventory.load(inv, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]
    (inv / "notes.txt").write_text("gpu2 ansible_host=10.0.0.2\n")
    assert _ansible_export(inv) != _ansible_export(inv / "hosts")
    with pytest.raises(InventoryError, match=r"Ansible reads this file too") as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    assert str(err.value).startswith(f"{inv / 'notes.txt'}: ")


def test_a_vault_encrypted_file_beside_the_hosts_file_is_named_where_ansible_has_a_vault_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Princeton CDH's real vault-encrypted file as `secrets` beside `hosts`: with no vault
    password Ansible reads nothing of it (the case above); with ANSIBLE_VAULT_PASSWORD_FILE set
    it decrypts and reads it, and gpuonboard cannot tell what it holds: named, not ignored."""
    import shutil

    (tmp_path / "hosts").write_text("[compute]\ngpu1 ansible_host=10.0.0.1\n")
    shutil.copy(ANSIBLE_CORPUS / "cdh-vault-file" / "group_vars" / "gpus" / "vault.yml", tmp_path / "secrets")
    (tmp_path / "ssh_config").write_text("")
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(tmp_path / "vault-pass"))
    with pytest.raises(InventoryError) as err:
        inventory.load(tmp_path, ssh_config=tmp_path / "ssh_config")
    assert str(err.value).startswith(
        f"{tmp_path / 'secrets'}: Ansible reads this file too, an inventory of the directory encrypted"
        " with Ansible Vault, decrypted with the vault password set, while gpuonboard reads only hosts;"
    )


def test_a_file_beside_our_own_hosts_yml_is_no_ansible_source(tmp_path: Path) -> None:
    """Our own format is no Ansible inventory: a `TODO` beside its hosts.yml (a host to Ansible's
    ini plugin, were the directory Ansible's) changes nothing."""
    (tmp_path / "hosts.yml").write_text("hosts:\n  a: {address: 10.0.0.1}\n")
    (tmp_path / "TODO").write_text("rack3\n")
    assert list(inventory.load(tmp_path).hosts) == ["a"]
