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
