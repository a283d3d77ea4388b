"""`pip install --user` outside a venv puts the data files under the user base
(`~/.local/share/gpuonboard`), not `<sys.prefix>/share/gpuonboard`: they are found there too,
after the prefix's and before the source checkout's."""

from __future__ import annotations

import site
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard import resources


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """An empty prefix, a user base and a checkout, each with nothing shipped yet."""
    p = {name: tmp_path / name for name in ("prefix", "userbase", "checkout")}
    for d in p.values():
        d.mkdir()
    monkeypatch.setattr(sys, "prefix", str(p["prefix"]))
    monkeypatch.setattr(site, "USER_BASE", str(p["userbase"]))
    monkeypatch.setattr(resources, "checkout_root", lambda: p["checkout"])
    resources.shipped_root.cache_clear()
    yield p
    resources.shipped_root.cache_clear()


def test_a_user_install_is_found_after_the_prefix_and_before_the_checkout(places: dict[str, Path]) -> None:
    user = places["userbase"] / "share" / "gpuonboard"
    for root in (user, places["checkout"]):
        (root / "playbooks").mkdir(parents=True)
        (root / "fixtures").mkdir(parents=True)
    assert resources.shipped_root() == user
    assert resources.shipped_dir("fixtures", "fixtures") == user / "fixtures"
    # the prefix's copy (a venv's, a system install's) comes first
    prefix = places["prefix"] / "share" / "gpuonboard"
    (prefix / "playbooks").mkdir(parents=True)
    (prefix / "fixtures").mkdir(parents=True)
    resources.shipped_root.cache_clear()
    assert resources.shipped_root() == prefix
    assert resources.shipped_dir("fixtures", "fixtures") == prefix / "fixtures"


def test_the_user_base_is_looked_at_once_when_it_is_the_prefix(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resources.installed_roots() == [
        places["prefix"] / "share" / "gpuonboard",
        places["userbase"] / "share" / "gpuonboard",
    ]
    monkeypatch.setattr(site, "USER_BASE", str(places["prefix"]))
    assert resources.installed_roots() == [places["prefix"] / "share" / "gpuonboard"]
