"""Native inventory: precedence (host > group > vendor > defaults), selection, sizes, jump hosts,
SSH config aliases, YAML merge keys, and the shipped example inventory."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError, UsageError
from gpuonboard.inventory import DataDiskSpec, Inventory, OrderSpec

REPO = Path(__file__).resolve().parents[2]
GB = 1000**3
TB = 1000**4


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never read the developer's ~/.ssh/config: results must not depend on the machine."""
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "no-such-ssh-config"))


def write(root: Path, files: dict[str, str]) -> Path:
    """Write an inventory tree (relative path -> YAML text) and return its directory."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return root


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
        vram_bytes=80 * GB,  # vendor
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
    with pytest.raises(InventoryError) as info:
        inventory.load(inv_dir)
    assert str(info.value) == (
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
    with pytest.raises(InventoryError) as info:
        inventory.load(inv_dir)
    assert str(info.value) == (
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
    with pytest.raises(InventoryError) as info:
        inventory.load(inv_dir)
    assert str(info.value) == (
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


def test_wildcard_ssh_config_entry_is_no_address(tmp_path: Path) -> None:
    inv_dir = write(tmp_path / "inv", {"hosts.yml": "hosts:\n  other: {}\n"})
    with pytest.raises(InventoryError) as info:
        inventory.load(inv_dir, ssh_config=ssh_config(tmp_path))
    assert str(info.value) == (
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
