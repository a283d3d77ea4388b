"""--resume over real SSH tells the truth about the box it resumes on: the fact checks run again
(the resumed report carries the verdict of now), and a journal of another machine (the name now
leads to a box with another host key) skips nothing. A template file whose expression fails is
that step's failure, not an internal error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def _book(project: Project, tmp_path: Path) -> tuple[Path, Path, Path]:
    flag, ran = tmp_path / "flag", tmp_path / "ran.log"
    book: dict[str, Any] = {
        "name": "resumable",
        "steps": [
            {"step": "acceptance"},
            {"step": "command", "name": "first", "args": {"argv": ["sh", "-c", f"echo first >> {ran}"]}},
            {"step": "command", "name": "flaky", "args": {"argv": ["test", "-e", str(flag)]}},
            {"step": "command", "name": "last", "args": {"argv": ["sh", "-c", f"echo last >> {ran}"]}},
        ],
    }
    path = project.root / "resumable.yml"
    path.write_text(yaml.safe_dump(book))
    return path, flag, ran


def _steps(project: Project) -> list[tuple[str, str]]:
    return [(s["step"], s["status"]) for s in project.summary()["hosts"][0]["steps"]]


def test_resume_judges_the_box_again_and_its_report_holds_the_verdict(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    pb, flag, ran = _book(project, tmp_path)
    project.write_inventory({"gpu": host_entry(pool.hosts["good"], pool)})
    assert project.cli("provision", "--playbook", str(pb)).returncode == 1
    flag.touch()
    r = project.cli("provision", "--playbook", str(pb), "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _steps(project) == [
        ("acceptance", "ok"),
        ("first", "skipped"),
        ("flaky", "changed"),
        ("last", "changed"),
    ]
    assert project.rules("gpu")["gpu_count"]["verdict"] == "pass"  # (it had no rule: "NO-GO")
    assert ran.read_text() == "first\nlast\n"


def test_resume_on_another_machine_under_the_same_name_skips_nothing(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    pb, flag, ran = _book(project, tmp_path)
    project.write_inventory({"gpu": host_entry(pool.hosts["good"], pool)})
    assert project.cli("provision", "--playbook", str(pb)).returncode == 1
    first_run = project.summary()["run_id"]  # (report dirs of one second sort by a random suffix)
    flag.touch()
    # the vendor swapped the box behind the name (a new address, its key pinned): it is not the
    # one the journal's steps ran on, and it is not what was ordered
    other = pool.hosts["misdelivered"]
    project.write_inventory({"gpu": host_entry(other, pool)})
    r = project.cli("provision", "--playbook", str(pb), "--resume")
    assert r.returncode == 1, r.stdout + r.stderr
    assert _steps(project) == [
        ("acceptance", "failed"),
        ("first", "skipped"),
        ("flaky", "skipped"),
        ("last", "skipped"),
    ]
    host = project.summary()["hosts"][0]
    assert host["steps"][1]["msg"] == "not run: step acceptance failed"
    good = pool.hosts["good"].fingerprint
    assert host["msg"].endswith(
        f"(not resumed: run {first_run} was on a box with host key {good}, this one presents"
        f" {other.fingerprint}, so every step ran again)"
    )
    assert ran.read_text() == "first\n"  # nothing ran on the wrong box


def test_a_template_expression_failing_on_the_host_is_the_step_failure(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    (project.root / "templates").unlink()  # (the repo's, linked): a project's own templates dir
    (project.root / "templates" / "remote").mkdir(parents=True)
    (project.root / "templates" / "remote" / "ratio.j2").write_text("per GPU: {{ 64 // facts.gpu_count }}\n")
    dest = tmp_path / "ratio.txt"
    pb = project.root / "t.yml"
    pb.write_text(
        yaml.safe_dump(
            {
                "steps": [
                    {
                        "step": "template",
                        "name": "ratio",
                        "args": {"src": "remote/ratio.j2", "dest": str(dest)},
                    }
                ]
            }
        )
    )
    # no driver: the GPU count is unknown (None), and arithmetic on it fails on the host's facts
    project.write_inventory({"cpu-box": host_entry(pool.hosts["nodriver"], pool)})
    r = project.cli("provision", "--playbook", str(pb))
    assert r.returncode == 1, r.stdout + r.stderr
    step = project.summary()["hosts"][0]["steps"][0]
    assert (step["status"], step["msg"]) == (
        "failed",
        "template 'remote/ratio.j2' cannot be rendered"
        " (TypeError: unsupported operand type(s) for //: 'int' and 'NoneType')",
    )
    assert not dest.exists()
