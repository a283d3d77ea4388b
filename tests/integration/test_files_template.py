"""End to end, a template `dest` that is a symlink (/etc/foo.conf -> /opt/conf/foo.conf):
by default the link is replaced by the file, as Ansible's template does (`follow: no`), and
--check says so; `follow: true` writes the link's target atomically and keeps the link. A
target that already holds the content is up to date either way (the link's own mode, 777,
is not the file's). A link to a directory, a link loop (with follow) and a FIFO are refused."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool

TEMPLATE = "token={{ host }}\n"
CHECK = " (check mode: nothing changed)"


def _setup(project: Project, pool: TestHostPool, name: str) -> Path:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    (project.root / "templates").unlink()  # (the fixture's link to the repo's templates)
    (project.root / "templates").mkdir()
    (project.root / "templates" / "app.conf.j2").write_text(TEMPLATE)
    base = h.home / name
    base.mkdir()
    (base / "etc").mkdir()
    (base / "opt").mkdir()
    return base


def _run(project: Project, steps: list[dict[str, Any]], *extra: str) -> tuple[int, list[dict[str, Any]]]:
    pb = project.root / "symlink.yml"
    book = [
        {"step": "template", "name": f"t{i}", "args": {"src": "app.conf.j2", **a}}
        for i, a in enumerate(steps)
    ]
    pb.write_text(yaml.safe_dump({"steps": book}))
    r = project.cli("provision", "--host", "good", "--playbook", str(pb), *extra)
    assert "Traceback" not in r.stdout + r.stderr
    return r.returncode, project.summary()["hosts"][0]["steps"]


def _state(p: Path) -> tuple[str | None, str | None, int | None]:
    """(link target or None, content or None, mode or None) of a path, not following it."""
    link = os.readlink(p) if p.is_symlink() else None
    if not p.exists():
        return link, None, None
    return link, p.read_text(), p.stat().st_mode & 0o777


def test_a_symlink_dest_is_replaced_by_default_and_its_target_written_with_follow(
    project: Project, pool: TestHostPool
) -> None:
    base = _setup(project, pool, "tpl-qa-symlink")
    replaced, followed = base / "etc" / "replaced.conf", base / "etc" / "followed.conf"
    for link in (replaced, followed):
        target = base / "opt" / link.name
        target.write_text("old\n")
        target.chmod(0o640)
        link.symlink_to(target)
    steps = [
        {"dest": str(replaced), "mode": "0640"},
        {"dest": str(followed), "mode": "0640", "follow": True},
    ]
    before = [_state(p) for p in (replaced, followed, *(base / "opt").iterdir())]

    code, got = _run(project, steps, "--check")
    assert code == 0
    assert [s["msg"] for s in got] == [
        f"would replace the symlink {replaced} (-> {base}/opt/replaced.conf) with a file"
        f" (add 'follow: true' to write to its target instead){CHECK}",
        f"would update {base}/opt/followed.conf, the target of the symlink {followed} (the link is"
        f" kept){CHECK}",
    ]
    assert [_state(p) for p in (replaced, followed, *(base / "opt").iterdir())] == before

    code, got = _run(project, steps)
    assert (code, [s["status"] for s in got]) == (0, ["changed", "changed"])
    assert _state(replaced) == (None, "token=good\n", 0o640)  # a file now, as Ansible's default
    assert _state(base / "opt" / "replaced.conf") == (None, "old\n", 0o640)
    assert _state(followed) == (f"{base}/opt/followed.conf", "token=good\n", 0o640)  # link kept
    assert sorted(p.name for p in (base / "opt").iterdir()) == ["followed.conf", "replaced.conf"]
    assert sorted(p.name for p in (base / "etc").iterdir()) == ["followed.conf", "replaced.conf"]

    code, got = _run(project, steps)  # identical content, through the link too: ok
    assert (code, [s["status"] for s in got]) == (0, ["ok", "ok"])
    assert _state(followed) == (f"{base}/opt/followed.conf", "token=good\n", 0o640)

    (base / "opt" / "followed.conf").chmod(0o600)  # the mode of the target is the one compared
    code, got = _run(project, steps[1:2])
    assert (code, got[0]["status"]) == (0, "changed")
    assert _state(followed) == (f"{base}/opt/followed.conf", "token=good\n", 0o640)


def test_a_symlink_whose_target_holds_the_content_is_up_to_date_and_kept(
    project: Project, pool: TestHostPool
) -> None:
    """`stat -c %a` of the link printed the link's own mode, 777, never the file's: an
    unchanged config behind a link was "changed" on the first run, and the link replaced."""
    base = _setup(project, pool, "tpl-qa-same")
    link, target = base / "etc" / "same.conf", base / "opt" / "same.conf"
    target.write_text("token=good\n")
    target.chmod(0o640)
    link.symlink_to(target)
    code, got = _run(project, [{"dest": str(link), "mode": "0640"}])
    assert (code, got[0]["status"], got[0]["msg"]) == (
        0,
        "ok",
        f"{link} is up to date (through the symlink to {target})",
    )
    assert _state(link) == (str(target), "token=good\n", 0o640)


def test_a_dangling_symlink_dest_gets_its_target_created_with_follow(
    project: Project, pool: TestHostPool
) -> None:
    base = _setup(project, pool, "tpl-qa-dangling")
    followed, replaced = base / "etc" / "followed.conf", base / "etc" / "replaced.conf"
    followed.symlink_to("../opt/followed.conf")  # (relative, as `ln -s` makes them)
    replaced.symlink_to(base / "opt" / "replaced.conf")
    steps = [{"dest": str(followed), "follow": True}, {"dest": str(replaced)}]
    code, got = _run(project, steps, "--check")
    assert (code, [s["msg"] for s in got]) == (
        0,
        [
            f"would create ../opt/followed.conf, the target of the symlink {followed} (the link is"
            f" kept){CHECK}",
            f"would replace the symlink {replaced} (-> {base}/opt/replaced.conf) with a file"
            f" (add 'follow: true' to write to its target instead){CHECK}",
        ],
    )
    assert list((base / "opt").iterdir()) == []
    code, got = _run(project, steps)
    assert (code, [s["status"] for s in got]) == (0, ["changed", "changed"])
    assert _state(followed) == ("../opt/followed.conf", "token=good\n", 0o644)
    assert _state(replaced) == (None, "token=good\n", 0o644)
    assert [p.name for p in (base / "opt").iterdir()] == ["followed.conf"]
    code, got = _run(project, steps)
    assert (code, [s["status"] for s in got]) == (0, ["ok", "ok"])


def test_a_symlink_to_a_directory_a_link_loop_and_a_fifo_are_refused(
    project: Project, pool: TestHostPool
) -> None:
    base = _setup(project, pool, "tpl-qa-refused")
    to_dir, loop, fifo = base / "etc" / "conf.d", base / "etc" / "loop.conf", base / "etc" / "fifo.conf"
    to_dir.symlink_to(base / "opt")
    loop.symlink_to(loop)
    os.mkfifo(fifo)
    cases = [
        (
            {"dest": str(to_dir)},
            f"{to_dir} is a symlink to the directory {base}/opt on the host; 'dest' must name a file"
            f" (e.g. {to_dir}/NAME)",
        ),
        (
            {"dest": str(to_dir), "follow": True},
            f"{to_dir} is a symlink to the directory {base}/opt on the host; 'dest' must name a file"
            f" (e.g. {to_dir}/NAME)",
        ),
        (
            {"dest": str(loop), "follow": True},
            f"{loop} is a symlink to {loop} that cannot be resolved on the host (a loop, or a missing"
            " directory); fix the link, or drop 'follow' to replace the link with a file",
        ),
        (
            {"dest": str(fifo)},
            f"{fifo} exists on the host and is not a regular file (a device, FIFO or socket);"
            " 'dest' must name a regular file",
        ),
    ]
    for i, (args, want) in enumerate(cases):
        code, got = _run(project, [args], *(["--check"] if i == 0 else []))  # (the same plan)
        assert (code, got[0]["status"], got[0]["msg"]) == (1, "failed", want), args
    assert list((base / "opt").iterdir()) == []
    assert sorted(p.name for p in (base / "etc").iterdir()) == ["conf.d", "fifo.conf", "loop.conf"]
    assert (to_dir.is_symlink(), loop.is_symlink(), fifo.is_fifo()) == (True, True, True)


# End to end, the template step: a `dest` that is a directory on the host fails with one
# sentence (in --check too), instead of moving the rendered file into the directory and saying
# "changed" on every run; a probe that fails fails the step instead of rendering a blank.


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


# A template's own probes read the playbook's data on the host (`probes: {tok: cat
# /root/.token}`): that output is the template's value, a secret perhaps, not evidence about the
# box. It was written to reports/<run>/raw/<host>/p_*.txt and shown inline in report.html; now
# the reports keep its size only. Real sshd test host, real CLI, real report rendering.


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
