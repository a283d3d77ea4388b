"""rsync's remote command (`--rsync-path`, then the words rsync puts after it: ` --server ARGS . .`)
reached the login shell as it was, not through shell.login_neutral: under csh or tcsh a dataset
path holding `!` failed ("Event not found"), though docs/security.md said every command goes
through the wrapper. The rsync path is now the wrapper with a `$0` of its own, so rsync's words
reach the host's rsync as its "$@".

Each case is a real rsync push and pull through an `ssh` that runs the remote command as sshd
does (the words joined by spaces, `$SHELL -c TEXT` with the login shell's name as argv[0]), under
each real login shell installed here (one not installed is skipped)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard.transfer import rsync

SHELLS = ["bash", "dash", "zsh", "fish", "csh", "tcsh"]
# remote dir names each login shell reads in its own way where unquoted or double quoted
NAMES = ["set!1 $HOME 'q'", "[a] g*", "plain"]


def _fake_ssh(tmp_path: Path, login: str) -> Path:
    """An `ssh` for `-e`: drops its options and the host, runs the rest as sshd runs a command."""
    path = shutil.which(login)
    if path is None:
        pytest.skip(f"{login} is not installed here")
    ssh = tmp_path / "ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        'while [ "$1" = -F ]; do shift 2; done\n'
        "shift\n"  # (the host alias)
        f'exec env -i PATH=/usr/bin:/bin HOME="$HOME" SHELL={path} LC_ALL=C.UTF-8 '
        f'SSH_CLIENT="192.0.2.1 5 22" {path} -c "$*"\n'
    )
    ssh.chmod(0o755)
    return ssh


def _run(argv: list[str], ssh: Path) -> subprocess.CompletedProcess[str]:
    argv = [a if a != argv[argv.index("-e") + 1] else str(ssh) for a in argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("login", SHELLS)
@pytest.mark.parametrize("name", NAMES)
def test_rsync_push_and_pull_reach_the_remote_dir_under_every_login_shell(
    login: str, name: str, tmp_path: Path
) -> None:
    ssh = _fake_ssh(tmp_path, login)
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f.txt").write_text("data\n")
    remote = tmp_path / "remote" / name
    remote.mkdir(parents=True)
    (tmp_path / "remote" / "a").mkdir()  # (`[a]` must not land in `a/`)
    push = rsync.rsync_argv(src, str(remote), tmp_path / "cfg", "host", marker="GPUONBOARD_UPLOAD=1")
    got = _run(push, ssh)
    assert got.returncode == 0, got.stderr
    assert (remote / "d" / "f.txt").read_text() == "data\n"
    assert not any((tmp_path / "remote" / "a").iterdir())
    back = tmp_path / "back"
    back.mkdir()
    got = _run(rsync.pull_argv("host", tmp_path / "cfg", str(remote), back), ssh)
    assert got.returncode == 0, got.stderr
    assert (back / "d" / "f.txt").read_text() == "data\n"


def test_the_rsync_path_is_the_wrapper_with_its_own_name() -> None:
    """The text names nothing a login shell reads otherwise: the path is in the octal payload."""
    argv = rsync.rsync_argv(Path("/src"), "/data/set!1", Path("/cfg"), "host")
    (path,) = [a.removeprefix("--rsync-path=") for a in argv if a.startswith("--rsync-path=")]
    assert path.startswith("sh -c '") and path.endswith("' gpo") and "!" not in path
    printed = path.split('printf "', 1)[1].split('_"', 1)[0]
    decoded = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), printed)
    assert decoded == "cd -- '/data/set!1' && rsync \"$@\""
