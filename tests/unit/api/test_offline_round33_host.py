"""Round 33's host-side captures (measure33b): each output of the box read as what it is, and
each sentence true of the output given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
KATA = SESSIONS / (
    "page__docker-version-LABELLED+docker-info-LABELLED-CUT__18.03-kata-runtime__kata-tests-754.txt"
)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _said(r: subprocess.CompletedProcess[str]) -> str:
    return " ".join(r.stderr.split())


def test_a_docker_version_and_a_docker_info_in_one_file_are_each_read(tmp_path: Path) -> None:
    """kata-containers/tests#754 pastes `docker version` then `docker info` under labels: refused,
    exit 2, as "two docker info outputs" (measure33b 39); each is now read as itself."""
    r = cli(str(KATA))
    said = _said(r)
    assert r.returncode == 0, said
    assert "two docker info outputs" not in said
    assert "docker version: client 18.03.0-ce, engine 18.03.0-ce; it lists no runtime" in said
    assert "docker info: docker 18.03.0-ce; runtimes kata-runtime, runc (default kata-runtime)" in said


def test_a_docker_version_and_a_docker_info_in_two_files_are_each_read(tmp_path: Path) -> None:
    """The same two outputs split into two files were refused as "a second docker info output"."""
    lines = KATA.read_text().splitlines(keepends=True)
    info = next(i for i, line in enumerate(lines) if "`docker info`" in line)
    (tmp_path / "docker-version.txt").write_text("".join(lines[1:info]))
    (tmp_path / "docker-info.txt").write_text("".join(lines[info + 1 :]) + "\n")
    r = cli(f"{tmp_path / 'docker-version.txt'},{tmp_path / 'docker-info.txt'}")
    said = _said(r)
    assert r.returncode == 0, said
    assert "second docker info output" not in said
    assert "docker version: client 18.03.0-ce" in said and "docker info: docker 18.03.0-ce" in said


def test_two_docker_versions_are_still_two_outputs_of_one_kind(tmp_path: Path) -> None:
    """Two `docker version` outputs in one folder stay refused as two of one kind (one may be
    another box's): only docker version beside docker info is two commands."""
    lines = KATA.read_text().splitlines(keepends=True)
    info = next(i for i, line in enumerate(lines) if "`docker info`" in line)
    version = "".join(lines[1:info])
    (tmp_path / "a-docker-version.txt").write_text(version)
    (tmp_path / "b-docker-version.txt").write_text(version.replace("18.03.0-ce", "18.06.1-ce"))
    r = cli(str(tmp_path))
    assert r.returncode == 2, _said(r)
    assert "docker version" in _said(r)


SI16 = SESSIONS / (
    "transcript__lsblk-version+lsblk-bo-ONE-COLUMN-PER-COMMAND-CUT__util-linux-ng-2.17.2__systeminformation-16.txt"
)


def test_each_command_of_an_lsblk_session_is_said_as_what_it_printed() -> None:
    """systeminformation#16's session, one `lsblk -bo COLUMN` per command on util-linux-ng 2.17.2:
    refused rightly, but "no output below it" was said of `lsblk --version` (its version line is
    below it) and of `lsblk -bo TRAN` (`lsblk: unknown column: TRAN` is), and the ROTA column's
    eight `   1` were "line number(s) alone: a CI log viewer's gutter" (measure33b 19)."""
    r = cli(str(SI16))
    said = _said(r)
    assert r.returncode == 2, said
    assert "no output below it" not in said and "gutter" not in said, said
    assert "lsblk's version line (`lsblk from util-linux-ng 2.17.2`)" in said
    assert (
        "line 84 (`lsblk -bo TRAN`): a copied command line (`lsblk -bo TRAN`) whose output is only the"
        " tool's own message (`lsblk: unknown column: TRAN`)"
    ) in said
    assert "line 64 (`lsblk -bo ROTA`): this tool reads lsblk's output but could not read" in said


def test_a_tool_s_message_alone_is_said_as_such(tmp_path: Path) -> None:
    """The same message saved without its command was "an empty file"."""
    (tmp_path / "lsblk.txt").write_text("lsblk: unknown column: TRAN\n")
    said = _said(cli(str(tmp_path / "lsblk.txt")))
    assert "an empty file" not in said
    assert "only the tool's own message (`lsblk: unknown column: TRAN`)" in said
