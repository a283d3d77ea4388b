"""nvidia-htop's process table in place of nvidia-smi's own (`GPU PID USER GPU MEM %CPU %MEM TIME
COMMAND`; measure35c 31, an `nvidia-smi2` README): its jobs are read and named, never "no process
list was read from this output (... its process list cut away)"; the desktop's Xorg and
gnome-shell rows (no type given) are the display's. Real capture:
tests/fixtures/sessions/SOURCES.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_table

from ...offline_judge import verdicts

SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
NAME = "page__nvidia-smi2-l-nvidia-htop-derivative-process-table__2x-geforce-1080ti-470.57__readme.txt"


def test_the_wrapper_s_jobs_are_named(tmp_path: Path) -> None:
    text = (SESSIONS / NAME).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, NAME, text, "gpu_count: 2\n")["foreign_processes"]
    assert verdict == "fail", actual
    assert "pid 6963 python train.py (2365 MiB)" in actual, actual
    assert "pid 25255 python train_image_classifier.py" in actual, actual
    assert "no process list was read" not in actual and "cut away" not in actual, actual
    assert "pid 1966 /usr/bin/gnome-shell (4 MiB) (no type given: a desktop's own process)" in actual


def _row_of(text: str, pid: int, cells: Callable[[re.Match[str]], str]) -> str:
    """`text` with nvidia-htop's row of `pid` rewritten by `cells` (given the row's match: GPU,
    PID, USER, MEM, then the rest): a test input made from the real table."""
    row = re.compile(rf"^(\|\s+\d+\s+{pid})(\s+\S+)(\s+\d+MiB)(.*?)(\s*\|)$", re.MULTILINE)
    return row.sub(cells, text, count=1)


def _only(text: str, pid: int) -> str:
    """`text` with every process row but `pid`'s left out of nvidia-htop's table."""
    keep = re.compile(rf"^\|\s+\d+\s+(?!{pid}\s)\d+\s+\S+\s+\d+MiB\s.*\n", re.MULTILINE)
    return keep.sub("", text)


def _hidden(found: re.Match[str]) -> str:
    """The row as nvidia-htop prints a process `ps -p` does not see (another pid namespace,
    hidepid, gone): GPU, PID and memory, its USER, %CPU, %MEM, TIME and COMMAND cells empty."""
    return found[1] + " " * len(found[2]) + found[3] + " " * len(found[4]) + found[5]


def test_a_row_of_a_process_ps_could_not_see_is_read_by_its_pid_and_memory(tmp_path: Path) -> None:
    """revO F3: the only process on GPU 0 with its USER..COMMAND cells empty: named by its pid
    and memory, foreign_processes fails; before, the row was skipped and GPU 0 passed "none"."""
    text = _only(_row_of((SESSIONS / NAME).read_text(encoding="utf-8"), 6963, _hidden), 6963)
    verdict, actual = verdicts(tmp_path, NAME, text, "gpu_count: 2\n")["foreign_processes"]
    assert verdict == "fail", actual
    assert "pid 6963" in actual and "(2365 MiB)" in actual, actual
    [gpu0, _] = parse_table(text).gpus
    assert [(p.pid, p.used_memory_mib) for p in gpu0.processes] == [(6963, 2365)]


def test_a_line_in_the_table_that_is_no_row_read_leaves_the_lists_unknown(tmp_path: Path) -> None:
    """revO F3: a line inside nvidia-htop's table that is no row read (its memory cell `N/A`):
    the GPUs' process lists unknown, never that process skipped and "none" passed."""
    unread = _row_of(
        (SESSIONS / NAME).read_text(encoding="utf-8"),
        6963,
        lambda found: found[1] + found[2] + " " * (len(found[3]) - 3) + "N/A" + found[4] + found[5],
    )
    text = _only(unread, 6963)
    assert not any(gpu.processes_known for gpu in parse_table(text).gpus)
    verdict, actual = verdicts(tmp_path, NAME, text, "gpu_count: 2\n")["foreign_processes"]
    assert verdict != "pass" and "no process list was read" in actual, actual
