"""Round 33 (measure33a): real nvidia-smi outputs not whole for reasons the rules said wrong.

- 06: a table cut after GPU 0's whole first row (name, bus id, ECC cell `N/A`): a lost GPU reads
  ERR! in that row (the A30's and A40's real tables), so nvidia-smi answered for GPU 0 and
  nvidia_driver passes (it was unverified), the cut said; a row cut inside its first line stays
  no answer (gpu-passthrough #4, steps/checks/test_gpu_rules_cut_r32.py).
- 26: a table whose header rows a page left out by hand (`...`): "lines were left out by hand",
  never "was cut off", and no "before the cut".
- 24: a whole table printed by `kubectl logs`: "read", no "before the cut" (the container's view
  is the only gap).
- 19-like: a warning of the GPUs read stands on a cut table ("of what was read"), as
  persistence_mode's does: ecc_mode's workstation warning of an RTX PRO 6000 (was unverified).
- 16-like: a topo -m matrix cut after GPU0's row says so.
- 12: `nvidia-smi mig -lgip` refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
P1000 = REAL / (
    "nvidia-smi__quadro-p1000__1gpu__driver410.78__docker-run-prompts__cut-after-gpu0-first-line"
    "__tensorflow-28171.txt"
)
B200_ELIDED = (
    REAL
    / "nvidia-smi__b200__1gpu__driver580.95.05__vm-passthrough__lines-left-out-by-hand__ubicloud-blog.txt"
)
GB200_POD = (
    REAL
    / "nvidia-smi__gb200__1gpu__driver580.126.20__kubectl-logs-pod__whole-table__gang-scheduling-report.txt"
)
LGIP = REAL / "nvidia-smi-mig-lgip__gb200__prompt__mig-parted-227.txt"
A30_ERR = REAL / "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt"
RTX_PRO = REAL / "nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt"


def test_a_table_cut_after_gpu0s_whole_first_row_answers_for_the_driver(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvidia-smi.txt", P1000.read_text(), "gpu_count: 1\n")
    assert got["nvidia_driver"] == (
        "pass",
        "driver 410.78, CUDA 10.0 (nvidia-smi answered: its driver version and 1 GPU read before the cut;"
        " incomplete probe: nvidia-smi's output lists 1 GPU(s) and was cut off)",
    )


@pytest.mark.parametrize("keep", ["name", "bus"])
def test_a_row_cut_inside_its_first_line_is_no_answer(tmp_path: Path, keep: str) -> None:
    """The same table cut after the name cell, or after the bus id cell (its ECC cell, where a
    lost GPU reads ERR!, cut away): no answer, unverified as before."""
    text = P1000.read_text()
    row = next(line for line in text.splitlines() if "Quadro P1000" in line)
    cells = row.split("|")
    cut = "|".join(cells[:2] if keep == "name" else cells[:3]) + "|"
    got = verdicts(tmp_path, "nvidia-smi.txt", text[: text.index(row)] + cut + "\n")
    assert got["nvidia_driver"][0] == "unverified", got["nvidia_driver"]


def test_a_lost_gpus_first_row_reads_err() -> None:
    """Why a first row read whole answers: the real A30 table's lost GPU 3 reads ERR! in it."""
    row = next(line for line in A30_ERR.read_text().splitlines() if line.startswith("|   3 "))
    assert "ERR!" in row.split("|")[1] and "ERR!" in row.split("|")[3]


def test_lines_left_out_by_hand_are_said_so(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvidia-smi.txt", B200_ELIDED.read_text(), "gpu_model: B200\ngpu_count: 1\n")
    driver = got["nvidia_driver"]
    assert driver[0] == "pass", driver
    assert "its driver version and 1 GPU read;" in driver[1], driver
    assert "lines were left out by hand (`...` on line 5)" in driver[1], driver
    assert not any("was cut off" in actual or "before the cut" in actual for _, actual in got.values()), got


def test_a_whole_table_of_a_pods_log_is_no_cut(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvidia-smi.txt", GB200_POD.read_text(), "gpu_model: GB200\n")
    driver = got["nvidia_driver"]
    assert driver[0] == "pass" and "its driver version and 1 GPU read;" in driver[1], driver
    assert "kubectl logs gang-worker-0" in driver[1]
    assert not any("before the cut" in actual or "was cut off" in actual for _, actual in got.values()), got


def test_a_warning_of_the_gpus_read_stands_on_a_cut_table(tmp_path: Path) -> None:
    """The real 4 x RTX 6000 Ada table, its ECC cells `Off` (a workstation GPU with ECC: a warn),
    cut after GPU 0's rows: ecc_mode warns of what was read, as persistence_mode does."""
    text = RTX_PRO.read_text()
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("|   0 "))
    cut = "".join(lines[: first + 3])
    whole = verdicts(tmp_path, "nvidia-smi.txt", text)
    got = verdicts(tmp_path, "nvidia-smi.txt", cut)
    if whole["ecc_mode"][0] != "warn":
        pytest.skip(f"the capture's ECC mode is no workstation warning ({whole['ecc_mode']})")
    assert got["ecc_mode"][0] == "warn", got["ecc_mode"]
    assert "(of what was read; incomplete probe: " in got["ecc_mode"][1]


def test_a_mig_profile_list_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "mig.txt").write_text(LGIP.read_text())
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / "mig.txt")])
    said = str(err.value)
    assert "an `nvidia-smi mig -lgip` list of the GPU instance profiles of GPU 0: MIG 1g.23gb" in said
    assert "not a recognised command output" not in said
