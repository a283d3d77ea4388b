"""A command's output copied from a CI log viewer with the viewer's gutter lines between its own
(Drone's step time `2s` and line number, each alone on a line; GitHub Actions' line number
alone): read as the output, or refused naming those lines where they cannot be told apart.
The capture is harness/harness#1801's (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.viewer_lines import unviewed
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DRONE = "df-h__drone-ci-log-view-gutter__harness-1801.txt"
COPIED = "df -h\n"  # (the poster's command line above the output, put back)


def mounts(tmp_path: Path, text: str) -> dict[str, int | None]:
    path = tmp_path / "df.txt"
    path.write_text(text)
    return {m.mountpoint: m.size_bytes for m in parse_facts(offline.load_outputs([str(path)])).mounts}


def test_a_drone_log_views_df_is_read_without_its_gutter(tmp_path: Path) -> None:
    """Before: refused, "a header this tool cannot read (df run in a language other than
    English ...?)", though the header is English."""
    got = mounts(tmp_path, COPIED + (REAL / DRONE).read_text())
    assert set(got) == {"/", "/dev", "/sys/fs/cgroup", "/drone", "/dev/shm", "/sys/firmware"}
    assert got["/drone"] == 235 * 1024**3


def test_line_numbers_alone_as_github_actions_copies_them_are_dropped(tmp_path: Path) -> None:
    """The same capture with GitHub Actions' copy shape (edited in-test: the `2s` lines left
    out, the line numbers kept)."""
    lines = [line for line in (REAL / DRONE).read_text().split("\n") if line != "2s"]
    whole = mounts(tmp_path, (REAL / DRONE).read_text())
    assert mounts(tmp_path, "\n".join(lines)) == mounts(tmp_path, COPIED + "\n".join(lines)) == whole


def test_numbers_without_text_between_them_are_kept() -> None:
    """A list of GPU indexes, a counter's samples: numbers alone with no output line between
    them are no gutter."""
    for text in ("0\n1\n2\n3\n", "2s\n0\n1\n2\n", "1\n2\nFilesystem\n3\n"):
        assert unviewed(text) == text


def test_a_gutter_that_cannot_be_told_apart_is_refused_naming_its_lines(tmp_path: Path) -> None:
    """The capture edited in-test: one line number left out (line 27's), so the numbers are no
    longer one more each line and the viewer's lines cannot be dropped safely."""
    lines = (COPIED + (REAL / DRONE).read_text()).split("\n")
    lines.remove("27")
    with pytest.raises(UsageError) as err:
        mounts(tmp_path, "\n".join(lines))
    said = str(err.value)
    assert "step time(s) alone (`2s`)" in said and "line number(s) alone" in said
    assert "CI log viewer's gutter" in said and "language" not in said
