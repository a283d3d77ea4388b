"""An excerpt of `nvidia-smi -q` from a GPU's record on, with no header above it (measure36a 15,
Ubicloud's B200 post: `GPU 00000000:17:00.0` / `Product Name : NVIDIA B200` / `...` / `Module Id :
1`, its indentation flattened): read as a `-q` fragment, its GPU named and the count unverified
(sniff.Q_RECORD). Before, it was refused with the generic list of formats."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.sniff import Q_EXCERPT

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
B200 = "nvidia-smi-q__b200__1gpu-excerpt__flattened-elided-module-id__ubicloud-blog.txt"


def test_the_real_flattened_excerpt_is_read_as_a_q_fragment(tmp_path: Path) -> None:
    text = (REAL / B200).read_text()
    assert detect_kind(text) == "nvidia_smi"
    report = parse_any(text)
    assert [(g.name, g.pci_bus_id) for g in report.gpus] == [("NVIDIA B200", "00000000:17:00.0")]
    assert not report.complete
    got = verdicts(tmp_path, "nvidia-smi-q.txt", text, "gpu_model: B200\ngpu_count: 8\n")
    assert got["gpu_count"] == ("unverified", got["gpu_count"][1])
    assert "1 x NVIDIA B200" in got["gpu_model"][1]


_HEAD = re.compile(r"^GPU [0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\s*$", re.M)
QS = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-q__*.txt")
    if _HEAD.search(p.read_text(errors="replace")) and p.name != B200
)


def test_the_class_is_many_captures() -> None:
    assert len(QS) >= 15


@pytest.mark.parametrize("name", QS)
def test_every_real_q_from_its_first_gpu_record_on_reads_its_gpus_not_the_box(name: str) -> None:
    """Each real `-q`, its header (banner, driver, `Attached GPUs`) left out: the GPUs of its
    records read by name and address, never a whole answer."""
    text = (REAL / name).read_text(errors="replace")
    whole = parse_any(text)
    found = _HEAD.search(text)
    assert found is not None
    excerpt = text[found.start() :]
    if not re.search(r"Product Name\s+:", "\n".join(excerpt.splitlines()[:10])):
        pytest.skip("Product Name is not within the record's first lines")
    assert detect_kind(excerpt) == "nvidia_smi"
    part = parse_any(excerpt)
    assert [(g.name, g.pci_bus_id) for g in part.gpus] == [(g.name, g.pci_bus_id) for g in whole.gpus]
    assert not part.complete
    assert Q_EXCERPT in part.warnings


def _first_record_flattened(text: str) -> str | None:
    """A real `-q`'s first GPU record alone, from its head on, every line's indentation lost (a
    paste that collapsed leading spaces), or None where its Product Name is not near its head."""
    found = _HEAD.search(text)
    assert found is not None
    lines = text[found.start() :].splitlines()
    end = next((i for i, line in enumerate(lines) if i and _HEAD.match(line)), len(lines))
    record = [line.strip() for line in lines[:end]]
    if not any(line.startswith("Product Name") for line in record[:10]):
        return None
    return "\n".join(record) + "\n"


@pytest.mark.parametrize("name", QS)
def test_every_real_q_first_record_flattened_is_an_excerpt_never_the_box(name: str) -> None:
    """revQ Q2: one GPU's record, its indentation lost, was read as the whole box (gpu_model
    PASS "1 x ...", gpu_count FAIL "1"): a flattened `-q` of one record spares its names only
    where it says it is the box's (`Attached GPUs : 1`), never in an excerpt with no header."""
    excerpt = _first_record_flattened((REAL / name).read_text(errors="replace"))
    if excerpt is None:
        pytest.skip("Product Name is not within the record's first lines")
    part = parse_any(excerpt)
    assert len(part.gpus) == 1
    assert not part.complete
    assert not part.gap_spares_names


H100_Q = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


def test_a_flattened_one_gpu_excerpt_leaves_model_and_count_unverified(tmp_path: Path) -> None:
    excerpt = _first_record_flattened((REAL / H100_Q).read_text())
    assert excerpt is not None
    got = verdicts(tmp_path, "nvidia-smi-q.txt", excerpt, "gpu_model: H100\ngpu_count: 8\n")
    assert got["gpu_count"][0] == "unverified"
    assert got["gpu_model"][0] == "unverified"
    assert "incomplete" in got["gpu_count"][1]
