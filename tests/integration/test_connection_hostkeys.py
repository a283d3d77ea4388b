"""Host keys against a real sshd holding several keys (ed25519, ECDSA, RSA), `@revoked` and
`@cert-authority` lines in our known_hosts, and a pin of a key that is not the one paramiko
would negotiate first; the OpenSSH side (rsync's transport) is checked for the same verdict."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import sshd_on_ipv6

from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner, openssh
from gpuonboard.errors import HostKeyError
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.hosts import fingerprint


@pytest.fixture(scope="module")
def multikey(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestHostPool, TestHost, dict[str, str]]]:
    """A test host whose sshd holds an ed25519, an ECDSA and an RSA host key (as stock sshd
    does), with the public keys ("type base64") by type."""
    base = tmp_path_factory.mktemp("sshqa-keys")
    with TestHostPool(base, subnet=240 - os.getpid() % 10) as pool:
        h = pool.add("multi")
        h.stop()
        keys = {"ed25519": h.host_key_pub}
        extra = []
        for kind in ("ecdsa", "rsa"):
            path = h.dir / f"ssh_host_{kind}_key"
            subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)
            keys[kind] = " ".join(Path(f"{path}.pub").read_text().split()[:2])
            extra.append(f'HostKey "{path}"')
        config = h.config_path.read_text()
        h.config_path.write_text(config.replace("HostKey ", "\n".join(extra) + "\nHostKey ", 1))
        h.start()
        yield pool, h, keys


def _host(pool: TestHostPool, h: TestHost, **extra: object) -> Host:
    return dataclasses.replace(
        Host(name=h.name, address=h.address, port=h.port, user="root", key_file=str(pool.client_key)),
        **extra,  # type: ignore[arg-type]
    )


def _connect(host: Host, known: Path, trust: bool = False) -> str | None:
    runner = open_runner(
        host, ConnectOptions(known_hosts=known, trust_new_hosts=trust, retries=0), KnownHosts(known)
    )
    try:
        assert runner.run("echo hi").stdout == "hi\n"
        return runner.fingerprint
    finally:
        runner.close()


def _openssh_ok(host: Host, known: Path, tmp: Path) -> bool:
    """Whether real OpenSSH, with the ssh_config the rsync path uses, logs in."""
    text, alias = openssh.config_text(host, None, known)
    cfg = tmp / "ssh.config"
    cfg.write_text(text)
    r = subprocess.run(["ssh", "-F", str(cfg), alias, "true"], capture_output=True, timeout=30, check=False)
    return r.returncode == 0


def test_a_recorded_rsa_key_of_a_host_with_several_keys_is_accepted_as_openssh_does(
    multikey: tuple[TestHostPool, TestHost, dict[str, str]], tmp_path: Path
) -> None:
    pool, h, keys = multikey
    host = _host(pool, h)
    for kind in ("rsa", "ecdsa"):
        known = tmp_path / f"known_{kind}"
        known.write_text(f"{h.address} {keys[kind]}\n")
        # OpenSSH presents the recorded type; paramiko negotiated ed25519 and cried MITM
        assert _openssh_ok(host, known, tmp_path)
        assert _connect(host, known) == fingerprint(keys[kind])
        assert known.read_text() == f"{h.address} {keys[kind]}\n"  # nothing added
        # the same line hashed (`ssh-keygen -H`, HashKnownHosts): the same verdict on both sides
        subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True, capture_output=True)
        assert known.read_text().startswith("|1|")
        assert _openssh_ok(host, known, tmp_path)
        assert _connect(host, known) == fingerprint(keys[kind])


def test_a_pin_of_the_ecdsa_or_rsa_key_is_found_and_recorded(
    multikey: tuple[TestHostPool, TestHost, dict[str, str]], tmp_path: Path
) -> None:
    pool, h, keys = multikey
    for kind in ("ecdsa", "rsa"):
        known = tmp_path / f"known_{kind}"
        pinned = _host(pool, h, host_key=fingerprint(keys[kind]))
        for _ in range(2):  # the second run: the recorded pinned key, no new line
            assert _connect(pinned, known) == fingerprint(keys[kind])
            assert known.read_text() == f"{h.address} {keys[kind]}\n"
        assert _openssh_ok(pinned, known, tmp_path)
    # a pin that matches none of the host's keys: the first refusal, nothing recorded
    known = tmp_path / "known_bogus"
    bogus = "SHA256:" + "A" * 43
    with pytest.raises(HostKeyError) as err:
        _connect(_host(pool, h, host_key=bogus), known)
    assert str(err.value) == (
        f"host multi ({h.address}) presented host key {fingerprint(keys['ed25519'])}, but the inventory"
        f" pins {bogus}; the connection was refused (possible man-in-the-middle)."
    )
    assert not known.exists()


def test_a_revoked_key_is_refused_and_marker_lines_keep_the_file_readable(
    multikey: tuple[TestHostPool, TestHost, dict[str, str]], tmp_path: Path
) -> None:
    pool, h, keys = multikey
    host = _host(pool, h)
    other = pool.add("plain")
    known = tmp_path / "known_hosts"
    known.write_text(
        f"@cert-authority *.example.com {keys['rsa']}\n"
        f"@revoked * {keys['ed25519']}\n"
        f"{other.known_hosts_line()}\n"
    )
    # the file stays readable (it was refused whole: every host with it)
    assert _connect(_host(pool, other), known) == other.fingerprint
    # the revoked key is never accepted, not even with --trust-new-hosts, and never recorded
    before = known.read_text()
    with pytest.raises(HostKeyError) as err:
        _connect(host, known, trust=True)
    assert str(err.value) == (
        f"host multi ({h.address}) presented host key {fingerprint(keys['ed25519'])}, which {known}"
        " marks @revoked; the connection was refused. A revoked key may be in an attacker's hands:"
        " ask the vendor for the server's new key."
    )
    assert known.read_text() == before
    # ... nor when the same key is recorded as well (OpenSSH refuses it too)
    known.write_text(before + f"{h.address} {keys['ed25519']}\n")
    assert not _openssh_ok(host, known, tmp_path)
    with pytest.raises(HostKeyError, match="marks @revoked"):
        _connect(host, known)


def test_an_unreadable_revoked_line_is_an_error_not_dropped(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("@revoked * ssh-ed25519 not-base64!\n")
    with pytest.raises(HostKeyError, match="cannot read the known_hosts file"):
        KnownHosts(known)


def test_a_file_of_secrets_given_as_known_hosts_is_never_echoed(tmp_path: Path) -> None:
    """A mistyped --known-hosts (a credentials file) was refused with its line quoted on stderr:
    the error names the file and the line number, never the text."""
    secrets = tmp_path / "credentials"
    secrets.write_text("[default]\npassword: hunter2-very-secret token ghp_abcdef\n")
    with pytest.raises(HostKeyError) as err:
        KnownHosts(secrets)
    message = str(err.value)
    assert "hunter2" not in message and "ghp_" not in message, message
    assert message.startswith(f"{secrets}: cannot read the known_hosts file (line ")
    assert "not shown" in message


# A host reached by IPv6 on a port other than 22: its key is recorded in the `[addr]:port`
# form OpenSSH uses, so the rsync path (OpenSSH, same known_hosts, strict) accepts what the
# paramiko connection recorded, and both refuse a changed key.


def _free_v6_port() -> int:
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def v6(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost, int]]:
    """A test host's sshd (its key, users, PATH) listening on [::1]:PORT instead."""
    try:
        _free_v6_port()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    base = tmp_path_factory.mktemp("sshqa-v6")
    with TestHostPool(base, subnet=210 - os.getpid() % 10) as pool:
        h = pool.add("six")
        h.stop()
        port = _free_v6_port()
        with sshd_on_ipv6(h, port):
            yield pool, h, port


