"""A command line a terminal wrapped (the query's rest on the next line): nvidia-smi refused
what it got (`"--format=" switch is missing. Please run 'nvidia-smi -h' for help.`) and the shell
ran the rest as a command of its own (`-bash: ion.gpu,power.draw: command not found`). That call
is named as nvidia-smi's refusal of its command line, the wrap said, never an output this tool
could not read, nor nvidia-smi missing (api/shell_traces.py; measure33c 35).

Real capture: tests/fixtures/sessions/SOURCES.md (henrygd/beszel#262)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
BESZEL = (
    SESSIONS / "transcript__nvidia-smi-query-WRAPPED+bash-not-found+nvidia-smi-h+table-CUT__beszel-262.txt"
)
REFUSED = "nvidia-smi's refusal of the command line it was given"


def _notes(tmp_path: Path, text: str) -> tuple[list[str], dict[str, tuple[str, str]]]:
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "session.txt").write_text(text)
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(folder / "session.txt")], notes))
    (folder / "order.yml").write_text('gpu_count: 2\nmin_driver: "535"\n')
    judged = offline.judge(facts, offline.load_order(str(folder / "order.yml")))
    return notes, {c.name: (c.verdict, c.actual) for c in judged}


def test_the_real_wrapped_query_is_named_as_nvidia_smis_refusal(tmp_path: Path) -> None:
    notes, judged = _notes(tmp_path, BESZEL.read_text())
    (note,) = notes
    first = note.split("; line 7")[0]
    assert f'{REFUSED} (`"--format=" switch is missing.' in first
    assert "the terminal wrapped the command line, and the shell ran its rest (`ion.gpu,power.draw" in first
    assert "could not read what it printed" not in first
    assert judged["min_driver"] == ("pass", "535.183.01")
    assert judged["nvidia_driver"][0] == "unverified"  # (its table cut: never `nvidia-smi not found`)


@pytest.mark.parametrize(
    "shell",
    [
        "-bash: {w}: command not found",
        "bash: {w}: command not found",
        "bash: line 1: {w}: command not found",
        "zsh: command not found: {w}",
        "sh: 1: {w}: not found",
    ],
)
def test_each_shells_word_on_the_wrapped_rest(tmp_path: Path, shell: str) -> None:
    rest = "ame,memory.total --format=csv"
    text = (
        "$ nvidia-smi --query-gpu=index,n\n"
        f"{rest}\n"
        "\"--format=\" switch is missing. Please run 'nvidia-smi -h' for help.\n"
        f"{shell.format(w=rest.split()[0])}\n"
        "$ nvidia-smi -L\n"
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-6d7a3c1e-0b3f-4c55-9a55-1c2f0b9a1d11)\n"
        "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0c8b9e2d-6a44-4f1e-8b77-2d3e4f5a6b72)\n"
    )
    notes, judged = _notes(tmp_path, text)
    assert any(REFUSED in n and "the terminal wrapped the command line" in n for n in notes), notes
    assert judged["gpu_count"] == ("pass", "2")


def test_a_not_found_line_naming_no_line_above_is_no_wrap(tmp_path: Path) -> None:
    """The shell's word on another command than a line of the output is not taken for a wrap."""
    text = (
        "$ nvidia-smi --query-gpu=index --format=csv,nounits,bogus\n"
        "\"--format=\" switch is missing. Please run 'nvidia-smi -h' for help.\n"
        "-bash: nvtop: command not found\n"
        "$ nvidia-smi -L\n"
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-6d7a3c1e-0b3f-4c55-9a55-1c2f0b9a1d11)\n"
    )
    notes, _ = _notes(tmp_path, text)
    assert not any("the terminal wrapped" in n for n in notes), notes
