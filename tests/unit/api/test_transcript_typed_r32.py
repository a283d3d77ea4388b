"""Round 32 (truthleft5): commands typed without a prompt above outputs of several kinds, with a
blank line between the command and its output as pages set them (`nvidia-smi`, a blank, `Mon Jan
20 ...`), and a poster's label lines (`Command: lscpu`) at any line, not only a file's first:
each command's output is read as the saved session it is. Before, the text was read as its first
output (the table) and the lscpu below it was never read (`cpu_cores` "no lscpu output was
given"). Real captures (tests/fixtures/real/SOURCES.md), pasted in-test as a user pastes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H100X8 = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()
LSCPU = (REAL / "lscpu__intel-xeon-16vcpu__h200-vm.txt").read_text()
ORDER = "gpu_count: 8\ngpu_model: H100\ncpu_cores: 8\n"


@pytest.mark.parametrize(
    "page",
    [
        f"nvidia-smi\n\n{H100X8}\n\nlscpu\n\n{LSCPU}",  # (a blank below each typed command)
        f"nvidia-smi\n{H100X8}\n\nlscpu\n{LSCPU}",  # (none: as before, now of two kinds)
        f"Command: nvidia-smi\n{H100X8}\nCommand: lscpu\n{LSCPU}",  # (labels at any line)
        f"Output of `nvidia-smi`:\n\n{H100X8}\n**Output of `lscpu`:**\n\n{LSCPU}",
    ],
)
def test_each_typed_or_labelled_command_is_read(tmp_path: Path, page: str) -> None:
    _, checks = judged_box(tmp_path, {"page.txt": page}, ORDER)
    assert checks["gpu_count"].verdict == "pass", checks["gpu_count"]
    assert checks["cpu_cores"].verdict == "pass", checks["cpu_cores"]
    assert checks["cpu_cores"].actual.startswith("16 cores"), checks["cpu_cores"]


def test_words_above_the_first_command_keep_the_text_one_output(tmp_path: Path) -> None:
    """A page's own words above its first command (no output of a known kind): not split by
    typed commands, as before (the table read, its words a note or ignored)."""
    page = f"my box:\n\nnvidia-smi\n\n{H100X8}\n\nlscpu\n\n{LSCPU}"
    _, checks = judged_box(tmp_path, {"page.txt": page}, ORDER)
    assert checks["gpu_count"].verdict == "pass"
