"""What the user's SSH config gives a host reaches the connection (issue 30): its ProxyCommand is
run instead of dialling (paramiko and the rsync config alike), a CertificateFile is attached
to the key it certifies, and further IdentityFiles are tried after the first."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard.connection.auth import _login_kwargs
from gpuonboard.connection.login import _tcp_socket, proxy_command_argv
from gpuonboard.connection.openssh import config_text
from gpuonboard.connection.preconnect import Preconnect
from gpuonboard.inventory import Host


def test_the_proxy_command_is_run_through_the_shell_with_its_tokens() -> None:
    host = Host(
        name="gpu-1", address="10.0.0.5", port=2200, user="ops", proxy_command="nc -x p:1 %h %p %r %n %%"
    )
    argv = proxy_command_argv(host)
    assert argv[1:] == ["-c", "exec nc -x p:1 10.0.0.5 2200 ops gpu-1 %"]


def test_a_host_with_a_proxy_command_is_reached_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/sh")
    host = Host(name="h", address="10.255.255.1", proxy_command="printf 'SSH-2.0-proxied %h:%p\\r\\n'")
    sock = _tcp_socket(host)  # (no TCP connection to 10.255.255.1 is made)
    try:
        sock.settimeout(5)
        assert sock.recv(64).startswith(b"SSH-2.0-proxied 10.255.255.1:22")
    finally:
        sock.close()
    pre = Preconnect([host])
    try:
        assert pre.take(host) is None  # (never dialled directly in the background either)
    finally:
        pre.close()


def test_the_rsync_config_carries_proxy_command_certificates_and_keys(tmp_path: Path) -> None:
    host = Host(
        name="gpu-1",
        address="10.0.0.5",
        key_file="/k/a",
        extra_key_files=("/k/b",),
        certificate_files=("/k/a-cert.pub",),
        proxy_command="nc %h %p # %n",
    )
    text, _ = config_text(host, None, tmp_path / "known_hosts")
    assert '  IdentityFile "/k/a"\n  IdentitiesOnly yes\n  IdentityFile "/k/b"\n' in text
    assert '  CertificateFile "/k/a-cert.pub"\n' in text
    assert "  ProxyCommand nc %h %p # gpu-1\n" in text


def _blob(path: Path) -> bytes:
    import base64

    return base64.b64decode(path.read_text().split()[1])


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_a_certificate_is_attached_to_the_key_it_certifies_and_more_keys_follow(tmp_path: Path) -> None:
    for name in ("ca", "user", "other"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)], check=True
        )
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(tmp_path / "ca"), "-I", "id", "-n", "ops", str(tmp_path / "user.pub")],
        check=True,
    )
    (tmp_path / "user-cert.pub").rename(tmp_path / "signed.pub")
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(tmp_path / "ca"), "-I", "o", "-n", "ops", str(tmp_path / "other.pub")],
        check=True,
    )
    wrong = tmp_path / "other-cert.pub"  # (another key's certificate, of the same type: skipped)
    host = Host(
        name="h",
        address="10.0.0.1",
        key_file=str(tmp_path / "user"),
        extra_key_files=(str(tmp_path / "other"), str(tmp_path / "missing")),
        certificate_files=(str(wrong), str(tmp_path / "signed.pub")),
    )
    kwargs, problem = _login_kwargs(host)
    assert problem is None
    assert kwargs["pkey"].public_blob.key_type == "ssh-ed25519-cert-v01@openssh.com"
    assert kwargs["pkey"].public_blob.key_blob == _blob(tmp_path / "signed.pub")
    assert kwargs["key_filename"] == [str(tmp_path / "other")]  # (a file that is not there: skipped)
    plain, _ = _login_kwargs(Host(name="p", address="10.0.0.1", key_file=str(tmp_path / "user")))
    assert plain["pkey"].public_blob is None  # (the shared parsed key is not changed)
