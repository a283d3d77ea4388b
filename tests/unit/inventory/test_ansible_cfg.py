"""Ansible's config (ansible.cfg, ANSIBLE_* variables) where it decides how an Ansible
inventory's hosts are reached: each case is checked against Ansible itself (the ssh command line
`ansible -m ping -vvv` prints, its ssh replaced by /bin/false so nothing is dialled) read by
`ssh -G`, with the same config file, environment and inventory."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshresolve import parse_dump

SSH = shutil.which("ssh")
ANSIBLE = shutil.which("ansible") or str(Path(sys.executable).with_name("ansible"))
needs_both = pytest.mark.skipif(
    SSH is None or not Path(ANSIBLE).exists(), reason="needs OpenSSH's ssh and ansible-core"
)
_ENV = ("ANSIBLE_CONFIG", "ANSIBLE_REMOTE_USER", "ANSIBLE_REMOTE_PORT", "ANSIBLE_SSH_COMMON_ARGS")


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, ini: str) -> Path:
    """`cfg` as ./ansible.cfg and `ini` as hosts.ini in `tmp_path` (the current directory, not
    world-writable), an empty ~/.ssh/config; the path of hosts.ini."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user_config").write_text("")
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "user_config"))
    (tmp_path / "ansible.cfg").write_text(cfg)
    (tmp_path / "hosts.ini").write_text(ini)
    return tmp_path / "hosts.ini"