def test_ipv6_and_a_port_record_the_openssh_form_and_both_sides_agree(
    v6: tuple[TestHostPool, TestHost, int], tmp_path: Path
) -> None:
    pool, h, port = v6
    known = tmp_path / "known_hosts"
    host = Host(name="six", address="::1", port=port, user="root", key_file=str(pool.client_key))

    def connect(trust: bool = False) -> str | None:
        opts = ConnectOptions(known_hosts=known, trust_new_hosts=trust, retries=0)
        runner = open_runner(host, opts, KnownHosts(known))
        try:
            assert runner.run("echo six").stdout == "six\n"
            return runner.fingerprint
        finally:
            runner.close()

    def openssh_rc() -> int:
        text, alias = openssh.config_text(host, None, known)
        cfg = tmp_path / "ssh.config"
        cfg.write_text(text)
        return subprocess.run(
            ["ssh", "-F", str(cfg), alias, "true"], capture_output=True, timeout=30
        ).returncode

    with pytest.raises(HostKeyError, match="unknown host key"):
        connect()
    assert connect(trust=True) == h.fingerprint
    assert known.read_text() == f"[::1]:{port} {h.host_key_pub}\n"
    assert connect() == h.fingerprint  # recorded: no trust flag needed any more
    assert openssh_rc() == 0
    # a changed key under that name: refused on both sides
    other = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True
    )
    assert other.returncode == 0
    changed = " ".join((tmp_path / "k.pub").read_text().split()[:2])
    known.write_text(f"[::1]:{port} {changed}\n")
    with pytest.raises(HostKeyError, match="DIFFERENT host key"):
        connect(trust=True)
    assert openssh_rc() != 0


def test_a_refusal_names_the_users_lax_setting_it_did_not_follow(
    multikey: tuple[TestHostPool, TestHost, dict[str, str]], tmp_path: Path
) -> None:
    """A host whose SSH config (or Ansible args) says `StrictHostKeyChecking no`: `ssh HOST`
    would connect; gpuonboard still refuses the unknown key and says which setting it did not
    follow (was: the same refusal as without it)."""
    pool, h, _ = multikey
    note = "/home/u/.ssh/config: `StrictHostKeyChecking no` for this host"
    with pytest.raises(HostKeyError) as err:
        _connect(_host(pool, h, host_key_note=note), tmp_path / "known_hosts")
    assert "unknown host key" in err.value.message
    assert f"(gpuonboard does not follow {note}, which has ssh accept" in err.value.message
    assert not (tmp_path / "known_hosts").exists() or not (tmp_path / "known_hosts").read_text()
