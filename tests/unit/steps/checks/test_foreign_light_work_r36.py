"""foreign_processes where a GPU with no process listed does a little work: utilisation above 0 %
and more memory held than an idle GPU's (IDLE_HELD_MIB), both under the busy mark (10 %, 1 GiB).
No job is proved, and no idle GPU either: a job or desktop of another container, VM or host
(nvidia-smi in a pod lists none of the host's processes) shows just so. Unverified with the
figures, never a pass, whatever the GPU's display (a display's excuse is for memory alone, where
a desktop's processes run outside the view).

Real capture: tests/fixtures/sessions/SOURCES.md (the cv-platform minikube README: a pod's
`kubectl logs nvidia-smi`, RTX 3060 Ti at 623 MiB and 7 % with `No running processes found`);
the edits are in memory."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
POD = SESSIONS / (
    "page__kubectl-logs-nvidia-smi-INDENTED-list-item__rtx3060ti-575.57.08"
    "-display-on-623MiB-7pct-no-process__cv-platform-minikube.txt"
)
ROW = "| 92%   40C    P0             49W /  200W |     623MiB /   8192MiB |      7%      Default |"


def foreign(tmp_path: Path, text: str) -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, "nvidia-smi.txt", text) if c.name == "foreign_processes")
    return row.verdict, row.actual, row.detail


def test_the_pods_gpu_at_7_pct_with_623_mib_and_no_process_is_no_pass(tmp_path: Path) -> None:
    """The real pod's table: unverified naming the figures and why (was a pass)."""
    verdict, actual, detail = foreign(tmp_path, POD.read_text())
    assert verdict == "unverified"
    assert actual == "GPU 0 at 7 % utilisation with 623 MiB used, no process listed"
    assert "another container" in detail
    assert "display" in detail


def test_the_same_table_unindented_and_without_its_lines_above_is_no_pass(tmp_path: Path) -> None:
    """The table alone (indent and the README's lines taken off): the same verdict."""
    lines = POD.read_text().splitlines()
    table = "\n".join(line[2:] for line in lines[lines.index("  Mon Jul  7 20:36:12 2025") :]) + "\n"
    assert foreign(tmp_path, table)[0] == "unverified"


def test_the_display_does_not_excuse_the_work(tmp_path: Path) -> None:
    """Display Off (edited in memory): the same unverified; a display neither excuses nor
    changes it."""
    text = POD.read_text().replace("00000000:07:00.0  On |", "00000000:07:00.0 Off |")
    verdict, actual, _detail = foreign(tmp_path, text)
    assert verdict == "unverified"
    assert actual == "GPU 0 at 7 % utilisation with 623 MiB used, no process listed"


def test_an_idle_gpu_still_passes(tmp_path: Path) -> None:
    """0 % at 623 MiB (an older driver's reserve, a desktop's memory alone) and 7 % at 12 MiB (a
    monitoring sample, no memory held): a pass, as before."""
    zero = POD.read_text().replace(ROW, ROW.replace("      7%  ", "      0%  "))
    sample = POD.read_text().replace(ROW, ROW.replace("     623MiB", "      12MiB"))
    assert foreign(tmp_path, zero)[0] == "pass"
    assert foreign(tmp_path, sample)[0] == "pass"


def test_a_busy_gpu_still_fails(tmp_path: Path) -> None:
    """12 % at 623 MiB (at the busy mark, edited in memory), display On: the fail stands."""
    text = POD.read_text().replace(ROW, ROW.replace("      7%  ", "     12%  "))
    assert foreign(tmp_path, text)[0] == "fail"
