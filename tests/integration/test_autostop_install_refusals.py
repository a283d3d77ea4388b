"""`invoke autostop` refuses to install a watcher that could never shut the box down (no cron
daemon runs) or that others could rewrite (a directory they can write), and keeps the mode of
an existing directory it is pointed at. Real SSH, real files; never a real power-off.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Project
from test_autostop import cron_daemon, inventory, paths, start_cron_daemon, steps

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # the fixtures, used by name


def _cron_runs() -> bool:
    return subprocess.run(["pgrep", "-x", "cron|crond|fcron"], capture_output=True).returncode == 0


@pytest.mark.alone  # `pgrep cron` on the host sees this whole machine: another test's fake cron
def test_no_cron_daemon_is_a_failure_that_installs_nothing(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # a container rental without cron: the watcher was "installed" and never ran, the box never
    # shut down, and the run said changed
    if _cron_runs():
        pytest.skip("a cron daemon runs on this machine (the test host shares it)")
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    [step] = steps(project)
    assert (step["status"], step["msg"]) == (
        "failed",
        "host autostop: no cron daemon runs there (no cron or crond process), so the watcher would"
        " never run and the box would never be shut down: start cron (systemctl enable --now cron,"
        " or service cron start where there is no systemd), then rerun",
    )
    assert not paths["dir"].exists() and not paths["cron"].exists()


@pytest.mark.alone  # (as above)
def test_status_says_when_no_cron_daemon_runs(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    daemon = start_cron_daemon(tmp_path / "crond")
    try:
        assert project.cli("autostop", "--host", "autostop").returncode == 0
    finally:
        daemon.kill()
        daemon.wait()
    try:
        if _cron_runs():
            pytest.skip("a cron daemon runs on this machine (the test host shares it)")
        r = project.cli("autostop", "--host", "autostop", "--status")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "cron daemon: NOT RUNNING (no cron or crond process): the watcher never runs" in r.stdout
        assert steps(project)[0]["msg"].endswith("; no cron daemon runs, so the watcher does not run")
    finally:
        daemon = start_cron_daemon(tmp_path / "crond")
        try:
            assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
        finally:
            daemon.kill()
            daemon.wait()


@pytest.mark.usefixtures("cron_daemon")
def test_an_existing_directory_keeps_its_mode(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # `autostop_dir: /data`: the install made /data mode 700, locking out the training user
    paths["dir"].mkdir(parents=True)
    paths["dir"].chmod(0o755)
    (paths["dir"] / "checkpoint.pt").write_text("weights\n")
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 0, r.stdout + r.stderr
    assert oct(paths["dir"].stat().st_mode & 0o777) == "0o755"
    assert (paths["dir"] / "autostop.sh").exists()
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert sorted(p.name for p in paths["dir"].iterdir()) == ["checkpoint.pt"]
    assert oct(paths["dir"].stat().st_mode & 0o777) == "0o755"


@pytest.mark.usefixtures("cron_daemon")
def test_a_directory_others_can_write_is_refused(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # cron runs the script from this directory as root every minute: anyone who can write it
    # could replace autostop.sh and run commands as root
    paths["dir"].mkdir(parents=True)
    paths["dir"].chmod(0o777)
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    [step] = steps(project)
    assert (step["status"], step["msg"]) == (
        "failed",
        f"host autostop: the autostop directory {paths['dir']} is writable by other users (mode 777),"
        " and cron runs the watcher from it as root every minute, so another user could run commands"
        " as root: set vars.autostop_dir to a directory only this login can write (and the directories"
        " above it), or remove it to use the default",
    )
    assert list(paths["dir"].iterdir()) == [] and not paths["cron"].exists()


@pytest.mark.usefixtures("cron_daemon")
def test_a_symlinked_directory_or_one_under_an_open_dir_is_refused(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # a link passes a check of its target, and whoever can write the link's dir swaps the target
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    paths["dir"].parent.mkdir(parents=True)
    paths["dir"].symlink_to(real)
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)[0]["msg"].startswith(
        f"host autostop: the autostop directory {paths['dir']} is a symbolic link, and cron runs"
    )
    assert list(real.iterdir()) == [] and not paths["cron"].exists()
    # a dir above it others can write (no sticky bit): they could rename it away and put theirs
    paths["dir"].unlink()
    paths["dir"].mkdir(mode=0o700)
    paths["dir"].parent.chmod(0o777)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)[0]["msg"].startswith(
        f"host autostop: the autostop directory {paths['dir']} lies under {paths['dir'].parent}, which"
        " is writable by other users (mode 777), and cron runs"
    )
    assert list(paths["dir"].iterdir()) == []
