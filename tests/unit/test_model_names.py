"""model_names.py: a cloud's instance type written as an order's GPU model is named as one
(`instance_type_problem`), while real GPU names and vendors' product names are not."""

from __future__ import annotations

import pytest

from gpuonboard.model_names import instance_type_problem


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("p5.48xlarge", "an AWS EC2 instance type"),
        ("g5.xlarge", "an AWS EC2 instance type"),
        ("p4d.24xlarge", "an AWS EC2 instance type"),
        ("g4dn.metal", "an AWS EC2 instance type"),
        ("Standard_ND96isr_H100_v5", "an Azure VM size"),
        ("ND96isr H100 v5", "an Azure VM size"),
        ("ND96asr_v4", "an Azure VM size"),
        ("NC A100 v4", "an Azure VM series"),
        ("a3-highgpu-8g", "a Google Cloud machine type"),
        ("g2-standard-4", "a Google Cloud machine type"),
        ("gpu_8x_h100_sxm5", "a Lambda instance type"),
        ("GEX44", "a Hetzner server type"),
    ],
)
def test_instance_type_is_named_as_one(model: str, kind: str) -> None:
    problem = instance_type_problem(model)
    assert problem is not None and problem.startswith(f"is {kind} ({model!r}), not a GPU model")


def test_instance_type_says_what_its_own_name_tells() -> None:
    lambda_type = instance_type_problem("gpu_8x_h100_sxm5")
    assert lambda_type is not None and "gpu_model: 'H100 SXM5' and gpu_count: 8" in lambda_type
    azure = instance_type_problem("Standard_ND96isr_H100_v5")
    assert azure is not None and "the H100 model" in azure


@pytest.mark.parametrize(
    "model",
    [
        "H100 80GB SXM",
        "NVIDIA A100-SXM4-80GB",
        "Tesla V100-SXM2-32GB",
        "GH200 480GB",
        "8x H100",
        "A10G",
        "RTX PRO 6000 WS",
        "GRID A100-4C",
        "NVIDIA GeForce RTX 5090 D v2",
        "NVIDIA RTX A6000",
        "A100X",
        "RTX 6000 (24 GB)",
        "Q_RTX_6000",
    ],
)
def test_gpu_names_are_no_instance_type(model: str) -> None:
    assert instance_type_problem(model) is None
