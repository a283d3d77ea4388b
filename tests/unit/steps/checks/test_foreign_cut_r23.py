"""foreign_processes on a real `nvidia-smi` table cut short (round 23 review): a GPU that shows
work with no process listed, where the table was cut before (or inside) its Processes section,
is no fault seen (its processes may be a desktop's, a warn): unverified, not a fail."""

from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# one GB10 at 10 % utilisation, its processes all graphics (Xorg, gnome-shell, firefox): a warn
GB10 = (REAL / "nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt").read_text()
# one RTX 2080 SUPER with two compute processes (ffmpeg) beside two graphics ones: a fail
RTX2080 = (REAL / "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt").read_text()


def cut_before(text: str, marker: str) -> str:
    """`text` cut at the start of the line holding `marker` (derived: a capture cut short)."""
    return text[: text.rindex("\n", 0, text.index(marker)) + 1]


def test_whole_table_of_graphics_processes_warns(tmp_path: Path) -> None:
    v = verdicts(tmp_path, "nvidia-smi.txt", GB10)
    assert v["foreign_processes"][0] == "warn"


def test_table_cut_before_its_processes_section_is_unverified(tmp_path: Path) -> None:
    """The same table cut before `| Processes:` (a scroll-back, a dropped session): the fail
    said "no process list was read from this output" of a list the cut took away."""
    head = cut_before(GB10, "| Processes:")
    # (cut at the Processes line, and one line sooner: at the top border of its box)
    for text in (head, head.rstrip("\n").rsplit("\n", 1)[0] + "\n"):
        verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
        assert verdict == "unverified", actual
        assert actual == (
            "GPU 0 at 10 % utilisation with memory use not reported, and no process list was read"
            " from this output (the output was cut short: its process list may be in the part cut away)"
        )


def test_compute_process_listed_before_the_cut_still_fails(tmp_path: Path) -> None:
    """A compute job seen on what was read stays a fault: the table cut after its first ffmpeg."""
    text = cut_before(RTX2080, "28512      C   ffmpeg")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "fail" and "pid 28511 ffmpeg" in actual


def test_a_busy_gpu_whose_whole_process_list_reads_none_still_fails(tmp_path: Path) -> None:
    """The real `nvidia-smi -i 7` view of an H800 (GPU 7 at 23 %, 59 GiB used), its one process
    row made "No running processes found" (what a container that hides the job shows): the view
    is not the whole box, but its process box is whole, so the busy GPU with no process listed is
    another job (a fail), as before this round; the cut rule made it unverified (review K)."""
    text = (REAL / "nvidia-smi__h800__gpu7-of-8__driver525.105.17__ecc-off.txt").read_text()
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if "82977" in line)
    lines[row] = "|  No running processes found" + " " * 48 + "|"
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", "\n".join(lines))["foreign_processes"]
    assert verdict == "fail", actual
