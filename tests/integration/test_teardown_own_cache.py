"""Teardown removes gpuonboard's own cache dir on the host, `${XDG_CACHE_HOME:-~/.cache}/gpuonboard`
(the container step's smoke records, `invoke tensorboard`'s logs): its state, not the user's data,
which stayed on the returned box. The rest of the login's cache stays. Real sshd test host and
real rsync, as in test_teardown.py (whose fixtures this module uses).
"""

from __future__ import annotations

from pathlib import Path

from conftest import Project
from test_teardown import LEFT_ON_HOST, inventory, listing, remote, steps

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


def test_teardown_removes_gpuonboards_cache_on_the_host_and_nothing_else_of_the_login(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    home = pool.hosts["teardown"].home
    cache = home / ".cache" / "gpuonboard"
    (cache / "container-smoke").mkdir(parents=True)
    (cache / "container-smoke" / "0123456789abcdef").write_text("docker /var/lib/docker sha256:x 8\n")
    (cache / "tensorboard-6006.log").write_text("TensorBoard 2.17 at http://127.0.0.1:6006/\n")
    (home / ".cache" / "pip").mkdir()
    (home / ".cache" / "pip" / "wheel").write_text("the user's\n")
    try:
        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)["files"]["msg"] == (
            f"would remove {remote['dataset']}, {remote['decrypted']}, {remote['state']},"
            f" {remote['results']}, {cache} (gpuonboard's own cache on the host)"
            " (check mode: nothing changed)"
        )
        assert (cache / "tensorboard-6006.log").exists()

        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert not cache.exists()
        assert (home / ".cache" / "pip" / "wheel").read_text() == "the user's\n"
        assert listing(remote["base"]) == LEFT_ON_HOST

        # a rerun: nothing left
        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)["files"]["status"] == "ok"
    finally:
        for p in (home / ".cache" / "pip" / "wheel", home / ".cache" / "pip"):
            p.unlink() if p.is_file() else p.rmdir()


def test_the_cache_stays_when_the_pull_is_not_verified(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "tensorboard-6006.log").write_text("x\n")
    (remote["results"] / "latest.pt").symlink_to(remote["dataset"] / "train.bin")  # refused
    r = project.cli("teardown", "--host", "teardown", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["files"]["status"] == "skipped"
    assert (cache / "tensorboard-6006.log").exists()
    (remote["results"] / "latest.pt").unlink()
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not cache.exists()
