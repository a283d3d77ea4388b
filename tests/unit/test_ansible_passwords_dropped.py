"""Passwords in an imported Ansible inventory (`ansible_password`, `ansible_become_password`,
...) are never kept: gpuonboard logs in with keys, and a kept password could reach a template,
a log line or a report through the host's vars."""

from __future__ import annotations

from pathlib import Path

from gpuonboard import inventory


def test_ansible_passwords_are_not_imported(tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text("")
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[gpus]\n"
        "box1 ansible_host=10.0.0.9 ansible_password=hunter2 ansible_ssh_pass=hunter3\n"
        "[gpus:vars]\n"
        "ansible_become_password=s3cret\n"
        "ansible_sudo_pass=s3cret2\n"
        "train_timeout=900\n"
    )
    inv = inventory.load(path, ssh_config=tmp_path / "ssh_config")
    host = inv.hosts["box1"]
    assert host.address == "10.0.0.9"
    assert host.vars.get("train_timeout") in (900, "900")
    text = repr(host)
    for secret in ("hunter2", "hunter3", "s3cret"):
        assert secret not in text and secret not in repr(host.vars), secret
