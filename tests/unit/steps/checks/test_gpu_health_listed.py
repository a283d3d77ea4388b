"""A health row that passes on the GPUs read is no pass of the GPUs only listed: an `nvidia-smi
-q` of GPU 0 beside an `nvidia-smi -L` of four left GPUs 1-3 without a reading, and the rows
that pass where any GPU passes passed the box (round 11, R11-B1; real captures,
tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[3] / "fixtures" / "real"
Q_GPU0 = "nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt"
LISTING = "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt"


def rows(*names: str) -> dict[str, tuple[str, str]]:
    facts = parse_facts(offline.load_outputs([str(REAL / n) for n in names]))
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(facts)}


def test_rows_that_pass_on_gpu_0_are_unverified_for_the_gpus_only_listed() -> None:
    got = rows(Q_GPU0, LISTING)
    for name in ("power_limit", "throttling", "temperature", "pcie_replays"):
        verdict, actual = got[name]
        assert verdict == "unverified", (name, actual)
        assert actual.endswith("(of what was read; GPU 1, GPU 2, GPU 3 listed but not read)"), name
    # what was read below its maximum is named, never passed: GPU 0's x4 of x16 at P8 (idle: a
    # link nvidia-smi says may be reduced when the GPU is not in use) warned before round 28; a
    # GPU only listed may hold a link that fails, so the warning of GPU 0 is no verdict of the
    # box: unverified, naming GPU 0's link
    verdict, actual = got["pcie_link"]
    assert verdict == "warn" and "(of what was read; " in actual, actual  # (round 33: a warning read stands)
    assert "x4 of x16" in actual and actual.endswith("GPU 1, GPU 2, GPU 3 listed but not read)"), actual


def test_every_gpu_read_is_judged_as_before() -> None:
    """The -q alone reads GPU 0 of the 4 it says attached: an incomplete probe, as before."""
    got = rows(Q_GPU0)
    assert got["power_limit"][0] == "unverified" and "incomplete probe" in got["power_limit"][1]
