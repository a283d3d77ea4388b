"""The template step's write script, run by a real sh, on a `dest` that is a symlink or not a
regular file: by default the link itself is replaced (Ansible's `follow: no`) and its target
untouched; with follow the target is written through a temp file beside it and the link
kept; a FIFO that appeared since the probe is never replaced; the state probe reads the
target's mode, not the link's 777."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.files import RemoteState, follow_arg, parse_state, refusal, state_command, write_script

CONTENT = b"new\n"


def _write(dest: Path, follow: bool) -> subprocess.CompletedProcess[bytes]:
    want = hashlib.sha256(CONTENT).hexdigest()
    script = write_script(str(dest), "640", want, "0123456789abcdef", follow)
    return subprocess.run(["/bin/sh", "-c", script], input=CONTENT, capture_output=True, timeout=20)


def _link(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "etc").mkdir()
    (tmp_path / "opt").mkdir()
    target, link = tmp_path / "opt" / "foo.conf", tmp_path / "etc" / "foo.conf"
    target.write_bytes(b"old\n")
    link.symlink_to("../opt/foo.conf")
    return link, target


def test_by_default_the_link_is_replaced_and_its_target_untouched(tmp_path: Path) -> None:
    link, target = _link(tmp_path)
    r = _write(link, follow=False)
    assert r.returncode == 0, r.stderr
    assert (link.is_symlink(), link.read_bytes(), target.read_bytes()) == (False, CONTENT, b"old\n")


def test_with_follow_the_target_is_written_and_the_link_kept(tmp_path: Path) -> None:
    link, target = _link(tmp_path)
    r = _write(link, follow=True)
    assert r.returncode == 0, r.stderr
    assert (os.readlink(link), target.read_bytes(), oct(target.stat().st_mode & 0o777)) == (
        "../opt/foo.conf",
        CONTENT,
        "0o640",
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["etc", "foo.conf", "foo.conf", "opt"]


def test_a_link_loop_with_follow_is_refused_and_kept(tmp_path: Path) -> None:
    loop = tmp_path / "loop.conf"
    loop.symlink_to(loop.name)
    r = _write(loop, follow=True)
    assert r.returncode == 1
    assert r.stderr.decode().strip() == (
        f"{loop} is a symlink whose target cannot be resolved (a loop, or a missing directory)"
    )
    assert (os.readlink(loop), [p.name for p in tmp_path.iterdir()]) == ("loop.conf", ["loop.conf"])


def test_a_fifo_dest_is_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "f.conf"
    os.mkfifo(fifo)
    for follow in (False, True):
        r = _write(fifo, follow)
        assert r.returncode == 1
        assert "is not a regular file (a device, FIFO or socket)" in r.stderr.decode()
        assert fifo.is_fifo()
    assert [p.name for p in tmp_path.iterdir()] == ["f.conf"]


def test_the_state_probe_reads_the_targets_mode_not_the_links(tmp_path: Path) -> None:
    link, target = _link(tmp_path)
    target.chmod(0o640)
    for follow in (False, True):
        out = subprocess.run(
            ["/bin/sh", "-c", state_command(str(link), follow)], capture_output=True, text=True, timeout=20
        )
        assert parse_state(out.stdout) == RemoteState(
            "file", "640", hashlib.sha256(b"old\n").hexdigest(), "../opt/foo.conf"
        )


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file another owner needs root")
def test_the_file_gets_the_owner_of_the_links_target_not_of_the_link(tmp_path: Path) -> None:
    """A service's 0640 config behind a link stays readable by the service's group: the file
    that replaces the link (or the target written through it) gets the target's owner and group,
    as a regular dest keeps its own."""
    for follow in (False, True):
        case = tmp_path / str(follow)
        case.mkdir()
        link, target = _link(case)
        os.chown(target, 4321, 4322)
        r = _write(link, follow)
        assert r.returncode == 0, r.stderr
        st = os.stat(link)  # (the file, or the target through the kept link)
        assert (st.st_uid, st.st_gid, oct(st.st_mode & 0o777)) == (4321, 4322, "0o640")
        assert link.is_symlink() == follow


def test_follow_is_a_boolean_or_its_rendered_text() -> None:
    assert [follow_arg(v) for v in (True, False, "True", " false ")] == [True, False, True, False]
    # the one yes/no rule of every step argument (steps.base.truthy)
    assert [follow_arg(v) for v in ("yes", "off", 1, 0, None)] == [True, False, True, False, False]
    for bad in ("maybe", 2, "y"):
        with pytest.raises(StepArgsError) as exc:
            follow_arg(bad)
        assert str(exc.value) == f"argument 'follow' must be true or false, not {bad!r}"


# The template step's state probe, run by a real sh, on a symlink whose target holds line
# breaks: the target (as `readlink` prints it) is the host's text, never read as the probe's
# own lines. A dangling link whose target reads `nowhere<LF>644 <sha256 of the content>` was
# taken for a file that is up to date: the template was never written.


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
