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
_ENV = (
    "ANSIBLE_CONFIG",
    "ANSIBLE_REMOTE_USER",
    "ANSIBLE_REMOTE_PORT",
    "ANSIBLE_SSH_COMMON_ARGS",
    "ANSIBLE_TRANSPORT",
    "ANSIBLE_FORKS",
    "ANSIBLE_TIMEOUT",
)


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
        ("remote_user = ops\n", 1, "before any \\[section\\] header"),
        ("[defaults]\nremote_user = a\nremote_user = b\n", 3, "'remote_user' is set a second time"),
        ("[defaults]\nremote_user\n", 2, "'remote_user' is no `key = value` line"),
        ("[defaults]\nremote_port = 22x\n", 2, "'22x' is not a whole number"),
        ("[defaults]\nremote_port = 2299.5\n", 2, "'2299.5' is not a whole number"),
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
    assert "\n" not in str(err.value) and str(err.value).count(str(tmp_path)) == 1


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


@needs_both
@pytest.mark.parametrize("written", ["$HOME/.ssh/id_gpu", "${HOME}/.ssh/id_gpu", "~/.ssh/id_gpu"])
def test_a_key_file_with_a_variable_is_expanded_before_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    """`private_key_file = $HOME/.ssh/id_gpu` is HOME's key, as Ansible's unfrackpath expands the
    variables before it joins a relative path onto the config's folder (was:
    `<config folder>/<HOME>/.ssh/id_gpu`, a file that does not exist)."""
    hosts = _setup(
        tmp_path, monkeypatch, f"[defaults]\nprivate_key_file = {written}\n", "gpu1 ansible_host=10.0.0.1\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    h = inventory.load(hosts).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, "gpu1", hosts)
    assert h.key_file == g["identityfile"][0] == str(tmp_path / "home" / ".ssh" / "id_gpu")


@needs_both
def test_a_relative_key_file_of_the_environment_is_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANSIBLE_PRIVATE_KEY_FILE=keys/id_env is resolved from the directory Ansible runs in, not
    the inventory's (was: `<inventory folder>/keys/id_env`)."""
    _setup(tmp_path, monkeypatch, "", "")
    (tmp_path / "inv").mkdir()
    hosts = tmp_path / "inv" / "hosts.ini"
    hosts.write_text("gpu1 ansible_host=10.0.0.1\n")
    monkeypatch.setenv("ANSIBLE_PRIVATE_KEY_FILE", "keys/id_env")
    h = inventory.load(hosts).hosts["gpu1"]
    g = _ansible_ssh_g(tmp_path, "gpu1", hosts)
    assert h.key_file == g["identityfile"][0] == str(tmp_path / "keys" / "id_env")


@needs_both
@pytest.mark.parametrize("comment", ["# 团队配置".encode("gbk"), b"# caf\xe9"])
def test_a_byte_not_utf8_in_a_comment_is_read_as_ansible_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comment: bytes
) -> None:
    """A GBK or Latin-1 comment in ansible.cfg: Ansible reads the file (surrogate_or_strict), so
    its settings reach the host (was: every Ansible inventory refused, "save it as UTF-8")."""
    hosts = _setup(tmp_path, monkeypatch, "", "gpu1 ansible_host=10.0.0.1\n")
    (tmp_path / "ansible.cfg").write_bytes(b"[defaults]\n" + comment + b"\nremote_user = ops\n")
    h = inventory.load(hosts).hosts["gpu1"]
    assert h.user == _ansible_ssh_g(tmp_path, "gpu1", hosts)["user"][0] == "ops"


