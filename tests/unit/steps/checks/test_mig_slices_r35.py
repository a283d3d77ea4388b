"""A GPU in MIG mode whose own table row says N/A for its memory (a container given MIG devices
of an H200: measure35a 29, 30): the `MIG devices:` rows give each slice's memory, what a job on
it gets. vram judges the slices (a 2g.35gb slice for an ordered 141 GB H200 fails: MIG slices
given as GPUs), foreign_processes reads their memory used. Real captures:
tests/fixtures/sessions/SOURCES.md."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.inventory.model import OrderSpec
from gpuonboard.steps.checks.gpu_rules import rule_vram
from gpuonboard.steps.checks.mig_memory import mig_vram

from ...offline_judge import checks

SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
ONE = "page__docker-run-gpus-device-MIG-uuid+nvidia-smi__h200-one-2g.35gb-slice-msxf.txt"
TWO = "page__docker-run-NVIDIA_VISIBLE_DEVICES-0.0-0.1+nvidia-smi__h200-2g.35gb+1g.18gb-slices-msxf.txt"


def _judged(tmp_path: Path, name: str, order: str) -> dict[str, tuple[str, str, str]]:
    text = (SESSIONS / name).read_text(encoding="utf-8")
    return {c.name: (c.verdict, c.actual, c.detail) for c in checks(tmp_path, name, text, order)}


def test_a_slice_for_an_ordered_whole_h200_fails_vram(tmp_path: Path) -> None:
    """It was unverified: "no nvidia-smi format that answered reports GPU memory"."""
    verdict, actual, detail = _judged(tmp_path, ONE, "gpu_model: H200\ngpu_count: 1\nvram: 141GB\n")["vram"]
    assert verdict == "fail", actual
    assert actual.startswith("33280 MiB (32.5 GiB) in 1 MIG slice"), actual
    assert "MIG slices given as GPUs" in detail


def test_slices_as_large_as_ordered_are_no_fail(tmp_path: Path) -> None:
    """Two slices, the smallest 16384 MiB, for 16 GB: no fail; the container view is said."""
    verdict, actual, _ = _judged(tmp_path, TWO, "gpu_count: 2\nvram: 16GB\n")["vram"]
    assert verdict in ("pass", "unverified"), actual
    assert actual.startswith("16384 MiB (16.0 GiB) smallest of 2 MIG slices"), actual


def test_the_slices_memory_used_is_a_figure(tmp_path: Path) -> None:
    """It said "no utilisation or memory figure read" though 29 MiB (and 15 MiB) is printed."""
    for name in (ONE, TWO):
        _, actual, _ = _judged(tmp_path, name, "gpu_count: 1\n")["foreign_processes"]
        assert "no utilisation or memory figure read" not in actual, actual


REAL = SESSIONS.parent / "real"


def test_the_slices_volatile_ecc_counts_are_said(tmp_path: Path) -> None:
    """MIG mode's table prints the ECC mode (`On`) in the GPU row's count cell and each slice's
    volatile uncorrectable count in its row (measure35c 09): it said "not reported" and "nvidia-smi
    did not report ECC error counts"; the counts read are said, the lifetime count still missing."""
    for folder, name in (
        (SESSIONS, ONE),
        (REAL, "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"),
        (REAL, "nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt"),
    ):
        text = (folder / name).read_text(encoding="utf-8")
        got = {c.name: c for c in checks(tmp_path, name, text, "gpu_count: 1\n")}["ecc_uncorrectable"]
        assert got.verdict == "unverified", got.actual
        assert got.actual.startswith("0 since boot on GPU 0 (its MIG slices' volatile counts"), got.actual
        assert "did not report ECC error counts" not in got.detail


def _slice_facts(tmp_path: Path, order: str) -> tuple[OrderSpec, Facts]:
    """The order and facts of the real one-slice capture, as `invoke facts` reads them."""
    (tmp_path / ONE).write_text((SESSIONS / ONE).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(tmp_path / ONE)]))
    return offline.load_order(str(tmp_path / "order.yml")), facts


def test_two_sizes_of_the_sliced_gpu_judge_neither(tmp_path: Path) -> None:
    """revO F5: the slice's vram under formats that disagree on the GPU's memory (the merge's
    `disputed`, given here as facts/gpu_agree.py sets it): unverified, never the slices' pass or
    fail (the whole GPUs' path already did so); before, a 2g.35gb slice for a 141 GB order failed."""
    order, facts = _slice_facts(tmp_path, "gpu_count: 1\nvram: 141GB\n")
    assert facts.gpu is not None
    said = "the nvidia-smi outputs disagree: memory 33280 MiB vs 143771 MiB"
    facts = dataclasses.replace(
        facts,
        gpu=dataclasses.replace(facts.gpu, disagreements=(said,), disputed=("memory_total_mib",)),
    )
    got = rule_vram(order, facts, 0.08)
    assert got.verdict == "unverified", got.actual
    assert got.actual.startswith("33280 MiB (32.5 GiB) in 1 MIG slice"), got.actual
    assert "MIG slices given as GPUs" not in got.detail, got.detail


def test_a_gpu_nvidia_smi_could_not_read_beside_the_slices_is_named(tmp_path: Path) -> None:
    """revO F5: a GPU nvidia-smi could not read, beside a GPU judged by its slices, is named in
    the slices' vram, as among whole GPUs."""
    _, facts = _slice_facts(tmp_path, "gpu_count: 1\n")
    assert facts.gpu is not None
    got = mig_vram(">= 16.0 GiB per GPU", list(facts.gpu.gpus), 16e9, "GPU 1: Unknown Error")
    assert got is not None and got.actual.endswith("of the 1 GPUs read; GPU 1: Unknown Error"), got
