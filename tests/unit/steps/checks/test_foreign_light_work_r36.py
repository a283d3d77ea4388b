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
    # (the pod's log is a view of its GPUs: said after the figures)
    assert actual.startswith("GPU 0 at 7 % utilisation with 623 MiB used, no process listed")
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
    assert actual.startswith("GPU 0 at 7 % utilisation with 623 MiB used, no process listed")


def _table_alone() -> str:
    lines = POD.read_text().splitlines()
    return "\n".join(line[2:] for line in lines[lines.index("  Mon Jul  7 20:36:12 2025") :]) + "\n"


def test_an_idle_gpu_still_passes(tmp_path: Path) -> None:
    """The table alone (no command above it: the box's own, as far as it says): 0 % at 623 MiB
    (an older driver's reserve, a desktop's memory alone) and 7 % at 12 MiB (a monitoring
    sample, no memory held): a pass, as before."""
    zero = _table_alone().replace(ROW, ROW.replace("      7%  ", "      0%  "))
    sample = _table_alone().replace(ROW, ROW.replace("     623MiB", "      12MiB"))
    assert foreign(tmp_path, zero)[0] == "pass"
    assert foreign(tmp_path, sample)[0] == "pass"


def test_a_busy_gpu_still_fails(tmp_path: Path) -> None:
    """12 % at 623 MiB (at the busy mark, edited in memory), display On: the fail stands."""
    text = POD.read_text().replace(ROW, ROW.replace("      7%  ", "     12%  "))
    assert foreign(tmp_path, text)[0] == "fail"


# revQ Q5: in a container's or pod's view (`docker run --gpus all ... nvidia-smi`, `kubectl logs`,
# `kubectl exec`) a GPU at 0 % holding 600 MiB with no process listed passed foreign_processes
# "none": a container's nvidia-smi never lists another container's processes, so memory held
# there is unverified at any utilisation (outside a container, as before: the vGPU reserve, an
# older driver's own memory).
REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
H100_ROW = "| N/A   27C    P0             72W /  700W |       1MiB /  81559MiB |      0%      Default |"
DOCKER = "$ docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n"


def test_a_gpu_holding_memory_at_0_pct_in_a_docker_run_view_is_no_pass(tmp_path: Path) -> None:
    text = H100.read_text()
    assert H100_ROW in text
    held = text.replace(H100_ROW, H100_ROW.replace("       1MiB", "     600MiB"), 1)
    verdict, actual, detail = foreign(tmp_path, DOCKER + held)
    assert verdict == "unverified"
    assert actual.startswith("GPU 0 at 0 % utilisation with 600 MiB used, no process listed (")
    assert "docker run" in actual and "another container" in detail
    # (the same table on the box itself: a pass, as before; the same view with 1 MiB: a pass)
    assert foreign(tmp_path, held)[0] == "pass"
    assert foreign(tmp_path, DOCKER + text)[0] == "pass"


def test_the_pods_gpu_at_0_pct_with_623_mib_is_no_pass(tmp_path: Path) -> None:
    """The real pod's log (`kubectl logs nvidia-smi`), its GPU edited to 0 %: unverified."""
    zero = POD.read_text().replace(ROW, ROW.replace("      7%  ", "      0%  "))
    verdict, actual, _detail = foreign(tmp_path, zero)
    assert verdict == "unverified"
    assert actual.startswith("GPU 0 at 0 % utilisation with 623 MiB used, no process listed")


H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


def test_kubectl_exec_q_is_a_view_of_the_pods_gpus_as_its_table_is(tmp_path: Path) -> None:
    """`kubectl exec POD -- nvidia-smi -q`: its `Attached GPUs` counts the pod's GPUs, not the
    box's; gpu_count and foreign_processes unverified, as of the same command's table (the -q
    passed both)."""
    text = "$ kubectl exec -it gpu-pod -- nvidia-smi -q\n" + H100_Q.read_text()
    rows = {c.name: c for c in checks(tmp_path, "nvidia-smi-q.txt", text, "gpu_count: 8\n")}
    assert rows["gpu_count"].verdict == "unverified"
    assert "the container it ran in" in rows["gpu_count"].actual
    assert rows["foreign_processes"].verdict != "pass"
    # (the same -q run on the box: its count passes, as before)
    box = {c.name: c for c in checks(tmp_path, "nvidia-smi-q.txt", H100_Q.read_text(), "gpu_count: 8\n")}
    assert box["gpu_count"].verdict == "pass"
