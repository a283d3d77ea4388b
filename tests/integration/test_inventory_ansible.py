"""End to end: an Ansible INI inventory whose host line is just the server's address (no
ansible_host) connects to that address, as Ansible would."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import Project

from gpuonboard.testing import TestHostPool


def test_ansible_ini_host_named_by_its_address_is_reached_there(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["good"]
    name = h.address if h.port == 22 else f"{h.address}:{h.port}"
    inv = project.root / "hosts.ini"
    inv.write_text(
        f"[gpus]\n{name} gpuonboard_host_key={h.fingerprint}\n\n"
        f"[all:vars]\nansible_user=root\nansible_ssh_private_key_file={pool.client_key}\n"
    )
    marker = tmp_path / "ran"
    book = {"name": "touch", "steps": [{"step": "command", "args": {"argv": ["touch", str(marker)]}}]}
    pb = project.root / "touch.yml"
    pb.write_text(yaml.safe_dump(book))
    r = project.cli("provision", "--inventory", str(inv), "--playbook", str(pb))
    assert r.returncode == 0, r.stdout + r.stderr
    assert marker.exists()
    host = project.summary()["hosts"][0]
    assert (host["name"], host["status"]) == (h.address, "changed")
    assert host["host_key_fingerprint"] == h.fingerprint
