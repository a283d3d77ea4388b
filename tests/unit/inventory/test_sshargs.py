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
from gpuonboard.inventory.sshargs import ANSIBLE_SSH_ARGS, parse_ssh_args
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


_ARGS = "its ansible_ssh_common_args"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ("-p {{ ssh_port }}", f"gets `-p {{{{...}}}}` from {_ARGS}, an Ansible template"),
        ("-p twentytwo", f"gets `-p twentytwo` from {_ARGS}, which is no port"),
        ("-i ~/.ssh/%C", f"gets `-i ~/.ssh/%C` from {_ARGS}, a path with a %-token"),
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
        f"{tmp_path / 'hosts.ini'}, line 2: host 'gpu1' gets `-i ./nokey` from its"
        f" ansible_ssh_common_args (read as {tmp_path / 'nokey'}), which does not exist (ssh would"
        " skip it and try the agent and default keys); fix the path, or remove it."
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
    as Ansible's ssh does, so an inventory whose port, user, key and jump are in them agrees.
    Both sides read the args with the same parse_ssh_args, so agreeing proves only that
    Ansible's variables were collected alike: what they mean is checked against `ssh -G`."""
    from gpuonboard.inventory.ansible_compare import disagreement

    args = "-p 2222 -l ops -i @KEY@ -J ops@b1.example"
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 ansible_ssh_common_args='{args}'\n")
    assert disagreement(tmp_path / "hosts.ini", tmp_path / "user_config", ANSIBLE_INVENTORY) is None
    if SSH is not None:  # (the oracle that is not our own reading)
        key = str(tmp_path / "gpu.pem")
        g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": args.replace("@KEY@", key)}, "10.0.0.1")
        host = h.hosts["gpu1"]
        assert (host.port, host.user, (host.key_file,), host.jump) == (
            int(g["port"][0]),
            g["user"][0],
            g["identityfile"],
            tuple(g["proxyjump"][0].split(",")),
        )


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


def _ssh_g_way(g: dict[str, tuple[str, ...]]) -> tuple[tuple[str, ...], str | None]:
    """The jump hops and ProxyCommand of `ssh -G` output, as a Host holds them."""
    jump = tuple(g["proxyjump"][0].split(",")) if "proxyjump" in g else ()
    return jump, (g["proxycommand"][0] if "proxycommand" in g else None)


