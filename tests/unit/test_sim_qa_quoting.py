"""The simulated host's `autostop_shutdown_command` names a file in the sim dir, and the sim dir
is under the current directory (`.gpuonboard/sim`): a project in a directory with a space
(`~/My Projects/x`) made it `touch /home/u/My Projects/x/...`, which touched `/home/u/My` and a
relative path instead, and a `;` in it ran the rest as a command (as root). The path is quoted.
Also: without OpenSSH's sshd sim.up says so (it was "internal error (FileNotFoundError ...)")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.testing import hosts, sim


@pytest.mark.parametrize("odd", ["My Projects", "x;touch INJECTED", "it's $(touch INJECTED)"])
def test_the_shutdown_command_touches_only_its_file(tmp_path: Path, odd: str) -> None:
    home = tmp_path / odd / "hosts" / "h1"
    home.mkdir(parents=True)
    entry = sim.sim_entry("h1", "127.0.3.1", 22, "/k", "SHA256:x", home)
    command = entry["vars"]["autostop_shutdown_command"]
    r = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    assert (home / "shutdown-ran").is_file()
    made = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert made == [f"{odd}/hosts/h1/shutdown-ran"]


def test_without_sshd_sim_up_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosts, "SSHD", str(tmp_path / "no-sshd"))
    with pytest.raises(
        UsageError, match=r"no-sshd is missing; install it \(apt-get install openssh-server\)"
    ):
        sim.up(tmp_path / "sim", "h1", "a100-8x-nvlink")
    assert not (tmp_path / "sim").exists()


def test_a_base_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """(It was "internal error (FileExistsError ...)", exit 70.)"""
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(UsageError, match=r"--base .*/afile is not a directory; give a directory for"):
        sim.up(afile, "h1", "a100-8x-nvlink")
    with pytest.raises(UsageError, match=r"--base .*/afile/sub: cannot create it \(Not a directory\)"):
        sim.up(afile / "sub", "h1", "a100-8x-nvlink")
