"""The shell scripts gpuonboard runs on hosts (src/gpuonboard/sh/*.sh, the rendered autostop
watcher): shellcheck finds nothing in them, the loader hands out what follows each file's header,
and what the modules put into a loaded script (constants, placeholders) is all filled in."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from gpuonboard import sh, shell, transfer
from gpuonboard.steps import dataset, prove
from gpuonboard.steps.autostop import render_script
from gpuonboard.transfer import shardstream, uploadlock

REPO = Path(__file__).resolve().parents[3]
SH_DIR = REPO / "src" / "gpuonboard" / "sh"
SCRIPTS = sorted(SH_DIR.glob("*.sh"))

needs_shellcheck = pytest.mark.skipif(
    shutil.which("shellcheck") is None,
    reason="shellcheck is not installed (scripts/bootstrap.sh installs it)",
)


def shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["shellcheck", "-f", "gcc", str(path)], capture_output=True, text=True, timeout=120)


@needs_shellcheck
def test_every_script_file_passes_shellcheck() -> None:
    r = subprocess.run(
        ["shellcheck", "-f", "gcc", *map(str, SCRIPTS)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr


@needs_shellcheck
@pytest.mark.parametrize("host", ["box-1", "odd host\nname $(x) `y`"])
def test_the_rendered_autostop_script_passes_shellcheck(tmp_path: Path, host: str) -> None:
    script = tmp_path / "autostop.sh"
    script.write_text(render_script(REPO, host, str(tmp_path / "auto stop's dir")))
    r = shellcheck(script)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_each_file_says_what_it_does_and_who_runs_it_and_load_drops_that_header(path: Path) -> None:
    text = path.read_text()
    header = text.split("\n\n", 1)[0]
    assert text.startswith("#!/bin/sh\n# ")
    assert "Run by: " in header
    body = sh.load(path.stem)
    assert body and not body.startswith(("#!", "\n")) and text.endswith(body)
    assert "Run by: " not in body
    assert sh.load(path.stem) is body  # read once per process


def test_what_the_modules_put_into_loaded_scripts_is_all_filled_in() -> None:
    built = {
        "receive": shardstream.RECEIVE_SCRIPT,
        "finish": shardstream.FINISH_SCRIPT,
        "take": uploadlock.TAKE_SCRIPT,
        "peek": uploadlock.PEEK_SCRIPT,
        "claim": uploadlock.CLAIM_SCRIPT,
        "decrypt": dataset.DECRYPT_SCRIPT,
        "session": shell.until_session_ends("sleep 1", "stop-a", "stop-b"),
        "disk": prove.disk_script("/scratch dir", 8, False, "t0k"),
    }
    for name, text in built.items():
        assert not re.search(r"__[A-Z_]+__|@[A-Z]+@", text), name
    assert transfer.LISTING_PRUNE in shardstream.FINISH_SCRIPT
    assert f"{uploadlock.UPLOAD_ENV}=$1-" in uploadlock.STOP_FN
    assert f"$(({uploadlock.STOP_WAIT_S} * 10))" in uploadlock.STOP_FN
    assert built["disk"].startswith(f"D='/scratch dir'; N=2; T=t0k; FIO=false; BASE={prove.DISK_FILE}\n")
    # each piece of a script still runs where the next begins (a joined line would be one command)
    assert shardstream.RECEIVE_SCRIPT.startswith(transfer.SHA256_FN + "\n" + shardstream.AGE_ERROR_FN + "\n")


@pytest.mark.parametrize("name", ["receive", "finish", "take", "peek", "claim", "decrypt", "session", "disk"])
def test_the_built_scripts_parse_in_dash(name: str) -> None:
    text = {
        "receive": shardstream.RECEIVE_SCRIPT,
        "finish": shardstream.FINISH_SCRIPT,
        "take": uploadlock.TAKE_SCRIPT,
        "peek": uploadlock.PEEK_SCRIPT,
        "claim": uploadlock.CLAIM_SCRIPT,
        "decrypt": dataset.DECRYPT_SCRIPT,
        "session": shell.until_session_ends("sleep 1", "stop-a", "stop-b"),
        "disk": prove.disk_script("/scratch dir", 8, True),
    }[name]
    sh_path = shutil.which("dash") or "/bin/sh"
    r = subprocess.run([sh_path, "-n", "-c", text], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_the_package_ships_the_script_files() -> None:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "sh/*.sh" in data["tool"]["setuptools"]["package-data"]["gpuonboard"]