def test_a_setting_read_with_a_byte_not_utf8_is_refused_naming_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value gpuonboard uses that holds a byte that is not UTF-8 is one sentence naming the line."""
    hosts = _setup(tmp_path, monkeypatch, "", "gpu1 ansible_host=10.0.0.1\n")
    (tmp_path / "ansible.cfg").write_bytes(b"[defaults]\n# caf\xe9\nremote_user = op\xe9\n")
    with pytest.raises(InventoryError, match=r"ansible.cfg, line 3: \[defaults\] remote_user holds a byte"):
        inventory.load(hosts)


@needs_both
@pytest.mark.parametrize(
    ("cfg", "env"), [("[defaults]\nremote_port = 2299.0\n", None), ("", " 2299"), ("", "2299.0 ")]
)
def test_a_port_ansible_reads_as_a_whole_number_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, env: str | None
) -> None:
    """`remote_port = 2299.0` and ANSIBLE_REMOTE_PORT=" 2299": Ansible takes port 2299 (its
    integer type reads a decimal with no fraction, spaces around); was: refused, saying Ansible
    refuses the config."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    if env is not None:
        monkeypatch.setenv("ANSIBLE_REMOTE_PORT", env)
    h = inventory.load(hosts).hosts["gpu1"]
    assert h.port == int(_ansible_ssh_g(tmp_path, "gpu1", hosts)["port"][0]) == 2299


@needs_both
@pytest.mark.parametrize("word", ["n", "f", "nope", "'off'"])
def test_host_key_checking_that_is_no_true_word_is_off_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    """`host_key_checking = n` (or any word that is not a true one): Ansible's non-strict boolean
    reads it as false and its ssh accepts any host key; the host's note names it (was: none)."""
    hosts = _setup(
        tmp_path, monkeypatch, f"[defaults]\nhost_key_checking = {word}\n", "gpu1 ansible_host=10.0.0.1\n"
    )
    h = inventory.load(hosts).hosts["gpu1"]
    assert _ansible_ssh_g(tmp_path, "gpu1", hosts)["stricthostkeychecking"][0] == "false"
    assert h.host_key_note is not None and "ansible.cfg, line 2: `host_key_checking" in h.host_key_note


