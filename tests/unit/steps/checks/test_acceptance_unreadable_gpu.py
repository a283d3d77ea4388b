"""Acceptance of a box with a GPU nvidia-smi cannot read: a fault, never a wrong model, and never
data for the VRAM or ECC counts.

The capture is real: an 8 x A40 box whose GPU 4 reads ERR! (a GSP timeout). Before, acceptance
said `ERR!: 'A40' not in the name` (a wrong model), counted GPU 4 as a delivered GPU and its
printed memory as data; for a GPU needing a reset whose name is still readable (the real H100
query CSV, values as nvidia-smi prints them for such a GPU) `gpu_model` passed and `vram` blamed
"nvidia-smi did not report memory".
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import acceptance, gpu_health

FIXTURES = Path(__file__).parents[3] / "fixtures"
A40_ERR = FIXTURES / "public" / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
H100_CSV = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
A40_ORDER = OrderSpec(gpu_model="8 x A40 48GB", gpu_count=8, vram_bytes=48 * 10**9)


def _facts(text: str) -> Facts:
    return parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})


def _rules(order: OrderSpec, facts: Facts) -> dict[str, Check]:
    return {c.name: c for c in acceptance.evaluate(order, facts)}


def _requires_reset_csv() -> str:
    """The real H100 --query-gpu capture with every value but name, bus id, count, driver and
    index as nvidia-smi prints it for a GPU that needs a reset."""
    header, row = H100_CSV.read_text().splitlines()[:2]
    keep = {"name", "pci.bus_id", "count", "driver_version", "index"}
    names = [h.split(" [")[0] for h in header.split(", ")]
    cells = [c if n in keep else "[GPU requires reset]" for n, c in zip(names, row.split(", "), strict=True)]
    return header + "\n" + ", ".join(cells) + "\n"


def test_the_err_gpu_of_the_a40_box_is_a_fault_not_a_wrong_model() -> None:
    rules = _rules(A40_ORDER, _facts(A40_ERR.read_text()))
    model = rules["gpu_model"]
    assert model.verdict == "fail"
    assert model.actual == "7 x NVIDIA A40, GPU 4 unreadable (nvidia-smi reads ERR!)"
    assert "not in the name" not in model.detail and "ERR!:" not in model.detail
    assert model.detail.startswith("a GPU fault, not another model:")
    assert "Xid" in model.detail and "N in 4)" in model.detail


def test_the_a40_box_report_counts_only_the_gpus_that_answer() -> None:
    facts = _facts(A40_ERR.read_text())
    rules = _rules(A40_ORDER, facts)
    count = rules["gpu_count"]
    assert (count.verdict, count.actual) == ("fail", "8 (1 unreadable)")
    assert count.detail == (
        "GPU 4 unreadable (nvidia-smi reads ERR!): 7 of the 8 listed GPUs can be read,"
        " 8 ordered (see gpu_model)"
    )
    vram = rules["vram"]
    assert vram.verdict == "pass"
    assert vram.actual == (
        "46068 MiB (45.0 GiB) smallest of the 7 GPUs read; GPU 4 unreadable (nvidia-smi reads ERR!)"
    )
    assert rules["nvidia_driver"].verdict == "pass"
    ecc = {c.name: c for c in gpu_health.evaluate(facts)}["ecc_mode"]
    assert (ecc.verdict, ecc.actual) == ("pass", "Enabled on all 7 GPUs read (GPU 4 unreadable)")
    ctx = SimpleNamespace(host=SimpleNamespace(order=A40_ORDER), facts=facts)
    plan = acceptance.AcceptanceStep({}).plan(ctx)  # type: ignore[arg-type]
    assert plan.failed and plan.msg == "2 of 4 acceptance rules failed: gpu_model, gpu_count"


def test_more_gpus_than_ordered_cover_a_faulty_one() -> None:
    """8 listed, 1 unreadable, 7 ordered: the count is met (the fault still fails gpu_model)."""
    rules = _rules(OrderSpec(gpu_model="A40", gpu_count=7), _facts(A40_ERR.read_text()))
    assert rules["gpu_count"].verdict == "pass"
    assert "7 of the 8 listed GPUs can be read" in rules["gpu_count"].detail
    assert rules["gpu_model"].verdict == "fail"


def test_a_gpu_needing_a_reset_with_a_readable_name_fails_as_unreadable() -> None:
    facts = _facts(_requires_reset_csv())
    [gpu] = facts.gpu.gpus if facts.gpu else ()
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.faults == ("GPU requires reset",)
    rules = _rules(OrderSpec(gpu_model="H100 80GB", gpu_count=1, vram_bytes=80 * 10**9), facts)
    assert (rules["gpu_model"].verdict, rules["gpu_model"].actual) == (
        "fail",
        "GPU 0 unreadable (nvidia-smi reads GPU requires reset)",
    )
    assert (rules["vram"].verdict, rules["vram"].actual) == (
        "fail",
        "unknown: no GPU could be read: GPU 0 unreadable (nvidia-smi reads GPU requires reset)",
    )
    ecc = {c.name: c for c in gpu_health.evaluate(facts)}["ecc_mode"]
    assert (ecc.verdict, ecc.actual) == ("warn", "not judged: GPU 0 unreadable")


def test_healthy_boxes_read_as_before() -> None:
    """No unreadable GPU: the rules' texts are those without the fault wording."""
    table = (FIXTURES / "real" / "nvidia-smi__h200__8gpu__driver570.158.01.txt").read_text()
    facts = _facts(table)
    rules = _rules(OrderSpec(gpu_model="H200", gpu_count=8, vram_bytes=141 * 10**9), facts)
    assert rules["gpu_model"].actual == "8 x NVIDIA H200" and rules["gpu_model"].verdict == "pass"
    assert (rules["gpu_count"].actual, rules["gpu_count"].verdict) == ("8", "pass")
    assert rules["vram"].actual.endswith("smallest") and "unreadable" not in rules["vram"].actual
    ecc = {c.name: c for c in gpu_health.evaluate(facts)}["ecc_mode"]
    assert ecc.actual == "Enabled on all 8 GPUs"
