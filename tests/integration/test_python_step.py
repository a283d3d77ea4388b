"""End to end, the `python` step (a user's own step): the function gets the run's own login as a
`fabric.Connection` (a real sshd test host), its answer is the step's result, `--check` is
handed to it, and its failures (an exception, a missing file or function, a bad answer) are one
sentence on a failed step, never a traceback."""

from __future__ import annotations

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool

USER_STEP = '''
def mark(conn, host, args, check):
    """Write args['text'] to args['path'] on the host unless it is already there."""
    have = conn.run("cat " + args["path"] + " 2>/dev/null || true", hide=True).stdout
    if have.strip() == args["text"]:
        return {"changed": False, "msg": "marked already"}
    if not check:
        conn.run("printf '%s\\\\n' " + args["text"] + " > " + args["path"], hide=True)
    return {"changed": True, "msg": "marked " + host.name}


def boom(conn, host, args, check):
    raise RuntimeError("disk on fire")


def wrong(conn, host, args, check):
    return 42
'''


def _book(project: Project, call: str, args: dict[str, str] | None = None) -> str:
    pb = project.root / "user.yml"
    step = {"step": "python", "args": {"call": call, "args": args or {}}}
    pb.write_text(yaml.safe_dump({"steps": [step]}))
    return str(pb)


def test_a_user_step_runs_on_the_run_login_and_honours_check_mode(
    project: Project, pool: TestHostPool
) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "steps").mkdir(exist_ok=True)
    (project.root / "steps" / "site.py").write_text(USER_STEP)
    path = h.home / "python-step-mark"
    path.unlink(missing_ok=True)
    pb = _book(project, "site:mark", {"path": str(path), "text": "{{ host.name }}-ok"})

    r = project.cli("provision", "--host", "good", "--playbook", pb, "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    step = project.summary()["hosts"][0]["steps"][0]
    assert (step["status"], step["msg"]) == ("changed", "would marked good (check mode: nothing changed)")
    assert not path.exists()

    r = project.cli("provision", "--host", "good", "--playbook", pb)
    assert r.returncode == 0, r.stdout + r.stderr
    assert project.summary()["hosts"][0]["steps"][0]["status"] == "changed"
    assert path.read_text() == "good-ok\n"

    r = project.cli("provision", "--host", "good", "--playbook", pb)
    step = project.summary()["hosts"][0]["steps"][0]
    assert (r.returncode, step["status"], step["msg"]) == (0, "ok", "marked already")


def test_a_user_step_that_fails_is_one_sentence(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "steps").mkdir(exist_ok=True)
    (project.root / "steps" / "site.py").write_text(USER_STEP)
    cases = {
        "site:boom": "site:boom raised RuntimeError: disk on fire",
        "site:wrong": "site:wrong returned int; return None or a mapping with changed, failed, msg",
        "site:absent": f"{(project.root / 'steps' / 'site.py').resolve()} has no function 'absent'"
        " for the python step site:absent",
        "nosuch:fn": f"no file {(project.root / 'steps' / 'nosuch.py').resolve()} for the python step"
        " nosuch:fn; create it or fix 'call'",
    }
    for call, want in cases.items():
        r = project.cli("provision", "--host", "good", "--playbook", _book(project, call))
        assert r.returncode == 1, (call, r.stdout + r.stderr)
        step = project.summary()["hosts"][0]["steps"][0]
        assert (step["status"], step["msg"]) == ("failed", want)
        assert "Traceback" not in r.stdout + r.stderr


def test_a_bad_call_is_refused_before_connecting(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    r = project.cli("provision", "--host", "good", "--playbook", _book(project, "site.mark"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "argument 'call' is required: module:function" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr
