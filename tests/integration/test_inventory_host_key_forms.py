"""A pinned fingerprint written with base64's `=` pad (OpenSSH prints none) is the same key:
the run reached the host and reported "possible man-in-the-middle" (exit 4) before."""

from __future__ import annotations

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def test_a_padded_fingerprint_pins_the_same_key(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool, host_key=f"{h.fingerprint}=")})
    r = project.cli("check", "--host", "good")
    assert r.returncode in (0, 1), r.stdout + r.stderr  # (the verdict of the box, not a refusal)
    assert "man-in-the-middle" not in r.stdout + r.stderr
