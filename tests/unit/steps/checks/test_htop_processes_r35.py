"""nvidia-htop's process table in place of nvidia-smi's own (`GPU PID USER GPU MEM %CPU %MEM TIME
COMMAND`; measure35c 31, an `nvidia-smi2` README): its jobs are read and named, never "no process
list was read from this output (... its process list cut away)"; the desktop's Xorg and
gnome-shell rows (no type given) are the display's. Real capture:
tests/fixtures/sessions/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

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
