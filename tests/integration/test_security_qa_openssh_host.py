"""An inventory address is never run as a shell command on this machine by OpenSSH.

Through a jump host, OpenSSH runs `ssh -W '[%h]:%p' HOP` through sh (ProxyJump builds that
command itself, and our ProxyCommand for a project path with a space is the same), %h being
the target's HostName: an address `x'$(touch FILE)'` ran `touch` here at the first rsync. The
config for rsync is now refused for such an address, in one sentence. A real `ssh` runs the
config when one is written; the jump host is 127.0.0.1 port 1 (nothing listens there).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.connection import openssh
from gpuonboard.inventory import Host, Inventory


def _write(project: Path, address: str) -> tuple[Path, str] | str:
    known = project / "known_hosts"
    known.write_text("")
    hops = {"bastion": Host(name="bastion", address="127.0.0.1", port=1, user="root")}
    target = Host(name="inner", address=address, port=22, user="root", jump=("bastion",))
    inventory = Inventory(source=project, hosts={**hops, "inner": target}, groups={}, vendors={})
    return openssh.write_for(target, inventory, known, project)


@pytest.mark.parametrize("dirname", ["plain", "My Projects"])  # ProxyJump; our ProxyCommand
def test_an_address_with_a_quote_and_a_command_is_refused_not_run(tmp_path: Path, dirname: str) -> None:
    project = tmp_path / dirname
    project.mkdir()
    marker = tmp_path / "ran"
    address = f"x'$(touch {marker})'"
    written = _write(project, address)
    if not isinstance(written, str):  # (without the check: what ssh, as rsync runs it, does)
        config, alias = written
        subprocess.run(
            ["ssh", "-F", str(config), alias, "true"], capture_output=True, timeout=20, check=False
        )
    assert not marker.exists(), "the inventory address ran as a command on this machine"
    assert written == (
        f"host 'inner': address {address!r} is not a host name or IP address (it holds \"'\", which"
        " OpenSSH, used by rsync, would pass to a shell); fix its 'address' in the inventory"
    )
    ssh_dir = project / ".gpuonboard" / "ssh"
    assert not ssh_dir.exists() or not list(ssh_dir.iterdir())  # (no config written)


@pytest.mark.parametrize(
    "address", ["203.0.113.10", "gpu-1.example.cn", "2001:db8::7", "fe80::1%eth0", "my_host", "h100-节点1"]
)
def test_host_names_and_ip_addresses_are_written(tmp_path: Path, address: str) -> None:
    written = _write(tmp_path, address)
    assert not isinstance(written, str), written
    assert f'  HostName "{address.replace("%", "%%")}"' in written[0].read_text()
