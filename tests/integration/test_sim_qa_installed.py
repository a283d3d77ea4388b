"""`sim.up` from an installed package (pip install of the wheel, no repository around it): it
wrote `vendors_dir: <the repository>/inventory/vendors` and read the captures its test host
replays from `<the repository>/tests/fixtures`, neither of which an installed package has, so it
failed ("fixture .../lib/python3.11/tests/fixtures/... does not exist") or wrote an inventory
that does not load. The package ships both as data files (pyproject's `data-files`, installed
under `<prefix>/share/gpuonboard/`), and sim.up finds them there.

The install is laid out as pip lays out the wheel: the package's modules in a site directory
of their own, and each `data-files` entry of pyproject.toml copied under the prefix's
`share/gpuonboard/`; the CLI runs with that prefix and that copy of the package (no checkout
above it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from conftest import REPO


def _install(root: Path) -> tuple[Path, Path]:
    """(prefix, site dir) of a copy of the package laid out as an installed wheel."""
    prefix, site = root / "prefix", root / "prefix" / "lib" / "site"
    shutil.copytree(
        REPO / "src" / "gpuonboard", site / "gpuonboard", ignore=shutil.ignore_patterns("__pycache__")
    )
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    for dest, patterns in data_files.items():
        (prefix / dest).mkdir(parents=True, exist_ok=True)
        for pattern in patterns:
            for src in REPO.glob(pattern):
                if src.is_file():
                    shutil.copy2(src, prefix / dest / src.name)
    return prefix, site


def _cli(prefix: Path, site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.prefix = {str(prefix)!r}; sys.path.insert(0, {str(site)!r});"
        " import gpuonboard; assert gpuonboard.__file__.startswith(sys.path[0]), gpuonboard.__file__;"
        " from gpuonboard.cli import main; main()"
    )
    env = {
        **os.environ,
        "COLUMNS": "200",
        "GPUONBOARD_SSH_CONFIG": "/dev/null",
        "XDG_CACHE_HOME": str(cwd / ".cache"),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env
    )


def test_sim_up_from_an_installed_package_writes_an_inventory_that_loads(tmp_path: Path) -> None:
    prefix, site = _install(tmp_path / "install")
    work = tmp_path / "work dir"  # (a user's directory, not a project: no inventory, no playbooks)
    work.mkdir()
    base = work / "sim"
    try:
        r = _cli(prefix, site, work, "sim.up", "--base", str(base), "--name", "h1")
        assert r.returncode == 0, r.stdout + r.stderr
        doc = yaml.safe_load((base / "inventory" / "hosts.yml").read_text())
        vendors = Path(doc["vendors_dir"])
        assert vendors == prefix / "share" / "gpuonboard" / "inventory" / "vendors", doc["vendors_dir"]
        assert REPO not in vendors.parents
        r = _cli(prefix, site, work, "inventory", "--inventory", str(base / "inventory"))
        assert r.returncode == 0, r.stdout + r.stderr
        row = next(line for line in r.stdout.splitlines() if " h1 " in line)
        assert "Demo IDC (simulated)" in row, r.stdout
        # the host replays the shipped captures: a read-only check passes its acceptance
        r = _cli(prefix, site, work, "check", "--host", "h1", "--inventory", str(base / "inventory"))
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        r = _cli(prefix, site, work, "sim.down", "--base", str(base))
        assert r.returncode == 0, r.stdout + r.stderr