def test_a_large_config_is_read_and_the_bound_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5 MiB ansible.cfg (long comments) is read (was: refused past 4 MiB); past 16 MiB the
    refusal says the bound."""
    padding = "# " + "x" * 1000 + "\n"
    hosts = _setup(
        tmp_path,
        monkeypatch,
        "[defaults]\nremote_user = ops\n" + padding * 5200,
        "gpu1 ansible_host=10.0.0.1\n",
    )
    assert inventory.load(hosts).hosts["gpu1"].user == "ops"
    (tmp_path / "ansible.cfg").write_text("[defaults]\n" + padding * 17_000)
    with pytest.raises(InventoryError, match=r"ansible.cfg: the Ansible config file is larger than 16 MiB"):
        inventory.load(hosts)


@pytest.mark.parametrize("name", ["team.conf", "ansible.yml", "ansible"])
def test_ansible_config_that_ansible_refuses_by_its_extension_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """ANSIBLE_CONFIG naming a file whose name does not end in .cfg or .ini: Ansible refuses to
    run ("Unsupported configuration file extension"), so does gpuonboard (was: read)."""
    hosts = _setup(tmp_path, monkeypatch, "", "gpu1 ansible_host=10.0.0.1\n")
    (tmp_path / name).write_text("[defaults]\nremote_user = ops\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / name))
    with pytest.raises(
        InventoryError, match=rf"{name}: Ansible reads a config file only when its name ends in"
    ):
        inventory.load(hosts)


def test_the_config_is_found_in_the_current_directory_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no ANSIBLE_CONFIG, ./ansible.cfg of the current directory, else ~/.ansible.cfg; a
    world-writable current directory's is skipped, as Ansible skips it."""
    from gpuonboard.inventory.ansible_cfg import config_vars

    hosts = _setup(tmp_path, monkeypatch, "[defaults]\nremote_user = here\n", "gpu1 ansible_host=10.0.0.1\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".ansible.cfg").write_text("[defaults]\nremote_user = mine\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert inventory.load(hosts).hosts["gpu1"].user == "here"
    (tmp_path / "ansible.cfg").unlink()
    assert inventory.load(hosts).hosts["gpu1"].user == "mine"
    (tmp_path / "ansible.cfg").write_text("[defaults]\nremote_user = here\n")
    tmp_path.chmod(0o777)
    try:
        assert config_vars()["ansible_user"] == "mine"
    finally:
        tmp_path.chmod(0o755)


def test_errors_about_a_config_setting_name_the_config_and_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-F ./missing` in the config's ssh_args and a template in its remote_user: one sentence
    naming ansible.cfg and the line (was: the inventory file, and "write the value itself for
    this host" while pointing at the config)."""
    cfg = "[defaults]\nremote_user = ops\n[ssh_connection]\nssh_args = -F ./missing\n"
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    with pytest.raises(InventoryError, match=r"ansible.cfg, line 4: host 'gpu1' has `-F ./missing` in the"):
        inventory.load(hosts)
    (tmp_path / "ansible.cfg").write_text("[defaults]\nremote_user = {{ lookup('env', 'USER') }}\n")
    with pytest.raises(InventoryError, match=r"ansible.cfg, line 2: remote_user is a Jinja2 template") as err:
        inventory.load(hosts)
    assert str(err.value).endswith("write the value itself there.")


TWO = "[gpus]\ngpu1 ansible_host=10.0.0.1\ngpu2 ansible_host=10.0.0.2{}\n"


@pytest.mark.parametrize("gpu2", ["", " gpuonboard_jump=198.51.100.8"])
def test_an_all_vars_jump_beats_the_config_jump_whatever_other_hosts_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu2: str
) -> None:
    """`[all:vars] gpuonboard_jump` beside the config's `ssh_common_args = -J ...`: the `all`
    vars rank above the config, whether or not another host has its own jump (was: the config's
    jump won only where every host took the `all` one)."""
    ini = TWO.format(gpu2) + "[all:vars]\ngpuonboard_jump=198.51.100.2\n"
    hosts = _setup(tmp_path, monkeypatch, "[ssh_connection]\nssh_common_args = -J 203.0.113.1\n", ini)
    assert inventory.load(hosts).hosts["gpu1"].jump == ("198.51.100.2",)


VENDOR = "name: V\nssh:\n  user: vuser\n  port: 2222\n  key_file: /keys/vendor\n  jump: [198.51.100.9]\n"


@pytest.mark.parametrize("gpu2", ["", " ansible_user=hu ansible_port=2100 gpuonboard_jump=198.51.100.8"])
@pytest.mark.parametrize(
    "cfg",
    [
        "[defaults]\nremote_user = ops\nremote_port = 2299\nprivate_key_file = /keys/cfg\n",
        "[ssh_connection]\nssh_common_args = -p 2299 -l ops -i /keys/cfg -J 203.0.113.1\n",
    ],
)
def test_the_whole_config_sits_below_a_vendor_profile_whatever_other_hosts_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu2: str, cfg: str
) -> None:
    """The Ansible config's remote_user/remote_port/private_key_file and its ssh args' -p/-l/-i/-J
    all sit below a vendor profile, whatever other hosts set (was: the config's settings won
    where another host had its own ansible_user, and its args' -p/-l/-J always won)."""
    ini = TWO.format(gpu2) + "[all:vars]\ngpuonboard_vendor=v2\n"
    hosts = _setup(tmp_path, monkeypatch, cfg, ini)
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "v2.yml").write_text(VENDOR)
    h = inventory.load(hosts).hosts["gpu1"]
    assert (h.user, h.port, h.key_file, h.jump) == ("vuser", 2222, "/keys/vendor", ("198.51.100.9",))


def test_the_all_vars_sit_below_a_vendor_profile_whatever_other_hosts_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[all:vars] ansible_user` stays below a vendor profile for a host even where another host
    has its own ansible_user (was: it beat the vendor then)."""
    ini = TWO.format(" ansible_user=hu") + "[all:vars]\ngpuonboard_vendor=v2\nansible_user=ops\n"
    hosts = _setup(tmp_path, monkeypatch, "", ini)
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "v2.yml").write_text(VENDOR)
    inv = inventory.load(hosts)
    assert (inv.hosts["gpu1"].user, inv.hosts["gpu2"].user) == ("vuser", "hu")


def test_a_vendor_jump_that_beats_the_config_jump_is_named_where_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vendor profile's jump beats the config's `-J`, and an error about it names the vendor
    profile's file, not ansible.cfg (was: the config's jump taken, the vendor's never checked)."""
    ini = TWO.format("") + "[all:vars]\ngpuonboard_vendor=v2\n"
    hosts = _setup(tmp_path, monkeypatch, "[ssh_connection]\nssh_common_args = -J 203.0.113.1\n", ini)
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "v2.yml").write_text(VENDOR.replace("198.51.100.9", "gpu1"))
    with pytest.raises(
        InventoryError, match=r"v2.yml, line \d+: host 'gpu1' lists itself as its own jump host"
    ):
        inventory.load(hosts)


