"""Inventory files as editors on other systems save them: a UTF-8 byte-order mark (Notepad),
Windows line endings, Latin-1/GBK bytes, UTF-16 (PowerShell's `>`), in YAML and in Ansible INI;
and an INI vars line without '=' whose value (a password) must not be echoed in the error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError

BOM = b"\xef\xbb\xbf"
CLI = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "no-such-ssh-config"))


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
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert str(info.value) == (
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
        env={"PATH": "/usr/bin:/bin", "GPUONBOARD_SSH_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "line 2: byte 0xe9 is not UTF-8 text" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_utf16_file_says_to_save_it_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_bytes("hosts:\n  h1: {address: 10.0.0.1}\n".encode("utf-16"))
    with pytest.raises(InventoryError) as info:
        inventory.load(path)
    assert str(info.value) == (
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
