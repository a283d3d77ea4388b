"""`scripts/bootstrap.sh` (the README's `make bootstrap`) run as a user without apt (a non-root
user, macOS): it asked for shellcheck ("please install: shellcheck (needs root and apt)"),
which only `make lint`/`make test` use, so the quick start stopped there; and a failing pip was
hidden by `| grep ... || true`. Run for real, in a copy of the script with a real venv, on a
PATH holding the user install's tools (ssh, ssh-keygen, rsync) and neither shellcheck nor apt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("bash", "dirname", "id", "grep", "touch", "ssh", "ssh-keygen", "rsync", "python3", "env")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bootstrap") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path


def _checkout(tmp_path: Path, pyproject: str, stamp: bool, venv: Path) -> tuple[Path, dict[str, str]]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)}")
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "bootstrap.sh", root / "scripts" / "bootstrap.sh")
    (root / "pyproject.toml").write_text(pyproject)
    stamp_file = venv / ".gpuonboard-installed"
    stamp_file.unlink(missing_ok=True)
    if stamp:
        time.sleep(0.01)
        stamp_file.touch()
        os.utime(stamp_file, (time.time() + 5, time.time() + 5))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "VENV": str(venv), "PIP_NO_INDEX": "1"}
    return root, env


def _run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("bash") or "bash", str(root / "scripts" / "bootstrap.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_the_user_install_needs_no_shellcheck(tmp_path: Path, venv: Path) -> None:
    root, env = _checkout(tmp_path, "[project]\nname = 'x'\nversion = '0'\n", stamp=True, venv=venv)
    r = _run(root, env)
    assert r.returncode == 0, r.stderr
    assert "shellcheck" not in r.stderr


def test_lint_asks_for_shellcheck(tmp_path: Path, venv: Path) -> None:
    root, env = _checkout(tmp_path, "[project]\nname = 'x'\nversion = '0'\n", stamp=True, venv=venv)
    r = _run(root, {**env, "BOOTSTRAP_LINT": "1"})
    assert r.returncode == 1
    assert "bootstrap: please install: shellcheck" in r.stderr


def test_a_failing_pip_install_shows_and_stops(tmp_path: Path, venv: Path) -> None:
    project = (
        "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n"
        "[project]\nname = 'x'\nversion = '0'\ndependencies = ['gpuonboard-no-such-package']\n"
    )
    root, env = _checkout(tmp_path, project, stamp=False, venv=venv)
    r = _run(root, env)
    assert r.returncode == 1, r.stderr
    assert "ERROR:" in r.stderr  # pip's own words, not hidden
    assert "bootstrap: pip install -e '.[test]' failed" in r.stderr
    assert "Traceback" not in r.stderr
