"""nvidia-smi's attached-GPU count above the GPUs its output describes reaches the report.

Before, it was only a parser warning (Facts.warnings), which a provision or acceptance report
never shows; only an ordered `gpu_count` mentioned it. The real A100 capture (`attached_gpus` 4,
one <gpu> kept) has that shape, as has every `nvidia-smi -q -x -i N` output: an incomplete probe,
never a failure of `nvidia_driver` (the rule every acceptance and every `invoke facts`
judgement has) and never "N of the M ordered GPUs missing". Since round 32 the driver that
printed its version and a GPU's whole record answered, which the gap does not undo: it passes,
the gap said beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.offline import judge
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks import acceptance

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ONE_OF_FOUR = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"


def _facts(path: Path) -> Facts:
    return parse_facts({"nvidia_smi": ProbeOutput(path.read_text(), "", 0)})


def test_attached_more_than_listed_passes_nvidia_driver_saying_the_gap() -> None:
    check = acceptance.rule_driver(_facts(ONE_OF_FOUR))
    assert check.verdict == "pass"
    assert check.actual == (
        "driver 535.54.03, CUDA 12.2 (nvidia-smi answered: its driver version and 1 GPU read before"
        " the cut; incomplete probe: nvidia-smi says 4 attached but lists 1)"
    )


def test_the_trimmed_capture_is_not_failed_for_it() -> None:
    """An order of the one GPU the output describes is met; the probe is incomplete (unverified);
    an order of the four attached is not short by nvidia-smi's own count (`attached_gpus` 4),
    yet unverified: `Attached GPUs` counts a GPU whose handle fails too, and the three left out
    were not read (round 30 passed it; changed on purpose), never "3 of the 4 ordered GPUs
    missing"."""
    facts = _facts(ONE_OF_FOUR)
    rules = {c.name: c for c in acceptance.evaluate(OrderSpec(gpu_count=1), facts)}
    assert rules["gpu_count"].verdict == "pass"
    assert rules["gpu_count"].detail == "nvidia-smi says 4 attached but lists 1"
    assert rules["nvidia_driver"].verdict == "pass"
    four = {c.name: c for c in acceptance.evaluate(OrderSpec(gpu_count=4), facts)}["gpu_count"]
    assert (four.verdict, four.actual, four.detail) == (
        "unverified",
        "4 attached, 1 read (MIG on: 4 slices); incomplete probe: nvidia-smi says 4 attached but lists 1",
        acceptance.RERUN_ADVICE,
    )
    judged = {c.name: c for c in judge(facts, None)}
    assert judged["nvidia_driver"].verdict == "pass"
    assert "fail" not in {c.verdict for c in judged.values() if c.name in ("nvidia_driver", "gpu_count")}


@pytest.mark.parametrize(
    "path",
    # "1of<N>gpu": captures trimmed by their authors to one GPU section (ONE_OF_FOUR, the R418 V100);
    # "no-index": a looped query whose rows cannot be told apart as GPUs (test_query_csv_samples);
    # "cut": a paste cut inside a GPU's record (an incomplete probe: unverified)
    sorted(
        p
        for p in REAL.glob("nvidia-smi-q*")
        if "1of" not in p.name
        and "sampler" not in p.name
        and "no-index" not in p.name
        and "cut" not in p.name
        # (one-column CSVs of a field no rule reads, noted and not judged: api/test_offline_unjudged.py)
        and "-only__" not in p.name
        and "noheader-na" not in p.name
        # (rows among another program's lines: refused naming them, api/test_offline_csv_among.py)
        and "-among-" not in p.name
        # (a heading line above the CSV's header: read offline from its header, round 35,
        # api/test_offline_heading_above_r35.py; the parser alone starts at the heading)
        and "heading-line-above-header" not in p.name
        # (an author's excerpt from a GPU's record on, no header: a -q fragment, incomplete, never a
        # whole capture, round 36: facts/test_nvidia_smi_q_excerpt_r36.py)
        and "-excerpt__" not in p.name
        # (a --query-gpu CSV among a README's or notes' prose: read, but what it passes is capped
        # at unverified, a document may quote it, round 37: api/test_offline_csv_prose_r37.py)
        and "prose" not in p.name
        # (two CSV outputs of one query in one file: refused naming both, round 40)
        and "two-blocks" not in p.name
    ),
    ids=lambda p: p.name,
)
def test_whole_captures_pass_nvidia_driver(path: Path) -> None:
    facts = _facts(path)
    check = acceptance.rule_driver(facts)
    assert facts.gpu is not None and "attached" not in check.actual
    # (a CSV without driver_version: the driver version could not be read, so unverified)
    assert check.verdict == ("pass" if facts.gpu.driver_version else "unverified")
    if not facts.gpu.driver_version:
        assert check.actual == "driver unknown, CUDA unknown"
