"""Round 23's review: while nvidia-smi's formats disagree about a field (facts/gpu_agree.py), a
rule that reads that field judges neither answer (missing_facts `_disputed`): its fail or pass
is unverified, naming both values; a rule whose field every format gave alike still judges it.
Real captures, paired as given (and one derived CSV, tests/fixtures/derived/derive.py)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import driver_compat
from gpuonboard.steps.checks.ngc import load_releases

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL = FIXTURES / "real"
H200_TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
H200_CSV_81559 = (
    FIXTURES / "derived" / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04__memory-81559__derived.csv"
)
GH200_CSV = REAL / "nvidia-smi-query-gpu-l1__gh200__1gpu__5-samples__elided.csv"
GH200_TABLE = REAL / "nvidia-smi__gh200-480gb__1gpu__driver550.127.05__gls.txt"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"


def judged(tmp_path: Path, files: list[Path], order: str) -> tuple[Facts, dict[str, Check]]:
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(f) for f in files]))
    return facts, {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}


def test_a_memory_total_two_formats_give_otherwise_is_no_vram_failure(tmp_path: Path) -> None:
    """The real H200 table (143771 MiB) beside the derived CSV of 81559 MiB: vram failed
    "81559 MiB (79.6 GiB) smallest" on the value the merge kept."""
    _, got = judged(tmp_path, [H200_TABLE, H200_CSV_81559], "gpu_count: 1\nvram: 141GB\n")
    vram = got["vram"]
    assert vram.verdict == "unverified", vram
    assert "81559 MiB in the CSV query" in vram.actual and "143771 MiB in the table" in vram.actual


def test_a_name_two_formats_give_otherwise_is_no_gpu_model_failure(tmp_path: Path) -> None:
    """The real GH200 120GB CSV log beside the real GH200 480GB table (two boxes): gpu_model
    failed "1 x NVIDIA GH200 120GB" against an order of the 480GB; both sizes agree (97871
    MiB), so vram still judges them."""
    facts, got = judged(tmp_path, [GH200_CSV, GH200_TABLE], "gpu_model: GH200 480GB\nvram: 120GB\n")
    model = got["gpu_model"]
    assert model.verdict == "unverified", model
    assert facts.gpu is not None and facts.gpu.disputed == ("name",), facts.gpu.disagreements
    assert "GH200 120GB in the CSV query" in model.actual and "GH200 480GB in the table" in model.actual
    # (no disagreement about memory: both formats' 97871 MiB is below 120 GB, a fail of the box)
    assert got["vram"].verdict == "fail", got["vram"]


def test_a_driver_two_formats_give_otherwise_judges_no_minimum(tmp_path: Path) -> None:
    """The real H100 `-q` on driver 535.161.08 beside a real H100 table on 550.90.07: min_driver
    judged -q's 535 (failed an order of 540, passed one of 530) and ngc_driver judged it too."""
    for minimum in ("540", "530"):
        _, got = judged(tmp_path, [H100_Q, H100_TABLE], f"gpu_count: 8\nmin_driver: '{minimum}'\n")
        check = got["min_driver"]
        assert check.verdict == "unverified", check
        assert "535.161.08 in -q" in check.actual and "550.90.07 in the table" in check.actual
    facts = parse_facts(offline.load_outputs([str(H100_Q), str(H100_TABLE)]))
    ngc = driver_compat.evaluate(facts, "nvcr.io/nvidia/pytorch:24.08-py3", load_releases())
    assert [(c.name, c.verdict) for c in ngc] == [("ngc_driver", "unverified")], ngc
