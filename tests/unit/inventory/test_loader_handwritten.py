"""Inventories written by hand: jump chains (nested, looping), a host named like a group, key
paths with `$HOME`, values YAML reads as something else, an inventory directory with more than
one file, vendor profiles with two files or a blank shutdown command. Each bad input is one
sentence naming the file, line, host and field, never a silently wrong value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.connection import openssh
from gpuonboard.errors import InventoryError

CLI = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"


def write(directory: Path, hosts: str, **vendors: str) -> Path:
    (directory / "vendors").mkdir(parents=True, exist_ok=True)
    (directory / "hosts.yml").write_text(hosts)
    for name, text in vendors.items():
        (directory / "vendors" / f"{name}.yml").write_text(text)
    return directory


def error(directory: Path) -> str:
    with pytest.raises(InventoryError) as exc:
        inventory.load(directory)
    return str(exc.value)


# ---------------------------------------------------------------- jump chains

NESTED = """\
hosts:
  outer: {address: 203.0.113.1}
  mid: {address: 10.1.0.1, jump: outer}
  inner: {address: 10.2.0.1, jump: mid, user: ubuntu}
"""


def test_a_jump_host_with_its_own_jump_host_is_reached_through_it(tmp_path: Path) -> None:
    # mid is reachable only through outer: connecting to inner via mid must open outer first,
    # not dial mid's private address directly (the connection and rsync's config open the chain)
    inv = inventory.load(write(tmp_path, NESTED))
    assert inv.hosts["inner"].jump == ("outer", "mid")
    assert inv.hosts["mid"].jump == ("outer",)
    text, alias = openssh.config_text(inv.hosts["inner"], inv, tmp_path / "known_hosts")
    blocks = text.split("Host ")[1:]
    assert [b.split("\n")[1].strip() for b in blocks] == [
        'HostName "203.0.113.1"',
        'HostName "10.1.0.1"',
        'HostName "10.2.0.1"',
    ]
    assert "ProxyJump gpuonboard-hop0" in blocks[1] and "ProxyJump gpuonboard-hop1" in blocks[2]


def test_a_listed_chain_keeps_its_order_after_the_first_hops_own_chain(tmp_path: Path) -> None:
    hosts = NESTED + "  far: {address: 10.3.0.1, jump: [mid, 'admin@10.9.0.1:2222']}\n"
    inv = inventory.load(write(tmp_path, hosts))
    assert inv.hosts["far"].jump == ("outer", "mid", "admin@10.9.0.1:2222")


@pytest.mark.parametrize(
    ("hosts", "loop", "host", "line"),
    [
        (
            "hosts:\n  a: {address: 10.0.0.1, jump: b}\n  b: {address: 10.0.0.2, jump: a}\n",
            "a -> b -> a",
            "b",
            3,
        ),
        (
            "hosts:\n  t: {address: 10.0.0.9, jump: a}\n  a: {address: 10.0.0.1, jump: [b]}\n"
            "  b: {address: 10.0.0.2, jump: c}\n  c: {address: 10.0.0.3, jump: a}\n",
            "a -> b -> c -> a",
            "c",
            5,
        ),
    ],
)
def test_a_loop_of_jump_hosts_is_an_input_error(
    tmp_path: Path, hosts: str, loop: str, host: str, line: int
) -> None:
    path = write(tmp_path, hosts)
    assert error(path) == (
        f"{path / 'hosts.yml'}, line {line}: host {host!r} field 'jump' makes a loop of jump hosts"
        f" ({loop}); one of them must be reachable without the others: fix its 'jump'."
    )


def test_a_jump_loop_exits_2_in_one_sentence_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  a: {address: 10.0.0.1, jump: b}\n  b: {address: 10.0.0.2, jump: a}\n")
    r = subprocess.run(
        [sys.executable, "-c", CLI, "inventory", "--inventory", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"error: {path / 'hosts.yml'}, line 3: host 'b' field 'jump' makes a loop of jump hosts"
        " (a -> b -> a); one of them must be reachable without the others: fix its 'jump'."
    ]


# ---------------------------------------------------------------- names


def test_a_group_named_like_a_host_it_does_not_hold_is_refused(tmp_path: Path) -> None:
    # `--limit gpu1` (or `teardown --limit gpu1`) would take gpu2 as well
    path = write(
        tmp_path,
        "groups:\n  gpu1: {hosts: [gpu2]}\n"
        "hosts:\n  gpu1: {address: 10.0.0.1}\n  gpu2: {address: 10.0.0.2}\n",
    )
    assert error(path) == (
        f"{path / 'hosts.yml'}, line 2: group 'gpu1' has the name of a host that is not in it, so"
        " --limit gpu1 would take that host and the group's hosts (gpu2) alike; rename the group or"
        " the host."
    )


def test_a_group_holding_the_host_of_its_name_is_fine(tmp_path: Path) -> None:
    # (as Ansible INI inventories often write `[bastion]` / `bastion ansible_host=...`)
    path = write(tmp_path, "groups:\n  bastion: {hosts: [bastion]}\nhosts:\n  bastion: {address: 10.0.0.1}\n")
    assert inventory.load(path).groups == {"bastion": ("bastion",)}


def test_a_vendor_in_another_case_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = write(
        tmp_path, "hosts:\n  a: {address: 10.0.0.1, vendor: Wuhan-IDC}\n", **{"wuhan-idc": "name: W\n"}
    )
    assert error(path).endswith("; did you mean 'wuhan-idc'?")


# ---------------------------------------------------------------- values


def test_home_in_a_key_file_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUONBOARD_QA_KEYS", str(tmp_path / "keys"))
    path = write(
        tmp_path / "inv",
        "hosts:\n  a: {address: 10.0.0.1, key_file: $HOME/.ssh/id_a}\n"
        "  b:\n    address: 10.0.0.2\n    key_file: ${GPUONBOARD_QA_KEYS}/id_b\n"
        "  c: {address: 10.0.0.3, key_file: ~/id_c}\n",
    )
    hosts = inventory.load(path).hosts
    assert hosts["a"].key_file == f"{home}/.ssh/id_a"
    assert hosts["b"].key_file == f"{tmp_path}/keys/id_b"
    assert hosts["c"].key_file == f"{home}/id_c"


def test_an_unset_variable_in_a_key_file_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUONBOARD_QA_UNSET", raising=False)
    path = write(tmp_path, "hosts:\n  a:\n    address: 10.0.0.1\n    key_file: $GPUONBOARD_QA_UNSET/id\n")
    assert error(path) == (
        f"{path / 'hosts.yml'}, line 4: host 'a' field 'key_file' '$GPUONBOARD_QA_UNSET/id' uses the"
        " environment variable 'GPUONBOARD_QA_UNSET', which is not set; set it, or write the path out."
    )


@pytest.mark.parametrize("value", [".inf", ".nan"])
def test_an_endless_connect_timeout_is_refused(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f"defaults: {{connect_timeout: {value}}}\nhosts:\n  a: {{address: 10.0.0.1}}\n")
    shown = "inf" if value == ".inf" else "nan"
    assert error(path) == (
        f"{path / 'hosts.yml'}, line 1: defaults field 'connect_timeout' must be a positive number of"
        f" seconds, not {shown}."
    )


def test_an_address_with_shell_characters_stops_before_connecting(tmp_path: Path) -> None:
    path = write(tmp_path, 'hosts:\n  a:\n    address: "10.0.0.1; touch /tmp/x"\n')
    assert error(path) == (
        f"{path / 'hosts.yml'}, line 3: host 'a' field 'address' '10.0.0.1; touch /tmp/x' is not a host"
        " name or IP address (it holds ';'); write only the host name or IP address."
    )


@pytest.mark.parametrize("address", ["10.0.0.1", "gpu-1.example.cn", "2001:db8::7", "fe80::1%eth0", "节点1"])
def test_host_names_and_addresses_load(tmp_path: Path, address: str) -> None:
    path = write(tmp_path, f"hosts:\n  a: {{address: '{address}'}}\n")
    assert inventory.load(path).hosts["a"].address == address


@pytest.mark.parametrize("model", ['""', "'  '"])
def test_an_empty_gpu_model_is_refused_not_left_unchecked(tmp_path: Path, model: str) -> None:
    path = write(
        tmp_path, "hosts:\n  a: {address: 10.0.0.1, vendor: v}\n", v=f"order:\n  gpu_model: {model}\n"
    )
    assert error(path) == (
        f"{path / 'vendors' / 'v.yml'}, line 2: vendor 'v' order field 'gpu_model' is empty; give the"
        " model ordered, like 'A100 80GB SXM', or remove the line."
    )


def test_a_blank_vendor_shutdown_command_is_not_replaced_by_shutdown(tmp_path: Path) -> None:
    path = write(
        tmp_path, "hosts:\n  a: {address: 10.0.0.1, vendor: v}\n", v="name: V\nshutdown_command: ''\n"
    )
    assert error(path) == (
        f"{path / 'vendors' / 'v.yml'}, line 2: vendor 'v' field 'shutdown_command' is empty; give the"
        " command that powers the box off, or remove the line for `shutdown -h now`."
    )


# ---------------------------------------------------------------- files


def test_two_profiles_of_one_vendor_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  a: {address: 10.0.0.1, vendor: v}\n", v="ssh: {port: 2222}\n")
    (path / "vendors" / "v.yaml").write_text("ssh: {port: 3333}\n")
    assert error(path) == (
        f"{path / 'vendors' / 'v.yml'}: vendor 'v' has two profiles, v.yaml and v.yml, and only one would"
        " be used; merge them into one file and remove the other."
    )


def test_an_editor_lock_file_in_vendors_is_not_a_profile(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  a: {address: 10.0.0.1, vendor: v}\n", v="ssh: {port: 2222}\n")
    (path / "vendors" / ".#v.yml").symlink_to("user@box.1234:1700000000")  # as Emacs leaves it
    (path / "vendors" / ".v.yml.swp").write_bytes(b"\x00\xff")
    inv = inventory.load(path)
    assert (list(inv.vendors), inv.hosts["a"].port) == (["v"], 2222)


def test_a_second_hosts_file_in_the_directory_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  a: {address: 10.0.0.1}\n")
    (path / "hosts.ini").write_text("[g]\nb ansible_host=10.0.0.2\n")
    assert error(path) == (
        f"{path}: this inventory directory holds both hosts.yml and hosts.ini, and gpuonboard reads only"
        " one; merge them into hosts.yml and remove the other, or pass --inventory FILE."
    )


def test_another_inventory_file_in_the_directory_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts:\n  a: {address: 10.0.0.1}\n")
    (path / "gpus.yml").write_text("hosts:\n  b: {address: 10.0.0.2}\n")
    (path / "README.md").write_text("notes\n")  # (not an inventory file: fine)
    assert error(path) == (
        f"{path / 'gpus.yml'}: gpuonboard reads only hosts.yml of an inventory directory, so the hosts"
        f" and settings in gpus.yml would be ignored; move them into hosts.yml, or pass --inventory"
        f" {path / 'gpus.yml'} to use that file instead."
    )


@pytest.mark.parametrize("sub", ["group_vars", "host_vars"])
@pytest.mark.parametrize("as_file", [False, True])
def test_ansible_vars_directories_are_not_silently_ignored(tmp_path: Path, sub: str, as_file: bool) -> None:
    # (issue 30: read as Ansible reads them, where they were refused before)
    path = tmp_path / "inv"
    path.mkdir()
    (path / "hosts.ini").write_text("[gpus]\ngpu1 ansible_host=10.0.0.1\n")
    (path / sub).mkdir()
    (path / sub / ("gpus.yml" if sub == "group_vars" else "gpu1.yml")).write_text("ansible_user: ubuntu\n")
    target = path / "hosts.ini" if as_file else path
    assert inventory.load(target).hosts["gpu1"].user == "ubuntu"


def test_ansible_vars_directories_beside_our_own_format_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "inv"
    (path / "group_vars").mkdir(parents=True)
    (path / "hosts.yml").write_text("hosts:\n  gpu1: {address: 10.0.0.1}\n")
    with pytest.raises(InventoryError) as exc:
        inventory.load(path)
    assert str(exc.value) == (
        f"{path / 'group_vars'}: gpuonboard does not read Ansible's group_vars/ directories, so the"
        " settings in it would be ignored; move them into the inventory file (a group's or host's"
        " vars), or move the directory away."
    )


def test_the_shipped_inventory_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    inv = inventory.load(Path(__file__).resolve().parents[3] / "inventory")
    assert set(inv.vendors) == {"wuhan-idc", "shanghai-gpu", "demo-idc"}
    assert inv.hosts["wuhan-a100-1"].jump == ("wuhan-bastion",)


# The SSH config's `Host <name>` entry supplies a host's settings only when the inventory gives
# no address: with `address:` (or Ansible's `ansible_host`) set, an entry of the same name (an old
# rental, another machine) must not slip its Port, User or IdentityFile into the host, as in Ansible,
# which then looks up the address, not the name.

SSH_CONFIG = "Host gpu1\n  HostName 198.51.100.9\n  Port 2201\n  User olduser\n  IdentityFile /old/key\n"


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(SSH_CONFIG)
    return path


def test_a_native_host_with_an_address_ignores_the_ssh_config_entry(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("defaults: {user: ubuntu}\nhosts:\n  gpu1: {address: 10.0.0.5}\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("10.0.0.5", 22, "ubuntu", None)


def test_an_ansible_host_with_ansible_host_ignores_the_ssh_config_entry(
    tmp_path: Path, ssh_config: Path
) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[gpus]\ngpu1 ansible_host=10.0.0.5\n[all:vars]\nansible_user=ubuntu\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("10.0.0.5", 22, "ubuntu", None)


def test_a_host_without_an_address_still_takes_the_entry(tmp_path: Path, ssh_config: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[gpus]\ngpu1\n")
    h = inventory.load(path, ssh_config=ssh_config).hosts["gpu1"]
    assert (h.address, h.port, h.user, h.key_file) == ("198.51.100.9", 2201, "olduser", "/old/key")
