"""A copied `nvidia-smi --query-gpu=...` command line whose start a copy lost (`gpu=memory.total,
... --format=csv,...`) is read as that command's line (api/lost_heads.py): a page's two CSV
outputs of one query are refused naming both, as where both command lines are whole, never
"holds no nvidia-smi form this tool reads" (measure40a 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline, transcript
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
TWO = (
    "nvidia-smi-query-gpu-csv-noheader__two-blocks-second-command-head-lost-na-vs-not-supported"
    "__2004mib__i3pystatus-776.txt"
)
TWO_BOTH = "are two `nvidia-smi --query-gpu` CSV outputs, which cannot both be judged as the box"


def _refusal(tmp_path: Path, text: str) -> str:
    (tmp_path / "box.txt").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / "box.txt")])
    return str(err.value)


@pytest.mark.parametrize("lost", ["gpu=", "-query-gpu=", "ery-gpu="])
def test_a_headless_second_command_line_is_the_second_output(tmp_path: Path, lost: str) -> None:
    """As saved, and with another part of the command's start lost."""
    text = (REAL / TWO).read_text(encoding="utf-8").replace("\ngpu=", f"\n{lost}")
    said = _refusal(tmp_path, text)
    assert TWO_BOTH in said and "line 2 (" in said and "line 8 (" in said, said
    assert "no nvidia-smi form" not in said


def test_the_first_block_alone_is_still_read(tmp_path: Path) -> None:
    text = (REAL / TWO).read_text(encoding="utf-8")
    first = text[: text.index("instead of the old")]
    order = "order:\n  gpu_model: GeForce MX150\n  gpu_count: 1\n  vram: 2GB\n"
    assert verdicts(tmp_path, "box.txt", first, order)["gpu_count"][0] == "pass"


def test_a_headless_line_without_format_or_alone_is_no_command() -> None:
    """Without `--format=csv`, or in a text with no other prompt line, the line is left as it is."""
    text = (REAL / TWO).read_text(encoding="utf-8")
    unformatted = text.replace(
        " --format=csv,noheader,nounits \n2004, 2004, 0, 44, [Not", " \n2004, 2004, 0, 44, [Not"
    )
    assert unformatted != text
    parts = transcript.sections(unformatted)
    assert parts is None or all(
        not p.command.startswith("nvidia-smi --query-gpu") or p.line == 2 for p in parts
    )
    alone = text[text.index("gpu=") :]
    assert transcript.sections(alone) is None
