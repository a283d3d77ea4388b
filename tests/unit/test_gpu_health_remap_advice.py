"""`memory_repair` on the real A10 with a row remap pending says what to ask the vendor."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

A10 = Path(__file__).parents[1] / "fixtures" / "real" / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"


def test_pending_remap_asks_the_vendor_for_a_gpu_reset_or_reboot() -> None:
    facts = parse_facts({"nvidia_smi": ProbeOutput(A10.read_text(), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "memory_repair"]
    assert check.verdict == "fail"
    # the vendor-actionable request: reset the GPU (or reboot), check again, else another GPU
    assert "ask the vendor to reset the GPU (`nvidia-smi -i N -r`" in check.detail
    assert "or reboot, then check again" in check.detail
    assert "ask for another GPU" in check.detail
