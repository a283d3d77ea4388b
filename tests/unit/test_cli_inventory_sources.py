"""Inventory sources and inputs through the real command line (a subprocess, as a user runs
it): `--inventory ansible-inventory:SOURCE` reaches Ansible with its prefix, a relative SOURCE
taken from the project folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [
    sys.executable,
    "-c",
    "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()",
]
ANSIBLE = shutil.which("ansible-inventory") or str(Path(sys.executable).parent / "ansible-inventory")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cwd / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    env.pop("GPUONBOARD_DEBUG", None)
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not Path(ANSIBLE).exists(), reason="ansible-core is not installed")
@pytest.mark.parametrize("flag", ["-i", "--inventory"])
def test_ansible_inventory_source_works_from_the_command_line(tmp_path: Path, flag: str) -> None:
    (tmp_path / "inventory").mkdir()
    hosts = tmp_path / "inventory" / "hosts.ini"
    hosts.write_text("[gpus]\ngpu1 ansible_host=127.0.0.9 ansible_port=2222\n")
    r = _run(tmp_path, "inventory", "--json", flag, "ansible-inventory:inventory/hosts.ini")
    assert r.returncode == 0, r.stderr
    assert '"gpu1"' in r.stdout and "127.0.0.9" in r.stdout, r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(not Path(ANSIBLE).exists(), reason="ansible-core is not installed")
def test_ansible_inventory_source_ansible_cannot_read_is_exit_2_naming_it(tmp_path: Path) -> None:
    r = _run(tmp_path, "inventory", "-i", "ansible-inventory:nowhere.ini")
    assert r.returncode == 2, r.stderr
    source = f"ansible-inventory:{tmp_path}/nowhere.ini"
    assert r.stderr.startswith(f"error: {source}: ansible-inventory --list failed"), r.stderr
    assert "inventory not found" not in r.stderr


def test_an_ansible_vault_value_is_named_with_what_to_do_never_printed(tmp_path: Path) -> None:
    """A YAML inventory holding an Ansible Vault value (`!vault |`, the form `ansible-vault
    encrypt_string` prints): gpuonboard does not decrypt it; it said "invalid YAML: could not
    determine a constructor for the tag '!vault'; check the indentation, quotes and brackets",
    sending a newcomer after a syntax error that is not there."""
    (tmp_path / "inventory").mkdir()
    secret = "62313365396662343061393464336163383764373764613633653634306231386433626436623361"
    (tmp_path / "inventory" / "hosts.yml").write_text(
        "all:\n  hosts:\n    gpu1:\n      ansible_host: 127.0.0.9\n"
        f"      ansible_become_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n          {secret}\n"
    )
    r = _run(tmp_path, "inventory", "-i", "inventory/hosts.yml")
    assert r.returncode == 2, r.stderr
    assert "line 5: an Ansible Vault value (!vault), which gpuonboard does not decrypt" in r.stderr, r.stderr
    assert "ansible-inventory:FILE" in r.stderr and "indentation" not in r.stderr
    assert secret not in r.stderr + r.stdout and "Traceback" not in r.stderr