@needs_ssh
def test_a_proxy_command_in_ansible_ssh_args_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA DeepOps' inventory (tests/fixtures/ansible/deepops-uncommented) with its
    `ansible_ssh_common_args=` renamed `ansible_ssh_args=` (the value, `-o ProxyCommand="ssh -W
    %h:%p -q ubuntu@10.0.0.1"`, kept): ssh goes through the bastion (was: dialled directly)."""
    import shutil as sh

    sh.copytree(Path(__file__).parents[2] / "fixtures" / "ansible" / "deepops-uncommented", tmp_path / "dp")
    hosts = tmp_path / "dp" / "inventory"
    text = hosts.read_text()
    assert "\nansible_ssh_common_args='-o ProxyCommand=" in text
    hosts.write_text(text.replace("\nansible_ssh_common_args=", "\nansible_ssh_args="))
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    h = inventory.load(hosts).hosts["gpu01"]
    g = _ansible_ssh_g(
        tmp_path, {"ansible_ssh_args": '-o ProxyCommand="ssh -W %h:%p -q ubuntu@10.0.0.1"'}, h.address
    )
    assert g["proxycommand"] == ("ssh -W %h:%p -q ubuntu@10.0.0.1",)
    assert (h.jump, h.proxy_command) == (("ubuntu@10.0.0.1",), None)  # (`ssh -W` through it: a jump)


# (ansible_ssh_args, common args, extra args, SSH config): the way to the host
ROUTES = {
    "ssh_args none beats the config's jump": (
        "-o ProxyCommand=none",
        "",
        "",
        "Host 10.0.*\n  ProxyJump ops@b9.example\n",
    ),
    "the common args' jump beats the extra args'": (
        "",
        "-o ProxyJump=ops@b1.example",
        "-o ProxyJump=ops@b2.example",
        "",
    ),
    "a jump then a ProxyCommand: the first": (
        "",
        "-o ProxyJump=ops@b1.example",
        "-o ProxyCommand='nc %h %p'",
        "",
    ),
    "a ProxyCommand then a jump: the first": (
        "",
        "-o ProxyCommand='nc %h %p'",
        "-o ProxyJump=ops@b1.example",
        "",
    ),
    "-J none keeps the config's ProxyCommand": ("", "-J none", "", "Host 10.0.*\n  ProxyCommand nc %h %p\n"),
    "ProxyJump none drops the config's jump": (
        "",
        "-o ProxyJump=none",
        "",
        "Host 10.0.*\n  ProxyJump ops@b9.example\n",
    ),
    # (ssh takes the first of ProxyJump and ProxyCommand: with `none` set first, the config's
    # ProxyJump yields to its later ProxyCommand)
    "-J none: the config's ProxyCommand after its ProxyJump": (
        "",
        "-J none",
        "",
        "Host 10.0.0.1\n  ProxyJump ops@b8.example\nHost 10.0.*\n  ProxyCommand nc %h %p\n",
    ),
}


@needs_ssh
@pytest.mark.parametrize("case", list(ROUTES))
def test_the_way_to_the_host_is_the_one_ssh_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The first ProxyJump or ProxyCommand across ansible_ssh_args, the common and the extra
    args wins, before the config's, as `ssh -G` of Ansible's command line shows (was: only the
    common and extra args read, the extra args' jump beating the common args', a jump and a
    ProxyCommand refused as both, `-J none` dropping the config's ProxyCommand)."""
    first, common, extra, config = ROUTES[case]
    hvars = {k: v for k, v in zip(ANSIBLE_SSH_ARGS, (first, common, extra), strict=True) if v}
    line = " ".join(f'{k}="{v}"' for k, v in hvars.items())
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n", config).hosts["gpu1"]
    assert (h.jump, h.proxy_command) == _ssh_g_way(_ansible_ssh_g(tmp_path, hvars, "10.0.0.1"))


@needs_ssh
@pytest.mark.parametrize("none", ["-J none", "-o ProxyJump=none"])
@pytest.mark.parametrize("before", ["", "Host 10.0.0.1\n  ProxyJump ops@b8.example\n"])
def test_jump_none_keeps_the_configs_ssh_w_proxy_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, none: str, before: str
) -> None:
    """`-J none` in the args beside the config's `ProxyCommand ssh -W %h:%p ops@b9.example` (the
    form read as a jump), also after a ProxyJump of the config (ssh takes the first of the two,
    and `none` came first): ssh still goes through b9, as `ssh -G` shows (was: dialled directly,
    the config's ProxyCommand dropped with its own ProxyJump; with a ProxyJump before it, still
    direct: the config was read without the args' `none`)."""
    config = before + "Host 10.0.*\n  ProxyCommand ssh -W %h:%p ops@b9.example\n"
    line = f"ansible_ssh_common_args='{none}'"
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n", config).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": none}, "10.0.0.1")
    assert g["proxycommand"] == ("ssh -W %h:%p ops@b9.example",)
    assert (h.jump, h.proxy_command) == (("ops@b9.example",), None)


MATCH_CONFIGS = {
    "Match host HOSTNAME applies": "Match host 192.0.2.9\n  Port 2400\n  User m\n",
    "Host ADDRESS, then Match host HOSTNAME": (
        "Host 10.0.0.1\n  Port 2402\nMatch host 192.0.2.9\n  User mm\n  Port 2403\n"
    ),
    "Match host ADDRESS no longer applies": "Match host 10.0.0.1\n  Port 2404\n",
    "Host HOSTNAME does not apply": "Host 192.0.2.9\n  Port 2405\n",
}


