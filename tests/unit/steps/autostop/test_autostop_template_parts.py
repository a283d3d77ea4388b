"""The watcher's template is one file a concern: templates/remote/autostop.sh.j2 holds the header
and `{% include %}`s the parts under templates/remote/autostop/. Every part ships with the
package at its own path (pyproject's `data-files`), the script renders the same from an installed
copy as from the checkout, and a project's own copy of a part, or of the whole file, replaces the
shipped one."""

from __future__ import annotations

import shutil
import site
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from gpuonboard import resources, shell
from gpuonboard.steps.autostop import render_script

REPO = Path(__file__).resolve().parents[4]
PARTS = REPO / "templates" / "remote" / "autostop"
HOST, DIR = "odd host\nname $(x) `y`", "/tmp/auto stop's dir"


def _data_files() -> dict[str, list[str]]:
    table = tomllib.loads((REPO / "pyproject.toml").read_text())
    files: dict[str, list[str]] = table["tool"]["setuptools"]["data-files"]
    return files


def _shipped() -> dict[Path, PurePosixPath]:
    """Each file of the repository that `data-files` installs -> where (under the prefix)."""
    shipped: dict[Path, PurePosixPath] = {}
    for dest, patterns in _data_files().items():
        for pattern in patterns:
            for src in REPO.glob(pattern):
                if src.is_file():
                    shipped[src] = PurePosixPath(dest) / src.name
    return shipped


def test_every_template_file_is_installed_at_its_own_path() -> None:
    shipped = _shipped()
    wrong = [
        f"{path.relative_to(REPO)} -> {shipped.get(path)}"
        for path in sorted((REPO / "templates").rglob("*"))
        if path.is_file()
        and shipped.get(path) != PurePosixPath("share/gpuonboard") / path.relative_to(REPO).as_posix()
    ]
    assert wrong == []
    assert len(list(PARTS.glob("*.sh.j2"))) >= 2  # (the watcher is in parts)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A prefix holding the playbooks and templates as a wheel's install lays them out, found as
    the shipped copy (no checkout to fall back to); yields an empty project directory."""
    prefix = tmp_path / "prefix"
    for src, dest in _shipped().items():
        if dest.parts[2] in ("playbooks", "templates"):
            (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, prefix / dest)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(site, "USER_BASE", str(tmp_path / "userbase"))
    monkeypatch.setattr(resources, "checkout_root", lambda: tmp_path / "no checkout")
    resources.shipped_root.cache_clear()
    project = tmp_path / "project"
    project.mkdir()
    yield project
    resources.shipped_root.cache_clear()


def test_the_watcher_renders_the_same_from_an_installed_copy(installed: Path) -> None:
    from_checkout = render_script(REPO, HOST, DIR)
    assert resources.shipped_root() == Path(sys.prefix) / "share" / "gpuonboard"
    assert render_script(installed, HOST, DIR) == from_checkout
    assert from_checkout.startswith("#!/bin/sh\n") and from_checkout.endswith("\nesac\n")
    assert "{%" not in from_checkout and "{#" not in from_checkout.replace("${#", "")


def test_a_projects_own_part_replaces_the_shipped_one(installed: Path) -> None:
    # (rendered for another project: Jinja2 keeps a template it found in the shipped copy for
    # as long as that file is unchanged, a project file made after it in the same process unseen)
    shipped = render_script(REPO, HOST, DIR)
    own = installed / "templates" / "remote" / "autostop" / "probes.sh.j2"
    own.parent.mkdir(parents=True)
    text = (PARTS / "probes.sh.j2").read_text()
    assert text.count("\nbusy_reason() {\n") == 1
    own.write_text(text.replace("\nbusy_reason() {\n", "\nbusy_reason() {\n  : the project's own\n"))
    assert render_script(installed, HOST, DIR) == shipped.replace(
        "\nbusy_reason() {\n", "\nbusy_reason() {\n  : the project's own\n"
    )


def test_a_projects_own_copy_of_the_whole_file_replaces_it(installed: Path) -> None:
    own = installed / "templates" / "remote" / "autostop.sh.j2"
    own.parent.mkdir(parents=True)
    # a copy of the main file alone: the parts it includes come from the shipped copy
    main = (REPO / "templates" / "remote" / "autostop.sh.j2").read_text()
    own.write_text(main.replace("watcher for", "own for"))
    shipped = render_script(REPO, HOST, DIR)
    assert render_script(installed, HOST, DIR) == shipped.replace("watcher for", "own for")
    # a copy from before the parts (one file, no include) is used as it is
    older = installed.parent / "older project"
    (older / "templates" / "remote").mkdir(parents=True)
    (older / "templates" / "remote" / "autostop.sh.j2").write_text(
        "#!/bin/sh\nDIR={{ dir_q }}\n{% raw %}echo ${#DIR}{% endraw %}\n"
    )
    assert render_script(older, HOST, DIR) == f"#!/bin/sh\nDIR={shell.quote(DIR)}\necho ${{#DIR}}\n"
