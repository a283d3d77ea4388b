"""`gpuonboard facts reports/latest/raw/<host>/`: a run's own saved evidence, judged offline.
It stopped at the first file it did not recognise (`cgroup_limits.txt: not a recognised command
output`, exit 2). Real runs against real sshd test hosts write the folder; offline judging of
it gives the live run's verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def _live_rules(project: Project, host: str) -> dict[str, tuple[str, str]]:
    return {n: (r["verdict"], r["actual"]) for n, r in project.rules(host).items()}


def test_a_checked_hosts_raw_folder_gives_the_live_verdicts(project: Project, pool: TestHostPool) -> None:
    project.write_inventory(
        {name: host_entry(pool.hosts[name], pool) for name in ("good", "misdelivered", "nodriver")}
    )
    for name, code in (("good", 0), ("misdelivered", 1), ("nodriver", 1)):
        r = project.cli("check", "--host", name)
        assert r.returncode == code, r.stdout + r.stderr
        live = _live_rules(project, name)
        r = project.cli("facts", f"reports/latest/raw/{name}/", "--host", name, "--json")
        assert r.returncode == code, r.stdout + r.stderr
        assert "note:" not in r.stderr  # (a check's probes are all read: nothing skipped)
        offline = {c["name"]: (c["verdict"], c["actual"]) for c in json.loads(r.stdout)["rules"]}
        assert "gpu_count" in offline and "ram" in offline
        assert offline == {n: live[n] for n in offline}, name


def test_a_probe_it_does_not_read_is_skipped_with_one_note(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "templates").unlink()  # (the fixture's link to the repo's templates)
    (project.root / "templates").mkdir()
    (project.root / "templates" / "app.conf.j2").write_text("k={{ p.tok | trim }}\n")
    args = {"src": "app.conf.j2", "dest": str(h.home / "offline-qa-app.conf"), "probes": {"tok": "echo x"}}
    book = project.root / "tpl.yml"
    book.write_text(yaml.safe_dump({"steps": [{"step": "template", "args": args}]}))
    try:
        r = project.cli("provision", "--host", "good", "--playbook", str(book))
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        (h.home / "offline-qa-app.conf").unlink(missing_ok=True)
    folder = Path("reports", "latest", "raw", "good")
    r = project.cli("facts", f"{folder}/")
    assert r.returncode == 0, r.stdout + r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith(
        f"note: {folder}: 2 saved outputs of this gpuonboard run skipped, offline judging does not read them"
    ), r.stderr
    assert "nvidia_driver" in r.stdout and "8" in r.stdout

    # the same files in a user's own folder: a file it does not know is one missing answer, named
    # in a note, the others judged (round 32: it was an error, exit 2, nothing judged)
    shutil.copytree(project.root / folder, project.root / "mine")
    r = project.cli("facts", "mine/")
    assert not r.stderr.startswith("error: mine/cgroup_limits.txt"), r.stderr
    if r.returncode != 2:  # (another of the run's files may still refuse the folder: an empty one)
        assert "note: mine/cgroup_limits.txt: not a recognised command output" in r.stderr, r.stderr

    # the run's folder itself names the folder to give
    r = project.cli("facts", "reports/latest")
    assert r.returncode == 2, r.stdout
    assert r.stderr.strip() == (
        "error: reports/latest: this is a gpuonboard run's folder, not one box's saved outputs; give"
        " one host's folder of it (its hosts: good), e.g. reports/latest/raw/good/"
    )
