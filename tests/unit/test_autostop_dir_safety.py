"""The directory root's cron runs the watcher from, and every directory above it, must be
this login's (or root's) alone: a symlink, another user's dir, or one others can write (above
it, unless sticky like /tmp) would let another user choose what root runs every minute. The
check is the shell function the probe and the install both run, here with this machine's sh."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import UNSAFE_DIR_FN


def _unsafe(d: Path) -> str | None:
    r = subprocess.run(
        ["sh", "-c", f'{UNSAFE_DIR_FN}; unsafe "$1"', "sh", str(d)], capture_output=True, text=True
    )
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.rstrip("\n") if r.returncode == 0 else None


def test_only_dirs_no_other_user_can_change_pass(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    ok = base / "autostop"
    ok.mkdir(mode=0o700)
    assert _unsafe(ok) is None
    assert _unsafe(base / "not-yet" / "autostop") is None  # (mkdir -p makes it 0700)

    # the dir itself writable by others, even with the sticky bit
    open_dir = base / "open"
    open_dir.mkdir()
    open_dir.chmod(0o1777)
    assert _unsafe(open_dir) == f"{open_dir}\tis writable by other users (mode 1777)"
    # below a sticky dir (as /tmp): fine, the dir itself being only ours
    mine = open_dir / "mine"
    mine.mkdir(mode=0o700)
    assert _unsafe(mine) is None
    assert _unsafe(open_dir / "new") is None  # (made by mkdir -p; one planted first is another user's)

    # below a dir others can write without the sticky bit: they could rename ours away
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "autostop").mkdir(mode=0o700)
    assert _unsafe(shared / "autostop") == f"{shared}\tis writable by other users (mode 777)"

    # a symbolic link, to a safe dir or not
    link = base / "link"
    link.symlink_to(ok)
    assert _unsafe(link) == f"{link}\tis a symbolic link"


def test_another_users_dir_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    if os.getuid() != 0:
        pytest.skip("needs root to give the dir to another user")
    os.chown(theirs, 65534, 65534)
    assert _unsafe(theirs) == f"{theirs}\tis owned by another user (uid 65534)"