V2 = "name: V\nssh:\n  user: vuser\n  port: 2222\n"


@pytest.mark.parametrize(
    ("cfg", "env", "ini", "expected"),
    [  # (the config's or environment's args set the option first, the inventory's args after)
        (
            "[ssh_connection]\nssh_args = -p 2299\n",
            "",
            "gpu1 ansible_host=192.0.2.10 ansible_ssh_common_args='-p 2100'\n",
            ("vuser", 2100),
        ),
        (
            "[ssh_connection]\nssh_common_args = -p 2299\n",
            "",
            "gpu1 ansible_host=192.0.2.10\n[gpus:vars]\nansible_ssh_extra_args=-p 2100\n",
            ("vuser", 2100),
        ),
        (
            "[ssh_connection]\nssh_common_args = -l cu\n",
            "",
            "gpu1 ansible_host=192.0.2.10 ansible_ssh_extra_args='-l hu'\n",
            ("hu", 2222),
        ),
        (
            "",
            "-C -o ControlMaster=auto -o ControlPersist=60s -l ops",
            "gpu1 ansible_host=192.0.2.10 ansible_ssh_common_args='-l hu'\n",
            ("hu", 2222),
        ),
    ],
)
def test_a_host_or_groups_own_args_beat_the_vendor_where_the_config_set_the_option_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, env: str, ini: str, expected: tuple[str, int]
) -> None:
    """Config < vendor < group/host: a host's or group's own `-p` / `-l` beat the vendor
    profile's port and user even where the Ansible config's (or ANSIBLE_SSH_ARGS') args set the
    same option first; only the first value of each option was kept, so the config's, beaten by
    the vendor, hid the host's and the vendor's port 2222 / user vuser was taken."""
    hosts = _setup(tmp_path, monkeypatch, cfg, f"[gpus]\n{ini}[all:vars]\ngpuonboard_vendor=v\n")
    if env:
        monkeypatch.setenv("ANSIBLE_SSH_ARGS", env)
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "v.yml").write_text(V2)
    h = inventory.load(hosts).hosts["gpu1"]
    assert (h.user, h.port) == expected


@pytest.mark.parametrize(
    ("all_vars", "expected"),
    [
        ("ansible_port=2299", 2222),
        ("ansible_ssh_common_args=-p 2299", 2222),
        ("ansible_ssh_args='-C -p 2299'", 2222),
    ],
)
def test_the_all_vars_args_sit_below_a_vendor_profile_as_its_fields_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, all_vars: str, expected: int
) -> None:
    """One rule for the inventory's `all` vars: `[all:vars] ansible_port=2299` stayed below the
    vendor profile's port 2222 while `[all:vars] ansible_ssh_common_args=-p 2299` beat it; both
    (and ansible_ssh_args) now sit below it, as the Ansible config's do. A group's args still
    beat it."""
    ini = f"[gpus]\ngpu1 ansible_host=192.0.2.10\n[all:vars]\ngpuonboard_vendor=v\n{all_vars}\n"
    hosts = _setup(tmp_path, monkeypatch, "", ini)
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "v.yml").write_text(V2)
    assert inventory.load(hosts).hosts["gpu1"].port == expected
    (tmp_path / "hosts.ini").write_text(ini + "[gpus:vars]\nansible_ssh_common_args=-p 2100\n")
    assert inventory.load(hosts).hosts["gpu1"].port == 2100


