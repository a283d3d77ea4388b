"""A template's own probes read the playbook's data on the host (`probes: {tok: cat
/root/.token}`): that output is the template's value, a secret perhaps, not evidence about the
box. It was written to reports/<run>/raw/<host>/p_*.txt and shown inline in report.html; now
the reports keep its size only. Real sshd test host, real CLI, real report rendering."""

from __future__ import annotations

import secrets

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def test_a_template_probes_output_reaches_the_host_file_and_no_report(
    project: Project, pool: TestHostPool
) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "templates").unlink()  # (the fixture's link to the repo's templates)
    (project.root / "templates").mkdir()
    (project.root / "templates" / "app.conf.j2").write_text("token={{ p.tok | trim }}\n")
    token = "tok-" + secrets.token_hex(12)
    secret, dest = h.home / "private-probe-token", h.home / "private-probe-app.conf"
    secret.write_text(token + "\n")
    args = {"src": "app.conf.j2", "dest": str(dest), "mode": "0600", "probes": {"tok": f"cat {secret}"}}
    pb = project.root / "private.yml"
    pb.write_text(yaml.safe_dump({"steps": [{"step": "template", "args": args}]}))
    try:
        r = project.cli("provision", "--host", "good", "--playbook", str(pb))
        assert r.returncode == 0, r.stdout + r.stderr
        assert dest.read_text() == f"token={token}\n"
        r = project.cli("report", "--format", "md")
        assert r.returncode == 0, r.stdout + r.stderr
        reports = project.root / "reports" / "latest"
        written = [p for p in reports.rglob("*") if p.is_file()]
        assert any(p.name.startswith("p_") for p in written)  # (the probe's raw file is there ...)
        for p in written:
            assert token.encode() not in p.read_bytes(), p  # (... but not its text)
        raw = next(p for p in written if p.name.startswith("p_"))
        assert raw.read_text() == (
            "(not kept: the output of a template's probe, which may hold a secret; 29 bytes)\n"
        )
        assert token not in r.stdout + r.stderr
    finally:
        secret.unlink(missing_ok=True)
        dest.unlink(missing_ok=True)
