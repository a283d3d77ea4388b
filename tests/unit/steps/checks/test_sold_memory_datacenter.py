"""data/gpu_name_markers.yml `sold_memory` for every data-centre product (round 33, measure33a
22): 8 x `NVIDIA H800` with 143771 MiB (an H200's 141 GB; NVIDIA sells the H800 with 80 GB only,
nccl issue #2360) passed an H800 order. The name and the memory disagree: a warning. The family:
every GPU of every real nvidia-smi output whose model has a row (H100 SXM 80 / 94 GB, H100 PCIe,
H100 NVL 94 GB, H800 80, H20 96, H20-3e 141, H200 141, GH200, B200 180, GB200, A100, A30, A40,
A10, A10G, L40S...) is no such board, except the reworked 48 GB RTX 4090s named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.model_names import _MEMORY, _SXM, _name_tokens
from gpuonboard.steps.checks.gpu_markers import sold_memory
from gpuonboard.steps.checks.model_match import SHARED_CAP, match_model

FIXTURES = Path(__file__).parents[3] / "fixtures"
REWORKED = "changed after sale"
KNOWN_REWORKED = ("48gb-modded",)
# (a GPU-sharing layer's cap shown as the total: HAMi's; its warning names the cap first)
KNOWN_CAPPED = ("hami-cap",)


def _real_gpus() -> list[tuple[str, str, int]]:
    """(fixture, name, memory total MiB) of every GPU of a `sold_memory` model in a real output."""
    models = {words for words, _ in sold_memory()}
    out = []
    paths = [*(FIXTURES / "real").glob("nvidia-smi*"), *(FIXTURES / "public").glob("nvidia-smi*")]
    for path in sorted(paths):
        report = parse_any(path.read_text(errors="replace"))
        for g in getattr(report, "gpus", ()) or ():
            words = {t for t in _name_tokens(g.name).tokens if not (_MEMORY.match(t) or _SXM.match(t))}
            if g.memory_total_mib and any(m <= words for m in models) and g.name.startswith("NVIDIA"):
                out.append((path.name, g.name, g.memory_total_mib))
    return out


def test_the_real_family_is_many() -> None:
    names = {name for _, name, _ in _real_gpus()}
    for name in (
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA H800",
        "NVIDIA H20",
        "NVIDIA H20-3e",
        "NVIDIA H200",
        "NVIDIA B200",
        "NVIDIA GB200",
        "NVIDIA L40S",
        "NVIDIA A100-SXM4-80GB",
    ):
        assert name in names, name


@pytest.mark.parametrize(("fixture", "name", "mib"), _real_gpus())
def test_no_real_datacenter_gpu_reads_as_another_memory(fixture: str, name: str, mib: int) -> None:
    if any(k in fixture for k in KNOWN_REWORKED) or "143771mib" in fixture:
        return
    order = " ".join(t for t in name.split() if t != "NVIDIA")
    why = match_model(order, name, mib).why
    if any(k in fixture for k in KNOWN_CAPPED):
        assert f"most likely {SHARED_CAP}" in why, (fixture, why)
        return
    assert REWORKED not in why, (fixture, order)


def test_an_h800_with_an_h200s_memory_warns() -> None:
    """The real capture (nccl #2360): every GPU named 'NVIDIA H800', 143771 MiB each."""
    path = FIXTURES / "real" / "nvidia-smi__h800-named-143771mib__8gpu__driver560.35.03__nccl-2360.txt"
    gpus = parse_any(path.read_text()).gpus
    assert len(gpus) == 8 and {(g.name, g.memory_total_mib) for g in gpus} == {("NVIDIA H800", 143771)}
    check = match_model("H800", "NVIDIA H800", 143771)
    assert check.verdict == "warn" and "sells the H800 with 80 GB only" in check.why
    assert "the name and the memory disagree" in check.why


@pytest.mark.parametrize(
    ("order", "name", "mib"),
    [
        ("H100", "NVIDIA H100 80GB HBM3", 143771),
        ("H100 NVL", "NVIDIA H100 NVL", 81559),
        ("H200", "NVIDIA H200", 81559),
        ("B200", "NVIDIA B200", 81559),
        ("L40S", "NVIDIA L40S", 23034),
    ],
)
def test_a_known_product_far_from_its_sold_sizes_warns(order: str, name: str, mib: int) -> None:
    assert REWORKED in match_model(order, name, mib).why


def test_an_order_naming_the_size_is_met() -> None:
    assert match_model("H800 141GB", "NVIDIA H800", 143771).verdict == "pass"
