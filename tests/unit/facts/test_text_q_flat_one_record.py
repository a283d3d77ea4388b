"""A `nvidia-smi -q` text that lost its indentation but holds ONE GPU record (`Attached GPUs :
1`, one `Product Name`; the format before 270, which prints no such count, read whole): no value
can belong to another GPU's section, so its name, the count and the driver are judged; its
sections' values stay unverified. Before, gpu_model and gpu_count were unverified (measure32c
06, 38). The format before 270 prints no process list: no "output was cut short" for it.

Real captures: tests/fixtures/real/SOURCES.md (nvidia-docker#1170) and
tests/fixtures/sessions/SOURCES.md (pastebin imQMLZpJ); the family: every real one-GPU -q of
tests/fixtures/real, its runs of spaces collapsed or its indents stripped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import paste
from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
GTX1060 = REAL / (
    "nvidia-smi-q__geforce-gtx-1060-6gb__1gpu__indentation-lost__from-attached-gpus"
    "__cut-in-display-clock__nvidia-docker-1170.txt"
)
GTX580 = (
    FIXTURES
    / "sessions"
    / (
        "transcript__nvidia-smi-a-260.19.21-INDENTATION-LOST-no-processes-format+bare-prompt"
        "__gtx580-pastebin-imQMLZpJ.txt"
    )
)
ONE_GPU = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-q__*1gpu*.txt")
    # (an excerpt of one record with no header says no count: test_nvidia_smi_q_excerpt_r36.py)
    if "__cut-" not in p.name and "indentation-lost" not in p.name and "-excerpt__" not in p.name
)
DAMAGE = {
    "collapsed": lambda t: re.sub(r" {2,}", " ", t),
    "stripped": lambda t: "\n".join(line.lstrip() for line in t.split("\n")),
}


def test_the_gtx1060s_model_and_count_are_judged(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "q.txt", GTX1060.read_text(), "gpu_model: GTX 1060\ngpu_count: 1\n")
    assert got["gpu_model"] == ("pass", "1 x GeForce GTX 1060 6GB"), got["gpu_model"]
    assert got["gpu_count"][0] == "pass", got["gpu_count"]
    assert got["temperature"][0] == "unverified", got["temperature"]  # (a section's value: still unverified)


def test_the_260_format_is_judged_and_says_no_cut(tmp_path: Path) -> None:
    order = 'gpu_model: GTX 580\ngpu_count: 1\nmin_driver: "270"\n'
    got = verdicts(tmp_path, "session.txt", GTX580.read_text(), order)
    assert got["gpu_model"][0] == "pass" and got["gpu_count"][0] == "pass", got
    assert got["min_driver"][0] == "fail", got["min_driver"]
    assert "cut short" not in got["foreign_processes"][1], got["foreign_processes"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", ONE_GPU)
def test_every_one_gpu_q_pasted_flat_judges_its_model_and_count(
    tmp_path: Path, name: str, damage: str
) -> None:
    text = (REAL / name).read_text()
    report = parse_any(paste.normalise(text))
    assert report.gpus and report.attached_gpus == 1, name
    order = f'gpu_model: "{report.gpus[0].name}"\ngpu_count: 1\n'
    whole = verdicts(tmp_path, name, text, order)
    flat = verdicts(tmp_path, name, DAMAGE[damage](text), order)
    # (a vGPU guest's record names its licensed product too, `Product Name : NVIDIA RTX Virtual
    # Workstation`: which name is the GPU's a flat text cannot tell, so it stays unverified)
    one_name = len(re.findall(r"^\s*Product Name\s*:", text, re.M)) == 1
    for rule in ("gpu_model", "gpu_count"):
        allowed = (whole[rule][0],) if one_name else (whole[rule][0], "unverified")
        assert flat[rule][0] in allowed, (rule, whole[rule], flat[rule])


def test_two_records_pasted_flat_stay_unverified(tmp_path: Path) -> None:
    """Edit: the 8-GPU RTX 4090 -q, runs of spaces collapsed: which record a value is of cannot
    be told, the model unverified as before."""
    name = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt"
    text = DAMAGE["collapsed"]((REAL / name).read_text())
    got = verdicts(tmp_path, name, text, "gpu_model: RTX 4090\ngpu_count: 8\n")
    assert got["gpu_model"][0] == "unverified", got["gpu_model"]
