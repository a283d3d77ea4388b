"""NGC driver check, round 8 of the order-matching audit (F2): a vGPU guest never gets CUDA
forward compatibility as a data-centre GPU, whatever its board and however its name is spelled.

NVIDIA's forward-compatibility page lists "NVIDIA Data Center GPUs, select NGC Server Ready SKUs
of RTX cards, Jetson boards" (docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html),
not vGPU guests; which CUDA runs in a guest is set by the vGPU software release
(https://docs.nvidia.com/cuda/vGPU/index.html). Names and drivers are real (the sources are in
test_model_match_r8.py's docstring): GRID A100-4C on 510.47.03, GRID A100X-8C on 535.129.03,
NVIDIA RTXA6000-24Q on 550.54.15.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import driver_compat, ngc

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"


def _check(fixture: str, image: str) -> driver_compat.Check:
    facts = parse_facts({"nvidia_smi": ProbeOutput((REAL / fixture).read_text(encoding="utf-8"), "", 0)})
    return driver_compat.evaluate(facts, image, ngc.load_releases())[0]


@pytest.mark.parametrize(
    ("fixture", "image", "driver", "name"),
    [
        # before: "on datacenter GPU ...: forward compat" (a pass)
        (
            "nvidia-smi__grid-a100-4c-vgpu__1gpu__driver510.47.03__guest.txt",
            "nvcr.io/nvidia/pytorch:23.03-py3",
            "510.47.03",
            "GRID A100-4C",
        ),
        # before: "on unknown GPU ...: minor version compat" (the same kind of guest, another verdict)
        (
            "nvidia-smi__rtxa6000-24q-vgpu__1gpu__driver550.54.15__guest.txt",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            "550.54.15",
            "NVIDIA RTXA6000-24Q",
        ),
    ],
)
def test_a_vgpu_guest_gets_forward_compat_unverified(
    fixture: str, image: str, driver: str, name: str
) -> None:
    check = _check(fixture, image)
    assert check.verdict == "warn", check
    assert check.actual == f"{driver} on vGPU ({name}): forward compat unverified"
    assert "this is a vGPU" in check.detail and ngc.VGPU_CUDA_PAGE in check.detail


@pytest.mark.parametrize(
    ("name", "driver", "release"),
    [
        ("GRID A100-4C", "510.47.03", "23.03"),
        ("NVIDIA A100-4C", "510.47.03", "23.03"),
        ("GRID A100X-8C", "535.129.03", "24.08"),
        ("GRID A100-2-10C", "535.129.03", "24.08"),
        ("GRID A100D-80C", "535.129.03", "24.08"),
        ("GRID V100D-8C", "535.129.03", "24.08"),
        ("NVIDIA RTXA6000-24Q", "550.54.15", "24.08"),
        ("NVIDIA RTXA6000-24Q", "535.129.03", "24.08"),
    ],
)
def test_every_vgpu_spelling_is_one_class(name: str, driver: str, release: str) -> None:
    rel = ngc.release_for(ngc.load_releases(), release)
    assert rel is not None
    klass = ngc.compat_class(name)
    assert klass == "vgpu"
    assert ngc.compat(rel, driver, klass).verdict == "forward_compat_unverified"
    # a release the driver runs natively stays compatible in a guest
    assert ngc.compat(rel, "570.86.15", klass).verdict == "compatible"


def test_brand_or_mode_alone_marks_a_vgpu() -> None:
    # GRID V100D-8C's `nvidia-smi -q` (Product Brand "NVIDIA Virtual Compute Server"), the GRID
    # P4-1Q fixture's XML ("NVIDIA RTX Virtual Workstation", virtualization_mode VGPU)
    assert ngc.compat_class("GRID V100D-8C", "NVIDIA Virtual Compute Server") == "vgpu"
    assert ngc.compat_class("GRID P4-1Q", "NVIDIA RTX Virtual Workstation", "VGPU") == "vgpu"
    # a pass-through data-centre GPU is the GPU itself: forward compatibility as before
    assert ngc.compat_class("NVIDIA A10G", "NVIDIA", "Pass-Through") == "datacenter"


@pytest.mark.parametrize(
    ("name", "brand", "klass", "driver", "verdict"),
    [
        # the audit's judged-right verdicts on 24.08, unchanged (before the fix this test failed
        # only for want of `compat_class`; the verdicts are the old ones)
        ("NVIDIA A100-SXM4-80GB", None, "datacenter", "535.104.05", "forward_compat"),
        ("NVIDIA H100 80GB HBM3", None, "datacenter", "550.90.07", "forward_compat_unverified"),
        ("NVIDIA A100-SXM4-80GB", None, "datacenter", "535.54.03", "minor_version_compat"),
        ("NVIDIA GeForce RTX 4090", "GeForce", "consumer", "535.104.05", "minor_version_compat"),
        ("NVIDIA A100-SXM4-80GB", None, "datacenter", "555.42.02", "must_upgrade"),
        ("NVIDIA RTX A6000", None, "professional", "535.104.05", "forward_compat_unverified"),
    ],
)
def test_guard_physical_gpus_keep_their_class(
    name: str, brand: str | None, klass: str, driver: str, verdict: str
) -> None:
    rel = ngc.release_for(ngc.load_releases(), "24.08")
    assert rel is not None
    assert ngc.compat_class(name, brand) == klass == ngc.gpu_class(name, brand)
    assert ngc.compat(rel, driver, klass).verdict == verdict
