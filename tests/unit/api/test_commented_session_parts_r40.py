"""A command's output quoted line by line behind one comment mark (MATLAB's `% `, a shell's
`# `, C's `// `) is read without it, in a saved session's part as in a file of its own
(api/saved_text.py uncommented, _COMMENT_MARK); a script's `!cmd` shell-escape line with
nothing below it is named as having no output saved, never as a command that "printed nothing"
(api/transcript.py Section.escape; measure40b 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
MATLAB = "session__matlab-bang-escapes-q-pct-commented-cut-in-ecc__2x-titan-z-369.30__markbucklin.txt"
ORDER = "order:\n  gpu_model: GTX TITAN Z\n  gpu_count: 2\n"


def _text() -> str:
    return (REAL / MATLAB).read_text(encoding="utf-8")


@pytest.mark.parametrize("mark", ["% ", "# ", "// "])
def test_the_commented_q_output_is_read(tmp_path: Path, mark: str) -> None:
    text = "\n".join(mark + line[2:] if line.startswith("% ") else line for line in _text().split("\n"))
    got = verdicts(tmp_path, "box.txt", text, ORDER)
    assert got["nvidia_driver"] == ("pass", "driver 369.30, CUDA unknown"), got["nvidia_driver"]
    assert got["gpu_model"] == ("pass", "2 x GeForce GTX TITAN Z"), got["gpu_model"]
    assert got["gpu_count"] == ("pass", "2"), got["gpu_count"]


def test_the_commented_q_output_alone_is_read(tmp_path: Path) -> None:
    """The family in a file of its own: the `% ` lines only, every line marked."""
    text = "\n".join(line for line in _text().split("\n") if line.startswith("%  ") or line.startswith("% "))
    got = verdicts(tmp_path, "box.txt", text, ORDER)
    assert got["gpu_model"] == ("pass", "2 x GeForce GTX TITAN Z"), got["gpu_model"]


def test_escape_lines_without_output_are_not_said_to_print_nothing(tmp_path: Path) -> None:
    (tmp_path / "box.txt").write_text(_text(), encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box.txt")], notes)
    said = " ".join(notes)
    assert "printed nothing" not in said, said
    assert "line 8 (`nvidia-smi -L`) has no output saved below it (a script's `!` shell-escape line)" in said


def test_a_typed_command_with_nothing_below_it_still_printed_nothing(tmp_path: Path) -> None:
    """A terminal's prompt line with the next prompt right below it did print nothing."""
    q = [line[2:] for line in _text().split("\n") if line.startswith("% ")]
    text = "$ uname -r\n4.15.0-20-generic\n$ nvidia-smi -i 0 nvlink\n$ nvidia-smi -q\n"
    text += "\n".join(q[q.index("==============NVSMI LOG============== ") - 1 :])
    (tmp_path / "box.txt").write_text(text, encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box.txt")], notes)
    assert "line 3 (`nvidia-smi -i 0 nvlink`) printed nothing" in " ".join(notes), notes
