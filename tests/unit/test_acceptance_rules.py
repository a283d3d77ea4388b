"""Acceptance rules as pure functions over facts parsed from real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.acceptance import evaluate, model_matches, model_tokens, version_tuple

FIX = Path(__file__).parents[1] / "fixtures"


def facts_from(**files: str | None) -> object:
    raw = {}
    for name, rel in files.items():
        raw[name] = ProbeOutput("", "", 127) if rel is None else ProbeOutput((FIX / rel).read_text(), "", 0)
    return parse_facts(raw)


GOOD = dict(
    nvidia_smi="derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml",
    nvidia_topo="real/nvidia-smi-topo-m__h200__8gpu-10nic.txt",
    lscpu="real/lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt",
    free="derived/free__gpu-server-2tib__derived.txt",
    df="real/df-h__8gpu-server-mi300x.txt",
)
ORDER = OrderSpec(
    gpu_model="A100 80GB SXM",
    gpu_count=8,
    vram_bytes=80 * 10**9,
    cpu_cores=64,
    ram_bytes=10**12,
    data_disk=DataDiskSpec("/mnt/nvme0n1p1", 12 * 10**12),
    interconnect="nvlink",
    min_driver="535",
)


@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        ("A100 80GB SXM", "NVIDIA A100-SXM4-80GB", True),
        ("A100 80GB", "NVIDIA A100-SXM4-80GB", True),
        ("A100 80GB SXM", "NVIDIA A100-SXM4-40GB", False),
        ("A100 80GB PCIe", "NVIDIA A100-SXM4-80GB", False),
        ("A100 80GB PCIe", "NVIDIA A100 80GB PCIe", True),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", True),
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("H100 SXM", "NVIDIA H100 PCIe", False),
        ("A100 80 GB", "NVIDIA A100-SXM4-80GB", True),
        ("", "NVIDIA A100-SXM4-80GB", False),
    ],
)
def test_model_matching(ordered: str, delivered: str, ok: bool) -> None:
    assert model_matches(ordered, delivered) is ok


def test_model_tokens_drop_vendor_words() -> None:
    assert model_tokens("NVIDIA A100-SXM4-80GB") == {"A100", "SXM4", "SXM", "80GB"}


def test_version_tuple() -> None:
    assert version_tuple("535.54.03") == (535, 54, 3)
    assert version_tuple("550") < version_tuple("550.54") < version_tuple("590.48.01")


def test_correct_box_passes_every_rule() -> None:
    checks = evaluate(ORDER, facts_from(**GOOD))
    assert [(c.name, c.verdict) for c in checks] == [
        ("nvidia_driver", "pass"),
        ("gpu_model", "pass"),
        ("gpu_count", "pass"),
        ("vram", "pass"),
        ("cpu_cores", "pass"),
        ("ram", "pass"),
        ("data_disk", "pass"),
        ("interconnect", "pass"),
        ("min_driver", "pass"),
    ]


def test_each_shortfall_fails_its_rule() -> None:
    facts = facts_from(
        **{
            **GOOD,
            "nvidia_smi": "real/nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
            "nvidia_topo": "derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt",
            "free": "real/free__ubuntu-18.04-vm.txt",
        }
    )
    verdicts = {c.name: (c.verdict, c.actual) for c in evaluate(ORDER, facts)}
    assert verdicts["gpu_model"] == ("fail", "1 x NVIDIA A100-SXM4-40GB")
    assert verdicts["gpu_count"][0] == "fail"
    assert verdicts["vram"][0] == "fail"
    assert verdicts["ram"][0] == "fail"
    assert verdicts["interconnect"] == ("fail", "pcie (weakest GPU link SYS)")
    assert verdicts["min_driver"] == ("fail", "510.47.03")


def test_tolerance_allows_reporting_gap_but_not_less() -> None:
    facts = facts_from(**GOOD)
    total = facts.memory.total_bytes
    just_enough = OrderSpec(ram_bytes=int(total / 0.96))
    too_much = OrderSpec(ram_bytes=int(total / 0.90))
    assert evaluate(just_enough, facts)[-1].verdict == "pass"
    assert evaluate(too_much, facts)[-1].verdict == "fail"


def test_data_disk_on_system_disk_fails_and_hyperthreads_warn() -> None:
    facts = facts_from(**GOOD)
    on_root = OrderSpec(data_disk=DataDiskSpec("/data"))
    check = evaluate(on_root, facts)[-1]
    assert check.verdict == "fail" and "system disk" in check.actual
    many = OrderSpec(cpu_cores=facts.cpu.logical_cpus)
    if facts.cpu.logical_cpus > facts.cpu.physical_cores:
        assert evaluate(many, facts)[-1].verdict == "warn"
    assert evaluate(OrderSpec(cpu_cores=facts.cpu.logical_cpus + 1), facts)[-1].verdict == "fail"


def test_no_driver_is_one_clear_failure_per_gpu_rule() -> None:
    facts = facts_from(**{**GOOD, "nvidia_smi": None, "nvidia_topo": None})
    checks = {c.name: c for c in evaluate(ORDER, facts)}
    assert checks["nvidia_driver"].actual == "nvidia-smi not found"
    assert all(checks[n].verdict == "fail" for n in ("gpu_model", "gpu_count", "vram", "interconnect"))
    assert checks["cpu_cores"].verdict == "pass"


def test_hung_nvidia_smi_is_stopped_and_reported(tmp_path: Path) -> None:
    """The real probe script under sh, with an nvidia-smi that never answers (a hung driver):
    `timeout` stops it, no fallback call waits again, the other probes still report."""
    import os
    import subprocess
    import time

    from gpuonboard.facts.gather import TIMED_OUT, core_probes
    from gpuonboard.facts.probe import build_script, new_token, split_output

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    hung = bin_dir / "nvidia-smi"
    hung.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec sleep 600\n')
    hung.chmod(0o755)
    probes = core_probes(nvidia_smi_timeout=1)
    token = new_token()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    start = time.monotonic()
    out = subprocess.run(
        ["sh", "-c", build_script(probes, token)], capture_output=True, text=True, env=env, timeout=60
    )
    assert time.monotonic() - start < 15  # 1 s per probe + the 5 s KILL grace at most, in parallel
    raw = split_output(out.stdout, out.stderr, token, [p.name for p in probes])
    assert raw["nvidia_smi"].exit_code == TIMED_OUT and raw["nvidia_topo"].exit_code == TIMED_OUT
    assert sorted(calls.read_text().splitlines()) == ["-q -x", "topo -m"]  # no fallback waited again
    facts = parse_facts(raw)
    assert facts.nproc and facts.nproc > 0  # the quick probes answered
    checks = {c.name: c for c in evaluate(ORDER, facts)}
    driver = checks["nvidia_driver"]
    assert (driver.verdict, driver.actual) == ("fail", "nvidia-smi did not answer within 60 s (stopped)")
    assert "Xid 79" in driver.detail
    assert checks["gpu_count"].verdict == "fail" and "did not answer" in checks["gpu_count"].actual
