"""The files step's probe of gpuonboard's cache dir on the host, run with this machine's sh and
coreutils: where `${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard` is, and when it is left alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import OwnCache, TeardownFilesStep, own_cache


def probe(env: dict[str, str], cwd: Path) -> tuple[str | None, OwnCache | None]:
    command = TeardownFilesStep({"paths": [], "own_cache": True}).probe.command
    base = {"PATH": os.environ["PATH"]}
    out = subprocess.run(["sh", "-c", command], env={**base, **env}, cwd=cwd, capture_output=True, check=True)
    lines = out.stdout.decode().splitlines()
    home = lines[0][5:] if lines[0].startswith("home ") else None
    return home, own_cache(lines[1:], home)


def test_the_cache_dir_follows_xdg_cache_home_and_is_removed_only_when_present(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found == OwnCache(str(home / ".cache" / "gpuonboard"))  # absent: nothing to remove
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found == OwnCache(str(home / ".cache/gpuonboard"), str(home / ".cache/gpuonboard"))
    xdg = tmp_path / "xdg"
    (xdg / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home), "XDG_CACHE_HOME": str(xdg)}, tmp_path)
    assert found is not None and found.target == str(xdg / "gpuonboard")


def test_an_odd_cache_place_is_left_and_said_never_a_failure(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    # a relative XDG_CACHE_HOME (against the spec): the host would resolve it from its cwd
    (tmp_path / "rel" / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home), "XDG_CACHE_HOME": "rel"}, tmp_path)
    assert found == OwnCache("rel/gpuonboard", problem="not an absolute path")
    # the cache dir a symlink to a system dir: never removed
    (home / ".cache").mkdir()
    (home / ".cache" / "gpuonboard").symlink_to("/etc")
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found is not None and not found.target
    assert found.problem == "resolved to /etc, a system directory"
    # a symlink to a dir of ours: its target goes too, and the message says so
    (home / ".cache" / "gpuonboard").unlink()
    (tmp_path / "elsewhere" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard").symlink_to(tmp_path / "elsewhere" / "gpuonboard")
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found is not None and found.link and found.target == str(tmp_path / "elsewhere" / "gpuonboard")
    assert found.link_note() == f"; a symlink: its target {found.target} is removed too"


def test_the_step_without_own_cache_probes_no_cache() -> None:
    step = TeardownFilesStep({"paths": ["/data/x"]})
    assert "XDG_CACHE_HOME" not in step.probe.command
    assert TeardownFilesStep({"paths": []}).probes() == []