def _ansible_ssh_g(tmp_path: Path, host: str, inventory_file: Path) -> dict[str, tuple[str, ...]]:
    """`ssh -G` of the ssh command line Ansible itself builds for `host` (its first EXEC)."""
    env = {**os.environ, "ANSIBLE_SSH_EXECUTABLE": "/bin/false", "ANSIBLE_SSH_RETRIES": "0"}
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-tmp")
    env["ANSIBLE_STDOUT_CALLBACK"] = "default"  # (a config may name one not installed here)
    done = subprocess.run(
        [ANSIBLE, host, "-i", str(inventory_file), "-m", "ping", "-vvv"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    line = next(x for x in done.stdout.splitlines() if "SSH: EXEC /bin/false" in x)
    argv = shlex.split(line.split("SSH: EXEC ", 1)[1])[1:-1]  # (no ssh, no remote command)
    g = subprocess.run(
        [str(SSH), "-G", "-F", str(tmp_path / "user_config"), *argv],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return parse_dump(g.stdout)


CFG = """\
# the settings a team's ansible.cfg sets for its servers
[defaults]
inventory = hosts.ini
remote_user = ops
private_key_file = keys/gpu.pem   ; inline comment, as Ansible reads it
remote_port = 2299

[ssh_connection]
pipelining = True
ssh_common_args = -o ProxyJump=bastion@jump.example:2200
"""
CASES = {
    "config alone": "gpu1 ansible_host=10.0.0.1\n",
    "host vars beat it": "gpu1 ansible_host=10.0.0.1 ansible_user=hostuser ansible_port=22\n",
    "group vars beat it": "gpu1 ansible_host=10.0.0.1\n[all:vars]\nansible_user=allusers\n",
}


@needs_both
@pytest.mark.parametrize("case", list(CASES))
def test_ansible_cfg_reaches_hosts_where_ansible_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """ansible.cfg's remote_user, remote_port, private_key_file (from the file's directory) and
    ssh_common_args reach the host below the inventory's vars, as Ansible's ssh command line
    shows (was: never read, so the host was dialled at port 22 as root, directly)."""
    hosts = _setup(tmp_path, monkeypatch, CFG, f"[gpus]\n{CASES[case]}")
    h = inventory.load(hosts).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, "gpu1", hosts)
    assert (h.address, h.port, h.user) == (g["hostname"][0], int(g["port"][0]), g["user"][0])
    assert h.key_file == g["identityfile"][0] == str(tmp_path / "keys" / "gpu.pem")
    assert ",".join(h.jump) == g["proxyjump"][0] == "bastion@jump.example:2200"


@needs_both
def test_environment_beats_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ANSIBLE_REMOTE_USER and ANSIBLE_REMOTE_PORT beat the file's; the file given by
    ANSIBLE_CONFIG (a directory: its ansible.cfg) beats ./ansible.cfg, read whole, alone."""
    hosts = _setup(tmp_path, monkeypatch, CFG, "[gpus]\ngpu1 ansible_host=10.0.0.1\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "ansible.cfg").write_text("[defaults]\nremote_port = 2301\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(other))
    monkeypatch.setenv("ANSIBLE_REMOTE_USER", "envuser")
    h = inventory.load(hosts).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, "gpu1", hosts)
    assert (h.port, h.user, h.jump) == (int(g["port"][0]), g["user"][0], ()) == (2301, "envuser", ())


def test_config_search_order(tmp_path: Path) -> None:
    """ANSIBLE_CONFIG, ./ansible.cfg (not in a world-writable directory), ~/.ansible.cfg."""
    from gpuonboard.inventory.ansible_cfg import find_config

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir(mode=0o755)
    (home / ".ansible.cfg").write_text("")
    (cwd / "ansible.cfg").write_text("")
    assert find_config({}, cwd, home) == cwd / "ansible.cfg"
    assert find_config({"ANSIBLE_CONFIG": str(tmp_path / "none.cfg")}, cwd, home) == cwd / "ansible.cfg"
    cwd.chmod(0o777)
    assert find_config({}, cwd, home) == home / ".ansible.cfg"


def test_host_key_checking_off_is_named_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`host_key_checking = False` in ansible.cfg is not followed; the host's note (said when an
    unknown key is refused) names the file and line (was: never read, so never named)."""
    hosts = _setup(
        tmp_path, monkeypatch, "[defaults]\nhost_key_checking = False\n", "gpu1 ansible_host=10.0.0.1\n"
    )
    h = inventory.load(hosts).hosts["gpu1"]
    assert h.host_key_note == (
        f"{tmp_path / 'ansible.cfg'}, line 2: `host_key_checking = False` in the Ansible config"
    )
    monkeypatch.setenv("ANSIBLE_SSH_HOST_KEY_CHECKING", "no")
    h = inventory.load(hosts).hosts["gpu1"]
    assert h.host_key_note == "ANSIBLE_SSH_HOST_KEY_CHECKING=no in the environment"


@pytest.mark.parametrize(
    ("cfg", "line", "words"),
    [
        ("remote_user = ops\n", 1, "no section header"),
        ("[defaults]\nremote_user = a\nremote_user = b\n", 3, "already exists"),
        ("[defaults]\nremote_port = '2222 '\n", 2, "no port number"),
    ],
)
def test_a_config_ansible_refuses_is_refused_naming_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, line: int, words: str
) -> None:
    """A config Ansible refuses (no section, a key twice, a port that is no number) is one
    sentence naming the file and line (was: never read)."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    with pytest.raises(InventoryError, match=rf"ansible.cfg, line {line}: .*{words}") as err:
        inventory.load(hosts)
    assert "\n" not in str(err.value)


def test_an_unbounded_config_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ANSIBLE_CONFIG=/dev/zero is refused as every input file past its bound is."""
    from gpuonboard.inventory.ansible_cfg import config_vars

    monkeypatch.setenv("ANSIBLE_CONFIG", "/dev/zero")
    with pytest.raises(InventoryError, match="/dev/zero"):
        config_vars()


def test_a_groups_args_beside_a_hosts_own_jump_are_two_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group's `-J` in ansible_ssh_common_args beside the host's own gpuonboard_jump: the host's
    (more specific) wins, as beside the inventory's `all` (was: refused as if the host said
    both, naming the group's args "of host 'gpu1'")."""
    ini = (
        "[gpus]\ngpu1 ansible_host=10.0.0.1 gpuonboard_jump=me@b2\n"
        "[gpus:vars]\nansible_ssh_common_args='-J x@b1'\n"
    )
    hosts = _setup(tmp_path, monkeypatch, "", ini)
    assert inventory.load(hosts).hosts["gpu1"].jump == ("me@b2",)
    (tmp_path / "hosts.ini").write_text(ini.replace("-J x@b1", "-J x@b1 -p 0"))
    with pytest.raises(InventoryError, match=r"the ansible_ssh_common_args of group 'gpus'"):
        inventory.load(hosts)


DEEPOPS = Path(__file__).parents[2] / "fixtures" / "ansible"


@needs_both
def test_deepops_config_turns_host_key_checking_off_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA DeepOps' real ansible.cfg (`host_key_checking = False`, ssh_args with
    `UserKnownHostsFile=/dev/null`) beside its inventory: Ansible's ssh would accept any host
    key; gpuonboard reaches the host where Ansible does, follows neither, and names the config's
    line in the note said when an unknown key is refused (was: the config never read, no note)."""
    _setup(tmp_path, monkeypatch, "", "")
    inv_dir = tmp_path / "deepops"
    shutil.copytree(DEEPOPS / "deepops-uncommented", inv_dir)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(DEEPOPS / "deepops-ansible.cfg"))
    h = inventory.load(inv_dir / "inventory").hosts["gpu01"]
    g = _ansible_ssh_g(tmp_path, "gpu01", inv_dir / "inventory")
    assert (h.address, h.port, h.user) == (g["hostname"][0], int(g["port"][0]), g["user"][0])
    assert (g["stricthostkeychecking"][0], g["userknownhostsfile"][0]) == ("false", "/dev/null")
    assert h.host_key_note == (
        f"{DEEPOPS / 'deepops-ansible.cfg'}, line 5: `host_key_checking = False` in the Ansible config"
    )
