"""A `key_file` that is not there is an input error (exit 2) raised before any connection, in one
sentence naming the inventory file and line, the host, the field and the missing path; it was
reported per host as unreachable (exit 3) after connecting."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import ExitCode, InventoryError

ADVICE = "fix the path, or remove key_file to log in with the SSH agent and the default keys."


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "no-such-ssh-config"))


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
                "GPUONBOARD_SSH_CONFIG": str(tmp_path / "none"),
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
