"""An Ansible host's ssh args (ansible_ssh_args, ansible_ssh_common_args, ansible_ssh_extra_args)
set where and as whom its ssh connects: `-p 2222`, `-l ubuntu`, `-i KEY`, `-o Port=`, `-o User=`, `-o
IdentityFile=`, `-o HostName=`, first value winning. Each case is checked against OpenSSH
itself: `ssh -G` of the command line Ansible builds (its own `-o Port= -o IdentityFile= -o
User=` from ansible_port, the key file and ansible_user after ansible_ssh_args, then the
common and the extra args, then the address), with the same SSH config."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshargs import parse_ssh_args
from gpuonboard.inventory.sshresolve import parse_dump

SSH = shutil.which("ssh")
needs_ssh = pytest.mark.skipif(SSH is None, reason="OpenSSH's ssh client is not installed")


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ini: str, config: str = "") -> inventory.Inventory:
    """The inventory `ini` loaded in `tmp_path` (also the current directory), ~/.ssh/config
    being `config`; `@KEY@` in `ini` is a key file there."""
    (tmp_path / "user_config").write_text(config)
    (tmp_path / "gpu.pem").write_text("not a key\n")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.ini").write_text(ini.replace("@KEY@", str(tmp_path / "gpu.pem")))
    return inventory.load(tmp_path / "hosts.ini")


def _ansible_ssh_g(tmp_path: Path, hvars: dict[str, str], address: str) -> dict[str, tuple[str, ...]]:
    """`ssh -G` of the command line Ansible's ssh plugin builds for a host with `hvars`."""
    argv = [
        str(SSH),
        "-G",
        "-F",
        str(tmp_path / "user_config"),
        *shlex.split(hvars.get("ansible_ssh_args", "")),
    ]
    if "ansible_port" in hvars:
        argv += ["-o", f"Port={hvars['ansible_port']}"]
    if "ansible_ssh_private_key_file" in hvars:
        argv += ["-o", f'IdentityFile="{hvars["ansible_ssh_private_key_file"]}"']
    if "ansible_user" in hvars:
        argv += ["-o", f'User="{hvars["ansible_user"]}"']
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        argv += shlex.split(hvars.get(key, ""))
    done = subprocess.run([*argv, address], capture_output=True, text=True, timeout=10, check=True)
    return parse_dump(done.stdout)


CASES = {
    "-p": "ansible_ssh_common_args='-p 2222 -l ops'",
    "-o Port/User": "ansible_ssh_common_args='-o Port=2200 -o User=ops'",
    "-l -i": "ansible_ssh_common_args='-l ubuntu -i @KEY@ -o StrictHostKeyChecking=no'",
    "flags together": "ansible_ssh_common_args='-Cqp2201 -lops'",
    "-o quoted": 'ansible_ssh_common_args=\'-o "Port 2203" -oUser="ops"\'',
    "extra args": "ansible_ssh_extra_args='-p 2204 -o User=ops'",
    "common before extra": "ansible_ssh_common_args='-p 2205 -l ops' ansible_ssh_extra_args='-p 2206'",
    "inventory port wins": "ansible_port=2207 ansible_user=vagrant ansible_ssh_common_args='-p 2208 -l x'",
    "key file first": (
        "ansible_ssh_private_key_file=@KEY@ ansible_user=ops ansible_ssh_common_args='-i @KEY@2'"
    ),
    "-o HostName": "ansible_user=ops ansible_ssh_common_args='-o HostName=192.0.2.9'",
    "ssh_args before the inventory": (
        "ansible_port=2207 ansible_user=ops ansible_ssh_args='-o Port=2300 -o User=admin -C'"
        " ansible_ssh_common_args='-p 2400'"
    ),
}


