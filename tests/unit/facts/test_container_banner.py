"""A container image's start-up banner above a tool's output (facts/container_banner.py): the
image's words (its license, a deprecation notice naming a support *policy*), never a provider's
refusal of the tool."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.container_banner import banner_lines
from gpuonboard.facts.gpu_merge import refusal_line
from gpuonboard.facts.probe import ProbeOutput

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# the capture's prompt line, dropped from the fixture (every real output's first line is its own)
PROMPT = (
    "[xxx ~]$ docker run --rm --runtime=nvidia --gpus '\"device=1\"' nvidia/cuda:11.4.0-runtime-ubuntu20.04"
    " nvidia-smi\n"
)
NCT69 = REAL / "nvidia-smi__docker-run-cuda-11.4-deprecated-image-banner__table-cut-in-header__nct-69.txt"


def test_a_deprecated_cuda_images_banner_is_no_refusal_of_nvidia_smi(tmp_path: Path) -> None:
    """nvidia-container-toolkit#69, verbatim (its prompt line put back): the banner's
    support-policy address was read as the host refusing nvidia-smi by policy; the table under
    it is cut in its header (incomplete)."""
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "nvidia-smi.txt").write_text(PROMPT + NCT69.read_text())
    (tmp_path / "order.yml").write_text("gpu_count: 1\n")
    facts = parse_facts(offline.load_outputs([str(tmp_path / "box")]))
    got = {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}
    driver = got["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert "driver 525.85.12, CUDA 12.0; incomplete probe" in driver.actual, driver.actual
    assert "refuses" not in driver.actual and "policy" not in driver.detail, driver
    assert got["gpu_count"].verdict == "unverified"


def test_a_refusal_below_an_ngc_banner_is_still_one() -> None:
    """The NCT69 banner (cut to its end), then a refusal in a paragraph of its own (edited in):
    the banner's words are skipped, the refusal below them is not."""
    text = NCT69.read_text()
    head = text[: text.index("Wed Jun")]
    said = "ERROR: nvidia-smi is disabled on this instance by the provider's policy"
    assert refusal_line(ProbeOutput(head + said + "\n", "", 6)) == said
    assert refusal_line(ProbeOutput(head, "", 0)) is None


def test_banner_lines_need_the_framed_title() -> None:
    lines = ["This container image is governed by a policy", "+-----+"]
    assert banner_lines(lines) == set()
    assert banner_lines(
        ["==========", "== PyTorch ==", "==========", "", "NVIDIA Release 23.05", "", "x"]
    ) == {
        0,
        1,
        2,
        3,
        4,
        5,
    }
