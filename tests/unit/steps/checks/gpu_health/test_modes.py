"""The mode rules of gpu_health (steps/checks/gpu_health/modes.py): the compute mode, on real
captures (edited in-test where a docstring says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ....offline_judge import checks, judged_box, verdicts

REAL = Path(__file__).parents[4] / "fixtures" / "real"
# Stanford Sherlock's 2 x Tesla P40, both `E. Process` (the cluster's default compute mode)
P40 = "nvidia-smi__tesla-p40__2gpu__driver375.51__exclusive-process__sherlock.txt"
H100_TABLE = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
H200_Q = "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_Q_X = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"


def _p40(edit: tuple[str, str] | None = None) -> str:
    """The real P40 table, with GPU 1's compute-mode cell replaced as `edit` says (old, new:
    each of the row's own width)."""
    text = (REAL / P40).read_text(encoding="utf-8")
    if edit is None:
        return text
    rows = text.split("\n")
    at = max(i for i, row in enumerate(rows) if edit[0] in row)  # (GPU 1's row, the last)
    rows[at] = rows[at].replace(edit[0], edit[1])
    return "\n".join(rows)


def test_gpus_in_the_exclusive_process_mode_warn(tmp_path: Path) -> None:
    """The real Sherlock table: both P40s `E. Process`. Before: no rule read the compute mode
    (no row, the box passed as any other). Now compute_mode warns, naming each GPU: a second
    CUDA process on a GPU fails to start."""
    got = verdicts(tmp_path, "nvidia-smi.txt", _p40())
    assert got["compute_mode"] == ("warn", "GPU 0: Exclusive_Process, GPU 1: Exclusive_Process")


def test_a_gpu_in_the_prohibited_mode_fails(tmp_path: Path) -> None:
    """Edit: the real Sherlock table with GPU 1's `E. Process` cell reading `Prohibited` (as the
    Tesla K80 GPUs 2 and 6 of a StackOverflow table read, 2016): no CUDA program can run there,
    a fail whose advice sets it back (`-c DEFAULT`). GPU 0's exclusive mode is named too."""
    got = verdicts(tmp_path, "nvidia-smi.txt", _p40(("E. Process", "Prohibited")))
    assert got["compute_mode"] == ("fail", "GPU 1: Prohibited, GPU 0: Exclusive_Process")
    edited = _p40(("E. Process", "Prohibited"))
    [row] = [c for c in checks(tmp_path, "nvidia-smi.txt", edited) if c.name == "compute_mode"]
    assert "sudo nvidia-smi -i N -c DEFAULT" in row.detail


@pytest.mark.parametrize("name", [H100_TABLE, H200_Q, H200_Q_X])
def test_a_box_in_the_default_mode_has_no_compute_mode_row(tmp_path: Path, name: str) -> None:
    """Real captures whose GPUs read `Default` (the table's `Default`, -q's `Compute Mode :
    Default`, -q -x's <compute_mode>): no compute_mode row, the report as before."""
    assert "compute_mode" not in verdicts(tmp_path, name, (REAL / name).read_text(encoding="utf-8"))


def test_the_p40_table_edited_to_default_has_no_row(tmp_path: Path) -> None:
    """Edit: the real Sherlock table with both cells `   Default` (as `--gpu_cmode=shared`
    prints it in the same guide): no row."""
    text = _p40().replace("E. Process", "   Default")
    assert "compute_mode" not in verdicts(tmp_path, "nvidia-smi.txt", text)


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        (H200_Q, ": Default", ": Exclusive_Process"),
        (H200_Q_X, "<compute_mode>Default</compute_mode>", "<compute_mode>Exclusive_Process</compute_mode>"),
    ],
)
def test_the_exclusive_mode_is_read_in_q_and_q_x(tmp_path: Path, name: str, old: str, new: str) -> None:
    """Edit: the real H200 `-q` (`Compute Mode : Default`) and `-q -x` (<compute_mode>) with the
    mode replaced by Exclusive_Process: compute_mode warns, as for the table's `E. Process`."""
    text = (REAL / name).read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "Compute Mode" in x or "<compute_mode>" in x)
    text = text.replace(line, line.replace(old, new))
    got = verdicts(tmp_path, name, text)
    assert got["compute_mode"] == ("warn", "GPU 0: Exclusive_Process")


