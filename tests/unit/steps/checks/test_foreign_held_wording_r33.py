"""foreign_processes' fail on GPUs whose process list a cut took, holding more than a desktop's
memory (round 33, review revK F3): its advice said "a GPU that drives no display" where nvidia-smi
never said so (the GTX 780 Ti table's Disp.A `N/A`; a `-q -d MEMORY,...` output, which prints no
Display Active line), and "its process list cut away" of a `-q -d` output that may never have
asked for one. The verdict is the whole output's (a fail): only the words change."""

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# 2 x GTX 780 Ti, Disp.A `N/A`, GPU 0 holding 1084 MiB; cut here after the GPU rows (derived)
GTX780 = "\n".join(
    (REAL / "nvidia-smi__geforce-gtx-780-ti__2gpu__driver352.79__processes-not-supported.txt")
    .read_text()
    .splitlines()[:13]
)
# paradoxxxzero/gnome-shell-system-monitor-applet#356 (DavidLKing, 2017-08-15): the output of
# `nvidia-smi -i 0 -q -d MEMORY,UTILIZATION,POWER,CLOCK,COMPUTE` as the stored comment holds it,
# opened with a backtick and cut at `Deco` (quoted here as a test input, verbatim)
GNOME_Q_D = """`==============NVSMI LOG==============

Timestamp                           : Tue Aug 15 16:00:35 2017
Driver Version                      : 375.66

Attached GPUs                       : 1
GPU 0000:01:00.0
    FB Memory Usage
        Total                       : 1995 MiB
        Used                        : 1934 MiB
        Free                        : 61 MiB
    BAR1 Memory Usage
        Total                       : 256 MiB
        Used                        : 5 MiB
        Free                        : 251 MiB
    Compute Mode                    : Default
    Utilization
        Gpu                         : 47 %
        Memory                      : 6 %
        Encoder                     : 0 %
        Deco"""


def _row(tmp_path: Path, name: str, text: str):  # type: ignore[no-untyped-def]
    return next(c for c in checks(tmp_path, name, text) if c.name == "foreign_processes")


def test_a_table_whose_display_is_not_reported_is_not_said_to_drive_none(tmp_path: Path) -> None:
    row = _row(tmp_path, "nvidia-smi.txt", GTX780)
    assert row.verdict == "fail", row
    assert "drives no display" not in row.detail, row.detail
    assert "a GPU whose display nvidia-smi did not report holds more than 1 GiB" in row.detail
    assert row.actual.endswith("; its process list cut away)"), row.actual


def test_a_table_whose_display_is_off_still_drives_none(tmp_path: Path) -> None:
    """The same table with Disp.A `Off` (derived): nvidia-smi says it drives no display."""
    row = _row(tmp_path, "nvidia-smi.txt", GTX780.replace(":01:00.0     N/A |", ":01:00.0     Off |"))
    assert row.verdict == "fail", row
    assert "a GPU that drives no display holds more than 1 GiB" in row.detail, row.detail


def test_a_q_d_output_of_other_sections_is_not_said_to_have_lost_its_list(tmp_path: Path) -> None:
    row = _row(tmp_path, "nvidia-smi-q.txt", GNOME_Q_D)
    assert row.verdict == "fail", row
    assert "its process list cut away" not in row.actual, row.actual
    assert row.actual.endswith("; no process list read from these sections)"), row.actual
    assert "drives no display" not in row.detail, row.detail