@needs_ssh
@pytest.mark.parametrize("case", list(CASES))
def test_ssh_args_connect_where_ansibles_ssh_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Each setting of the args reaches the Host as `ssh -G` of Ansible's command line shows it
    (was: ignored, so the host was dialled at port 22 as root with the agent's keys)."""
    line = CASES[case]
    (tmp_path / "gpu.pem2").write_text("not a key\n")
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n").hosts["gpu1"]
    hvars = dict(w.split("=", 1) for w in shlex.split(line.replace("@KEY@", str(tmp_path / "gpu.pem"))))
    g = _ansible_ssh_g(tmp_path, hvars, "10.0.0.1")
    assert (h.address, h.port, h.user) == (g["hostname"][0], int(g["port"][0]), g["user"][0])
    if h.key_file is not None:
        assert (h.key_file, *h.extra_key_files) == g["identityfile"]


@needs_ssh
def test_ssh_args_beat_the_ssh_config_of_the_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh's command line beats its config: `-p 2222` over the config's `Port 2300`, while the
    config's User (which the args do not set) still applies."""
    config = "Host 10.0.0.*\n  Port 2300\n  User cfguser\n"
    line = "ansible_ssh_common_args='-p 2222'"
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.6 {line}\n", config).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": "-p 2222"}, "10.0.0.6")
    assert (h.port, h.user) == (int(g["port"][0]), g["user"][0]) == (2222, "cfguser")


def test_a_hosts_args_replace_its_groups_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape a public Vagrant lab script writes (each host line with
    `ansible_ssh_common_args='-i .vagrant/machines/NAME/libvirt/private_key'`, its group's vars
    with `-p 22 ... -o StrictHostKeyChecking=no`; here the group's port made 2022 to tell them
    apart): the host's args replace the group's whole, as in Ansible, and the relative key is
    read from the directory Ansible runs in (was: no key, the agent's)."""
    key = tmp_path / ".vagrant" / "machines" / "lab-cp1" / "libvirt" / "private_key"
    key.parent.mkdir(parents=True)
    key.write_text("not a key\n")
    ini = (
        "[controller]\nlab-cp1 ansible_host=10.224.114.11"
        " ansible_ssh_common_args='-i .vagrant/machines/lab-cp1/libvirt/private_key'\n\n"
        "[controller:vars]\nansible_ssh_user='vagrant'\n"
        "ansible_ssh_common_args='-p 2022 -o LogLevel=FATAL -o IdentitiesOnly=yes"
        " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n"
    )
    h = _load(tmp_path, monkeypatch, ini).hosts["lab-cp1"]
    assert (h.user, h.port, h.key_file) == ("vagrant", 22, str(key))


_ARGS = "ansible_ssh_common_args of host 'gpu1'"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ("-p {{ ssh_port }}", f"gets `-p {{{{...}}}}` from the {_ARGS}, an Ansible template"),
        ("-p twentytwo", f"gets `-p twentytwo` from the {_ARGS}, which is no port"),
        ("-i ~/.ssh/%C", f"gets `-i ~/.ssh/%C` from the {_ARGS}, a path with a %-token"),
    ],
)
def test_args_that_cannot_be_followed_are_refused_naming_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: str, said: str
) -> None:
    """A port or key that is a template, no number or a token is never guessed (a guess dials
    another port or logs in with another key): one sentence naming the file, line and host."""
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 ansible_ssh_common_args='{args}'\n")
    assert err.value.message.startswith(f"{tmp_path / 'hosts.ini'}, line 2: host 'gpu1' {said}")


def test_a_missing_key_of_the_args_is_named_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = "[gpus]\ngpu1 ansible_host=10.0.0.1 ansible_ssh_common_args='-i ./nokey'\n"
    inv = _load(tmp_path, monkeypatch, ini)
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.hosts.values())
    assert err.value.message == (
        f"{tmp_path / 'hosts.ini'}, line 2: host 'gpu1' gets `-i {tmp_path / 'nokey'}` from the"
        " ansible_ssh_common_args of host 'gpu1', which does not exist (ssh would skip it and try"
        " the agent and default keys); fix the path, or remove it."
    )


def test_first_value_wins_and_files_accumulate() -> None:
    args = parse_ssh_args(["-o Port=1 -p 2 -i a -l u -o User=v", "-o IdentityFile=b -J j -o ProxyJump=k"])
    assert args.values == {"port": "1", "identityfile": ["a", "b"], "user": "u", "proxyjump": "j"}


