"""nvidia-smi's failure pasted as Markdown inline code (one backtick at the start of its first
line, one at the end of its last, or a pair around one line) is quoted without the poster's
backticks (facts/nvidia_smi_failure.py; measure40d 21)."""

from __future__ import annotations

from pathlib import Path

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
BLOCKED = (
    "nvml-failure__blocked-by-os-inline-code-backticks-across-lines-under-prose__wsl2-rtx3080__wsl-7627.txt"
)
ORDER = "order:\n  gpu_model: RTX 3080\n  gpu_count: 1\n"
QUOTED = "nvidia-smi failed (Failed to initialize NVML: GPU access blocked by the operating system)"


def test_inline_code_across_lines_is_quoted_without_its_backtick(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "box.txt", (REAL / BLOCKED).read_text(encoding="utf-8"), ORDER)
    assert got["nvidia_driver"] == ("fail", QUOTED), got["nvidia_driver"]


def test_inline_code_around_one_line_is_quoted_without_its_backticks(tmp_path: Path) -> None:
    """The family: the first line alone, as one inline code span (`` `...` ``)."""
    text = (REAL / BLOCKED).read_text(encoding="utf-8").splitlines()
    one = text[0] + "\n" + text[1] + "`\n"
    got = verdicts(tmp_path, "box.txt", one, ORDER)
    assert got["nvidia_driver"] == ("fail", QUOTED), got["nvidia_driver"]


def test_a_backtick_pair_inside_the_message_is_kept(tmp_path: Path) -> None:
    """A message's own backticks (a pair inside the line) are not the poster's."""
    text = "Failed to initialize NVML: Unknown Error (see `dmesg`)\n"
    got = verdicts(tmp_path, "box.txt", text, ORDER)
    assert "`dmesg`" in got["nvidia_driver"][1], got["nvidia_driver"]
