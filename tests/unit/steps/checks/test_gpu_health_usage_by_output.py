"""foreign_processes judges "busy, no process listed" by the figures of the output that listed
(or did not list) the processes. nvidia-smi's formats are separate calls at separate moments:
where their utilisation / memory figures disagree on whether the GPU works, no verdict is drawn
from one output's figures beside another's list; where they agree, one output adds what the
other did not read (the encoder figures a table lacks).

Real captures of one box (tests/fixtures/real, one moment each), edited in memory as each test
says: the RTX 2080 SUPER table and `--query-gpu` CSV of driver 610.57.04 (8 % / 815 MiB in
both, NVENC at 100 % with 2 sessions, ffmpeg listed), and the H200 `-q` and CSV of driver
590.48.01 under load (100 % / 32362 MiB, memhog and gpu_burn listed)."""

from __future__ import annotations

import re
from pathlib import Path

from ...offline_judge import judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
TABLE = (REAL / "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt").read_text()
CSV = (
    REAL / "nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv"
).read_text()
H200_Q = (REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt").read_text()
H200_CSV = (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv").read_text()
ORDER = "gpu_count: 1\n"


def csv_set(text: str, **cells: str) -> str:
    """The one-row CSV with the named fields' cells set to the values given."""
    head, row = text.rstrip("\n").split("\n")
    names = [h.strip().split(" [")[0] for h in head.split(",")]
    values = row.split(",")
    for name, value in cells.items():
        values[names.index(name.replace("__", "."))] = " " + value
    return head + "\n" + ",".join(values) + "\n"


def table_listing_none(util: str = "") -> str:
    """The table with its 4 process rows made one `No running processes found` row (what a
    container that hides the jobs shows), and its GPU-Util cell set to `util` where given."""
    lines = TABLE.split("\n")
    rows = [i for i, line in enumerate(lines) if " N/A  N/A " in line]
    lines[rows[0]] = "|  No running processes found".ljust(len(lines[rows[0]]) - 1) + "|"
    for i in reversed(rows[1:]):
        del lines[i]
    text = "\n".join(lines)
    return text.replace("|      8%      Default |", f"|    {util:>3}%      Default |") if util else text


def foreign(tmp_path: Path, files: dict[str, str]) -> tuple[str, str]:
    check = judged_box(tmp_path, files, ORDER)[1]["foreign_processes"]
    return check.verdict, check.actual


def test_a_csv_sample_busy_beside_a_table_idle_with_no_process_is_no_fail(tmp_path: Path) -> None:
    """The CSV's utilization.gpu made 100 % (a sample at another moment): the merge took the
    CSV's 100 % beside the table's empty list and failed "busy though nvidia-smi lists no
    process there", while the table that lists no process reads 8 % at its own moment."""
    verdict, actual = foreign(
        tmp_path, {"t.txt": table_listing_none(), "g.csv": csv_set(CSV, utilization__gpu="100 %")}
    )
    assert verdict == "unverified", actual
    assert actual == "GPU 0 100 % / 815 MiB in the CSV query, 8 % / 815 MiB in the table, no process listed"


def test_a_table_busy_with_no_process_fails_beside_an_idle_csv(tmp_path: Path) -> None:
    """The table's GPU-Util made 100 % and the CSV's encoder made idle (0 %, 0 sessions): the
    merge took the CSV's 8 % and passed "none", though the table itself shows work and lists
    no process: another job, by one output's figures."""
    files = {
        "t.txt": table_listing_none("100"),
        "g.csv": csv_set(CSV, utilization__encoder="0 %", encoder__stats__sessionCount="0"),
    }
    verdict, actual = foreign(tmp_path, files)
    assert verdict == "fail", actual
    assert actual == "GPU 0 at 100 % utilisation with 0.8 GiB used, though nvidia-smi lists no process there"


def test_outputs_that_agree_add_the_engines_the_table_lacks(tmp_path: Path) -> None:
    """The capture as it is but the table's process rows made none: table and CSV agree (8 % /
    815 MiB), so the CSV's NVENC at 100 % beside the table's empty list is another job."""
    verdict, actual = foreign(tmp_path, {"t.txt": table_listing_none(), "g.csv": CSV})
    assert verdict == "fail", actual
    assert "encoder 100 %, 2 encoder sessions, though nvidia-smi lists no process there" in actual


def test_an_idle_q_with_no_process_is_no_pass_beside_a_busy_csv(tmp_path: Path) -> None:
    """The H200 `-q` made idle with no process (its Processes section made `None`, GPU
    utilisation 0 %, FB memory used 0 MiB), beside the real CSV at 100 % / 32362 MiB: the merge
    took the -q's figures only and passed "none"; the outputs disagree: unverified."""
    head, tail = H200_Q.split("\n    Processes\n", 1)
    head = re.sub(r"(\n    FB Memory Usage\n.*\n.*\n        Used\s+: )32362 MiB", r"\g<1>0 MiB", head)
    head = re.sub(r"(\n    Utilization\n        GPU\s+: )100 %", r"\g<1>0 %", head)
    q = (
        head
        + "\n    Processes                                          : None"
        + tail[tail.index("\n    Capabilities") :]
    )
    assert foreign(tmp_path / "q", {"q.txt": q})[0] == "pass"  # (the -q alone: idle, none listed)
    verdict, actual = foreign(tmp_path / "both", {"q.txt": q, "g.csv": H200_CSV})
    assert verdict == "unverified", actual
    assert actual == "GPU 0 0 % / 0 MiB in -q, 100 % / 32362 MiB in the CSV query, no process listed"


# one idle H200 of driver 580.159.04: its table and its -q, each listing no process
H200_580_T = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
H200_580_Q = (REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text()


def _busy_table() -> str:
    # (utilisation with memory held: utilisation alone, at 0 MiB, is no job's)
    old = "|       0MiB / 143771MiB |      0%      Default |"
    assert old in H200_580_T
    return H200_580_T.replace(old, "|   18193MiB / 143771MiB |    100%      Default |")


def _busy_q() -> str:
    old = "    Utilization\n        GPU                                            : 0 %"
    used = "        Used                                           : 0 MiB\n"
    assert old in H200_580_Q and used in H200_580_Q
    busy = H200_580_Q.replace(old, old.replace(": 0 %", ": 100 %"))
    return busy.replace(used, used.replace(": 0 MiB", ": 18193 MiB"))


def test_an_empty_list_beside_its_own_busy_figures_fails_whichever_output_ranks_first(
    tmp_path: Path,
) -> None:
    """The H200 580.159.04 table and -q, both listing no process (review O of round 24): the
    table's GPU-Util edited to 100 % (and 18193 MiB used) beside the idle -q, and the -q's GPU
    utilisation edited to 100 % (18193 MiB used) beside the idle table. Each busy output lists
    no process of its own beside its own work: another job, a fail both ways (the first was
    unverified "disagree", as the ranked format's list was judged and the other's empty list ignored)."""
    for name, files in (
        ("t", {"t.txt": _busy_table(), "q.txt": H200_580_Q}),
        ("q", {"t.txt": H200_580_T, "q.txt": _busy_q()}),
    ):
        verdict, actual = foreign(tmp_path / name, files)
        assert verdict == "fail", (name, actual)
        assert actual.startswith("GPU 0 at 100 % utilisation"), actual
        assert actual.endswith("though nvidia-smi lists no process there"), actual
