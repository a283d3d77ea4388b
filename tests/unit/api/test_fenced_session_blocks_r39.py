"""A page of fenced blocks read as a session: a bare command title line above a block (`lscpu -p`)
is that block's command, so each block is judged as saved alone, its own sentence given, the line
numbers the page's own (measure39d 10: "the text above its first prompt" and "the text below line
13 (no command above it)"); a block whose opening fence was not copied, a page's words, then the
next block (measure39a 19: the prose read as nvidia-smi's output at line 1). A session's `nvidia-smi:
command not found` before its later listing is said, never dropped: "nvidia-smi was not found at
line 1 (...), answered at line 7"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
LSCPU_E_P = (
    REAL
    / "session__lscpu-e-then-lscpu-p__bare-title-lines-FENCED__russian-da__2x-e5410__netutils-linux-169.txt"
).read_text()
JETSON = (
    REAL
    / (
        "session__jetson-nvidia-smi-command-not-found-prose-then-orin-540.4.0-table__FENCED-closed-first"
        "__ultralytics-20680.txt"
    )
).read_text()
LSCPU_SAID = (
    "`lscpu -e` / `lscpu -p` (one line per CPU), which this tool does not read: save plain `lscpu` of the box"
)


def _refusal(tmp_path: Path, text: str) -> str:
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / "s.txt")], [])
    return str(err.value)


def test_each_titled_block_gets_its_own_sentence(tmp_path: Path) -> None:
    said = _refusal(tmp_path, LSCPU_E_P)
    assert f"line 1 (`lscpu -e`): {LSCPU_SAID}" in said, said
    assert f"line 14 (`lscpu -p`): {LSCPU_SAID}" in said, said
    assert "above its first prompt" not in said and "no command above it" not in said, said


@pytest.mark.parametrize("title", ["free -m", "cat /proc/meminfo"])
def test_a_titled_block_of_an_output_read_is_read_under_its_command(tmp_path: Path, title: str) -> None:
    """The second block's title and lines another command's (`free -m`'s), the lscpu -e block
    named and the free read (it was under a bare prompt, its command unknown)."""
    free = "              total        used        free\nMem:          31901         613       23393\n"
    if title.startswith("cat"):
        free = "MemTotal:       32667140 kB\nMemFree:        23954720 kB\n"
    text = LSCPU_E_P[: LSCPU_E_P.index("lscpu -p")] + f"{title}\n```\n{free}```\n"
    notes: list[str] = []
    (tmp_path / "s.txt").write_text(text)
    outputs = offline.load_outputs([str(tmp_path / "s.txt")], notes)
    assert "free" in outputs, outputs.keys()
    assert f"line 1 (`lscpu -e`): {LSCPU_SAID}" in " ".join(notes), notes


def test_prose_title_is_no_command() -> None:
    from gpuonboard.api.paste_fences import _command_title

    assert _command_title("lscpu -p") and _command_title("nvidia-smi | grep MiB")
    assert not _command_title("free memory is low") and not _command_title("lscpu output below:")


def _warnings(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    facts = parse_facts(offline.load_outputs([str(tmp_path / "s.txt")], []))
    return list(facts.gpu.warnings) if facts.gpu else []


def test_not_found_then_table_across_blocks_is_said(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "s.txt", JETSON, "gpu_model: Orin\ngpu_count: 1\n")
    assert got["nvidia_driver"][0] == "pass", got["nvidia_driver"]
    said = _warnings(tmp_path, JETSON)
    assert (
        "nvidia-smi was not found at line 1 (`-bash: nvidia-smi: command not found`), answered at line 7"
        in said
    )


def test_not_found_then_table_joined_is_not_dropped(tmp_path: Path) -> None:
    """The two blocks joined, no fence nor prose between them: the not-found line said too (it
    was dropped unsaid); the later listing judged."""
    lines = JETSON.split("\n")
    joined = "\n".join(lines[:2] + lines[6:])
    got = verdicts(tmp_path, "s.txt", joined, "gpu_model: Orin\ngpu_count: 1\n")
    assert got["nvidia_driver"][0] == "pass", got["nvidia_driver"]
    assert (
        "nvidia-smi was not found at line 1 (`-bash: nvidia-smi: command not found`), answered at line 3"
        in _warnings(tmp_path, joined)
    )


def test_untitled_block_of_another_form_is_named_in_the_session(tmp_path: Path) -> None:
    """The first block's title line taken out: its `lscpu -e` table, above the first prompt, is
    named as saved alone it is (it was "not an output this tool reads")."""
    said = _refusal(tmp_path, LSCPU_E_P.replace("lscpu -e\n", "", 1))
    assert f"the text above its first prompt (`CPU NODE SOCKET CORE L1d:L1i:L2 ONLINE`): {LSCPU_SAID}" in said
    assert f"line 13 (`lscpu -p`): {LSCPU_SAID}" in said, said
