"""Round 19, vGPU guests: the vGPU software licence (R19-V1) and the advice for what a guest cannot
read (R19-V2). An unlicensed vGPU passed: nothing read its `License Status`, so a guest whose
`nvidia-smi -q` says `Unlicensed` (and whose CUDA refused work: `CUDA error: operation not
supported`, on the page of the capture) passed every rule but the generic `virtualization`
warning, and an order that names its profile accepted it.

Every output is a real capture (tests/fixtures/real/SOURCES.md, round 19 and round 7/8 vGPU
guests); each test of a guest fails on the code before the fix, the guards (no row, no advice
outside a vGPU guest) pass on both."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
UNLICENSED = "nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed__guest.txt"
GRACE = "nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed-unrestricted__guest.txt"
LICENSED_XML = "nvidia-smi-q-x__grid-p4-1q-vgpu__1gpu__driver513.46__windows-guest.xml"
VGPU_TABLE = "nvidia-smi__grid-a100-4c-vgpu__1gpu__driver510.47.03__guest.txt"
# the order names the profile delivered: gpu_model passes, so only the licence can fail it
PROFILE_ORDER = "gpu_model: RTXA6000-24Q\ngpu_count: 1\n"


def judged(tmp_path: Path, name: str, order: str | None = None) -> dict[str, tuple[str, str]]:
    return verdicts(tmp_path, name, (REAL / name).read_text(encoding="utf-8"), order)


@pytest.mark.parametrize(
    ("name", "verdict", "actual"),
    [
        (UNLICENSED, "fail", "GPU 0: Unlicensed, NVIDIA RTX Virtual Workstation"),
        # the grace period (and a guest checked before nvidia-gridd fetched its licence): in full
        # now, throttled once it is over
        (GRACE, "warn", "GPU 0: Unlicensed (Unrestricted), NVIDIA RTX Virtual Workstation"),
    ],
)
def test_an_unlicensed_vgpu_is_said_even_where_its_profile_was_ordered(
    tmp_path: Path, name: str, verdict: str, actual: str
) -> None:
    got = judged(tmp_path, name, PROFILE_ORDER)
    assert got["gpu_model"][0] == "pass"
    assert got["vgpu_license"] == (verdict, actual)
    said = details(tmp_path, name, (REAL / name).read_text(encoding="utf-8"), PROFILE_ORDER)["vgpu_license"]
    assert "ask the vendor to license it" in said


def test_a_licensed_vgpu_passes_with_its_expiry(tmp_path: Path) -> None:
    # <license_status>Licensed (Expiry: 2022-9-22 6:57:30 GMT)</license_status>
    assert judged(tmp_path, LICENSED_XML)["vgpu_license"] == (
        "pass",
        "GPU 0: Licensed (Expiry: 2022-9-22 6:57:30 GMT), NVIDIA RTX Virtual Workstation",
    )


def test_a_vgpu_whose_output_gives_no_licence_is_unverified(tmp_path: Path) -> None:
    # the table of a `GRID A100-4C` guest: a vGPU by its name, no licence in that format
    assert judged(tmp_path, VGPU_TABLE)["vgpu_license"] == ("unverified", "not reported for GPU 0")


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",  # a VM with the GPU passed through
        "nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml",
        "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",  # bare metal
        "nvidia-smi__h200__8gpu__driver570.158.01.txt",  # the table: no mode, no vGPU name
    ],
)
def test_no_licence_row_where_no_gpu_is_a_vgpu(tmp_path: Path, name: str) -> None:
    assert "vgpu_license" not in judged(tmp_path, name)


# R19-V2: what a vGPU guest's nvidia-smi cannot read of the physical GPU (N/A in all three real
# guests: the RTXA6000-24Q -q, the GRID P4-1Q -q -x, the GRID A100-4C table) was unverified with
# the advice to run `nvidia-smi -q -d POWER` (or PCIE, PERFORMANCE, ...) in the guest, which prints
# N/A again; the row now says so and names who can read it (the host)
HOST_ONLY = ("pcie_link", "power_limit", "throttling", "temperature", "memory_repair")


@pytest.mark.parametrize("name", [UNLICENSED, LICENSED_XML, VGPU_TABLE])
def test_a_vgpu_guests_unread_host_readings_name_the_host(tmp_path: Path, name: str) -> None:
    text = (REAL / name).read_text(encoding="utf-8")
    got = verdicts(tmp_path, name, text)
    said = details(tmp_path, name, text)
    unread = [rule for rule in HOST_ONLY if got[rule][0] == "unverified"]
    assert {"pcie_link", "power_limit", "throttling", "memory_repair"} <= set(unread)
    for rule in unread:
        # (the P4's 0 C row named the host's own nvidia-smi before)
        assert "vGPU guest" in said[rule]
        assert "ask the vendor for the host's `nvidia-smi -q`" in said[rule] or "the host's own" in said[rule]


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",  # pass-through: the guest reads the GPU
        "nvidia-smi__h200__8gpu__driver570.158.01.txt",
    ],
)
def test_no_vgpu_advice_outside_a_vgpu_guest(tmp_path: Path, name: str) -> None:
    said = details(tmp_path, name, (REAL / name).read_text(encoding="utf-8"))
    assert not any("vGPU guest" in detail for detail in said.values())
