"""`nvidia-smi nvlink -c` (`--capabilities`) pasted alone (facts/nvlink.py, gpu_merge.py,
steps/checks/nvlink_rules.py; measure39b 13): named as a capabilities listing, which never shows
whether a link is up (nvlink_links unverified asking for `nvlink -s`), never "the `nvlink -s`
listing cut short" when whole; a copied `-i 0` is a view of GPU 0; and a GPU whose header line
is whole to its UUID's `)` keeps its name where its block is cut."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvlink import parse_nvlink_status

from ..offline_judge import checks

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
CAPS = (REAL / "nvidia-smi-nvlink-c-i0__v100-sxm2-32gb__gt-prompt__cut-in-link4__ilgpu-378.txt").read_text(
    encoding="utf-8"
)
ORDER = "gpu_model: V100-SXM2-32GB\ngpu_count: 8\ninterconnect: nvlink\n"


def _judged(tmp_path: Path, text: str) -> dict[str, tuple[str, str, str]]:
    return {c.name: (c.verdict, c.actual, c.detail) for c in checks(tmp_path, "box.txt", text, ORDER)}


def test_the_cut_capabilities_listing_is_named_and_keeps_its_gpu_name(tmp_path: Path) -> None:
    got = _judged(tmp_path, CAPS)
    verdict, actual, detail = got["nvlink_links"]
    assert verdict == "unverified" and "an `nvidia-smi nvlink -c` (capabilities) listing" in actual, actual
    assert "cut short in GPU 0's block" in actual and "`nvidia-smi nvlink -s`" in detail
    assert got["gpu_model"][0] == "unverified" and "1 x Tesla V100-SXM2-32GB" in got["gpu_model"][1]
    assert "`nvidia-smi nvlink -c` (capabilities) listing is not whole" in got["gpu_model"][1]
    assert "nvlink -s` listing" not in got["gpu_model"][1]


def test_the_whole_capabilities_listing_is_no_cut_and_its_i0_a_view(tmp_path: Path) -> None:
    whole = "\n".join(CAPS.splitlines()[:25]) + "\n"  # (to Link 3's last line, nothing cut)
    got = _judged(tmp_path, whole)
    assert "cut short" not in got["nvlink_links"][1] and "ends inside" not in got["gpu_model"][1]
    assert (
        got["nvlink_links"][0] == "unverified"
        and "(capabilities) listing of 1 GPU(s)" in got["nvlink_links"][1]
    )
    assert got["gpu_count"][0] == "unverified" and got["gpu_model"][0] == "unverified", got
    assert "`nvidia-smi nvlink --capabilities -i 0` shows only the GPUs it asked for" in got["gpu_model"][1]


def test_parsed_capabilities_blocks() -> None:
    lines = CAPS.splitlines()
    cut = parse_nvlink_status(CAPS)
    assert cut.capabilities_only and cut.cut_gpu == 0 and not cut.complete
    whole = parse_nvlink_status("\n".join(lines[1:25]) + "\n")
    assert whole.capabilities_only and whole.cut_gpu is None and whole.complete
    assert whole.gpus[0].name == "Tesla V100-SXM2-32GB"
    # (pasted beside `nvlink -s`'s lines of the same GPU: its links read, no capabilities listing)
    mixed = parse_nvlink_status("\n".join(lines[1:8]) + "\n         Link 0: 25.781 GB/s\n")
    assert not mixed.capabilities_only and mixed.gpus[0].note is None
    assert mixed.gpus[0].active_links == 1