@needs_ssh
@pytest.mark.parametrize("case", list(MATCH_CONFIGS))
def test_args_hostname_is_what_a_config_match_host_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """`-o HostName=192.0.2.9` in the args beside a config's `Match host` block: ssh reads its
    config with that HostName set, so `Match host 192.0.2.9` applies and `Match host ADDRESS` no
    longer does, while `Host` still tests the address, as `ssh -G` shows (was: the config read at
    the address alone: port 22 as root where ssh uses 2400 as m, 2404 where ssh uses 22)."""
    line = "ansible_ssh_common_args='-o HostName=192.0.2.9'"
    config = MATCH_CONFIGS[case]
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n", config).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": "-o HostName=192.0.2.9"}, "10.0.0.1")
    assert (h.address, h.port, h.user) == (g["hostname"][0], int(g["port"][0]), g["user"][0])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ("-o 'Port=2222", "`-o 'Port=2222` from its ansible_ssh_common_args, which does not split"),
        ('-l "" -p 2222', "`-l -p` from its ansible_ssh_common_args, whose -l has no value"),
        ("-p", "`-p` from its ansible_ssh_common_args, whose -p has no value"),
        ("-o Port", "`-o Port` from its ansible_ssh_common_args, with no value after the keyword"),
        ("-Z -p 2205", "`-Z` from its ansible_ssh_common_args, and ssh knows no option -Z"),
        ("-o ProxyCommand=x -J ops@b", "`-J ops@b` from its ansible_ssh_common_args, after a ProxyCommand"),
        ("-o ProxyJump=a -J ops@b", "`-J ops@b` from its ansible_ssh_common_args, beside another jump"),
        ("-C foo -p 2210", "`foo` from its ansible_ssh_common_args, a word that is no option"),
        ("-C {{ more_args }}", "`{{...}}` from its ansible_ssh_common_args, an Ansible template"),
    ],
)
def test_args_ssh_or_ansible_refuse_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: str, said: str
) -> None:
    """Args that Ansible (a quote not closed) or ssh (an option without its value, one it does
    not know, `-J` after a ProxyCommand, a stray word taken for the host) would refuse are
    refused in one sentence naming the line (was: skipped or half read, the host dialled as if
    they said nothing)."""
    ini = f'[gpus]\ngpu1 ansible_host=10.0.0.1 ansible_ssh_common_args="{args}"\n'
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, monkeypatch, ini)
    assert err.value.message.startswith(f"{tmp_path / 'hosts.ini'}, line 2: host 'gpu1' gets {said}")


@needs_ssh
@pytest.mark.parametrize("args", ["-p ssh", "-o Port=ssh", "-p +2222", '-p " 2222"'])
def test_ports_ssh_reads_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: str) -> None:
    """A service name or `+2222` is a port to ssh (its a2port), and Ansible strips each word
    (was: refused, "which is no port ..., and ssh refuses it")."""
    ini = f"[gpus]\ngpu1 ansible_host=10.0.0.1 ansible_ssh_common_args='{args}'\n"
    h = _load(tmp_path, monkeypatch, ini).hosts["gpu1"]
    words = [w.strip() for w in shlex.split(args) if w.strip()]  # (Ansible's _split_ssh_args)
    g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": shlex.join(words)}, "10.0.0.1")
    assert h.port == int(g["port"][0])


KEYS = {
    "ansible_ssh_args -i before the inventory key": (
        "ansible_ssh_private_key_file=@D@/gpu.pem ansible_ssh_args='-i @D@/gpu2.pem'",
        "",
    ),
    "common -i before the config's": (
        "ansible_ssh_common_args='-i @D@/gpu2.pem'",
        "Host 10.0.0.*\n  IdentityFile @D@/k3.pem\n",
    ),
    "two -i before the config's": (
        "ansible_ssh_common_args='-i @D@/a.pem -i @D@/b.pem'",
        "Host 10.0.0.*\n  IdentityFile @D@/k3.pem\n",
    ),
}