def test_an_all_vars_jump_beside_the_all_vars_args_jump_is_named_as_the_user_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[all:vars] gpuonboard_jump` and `ansible_ssh_common_args=-J ...` both in the `all` vars:
    the refusal named them by gpuonboard's internal layer ("defaults field 'jump'"); it names
    the `all` vars."""
    ini = (
        "[gpus]\ngpu1 ansible_host=192.0.2.10\n[all:vars]\ngpuonboard_jump=198.51.100.2\n"
        "ansible_ssh_common_args=-J 203.0.113.1\n"
    )
    hosts = _setup(tmp_path, monkeypatch, "", ini)
    with pytest.raises(InventoryError) as err:
        inventory.load(hosts)
    message = err.value.message
    assert "the `all` vars' field 'jump' and `-J 203.0.113.1` in the ansible_ssh_common_args of the" in (
        message
    ), message
    assert "defaults" not in message, message


def _ansible_refuses_config(tmp_path: Path, hosts: Path) -> bool:
    """Whether `ansible-inventory --list` stops on the config in `tmp_path` (its invalid-value or
    invalid-choice error)."""
    done = subprocess.run(
        [str(Path(ANSIBLE).with_name("ansible-inventory")), "-i", str(hosts), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")},
    )
    return done.returncode != 0 and "AnsibleOptionsError" in done.stderr


@needs_both
@pytest.mark.parametrize(
    ("cfg", "line", "words"),
    [
        ("[defaults]\nforks = lots\n", 2, r"\[defaults\] forks 'lots' is not a whole number"),
        ("[defaults]\nremote_port = '2222'\n", 2, "remote_port \"'2222'\" is not a whole number"),
        ("[defaults]\nremote_user = ops\nremote_port =\n", 3, "remote_port '' is not a whole number"),
        ("[defaults]\ngathering = sometimes\n", 2, "is not one of implicit, explicit, smart"),
        ("[defaults]\ninternal_poll_interval = fast\n", 2, "'fast' is not a number"),
        ("[defaults]\n\n[diff]\ncontext = big\n", 4, r"\[diff\] context 'big' is not a whole number"),
    ],
)
def test_a_setting_ansible_checks_as_it_starts_is_refused_as_ansible_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, line: int, words: str
) -> None:
    """Ansible checks its own settings' values as it starts (`ansible-inventory --list` stops on
    `forks = lots`, a quoted or empty `remote_port`, a `gathering` that is none of its words);
    was: read (the quoted port as port 2222, the empty one as no port), now one sentence naming
    the file and line."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    assert _ansible_refuses_config(tmp_path, hosts)
    with pytest.raises(InventoryError, match=rf"ansible.cfg, line {line}: .*{words}, so Ansible refuses"):
        inventory.load(hosts)


@needs_both
@pytest.mark.parametrize(
    ("cfg", "env"),
    [
        ("[defaults]\nforks = 1e1\ngathering = 'smart'\ninternal_poll_interval = .5\n", {}),
        ("[defaults]\nforks = lots\n", {"ANSIBLE_FORKS": "8"}),
        ("[defaults]\n", {"ANSIBLE_TIMEOUT": ""}),
        # (an empty number in the environment: Ansible's typing fails and takes the default,
        # never reading the file's bad value; was refused naming `forks = lots`)
        ("[defaults]\nforks = lots\n", {"ANSIBLE_FORKS": ""}),
        ("[defaults]\nremote_port = lots\n", {"ANSIBLE_REMOTE_PORT": ""}),
        ("[defaults]\n\n[diff]\ncontext = big\n", {"ANSIBLE_DIFF_CONTEXT": ""}),
    ],
)
def test_a_setting_ansible_reads_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, env: dict[str, str]
) -> None:
    """What Ansible reads is read: `forks = 1e1` (a whole number), a quoted word, the
    environment's value beating the file's bad one, an empty variable (Ansible's default)."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert not _ansible_refuses_config(tmp_path, hosts)
    assert inventory.load(hosts).hosts["gpu1"].address == "10.0.0.1"


@needs_both
@pytest.mark.parametrize(
    ("name", "value", "cfg"),
    [
        ("ANSIBLE_FORKS", "lots", "[defaults]\n"),
        ("ANSIBLE_FORKS", " ", "[defaults]\nforks = 5\n"),
        # (a word from the environment is taken as it is, quotes and blanks too, and an empty one
        # is no choice: was read, its quotes taken off, the empty one skipped)
        ("ANSIBLE_GATHERING", "'smart'", "[defaults]\n"),
        ("ANSIBLE_GATHERING", " smart", "[defaults]\n"),
        ("ANSIBLE_GATHERING", "", "[defaults]\ngathering = smart\n"),
        ("ANSIBLE_HASH_BEHAVIOUR", "", "[defaults]\n"),
    ],
)
def test_a_setting_ansible_checks_is_refused_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, cfg: str
) -> None:
    """ANSIBLE_FORKS=lots stops Ansible as the file's would; named as the variable."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    monkeypatch.setenv(name, value)
    assert _ansible_refuses_config(tmp_path, hosts)
    with pytest.raises(InventoryError, match=rf"^environment variable {name}: its value {value!r} is not"):
        inventory.load(hosts)


def _ansible_connects_locally(tmp_path: Path, host: str, hosts: Path) -> bool:
    """Whether Ansible runs `host`'s tasks on this machine (`-vvv`: ESTABLISH LOCAL CONNECTION);
    its ssh is /bin/false, so nothing is dialled."""
    env = {**os.environ, "ANSIBLE_SSH_EXECUTABLE": "/bin/false", "ANSIBLE_SSH_RETRIES": "0"}
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-tmp")
    done = subprocess.run(
        [ANSIBLE, host, "-i", str(hosts), "-m", "ping", "-vvv"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    return "ESTABLISH LOCAL CONNECTION" in done.stdout


@needs_both
@pytest.mark.parametrize(
    ("ini", "local"),
    [
        ("gpu1 ansible_host=10.0.0.1\n", True),
        ("gpu1 ansible_host=10.0.0.1 ansible_connection=ssh\n", False),
    ],
)
def test_the_configs_transport_is_how_its_hosts_are_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ini: str, local: bool
) -> None:
    """`transport = local` in ansible.cfg runs every host without its own ansible_connection on
    this machine, as Ansible does (was: not read, so such a host was dialled over SSH)."""
    hosts = _setup(tmp_path, monkeypatch, "[defaults]\ntransport = local\n", ini)
    assert _ansible_connects_locally(tmp_path, "gpu1", hosts) is local
    assert inventory.load(hosts).hosts["gpu1"].connection == ("local" if local else "ssh")


@pytest.mark.parametrize(
    ("cfg", "env", "outcome"),
    [
        ("[defaults]\ntransport = paramiko\n", None, "ssh"),
        ("[defaults]\ntransport = ansible.builtin.ssh\n", None, "ssh"),
        ("[defaults]\ntransport = local\n", "ssh", "ssh"),
        ("[defaults]\ntransport = community.docker.docker\n", None, "refused"),
    ],
)
def test_a_transport_that_is_not_ssh_or_local_is_refused_naming_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str, env: str | None, outcome: str
) -> None:
    """paramiko (and `ansible.builtin.ssh`) reach the host over SSH; ANSIBLE_TRANSPORT beats the
    file's; a transport that is not SSH (docker exec) is refused in one sentence naming the
    config (was: dialled over SSH, at the container's name)."""
    hosts = _setup(tmp_path, monkeypatch, cfg, "gpu1 ansible_host=10.0.0.1\n")
    if env is not None:
        monkeypatch.setenv("ANSIBLE_TRANSPORT", env)
    if outcome == "refused":
        inv = inventory.load(hosts)  # (refused when a selection that connects includes the host)
        with pytest.raises(
            InventoryError,
            match=r"ansible.cfg, line 2: host 'gpu1' is reached by Ansible's 'community.docker.docker'"
            r" connection \(the Ansible config's `transport`\).* set `transport = ssh` in that config\.$",
        ):
            inv.check_connections(inv.select(["gpu1"]))
    else:
        assert inventory.load(hosts).hosts["gpu1"].connection == outcome
