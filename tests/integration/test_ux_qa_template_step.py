"""End to end, the template step: a `dest` that is a directory on the host fails with one
sentence (in --check too), instead of moving the rendered file into the directory and saying
"changed" on every run; a probe that fails fails the step instead of rendering a blank."""

from __future__ import annotations

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def test_a_directory_dest_fails_the_step_and_leaves_the_directory_alone(
    project: Project, pool: TestHostPool
) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    dest = h.home / "ux-qa-conf.d"
    dest.mkdir(exist_ok=True)
    book = {"steps": [{"step": "template", "args": {"src": "remote/acceptance.env.j2", "dest": str(dest)}}]}
    pb = project.root / "dirdest.yml"
    pb.write_text(yaml.safe_dump(book))
    want = f"{dest} is a directory on the host; 'dest' must name a file (e.g. {dest}/NAME)"
    for extra in (["--check"], []):
        r = project.cli("provision", "--host", "good", "--playbook", str(pb), *extra)
        assert r.returncode == 1, r.stdout + r.stderr
        step = project.summary()["hosts"][0]["steps"][0]
        assert (step["status"], step["msg"]) == ("failed", want)
        assert "Traceback" not in r.stdout + r.stderr
    assert list(dest.iterdir()) == []


def test_a_failed_probe_fails_the_step_instead_of_rendering_a_blank(
    project: Project, pool: TestHostPool
) -> None:
    """`probes: {tok: cat FILE}` with FILE missing rendered `token=`, wrote it and said changed."""
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "templates").unlink()  # (the fixture's link to the repo's templates)
    (project.root / "templates").mkdir()
    (project.root / "templates" / "app.conf.j2").write_text("token={{ p.tok | trim }}\n")
    secret, dest = h.home / "ux-qa-token", h.home / "ux-qa-app.conf"
    secret.unlink(missing_ok=True)
    dest.unlink(missing_ok=True)

    def run(probe: str) -> tuple[int, dict[str, str]]:
        args = {"src": "app.conf.j2", "dest": str(dest), "mode": "0600", "probes": {"tok": probe}}
        pb = project.root / "probe.yml"
        pb.write_text(yaml.safe_dump({"steps": [{"step": "template", "args": args}]}))
        r = project.cli("provision", "--host", "good", "--playbook", str(pb))
        assert "Traceback" not in r.stdout + r.stderr
        return r.returncode, project.summary()["hosts"][0]["steps"][0]

    code, step = run(f"cat {secret}")
    assert (code, step["status"]) == (1, "failed")
    assert step["msg"] == (
        f"template 'app.conf.j2': probe 'tok' (cat {secret}) exited 1 (cat: {secret}: No such file or"
        " directory); fix it, or end it with '|| true' if a failure is expected"
    )
    assert not dest.exists()
    secret.write_text("s3\n")
    code, step = run(f"cat {secret}")
    assert (code, step["status"], dest.read_text()) == (0, "changed", "token=s3\n")
    dest.unlink()
    secret.unlink()
    code, step = run(f"cat {secret} 2>/dev/null || true")  # a failure the playbook expects
    assert (code, step["status"], dest.read_text()) == (0, "changed", "token=\n")


def test_a_mode_000_template_is_up_to_date_on_the_second_run(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    dest = h.home / "ux-qa-mode000"
    dest.unlink(missing_ok=True)
    args = {"src": "remote/acceptance.env.j2", "dest": str(dest), "mode": "0000"}
    pb = project.root / "mode000.yml"
    pb.write_text(yaml.safe_dump({"steps": [{"step": "template", "args": args}]}))
    statuses = []
    for _ in range(2):
        r = project.cli("provision", "--host", "good", "--playbook", str(pb))
        assert r.returncode == 0, r.stdout + r.stderr
        statuses.append(project.summary()["hosts"][0]["steps"][0]["status"])
    assert statuses == ["changed", "ok"]
    assert dest.stat().st_mode & 0o7777 == 0