def test_an_exclusive_mode_beside_a_gpu_whose_mode_was_not_read_is_unverified(tmp_path: Path) -> None:
    """Edit: the real Sherlock table with GPU 1's compute-mode cell reading `ERR!`: GPU 0's
    exclusive mode read, GPU 1's not (it may be Prohibited): unverified, naming both."""
    got = verdicts(tmp_path, "nvidia-smi.txt", _p40(("E. Process", "      ERR!")))
    verdict, actual = got["compute_mode"]
    assert verdict == "unverified", actual
    assert actual.startswith("GPU 0: Exclusive_Process; not reported for GPU 1"), actual


def test_the_exclusive_thread_mode_is_named_in_its_advice(tmp_path: Path) -> None:
    """Edit: the real Sherlock table with both P40s' `E. Process` cells reading `E. Thread` (the
    old Exclusive_Thread mode, same width). The warn's advice names that mode, one thread of one
    process per GPU (before: it named Exclusive_Process, a mode the box is not in)."""
    text = (REAL / P40).read_text(encoding="utf-8").replace("E. Process", " E. Thread")
    [row] = [c for c in checks(tmp_path, "nvidia-smi.txt", text) if c.name == "compute_mode"]
    assert (row.verdict, row.actual) == ("warn", "GPU 0: Exclusive_Thread, GPU 1: Exclusive_Thread")
    assert "in the Exclusive_Thread compute mode one thread of one process" in row.detail
    assert "Exclusive_Process" not in row.detail


GTX1080TI = "nvidia-smi__geforce-gtx-1080-ti__2gpu__driver440.82__cut-in-processes__nvidia-htop-9.txt"


def test_a_compute_mode_cell_the_cut_went_through_is_not_read(tmp_path: Path) -> None:
    """Edit: the real 2 x GTX 1080 Ti table cut inside GPU 0's second row, after
    `59%      Def` of its `Default` cell. The cut cell is no compute mode: no compute_mode row
    (before: unverified, "GPU 0: Def (a compute mode this tool does not know)"); the same row
    cut after its closing `|` still reads Default (no row either)."""
    text = (REAL / GTX1080TI).read_text(encoding="utf-8")
    at = text.index("59%      Def") + len("59%      Def")
    for cut in (text[:at], text[: text.index("\n", at)]):
        got = checks(tmp_path, "nvidia-smi.txt", cut)
        assert not [c for c in got if c.name == "compute_mode"], cut[-80:]


WDDM_Q = "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"
WDDM_TABLE = "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"


@pytest.mark.parametrize(
    "names",
    [
        (WDDM_Q, WDDM_TABLE),
        (WDDM_Q,),
        (WDDM_TABLE,),
        ("nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm.txt",),
        ("nvidia-smi__geforce-rtx-2060__1gpu__driver442.50__windows-tcc-wddm.txt",),
    ],
)
def test_a_gpu_under_a_windows_driver_model_has_no_persistence_mode(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    """Real Windows captures (nvidia_gpu_exporter's RTX 2080 SUPER at 610.62 and 591.86, its -q
    `Persistence Mode : N/A` above `Driver Model Current : WDDM`, its table's Driver-Model column
    `WDDM` where Linux prints Persistence-M; an RTX 2060's TCC/WDDM table): persistence mode is
    Linux only, so the rule passes, saying N/A and why (it was unverified, "not reported", its
    advice naming the very outputs judged)."""
    files = {f"{i}-{name}": (REAL / name).read_text(encoding="utf-8") for i, name in enumerate(names)}
    _, got = judged_box(tmp_path, files, "gpu_count: 1\n")
    check = got["persistence_mode"]
    assert check.verdict == "pass"
    assert check.actual == "N/A on GPU 0 (Windows WDDM driver model: no persistence mode)"
