"""A template step whose `dest` is a directory: `mv -f TEMP DIR` moved the file into the
directory, the step said "changed" and every later run dropped another `.gpuonboard.*` file
there. A dest written as a directory is refused at load; one that is a directory on the host
fails the write, leaving the directory as it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.files import TemplateStep, same_mode, write_script

CONTENT = b"KEY=value\n"


def test_a_dest_that_is_a_directory_on_the_host_is_refused_and_left_alone(tmp_path: Path) -> None:
    dest = tmp_path / "conf.d"
    dest.mkdir()
    want = hashlib.sha256(CONTENT).hexdigest()
    r = subprocess.run(
        ["/bin/sh", "-c", write_script(str(dest), "644", want, "0123456789abcdef")],
        input=CONTENT,
        capture_output=True,
        timeout=20,
    )
    assert r.returncode == 1
    assert r.stderr.decode().strip() == (
        f"{dest} is a directory on the host; 'dest' must name a file (e.g. {dest}/NAME)"
    )
    assert list(dest.iterdir()) == []  # nothing moved into it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf.d"]  # no temp file beside it


@pytest.mark.parametrize("dest", ["/etc/app/", "/"])
def test_a_dest_written_as_a_directory_is_an_argument_error(dest: str) -> None:
    with pytest.raises(StepArgsError, match="must name a file"):
        TemplateStep({"src": "remote/acceptance.env.j2", "dest": dest})


def test_the_state_probe_tells_a_directory_apart(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_bytes(CONTENT)
    outs = {}
    for name in ("d", "f", "missing"):
        probe = TemplateStep({"src": "x.j2", "dest": str(tmp_path / name), "mode": "0600"}).state_probe
        outs[name] = subprocess.run(
            ["/bin/sh", "-c", probe.command], capture_output=True, text=True, timeout=20
        ).stdout.split()
    assert outs["d"] == ["directory"]
    assert outs["f"][1] == hashlib.sha256(CONTENT).hexdigest()
    assert outs["missing"] == []


def _write(dest: Path, mode: str) -> subprocess.CompletedProcess[bytes]:
    want = hashlib.sha256(CONTENT).hexdigest()
    return subprocess.run(
        ["/bin/sh", "-c", write_script(str(dest), mode, want, "0123456789abcdef")],
        input=CONTENT,
        capture_output=True,
        timeout=20,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner needs root")
@pytest.mark.parametrize("mode", ["640", "4755"])
def test_an_existing_dest_keeps_its_owner_and_group(tmp_path: Path, mode: str) -> None:
    """A service's config (owned by its user, 0640) replaced by a file of the login user
    (root:root 0640) could no longer be read by the service."""
    dest = tmp_path / "app.conf"
    dest.write_bytes(b"old\n")
    os.chown(dest, 65534, 65534)
    r = _write(dest, mode)
    assert r.returncode == 0, r.stderr
    st = dest.stat()
    assert dest.read_bytes() == CONTENT
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    assert oct(st.st_mode & 0o7777) == oct(int(mode, 8))  # (chown cleared the setuid bit)


def test_a_new_dest_belongs_to_the_login_user(tmp_path: Path) -> None:
    dest = tmp_path / "new.conf"
    assert _write(dest, "600").returncode == 0
    assert (dest.stat().st_uid, oct(dest.stat().st_mode & 0o777)) == (os.geteuid(), "0o600")


def test_a_mode_000_file_is_up_to_date_once_written(tmp_path: Path) -> None:
    """`stat -c %a` prints 0 for mode 000: compared as text with "000" the step rewrote the
    file on every run."""
    dest = tmp_path / "shadow"
    assert _write(dest, "000").returncode == 0
    probe = TemplateStep({"src": "x.j2", "dest": str(dest), "mode": "0000"})
    have = subprocess.run(["/bin/sh", "-c", probe.state_probe.command], capture_output=True, text=True)
    assert same_mode(have.stdout.split()[0], probe.mode)
    assert not same_mode("644", "600") and not same_mode(None, "644") and not same_mode("?", "644")
