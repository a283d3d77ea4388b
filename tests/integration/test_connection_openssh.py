"""What OpenSSH %-expands in the config gpuonboard writes (HostName, IdentityFile,
UserKnownHostsFile) and on the command line of the master connection (ControlPath), checked
with the real ssh: an IPv6 zone (`fe80::1%eth0`) or a `%` in a path arrives as written, and
what ssh does not expand (User) is left as it is."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import sshd_on_ipv6

from gpuonboard import transfer
from gpuonboard.connection import openssh
from gpuonboard.inventory import Host, Inventory
from gpuonboard.testing import TestHost, TestHostPool


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost, int]]:
    """A test host on 127.x, and its sshd (same key, users, PATH) also on [::1]:PORT."""
    base = tmp_path_factory.mktemp("oqa-pct")
    with TestHostPool(base, subnet=250 - os.getpid() % 9) as pool:
        h = pool.add("pct")
        with socket.socket(socket.AF_INET6) as s:
            try:
                s.bind(("::1", 0))
            except OSError:
                pytest.skip("no IPv6 loopback here")
            port = int(s.getsockname()[1])
        with sshd_on_ipv6(h, port):
            yield pool, h, port


def _ssh(config: Path, alias: str, *opts: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-F", str(config), *opts, alias, "echo", "hi"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _resolved(config: Path, alias: str, *opts: str) -> dict[str, str]:
    """`ssh -G`: the settings ssh would use (nothing is connected)."""
    r = subprocess.run(
        ["ssh", "-G", "-F", str(config), *opts, alias],
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return {k: v for k, _, v in (line.partition(" ") for line in r.stdout.splitlines())}


def _key_copy(pool: TestHostPool, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    key = where / "id"
    key.write_bytes(pool.client_key.read_bytes())
    key.chmod(0o600)
    return key


def test_an_ipv6_zone_and_percent_paths_reach_the_host(
    box: tuple[TestHostPool, TestHost, int], tmp_path: Path
) -> None:
    pool, h, port = box
    # `%1`: the zone (scope id 1, the loopback); `%d` in the key's and the known_hosts' dirs
    key = _key_copy(pool, tmp_path / "keys %d")
    known = tmp_path / "pins 100%h" / "known_hosts"
    known.parent.mkdir()
    known.write_text(f"[::1%1]:{port} {h.host_key_pub}\n")
    host = Host(name="zone", address="::1%1", port=port, user="root", key_file=str(key))
    text, alias = openssh.config_text(host, None, known)
    config = openssh.write_config(tmp_path, host, text)
    got = _resolved(config, alias)
    assert (got["hostname"], got["userknownhostsfile"]) == ("::1%1", str(known))
    r = _ssh(config, alias)
    assert (r.returncode, r.stdout) == (0, "hi\n"), r.stderr
    # still strict: another key under that name is refused
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=15)
    known.write_text(f"[::1%1]:{port} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n")
    r = _ssh(config, alias)
    assert r.returncode != 0 and "Host key verification failed" in r.stderr


def test_a_link_local_hostname_and_a_user_with_a_percent_are_kept_as_written(tmp_path: Path) -> None:
    host = Host(name="ll", address="fe80::1%eth0", port=22, user="gpu%user", key_file=str(tmp_path / "k"))
    text, alias = openssh.config_text(host, None, tmp_path / "known_hosts")
    got = _resolved(openssh.write_config(tmp_path, host, text), alias)
    assert (got["hostname"], got["user"]) == ("fe80::1%eth0", "gpu%user")  # (User: not %-expanded)


@pytest.mark.parametrize("prefix", ["gpob-cm-qa %d ", "gpob-cm-qa'"])
def test_the_master_starts_in_a_control_dir_with_a_space_a_percent_or_a_quote(
    box: tuple[TestHostPool, TestHost, int], tmp_path: Path, prefix: str
) -> None:
    """$TMPDIR may hold a space or a `%`: the master then never started (every rsync made its
    own connection), or a `%d` put its socket outside the private dir."""
    pool, h, _port = box
    known = tmp_path / "known_hosts"
    known.write_text(h.known_hosts_line() + "\n")
    host = Host(name="pct", address=h.address, port=h.port, user="root", key_file=str(pool.client_key))
    text, alias = openssh.config_text(host, None, known)
    config = openssh.write_config(tmp_path, host, text)
    control = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # (short: a socket path holds ~100 B)
    try:
        opts = transfer.start_master(config, alias, control, persist=5)
        assert opts, "the master did not start"
        assert len(os.listdir(control)) == 1  # its socket, in the private dir
        assert _ssh(config, alias, *opts, "-o", "ControlMaster=no").stdout == "hi\n"
        # rsync's -e line (its own quoting) reaches the same master
        src, dest = tmp_path / "src", h.home / f"oqa-{control.name}"
        src.mkdir()
        (src / "f").write_bytes(b"data")
        dest.mkdir()
        argv = transfer.rsync_argv(src, str(dest), config, alias, ssh_options=opts)
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert r.returncode == 0, r.stderr
        assert (dest / "f").read_bytes() == b"data"
        check = subprocess.run(
            ["ssh", "-F", str(config), *opts, "-O", "check", alias],
            capture_output=True,
            timeout=15,
            check=False,
        )
        assert check.returncode == 0, check.stderr
        pid = int(re.search(rb"pid=(\d+)", check.stderr).group(1))  # type: ignore[union-attr]
        # (the master answers `-O exit` before it exits: stop_master waits for the process)
        transfer.stop_master(config, alias, opts)
        assert _ended(pid)
        assert os.listdir(control) == []
    finally:
        shutil.rmtree(control, ignore_errors=True)


def _ended(pid: int) -> bool:
    """Process `pid` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        return b") Z" in Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("control", ["/tmp/gpob-cm-a%d", "/tmp/gpob cm %C", "/tmp/gpob-cm-plain"])
def test_the_control_path_ssh_resolves_is_inside_the_control_dir(tmp_path: Path, control: str) -> None:
    """(`%d` in $TMPDIR put the socket under the home directory: outside the private dir.)"""
    host = Host(name="cp", address="127.0.0.1", user="root")
    text, alias = openssh.config_text(host, None, tmp_path / "known_hosts")
    config = openssh.write_config(tmp_path, host, text)
    opts = transfer.master_options(Path(control))
    assert Path(_resolved(config, alias, *opts)["controlpath"]).parent == Path(control)


# An inventory address is never run as a shell command on this machine by OpenSSH.
#
# Through a jump host, OpenSSH runs `ssh -W '[%h]:%p' HOP` through sh (ProxyJump builds that
# command itself, and our ProxyCommand for a project path with a space is the same), %h being
# the target's HostName: an address `x'$(touch FILE)'` ran `touch` here at the first rsync. The
# config for rsync is now refused for such an address, in one sentence. A real `ssh` runs the
# config when one is written; the jump host is 127.0.0.1 port 1 (nothing listens there).


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
