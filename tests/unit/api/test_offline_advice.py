"""Every verdict that is not a pass says what to do (docs/reference/rules.md: "Every check
carries one sentence of advice in `detail`"), on every real capture, and no rule passes over
GPUs none of which nvidia-smi could read (round 14: `nvidia_driver` unverified from `-L` alone,
`power_limit` "not reported" and `gpu_count` "not judged" had no advice; `foreign_processes`
"none" and `mig_mode` "no MIG on this model" passed over an H100 that read "GPU requires reset")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import DataDiskSpec, OrderSpec

REAL = Path(__file__).parents[2] / "fixtures" / "real"
ORDER = OrderSpec(
    gpu_model="H100",
    gpu_count=8,
    vram_bytes=80 * 10**9,
    ram_bytes=2**40,
    cpu_cores=64,
    min_driver="535",
    data_disk=DataDiskSpec("/data", 4 * 10**12),
)


def test_every_verdict_but_a_pass_says_what_to_do() -> None:
    silent = []
    for path in sorted(REAL.iterdir()):
        if path.name == "SOURCES.md":
            continue
        try:
            facts = parse_facts(offline.load_outputs([str(path)]))
        except UsageError:
            continue  # (refused in one sentence: tested where each is)
        for check in offline.judge(facts, ORDER):
            if check.verdict != "pass" and not check.detail.strip():
                silent.append((path.name, check.name, check.verdict, check.actual[:60]))
    assert not silent


@pytest.mark.parametrize("name", ["nvidia-smi-query-gpu__h100__1gpu__gpu-requires-reset.csv"])
def test_no_rule_passes_over_gpus_none_of_which_was_read(name: str) -> None:
    facts = parse_facts(offline.load_outputs([str(REAL / name)]))
    checks = {c.name: c for c in offline.judge(facts, None)}
    assert checks["gpu_health"].verdict == "fail"
    for rule in ("foreign_processes", "mig_mode", "ecc_uncorrectable"):
        assert (checks[rule].verdict, checks[rule].actual) == ("warn", "not judged: GPU 0 unreadable"), rule
    assert not [c.name for c in checks.values() if c.verdict == "pass"]
