"""foreign_processes on a real `nvidia-smi -q` cut short inside its last GPU's Processes (review
R of round 24): the list read may go on in the part cut away (the RTX 2080 SUPER's goes on with
two ffmpeg compute jobs after its gnome-shell and Xwayland), so a GPU that shows work beside the
graphics processes read is unverified, never the warn of a desktop's processes."""

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi.text_q import parse_text_q

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# one RTX 2080 SUPER (610.57.04) at 8 % utilisation: Processes (line 240) lists gnome-shell
# (pid 1720, lines 241-246), Xwayland (4556, 247-252), ffmpeg (28511, 253-258), ffmpeg (28512,
# 259-264), then Capabilities closes the record: whole, a fail
Q_2080 = (REAL / "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt").read_text()
LINES = Q_2080.splitlines(keepends=True)


def cut(whole: int, chars: int = 0) -> str:
    """The capture's first `whole` lines, then the first `chars` characters of the next one (no
    newline after them: a cut mid-line)."""
    return "".join(LINES[:whole]) + LINES[whole][:chars]


def test_the_whole_capture_fails_on_its_compute_jobs(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "nvidia-smi-q.txt", Q_2080)["foreign_processes"]
    assert verdict == "fail" and "pid 28511 ffmpeg" in actual


@pytest.mark.parametrize(("whole", "chars"), [(248, 40), (253, 10), (254, 40), (242, 20), (249, 20)])
def test_a_cut_mid_line_inside_a_process_entry_is_unverified(tmp_path: Path, whole: int, chars: int) -> None:
    """Cut mid-line inside an entry (248 lines + 40 characters of `Process ID` 4556's line; 253 +
    10 of ffmpeg's `Compute instance ID`; 254 + 40 of its `Process ID`; 242 + 20 of the first
    `Process ID`; 249 + 20): it warned "GPU 0: pid 1720 /usr/bin/gnome-shell" (the parser set the
    list open only where the entries read were whole), or failed on an entry cut before its Name
    ("pid 4556 (no name given)") or on an empty list taken for a whole one."""
    verdict, actual = verdicts(tmp_path, "nvidia-smi-q.txt", cut(whole, chars))["foreign_processes"]
    assert verdict == "unverified", actual
    assert "(no name given)" not in actual


@pytest.mark.parametrize("whole", range(241, 256))
def test_a_cut_at_a_line_end_inside_the_processes_is_unverified(tmp_path: Path, whole: int) -> None:
    """Cut at the end of each line from the Processes header's first entry line to ffmpeg's
    `Process ID` (lines 241-255, the text ending with its newline): read as a whole record, it
    warned on gnome-shell / Xwayland (or failed on an entry without its Name). A driver from
    R560 on closes each record with `Capabilities`: a record without it was cut."""
    verdict, actual = verdicts(tmp_path, "nvidia-smi-q.txt", cut(whole))["foreign_processes"]
    assert verdict == "unverified", actual


def test_a_record_without_capabilities_is_whole_on_an_older_driver() -> None:
    """The same capture cut after Xwayland's entry, its `KMD Version` / `Driver Version` edited
    to 550.54.15 (a branch whose -q ends each record with its Processes): whole, as before."""
    text = cut(252).replace("610.57.04", "550.54.15")
    report = parse_text_q(text)
    assert report.complete
    assert [p.pid for p in report.gpus[0].processes] == [1720, 4556]


# one RTXA6000-24Q vGPU guest (535.183.06, no Capabilities section), idle: its Processes lists
# two Xorg entries (each `GPU instance ID`, `Compute instance ID`, `Process ID`, `Type`, `Name`,
# `Used GPU Memory`), the warn of a desktop's processes whole
VGPU = REAL / "nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed__guest.txt"


@pytest.mark.parametrize("kept", ["GPU instance ID", "Compute instance ID", "Process ID"])
def test_a_cut_inside_the_first_entry_of_an_idle_gpu_is_no_list_read(tmp_path: Path, kept: str) -> None:
    """The real RTXA6000-24Q guest's `-q` cut by the test at a line end inside its first process
    entry (after its `GPU instance ID`, `Compute instance ID` or `Process ID` line: no Type or
    Name read). Before: read as a whole record with no process list known, so its idle figures
    passed foreign_processes ("none by utilisation, memory used ..."), the whole output warning
    on its Xorg entries. Now the entry cut short is a cut in the list: unverified, the list may
    be in the part cut away."""
    lines = VGPU.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == "Processes")
    at = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(kept))
    assert verdicts(tmp_path, "nvidia-smi-q.txt", VGPU.read_text())["foreign_processes"][0] == "warn"
    verdict, actual = verdicts(tmp_path, "nvidia-smi-q.txt", "".join(lines[: at + 1]))["foreign_processes"]
    assert verdict == "unverified" and "part cut away" in actual