@needs_ssh
@pytest.mark.parametrize("case", list(KEYS))
def test_every_key_ssh_tries_is_kept_in_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """ssh tries ansible_ssh_args' keys, the inventory's key file, the common and extra args'
    keys, then the SSH config's, as `ssh -G` lists them (was: the inventory's or the config's
    key lost, the args' tried twice)."""
    line, config = (x.replace("@D@", str(tmp_path)) for x in KEYS[case])
    for name in ("gpu2.pem", "k3.pem", "a.pem", "b.pem"):
        (tmp_path / name).write_text("not a key\n")
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n", config).hosts["gpu1"]
    hvars = dict(w.split("=", 1) for w in shlex.split(line))
    assert (h.key_file, *h.extra_key_files) == _ansible_ssh_g(tmp_path, hvars, "10.0.0.1")["identityfile"]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "ansible_ssh_private_key_file=@KEY@ ansible_ssh_args='-i ./missing.pem'",
            "gets `-i ./missing.pem` from its ansible_ssh_args (read as {d}/missing.pem)",
        ),
        (
            "ansible_ssh_common_args='-o IdentityFile=~/nokey-zz.pem'",
            "gets `-o IdentityFile=~/nokey-zz.pem` from its ansible_ssh_common_args (read as",
        ),
    ],
)
def test_a_missing_key_is_named_as_written_where_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, said: str
) -> None:
    """The key ssh tries first is named as the user wrote it, in the variable that gave it (was:
    "field 'key_file' names .../missing.pem" for an ansible_ssh_args key, and `-i /root/k.pem`
    for `-o IdentityFile=~/k.pem`)."""
    inv = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n")
    with pytest.raises(InventoryError) as err:
        inv.check_key_files(inv.hosts.values())
    assert err.value.message.startswith(
        f"{tmp_path / 'hosts.ini'}, line 2: host 'gpu1' {said.format(d=tmp_path)}"
    )


@needs_ssh
def test_percent_h_in_the_args_hostname_is_the_name_ssh_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o HostName=%h.lab` for `ansible_host=myalias` is `myalias.lab`, though the config's
    `Host myalias` gives another HostName (was: that HostName with `.lab`)."""
    config = "Host myalias\n  HostName 10.9.9.9\n"
    line = "ansible_host=myalias ansible_ssh_common_args='-o HostName=%h.lab'"
    h = _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 {line}\n", config).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, {"ansible_ssh_common_args": "-o HostName=%h.lab"}, "myalias")
    assert h.address == g["hostname"][0] == "myalias.lab"


@needs_ssh
@pytest.mark.parametrize(
    ("line", "config"),
    [
        ("ansible_ssh_common_args='-o StrictHostKeyChecking=yes'", "StrictHostKeyChecking no"),
        ("ansible_host_key_checking=false ansible_ssh_args='-o StrictHostKeyChecking=yes'", ""),
        ("ansible_ssh_common_args='-o UserKnownHostsFile=@D@/kh'", "UserKnownHostsFile /dev/null"),
    ],
)
def test_no_host_key_note_where_the_first_setting_is_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, config: str
) -> None:
    """ssh takes the first setting of each keyword (ansible_ssh_args, Ansible's own
    `StrictHostKeyChecking=no`, the common and extra args, the config): where that is strict,
    nothing the user set would have ssh accept the key (was: a note naming the overridden one)."""
    line = line.replace("@D@", str(tmp_path))
    ini = f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n"
    h = _load(tmp_path, monkeypatch, ini, f"Host 10.0.0.*\n  {config}\n" if config else "").hosts["gpu1"]
    hvars = dict(w.split("=", 1) for w in shlex.split(line))
    argv_vars = {k: v for k, v in hvars.items() if k != "ansible_host_key_checking"}
    if "ansible_host_key_checking" in hvars:  # (Ansible's own, after ansible_ssh_args)
        argv_vars["ansible_ssh_args"] += " -o StrictHostKeyChecking=no"
    g = _ansible_ssh_g(tmp_path, argv_vars, "10.0.0.1")
    assert g["stricthostkeychecking"][0] in ("true", "ask") and g["userknownhostsfile"][0] != "/dev/null"
    assert h.host_key_note is None


def test_an_own_jump_and_an_args_way_to_the_host_are_refused_as_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpuonboard_jump beside `-o ProxyCommand=none` in the args: ssh (Ansible) dials directly,
    gpuonboard would go through the jump; neither is guessed."""
    line = "gpuonboard_jump=ops@b1.example ansible_ssh_common_args='-o ProxyCommand=none'"
    with pytest.raises(
        InventoryError, match=r"field 'jump' and `-o ProxyCommand=none` in the ansible_ssh_common_args"
    ):
        _load(tmp_path, monkeypatch, f"[gpus]\ngpu1 ansible_host=10.0.0.1 {line}\n")
