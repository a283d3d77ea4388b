"""foreign_processes on a real `nvidia-smi` table cut short (round 23 review): a GPU that shows
work with no process listed, where the table was cut before (or inside) its Processes section,
is no fault seen (its processes may be a desktop's, a warn): unverified, not a fail; unless such
a GPU holds more than 1 GiB, a job's whatever the list names (round 33: test_foreign_cut_r33.py)."""

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
            # (the row names the cut once: no "(of what was read; incomplete probe: ...)" after it)
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


# two Tesla T4 rows at 10 GiB used each, GPU 0's processes Xorg (G) then tritonserver (C)
T4 = (REAL / "nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt").read_text()
# eight H200s, five of them running python (C) at ~50 %, listed GPU by GPU from GPU 0
H200 = (REAL / "nvidia-smi__h200__8gpu__driver575.57.08__load.txt").read_text()


def test_table_cut_after_a_busy_gpus_graphics_rows_is_unverified(tmp_path: Path) -> None:
    """The real T4 table cut after its first process row (GPU 0's Xorg, 4 MiB; its
    tritonserver row, 10 GiB, and the box's closing border cut away): GPU 0 at 10 GiB used
    warned of a desktop's graphics process, where the whole table fails on tritonserver; the
    rest of its list may be in the part cut away: unverified."""
    text = cut_before(T4, "39215      C   tritonserver")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "unverified", actual
    assert actual.startswith(
        "GPU 0: pid 1822 /usr/lib/xorg/Xorg (4 MiB); GPU 0 at 0 % utilisation with 10.2 GiB used"
        " (the output was cut short: its process list may be in the part cut away)"
    ), actual


def test_table_cut_inside_its_process_rows_leaves_the_other_gpus_lists_unread() -> None:
    """The real H200 table cut after GPU 0's row: the GPUs with no row in what was read (2 to 7)
    have no process list read (their rows may be in the part cut away), never an empty one."""
    from gpuonboard.facts.nvidia_smi.table import parse_table

    report = parse_table(cut_before(H200, "1213800      C   python"))
    assert [(g.index, g.processes_known, len(g.processes)) for g in report.gpus] == [
        (0, True, 1),
        *((i, False, 0) for i in range(1, 8)),
    ]


def test_table_cut_inside_its_process_rows_names_no_empty_list(tmp_path: Path) -> None:
    """The real H200 table cut after GPU 0's python row: the listed compute job fails, and the
    busy GPUs 2, 3, 4 and 6 whose rows were cut away are said to have no list read, not a list
    that names no process."""
    text = cut_before(H200, "1213800      C   python")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "fail" and "pid 1213801 python" in actual
    assert "lists no process" not in actual
    assert "GPU 2 at 53 % utilisation" in actual and "no process list was read" in actual


def test_a_whole_view_of_one_gpu_listing_graphics_beside_work_is_of_that_gpu(tmp_path: Path) -> None:
    """The real `nvidia-smi -i 7` view of an H800 (GPU 7 at 23 %, 59 GiB used), its one process
    row edited to type G `/usr/lib/xorg/Xorg` holding 60 MiB (review O of round 24): its process box is whole
    (only the view is narrowed, which makes the report not whole), so nothing of GPU 7's list is
    cut away: never "(the output was cut short: its process list may be in the part cut away)".
    Round 28: the desktop's process is a warning of GPU 7 only; GPUs 0-6, not read, may run a
    compute job (a fail), so the row is unverified, naming what was read and the view's gap (it
    warned, a verdict milder than the whole box's could be)."""
    text = (REAL / "nvidia-smi__h800__gpu7-of-8__driver525.105.17__ecc-off.txt").read_text()
    old = "82977      C   ...nv-py310-cu118/bin/python    60570MiB"
    assert old in text
    # (a desktop's size: a G process holding most of the memory is a job, round 35)
    text = text.replace(old, "82977      G   /usr/lib/xorg/Xorg                 60MiB")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "warn" and "(of what was read; " in actual, actual  # (round 33: a warning read stands)
    assert "it lists GPU 7 but not GPU 0, 1, 2, 3, 4, 5, 6" in actual
    assert "cut short" not in actual and "pid 82977 /usr/lib/xorg/Xorg" in actual
