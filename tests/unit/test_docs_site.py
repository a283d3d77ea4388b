"""The docs site builds strictly: `make lint` runs `mkdocs build --strict`, and these tests show
that strict mode really fails the build on a broken link or anchor (so CI catches one), that the
real site builds, and that the generated reference tables come from the code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")

pytestmark = pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (make bootstrap)")


def site_copy(tmp_path: Path) -> Path:
    """A copy of the site's sources (mkdocs.yml, docs/) whose hook still reads the repo's code."""
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "src").symlink_to(REPO / "src")  # the hook reads src/gpuonboard/data relative to itself
    return root


def build(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict`, as make lint runs it."""
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "out")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_real_site_builds_strictly(tmp_path: Path) -> None:
    r = build(REPO, tmp_path)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "out" / "reference" / "exit-codes" / "index.html").read_text()
    assert "<!-- gen:" not in html and "HOST_KEY" in html  # the marker was replaced by the table
    commands = (tmp_path / "out" / "reference" / "commands" / "index.html").read_text()
    assert "host name(s) from the inventory, comma-separated" in commands  # each flag's own help
    xid = (tmp_path / "out" / "reference" / "data-tables" / "index.html").read_text()
    assert "reset_gpu" in xid and "GPU has fallen off the bus" in xid  # (rows of data/xid.yml)


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("[a missing anchor](../reference/rules.md#no-such-section)", "rules.md#no-such-section"),
        ("[a missing page](../reference/no-such-page.md)", "no-such-page.md"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path: Path, broken: str, said: str) -> None:
    root = site_copy(tmp_path)
    page = root / "docs" / "guides" / "onboard.md"
    page.write_text(page.read_text() + f"\n{broken}\n")
    r = build(root, tmp_path)
    assert r.returncode != 0, r.stderr
    assert f"WARNING -  Doc file 'guides/onboard.md' contains a link '../reference/{said}" in r.stderr, (
        r.stderr
    )


def test_an_unknown_generator_marker_fails_the_build(tmp_path: Path) -> None:
    root = site_copy(tmp_path)
    page = root / "docs" / "reference" / "exit-codes.md"
    page.write_text(page.read_text() + "\n<!-- gen:no-such-table -->\n")
    r = build(root, tmp_path)
    assert r.returncode != 0
    assert "unknown marker gen:no-such-table" in r.stderr, r.stderr
