"""The Ansible config's `[inventory] enable_plugins` and `yaml_valid_extensions` decide what of
an inventory directory Ansible reads: a source no enabled plugin reads is skipped, the hosts file
too, as ansible-core's inventory manager does (each layout checked against `ansible-inventory
--graph` where ansible-core is installed; the hosts given are what ansible-core 2.19 read)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError

ANSIBLE_INVENTORY_EXE = Path(sys.executable).with_name("ansible-inventory")
HOSTS_INI = "[gpu]\ngpu1 ansible_host=10.0.0.1\n"
HOSTS_YAML = "all:\n  hosts:\n    gpu1:\n      ansible_host: 10.0.0.1\n"
SCRIPT = '#!/bin/sh\necho \'{"gpu": ["gpu9"]}\'\n'

# (ansible.cfg, hosts file name and text, the files beside it, the hosts Ansible reads)
LAYOUTS = {
    "script-not-enabled": (
        "[inventory]\nenable_plugins = host_list, yaml, ini\n",
        ("hosts", HOSTS_INI),
        {"zz.sh": SCRIPT},
        ["gpu1"],
    ),
    "json-not-a-yaml-extension": (
        "[defaults]\nyaml_valid_extensions = .yml, .yaml\n",
        ("hosts", HOSTS_INI),
        {"extra.json": '{"gpu": {"hosts": {"gpu2": {}}}}\n'},
        ["gpu1"],
    ),
    "ini-only-named-by-collection": (
        "[inventory]\nenable_plugins = ansible.builtin.ini\n",
        ("hosts", HOSTS_INI),
        {"extra.json": '{"gpu": {"hosts": {"gpu2": {}}}}\n'},
        ["gpu1"],
    ),
    "plugin-config-without-auto": (
        "[inventory]\nenable_plugins = host_list, script, yaml, ini, toml\n",
        ("hosts.yml", HOSTS_YAML),
        {"zz_aws.yml": "plugin: amazon.aws.aws_ec2\nregions: [us-east-1]\n"},
        ["gpu1"],
    ),
    "hosts-yml-not-a-yaml-extension": (
        "[defaults]\nyaml_valid_extensions = .yaml\n",
        ("hosts.yml", HOSTS_YAML),
        {},
        [],
    ),
    "ini-not-enabled": ("[inventory]\nenable_plugins = yaml\n", ("hosts", HOSTS_INI), {}, []),
    "ini-not-enabled-yaml-beside": (
        "[defaults]\nyaml_valid_extensions = .yml, .yaml, .inv\n[inventory]\nenable_plugins = yaml\n",
        ("hosts", HOSTS_INI),
        {"zz.inv": "gpu:\n  hosts:\n    gpu2:\n"},
        ["gpu2"],
    ),
    "default-runs-the-script": ("[defaults]\n", ("hosts", HOSTS_INI), {"zz.sh": SCRIPT}, ["gpu1", "gpu9"]),
}


def _layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    cfg, (hosts_name, hosts_text), beside, _ = LAYOUTS[name]
    (tmp_path / "ansible.cfg").write_text(cfg)
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    for var in ("ANSIBLE_INVENTORY_ENABLED", "ANSIBLE_YAML_FILENAME_EXT", "ANSIBLE_INVENTORY_PLUGIN_EXTS"):
        monkeypatch.delenv(var, raising=False)
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / hosts_name).write_text(hosts_text)
    for file, text in beside.items():
        (inv / file).write_text(text)
        if text.startswith("#!"):
            (inv / file).chmod(0o755)
    return inv


def _ansible_hosts(inv: Path) -> list[str]:
    done = subprocess.run(
        [str(ANSIBLE_INVENTORY_EXE), "-i", str(inv), "--graph"], capture_output=True, text=True, timeout=120
    )
    return sorted(set(re.findall(r"\bgpu\d\b", done.stdout)))


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_what_ansible_reads_of_a_directory_follows_its_enabled_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Each layout: gpuonboard loads the hosts file alone where Ansible reads only it, and
    refuses where Ansible reads another source too or no host of the hosts file. Before, the
    config's plugin lists were not read: a script Ansible never runs, a `.json` its yaml plugin
    skips, a plugin's configuration no enabled plugin runs were refused as sources Ansible reads
    too, and an INI hosts file without the ini plugin (or a `hosts.yml` outside
    yaml_valid_extensions) was loaded where Ansible reads no host from it."""
    inv = _layout(tmp_path, monkeypatch, name)
    expected = LAYOUTS[name][3]
    if ANSIBLE_INVENTORY_EXE.exists():
        assert _ansible_hosts(inv) == expected
    (tmp_path / "ssh_config").write_text("")
    if expected == ["gpu1"]:
        assert list(inventory.load(inv, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]
        return
    with pytest.raises(InventoryError) as err:
        inventory.load(inv, ssh_config=tmp_path / "ssh_config")
    said = str(err.value)
    if "gpu1" not in expected:
        assert "Ansible reads no host from this" in said, said
    else:
        assert "Ansible reads this file too" in said, said


def test_the_hosts_file_unread_names_the_setting_and_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An INI hosts file under `enable_plugins = yaml`: one sentence naming the setting, its
    file and line, and what to do."""
    inv = _layout(tmp_path, monkeypatch, "ini-not-enabled")
    with pytest.raises(InventoryError) as err:
        inventory.load(inv, ssh_config=None)
    assert str(err.value) == (
        f"{inv / 'hosts'}: Ansible reads no host from this INI inventory, as the Ansible config enables"
        f" the inventory plugins yaml ([inventory] enable_plugins at {tmp_path / 'ansible.cfg'}, line 2),"
        " not ini; fix the config, or pass --inventory ansible-inventory:SOURCE to read what Ansible reads."
    )


def test_the_environment_beats_the_configs_plugin_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ANSIBLE_INVENTORY_ENABLED=ini,script beats the file's `enable_plugins = yaml` (Ansible's
    order: the environment first): the INI hosts file is read again."""
    inv = _layout(tmp_path, monkeypatch, "ini-not-enabled")
    monkeypatch.setenv("ANSIBLE_INVENTORY_ENABLED", "ini,script")
    (tmp_path / "ssh_config").write_text("")
    if ANSIBLE_INVENTORY_EXE.exists():
        assert _ansible_hosts(inv) == ["gpu1"]
    assert list(inventory.load(inv, ssh_config=tmp_path / "ssh_config").hosts) == ["gpu1"]
