"""A login that cannot work is one sentence naming the host and what to do, never a traceback,
an "internal error" or a network advice: a key file with a passphrase and no agent, a public
key given as key_file, a port that accepts TCP but speaks no SSH, a name that does not resolve."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import Project

from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
from gpuonboard.errors import ConnectError
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHost, TestHostPool

PASSPHRASE = "s3cret-pass-phrase"


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost, Path]]:
    """A test host that also accepts a passphrase-protected key (returned with the pool)."""
    base = tmp_path_factory.mktemp("sshqa-login")
    with TestHostPool(base, subnet=230 - os.getpid() % 10) as pool:
        h = pool.add("box")
        enc = base / "id_encrypted"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(enc)], check=True)
        with pool.authorized_keys.open("a") as f:
            f.write(Path(f"{enc}.pub").read_text())
        yield pool, h, enc


def _connect(host: Host, known: Path) -> None:
    open_runner(host, ConnectOptions(known_hosts=known, retries=0), KnownHosts(known)).close()


def _host(h: TestHost, key_file: str, **extra: object) -> Host:
    return Host(
        name=h.name,
        address=h.address,
        port=h.port,
        user="root",
        key_file=key_file,
        host_key=h.fingerprint,
        **extra,  # type: ignore[arg-type]
    )


def test_a_key_with_a_passphrase_and_no_agent_is_one_sentence_exit_3(
    box: tuple[TestHostPool, TestHost, Path], tmp_path: Path
) -> None:
    pool, h, enc = box
    inv = tmp_path / "inventory" / "hosts.yml"
    inv.parent.mkdir()
    entry = {
        "address": h.address,
        "port": h.port,
        "user": "root",
        "key_file": str(enc),
        "host_key": h.fingerprint,
    }
    inv.write_text(yaml.safe_dump({"hosts": {"box": entry}}))
    book = tmp_path / "noop.yml"
    book.write_text(
        yaml.safe_dump({"name": "noop", "steps": [{"step": "command", "args": {"argv": ["true"]}}]})
    )
    env = {k: v for k, v in Project.env().items() if k != "SSH_AUTH_SOCK"}
    r = subprocess.run(
        [*Project.cli_argv(), "provision", "--playbook", str(book), "--connect-retries", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert r.returncode == 3, r.stdout + r.stderr
    summary = json.loads((tmp_path / "reports" / "latest" / "summary.json").read_text())
    assert summary["hosts"][0]["msg"] == (
        f"host box: key file {enc} is protected by a passphrase, and no SSH agent offered it; load it"
        f" into your agent (ssh-add {enc}, with SSH_AUTH_SOCK set) and rerun (gpuonboard never asks"
        " for a passphrase)."
    )
    assert "Traceback" not in r.stderr and "internal error" not in r.stdout + r.stderr
    assert PASSPHRASE not in r.stdout + r.stderr


def test_a_public_key_given_as_key_file_is_named_not_a_network_problem(
    box: tuple[TestHostPool, TestHost, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, h, _ = box
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    pub = f"{pool.client_key}.pub"
    with pytest.raises(ConnectError) as err:
        _connect(_host(h, pub), tmp_path / "known")
    assert str(err.value) == (
        f"host box: key file {pub} is not a private key that can be read (it holds a public key);"
        " key_file must name the private key (e.g. ~/.ssh/id_ed25519, not the .pub file)."
    )
    assert not getattr(err.value, "retryable", False)  # no retries with backoff for a wrong file


def test_a_port_that_speaks_no_ssh_times_out_with_its_own_words(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts TCP (backlog), never sends a banner
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        host = Host(name="mute", address="127.0.0.1", port=port, user="root", connect_timeout=1)
        with pytest.raises(ConnectError) as err:
            _connect(host, tmp_path / "known")
    # (paramiko words it "Error reading SSH protocol banner" or "No existing session" by timing:
    # one sentence for both)
    assert str(err.value) == (
        f"host mute (127.0.0.1:{port}) is unreachable: the SSH handshake did not finish within 1 s"
        " (no SSH greeting: is this port an SSH server?); check the address, port and firewall, or"
        " whether the server is up."
    )


CHECK_DNS = """
import sys
import threading
import time
from pathlib import Path
from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
from gpuonboard.errors import ConnectError
from gpuonboard.inventory import Host
known = Path(sys.argv[1])
host = Host(name="typo", address="gpu-node-7.invalid", port=22, user="root", connect_timeout=2)
try:
    open_runner(host, ConnectOptions(known_hosts=known, retries=0), KnownHosts(known)).close()
except ConnectError as exc:
    print(exc)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare")
def test_a_name_that_does_not_resolve_says_dns(tmp_path: Path) -> None:
    # in a network namespace of its own (no route: the resolver's query never leaves this
    # process's namespace, nor this machine), the name cannot resolve
    out = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", CHECK_DNS, str(tmp_path / "known")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.startswith(
        "host typo (gpu-node-7.invalid:22) is unreachable: the name 'gpu-node-7.invalid' does not resolve ("
    ), out.stdout + out.stderr
    assert "; DNS)" in out.stdout


def test_a_port_that_hangs_up_at_once_is_not_called_a_timeout(tmp_path: Path) -> None:
    """A port that takes the connection and closes it (a proxy, a firewall, an sshd over its
    MaxStartups) was said to time out ("did not finish within 10 s") after a split second."""
    with socket.socket() as rude:
        rude.bind(("127.0.0.1", 0))
        rude.listen(4)
        port = rude.getsockname()[1]
        stop = threading.Event()

        def hang_up() -> None:
            rude.settimeout(0.1)
            while not stop.is_set():
                try:
                    conn, _ = rude.accept()
                except OSError:
                    continue
                conn.close()

        t = threading.Thread(target=hang_up)
        t.start()
        try:
            host = Host(name="rude", address="127.0.0.1", port=port, user="root", connect_timeout=10)
            started = time.monotonic()
            with pytest.raises(ConnectError) as err:
                _connect(host, tmp_path / "known")
        finally:
            stop.set()
            t.join()
    assert time.monotonic() - started < 5
    assert str(err.value) == (
        f"host rude (127.0.0.1:{port}) is unreachable: the server closed the connection before sending"
        " its SSH greeting (is this port an SSH server, or does a firewall or proxy cut it?); check the"
        " address, port and firewall, or whether the server is up."
    )
