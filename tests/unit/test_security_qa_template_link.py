"""The template step's state probe, run by a real sh, on a symlink whose target holds line
breaks: the target (as `readlink` prints it) is the host's text, never read as the probe's
own lines. A dangling link whose target reads `nowhere<LF>644 <sha256 of the content>` was
taken for a file that is up to date: the template was never written."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from gpuonboard.steps.files import RemoteState, parse_state, refusal, state_command

CONTENT = b"new\n"


def _probe(dest: Path, follow: bool) -> RemoteState:
    out = subprocess.run(
        ["/bin/sh", "-c", state_command(str(dest), follow)], capture_output=True, text=True, timeout=20
    )
    assert out.returncode == 0, out.stderr
    return parse_state(out.stdout)


def test_a_link_target_that_reads_as_a_mode_and_sha256_is_not_a_file(tmp_path: Path) -> None:
    target = "nowhere\n644 " + hashlib.sha256(CONTENT).hexdigest()
    dest = tmp_path / "app.conf"
    dest.symlink_to(target)  # dangling: nothing is there to read
    assert _probe(dest, follow=False) == RemoteState("absent", link=target)


def test_a_link_target_that_reads_as_directory_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "a\ndirectory").write_bytes(b"old\n")
    dest = tmp_path / "app.conf"
    dest.symlink_to("a\ndirectory")
    for follow in (False, True):
        state = _probe(dest, follow)
        assert state == RemoteState("file", "644", hashlib.sha256(b"old\n").hexdigest(), "a\ndirectory")
        assert refusal(str(dest), state) is None


def test_a_loop_with_follow_is_unresolved_and_names_its_target(tmp_path: Path) -> None:
    dest = tmp_path / "loop.conf"
    dest.symlink_to("loop.conf")
    assert _probe(dest, follow=True) == RemoteState("unresolved", link="loop.conf")