@needs_ssh
@pytest.mark.parametrize("args", ["-o ProxyCommand=none", "-o ProxyJump=none", "-J none"])
def test_none_in_the_args_dials_the_host_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: str
) -> None:
    """`none` on the command line beats the config's ProxyJump for the address: ssh dials the
    host itself (was, for `-o ProxyCommand=none`: the command `none` run as the proxy, so the
    host was unreachable)."""
    config = "Host 10.0.*\n  ProxyJump bastion\nHost bastion\n  HostName 192.0.2.1\n"
    line = f"ansible_user=ops ansible_ssh_common_args='{args}'"
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n", config).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, {"ansible_user": "ops", "ansible_ssh_common_args": args}, "10.0.0.1")
    assert ("proxyjump" in g, "proxycommand" in g) == (False, False)
    assert (h.jump, h.proxy_command, h.address) == ((), None, g["hostname"][0])


@pytest.mark.parametrize(
    ("line", "note"),
    [
        (
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'",
            "line 2: `-o StrictHostKeyChecking=no` in the ansible_ssh_common_args of host 'gpu1'",
        ),
        (
            "ansible_ssh_extra_args='-o UserKnownHostsFile=/dev/null'",
            "line 2: `-o UserKnownHostsFile=/dev/null` in the ansible_ssh_extra_args of host 'gpu1'",
        ),
        ("ansible_host_key_checking=false", "line 2: ansible_host_key_checking: false of host 'gpu1'"),
        ("ansible_ssh_common_args='-o StrictHostKeyChecking=yes'", None),
    ],
)
def test_lax_host_key_settings_are_kept_to_be_named_in_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, note: str | None
) -> None:
    """`-o StrictHostKeyChecking=no` (as NVIDIA's cloud-native-stack inventory has it, in
    tests/fixtures/ansible/cns-master-workers) is not followed: gpuonboard keeps its own host
    key checks, and keeps where the setting was written to say so when it refuses a key."""
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n").hosts["gpu1"]
    assert h.host_key_note == (None if note is None else f"{tmp_path / 'hosts.ini'}, {note}")


ANSIBLE_INVENTORY = shutil.which("ansible-inventory") or str(
    Path(sys.executable).with_name("ansible-inventory")
)


@pytest.mark.skipif(not Path(ANSIBLE_INVENTORY).exists(), reason="ansible-core is not installed")
def test_the_comparison_with_ansible_inventory_reads_the_args_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus comparison (`ansible-inventory --list` against our reading) takes the ssh args
    as Ansible's ssh does, so an inventory whose port, user and key are in them agrees."""
    from gpuonboard.inventory.ansible_compare import disagreement

    line = "ansible_ssh_common_args='-p 2222 -l ops -i @KEY@'"
    _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n")
    assert disagreement(tmp_path / "hosts.ini", tmp_path / "user_config", ANSIBLE_INVENTORY) is None


@pytest.mark.parametrize("reader", ["ssh -G", "own reader"])
def test_a_config_block_that_only_turns_off_host_key_checking_is_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """`Host 10.0.*` with nothing but `StrictHostKeyChecking no` gives the host no connection
    setting, yet Ansible's `ssh 10.0.0.1` applies it: kept to be named in a refusal too."""
    if reader == "own reader":
        (tmp_path / "empty-bin").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    elif SSH is None:
        pytest.skip("OpenSSH's ssh client is not installed")
    config = "Host 10.0.*\n  StrictHostKeyChecking no\n"
    ini = "[gpus]\ngpu1 ansible_host=10.0.0.1\ngpu2 ansible_host=10.9.0.1\n"
    hosts = _load(tmp_path, monkeypatch, ini, config)
    note = f"{tmp_path / 'user_config'}: `StrictHostKeyChecking no` for this host"
    assert (hosts.hosts["gpu1"].host_key_note, hosts.hosts["gpu2"].host_key_note) == (note, None)
