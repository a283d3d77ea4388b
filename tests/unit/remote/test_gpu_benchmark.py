"""remote/gpu_benchmark.py runs in PCI bus order: CUDA numbers devices fastest first unless
CUDA_DEVICE_ORDER=PCI_BUS_ID, while its nvidia-smi sampler (and the step's facts) number them by
PCI bus, so on a box of mixed cards worker N's cuda:N would not be nvidia-smi's GPU N."""

from __future__ import annotations

import importlib.util
import os

import pytest

from gpuonboard.remote import gpu_benchmark

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


@needs_torch
def test_the_benchmark_numbers_cuda_devices_in_pci_bus_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    # --device cuda on this CPU-only machine: the run stops at once, after the order is set
    assert gpu_benchmark.main(["--device", "cuda"]) == 1
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert "torch.cuda.is_available() is False" in capsys.readouterr().out
