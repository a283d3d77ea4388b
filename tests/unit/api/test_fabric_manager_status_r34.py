"""Round 34 (measure34c 32a): `systemctl status nvidia-fabricmanager`, the form users post, is read
as the fabric manager's state (its `Active:` and `Loaded:` lines), as `systemctl is-active` in a
*fabric* file is: a Dell HGX B300 bring-up report's (`active (running)`, its prompt line above and
the pager's `lines 1-22/22 (END)` below) refused the whole folder of topo, nvlink and ibstat files
(rc 2); an NVLS recovery write-up's (`× ... failed (Result: signal)`) is the service down."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.facts.fabric_manager import parse_fabric_manager

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
ACTIVE = REAL / (
    "systemctl-status-nvidia-fabricmanager__active-running__b300-hgx-dell__prompt-and-pager-line"
    "__kr-bringup-report.txt"
)
FAILED = REAL / (
    "systemctl-status-nvidia-fabricmanager__failed-result-signal-killed__journal-elided"
    "__nvls-recovery-notes.txt"
)
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
TOPO_7 = REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"


@pytest.mark.parametrize(("path", "state"), [(ACTIVE, "active"), (FAILED, "failed")])
def test_systemctl_status_is_the_services_state(path: Path, state: str) -> None:
    from gpuonboard.api.saved_text import strip_prompt

    text = strip_prompt(path.read_text())
    assert detect_kind(text) == "fabric_manager"
    fm = parse_fabric_manager(text)
    assert (fm.state, fm.load_state, fm.unit_present) == (state, "loaded", True)


@pytest.mark.parametrize(
    ("text", "state", "load"),
    [  # (test inputs in systemd's words, not captures)
        (
            "○ nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
            "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; disabled)\n"
            "     Active: inactive (dead)\n",
            "inactive",
            "loaded",
        ),
        ("Unit nvidia-fabricmanager.service could not be found.\n", "inactive", "not-found"),
    ],
)
def test_other_states_of_the_unit(text: str, state: str, load: str) -> None:
    assert detect_kind(text) == "fabric_manager"
    fm = parse_fabric_manager(text)
    assert (fm.state, fm.load_state) == (state, load)


@pytest.mark.parametrize(
    ("path", "verdict", "said"),
    [(ACTIVE, "pass", "fabric manager active"), (FAILED, "warn", "fabric manager failed")],
)
def test_a_folder_with_it_is_judged(tmp_path: Path, path: Path, verdict: str, said: str) -> None:
    files = {"nvidia-smi-q.txt": H100_Q.read_text(), "fabricmanager-status.txt": path.read_text()}
    _, checks = judged_box(tmp_path, files, "gpu_model: H100\ngpu_count: 8\n")
    row = checks["fabric_manager"]
    assert (row.verdict, row.actual.split(";")[0]) == (verdict, said), row
    assert checks["gpu_count"].verdict == "pass"


def test_the_b300_folder_is_no_longer_refused(tmp_path: Path) -> None:
    """The capture beside a real topo -m: read, the topo judged (was: the whole folder refused)."""
    files = {"topo.txt": TOPO_7.read_text(), "fabricmanager-status.txt": ACTIVE.read_text()}
    facts, checks = judged_box(tmp_path, files, "gpu_count: 8\ninterconnect: nvlink\n")
    assert facts.given("fabric_manager") and "interconnect" in checks
