"""GPU health and driver-compatibility rules, pure, over facts parsed from real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import ngc
from gpuonboard.facts.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps import driver_compat, gpu_health
from gpuonboard.steps.base import StepArgsError

REAL = Path(__file__).parents[1] / "fixtures" / "real"
DERIVED = Path(__file__).parents[1] / "fixtures" / "derived"


def facts(path: Path, **extra: str) -> object:
    raw = {"nvidia_smi": ProbeOutput(path.read_text(), "", 0)}
    raw.update({k: ProbeOutput(v, "", 0) for k, v in extra.items()})
    return parse_facts(raw)


def verdicts(path: Path) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(facts(path))}


def test_throttled_h100s_fail_throttling() -> None:
    v = verdicts(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt")
    assert v["throttling"][0] == "fail"
    assert v["throttling"][1].count("hw_slowdown, hw_power_brake_slowdown") == 8


def test_a10_with_pending_remap_fails_memory_repair() -> None:
    v = verdicts(REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt")
    assert v["memory_repair"] == ("fail", "GPU 0: row remap pending")


def test_t4_with_processes_fails_and_reports_pass_through() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")
    assert v["foreign_processes"][0] == "fail"
    assert v["virtualization"] == ("pass", "Pass-Through")


def test_rtx_4000_ada_processes_and_consumer_ecc() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
    assert v["foreign_processes"][0] == "fail" and "pid 4937 python" in v["foreign_processes"][1]


def test_derived_a100_box_only_warns() -> None:
    v = verdicts(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml")
    assert {k: x[0] for k, x in v.items() if x[0] != "pass"} == {
        "mig_mode": "warn",
        "persistence_mode": "warn",
    }


def test_idle_4090_link_downshift_is_a_warning_not_a_failure() -> None:
    v = verdicts(REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml")
    assert v["pcie_link"] == ("warn", "GPU 0 Gen1 of Gen3")
    assert v["ecc_mode"][0] == "pass" and v["ecc_uncorrectable"][0] == "pass"


@pytest.mark.parametrize(
    ("fixture", "image", "verdict", "text"),
    [
        (
            "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            "fail",
            "804",
        ),
        (
            "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            "pass",
            "forward",
        ),
        (
            "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
            "nvcr.io/nvidia/pytorch:23.10-py3",
            "pass",
            "",
        ),
        (
            "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
            "mirror.example.cn/nvidia/pytorch:24.08-py3",
            "fail",
            "535.86",
        ),
        (
            "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
            "nvcr.io/nvidia/pytorch:99.01-py3",
            "warn",
            "pin one",
        ),
    ],
)
def test_driver_compat_verdicts(fixture: str, image: str, verdict: str, text: str) -> None:
    check = driver_compat.evaluate(facts(REAL / fixture), image, ngc.load_releases())[0]
    assert check.verdict == verdict, check
    assert text in check.detail + check.actual


def test_no_driver_is_a_compat_failure() -> None:
    f = parse_facts({"nvidia_smi": ProbeOutput("", "", 127)})
    check = driver_compat.evaluate(f, driver_compat.DEFAULT_IMAGE, ngc.load_releases())[0]
    assert (check.verdict, check.actual) == ("fail", "no NVIDIA driver answered")


def test_nvcc_is_information_only() -> None:
    nvcc = (REAL / "nvcc-version__cuda-11.4__jetson-agx-xavier-aarch64.txt").read_text()
    assert driver_compat.parse_nvcc(nvcc) == "11.4.239"
    f = facts(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml", nvcc=nvcc)
    checks = driver_compat.evaluate(f, driver_compat.DEFAULT_IMAGE, ngc.load_releases())
    assert (checks[1].name, checks[1].actual, checks[1].verdict) == (
        "host_cuda_toolkit",
        "nvcc 11.4.239",
        "pass",
    )


def test_thresholds_merge_and_validate() -> None:
    assert gpu_health.thresholds_from(
        {"temperature_warn": 70}, {"gpu_health": {"temperature_warn": "75"}}
    ) == {"temperature_warn": 75.0}
    with pytest.raises(StepArgsError, match="must be a number"):
        gpu_health.thresholds_from({}, {"gpu_health": {"power_cap_warn": "high"}})
