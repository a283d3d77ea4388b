"""nvidia-smi missing beside a file only a loaded NVIDIA kernel driver has
(`/proc/driver/nvidia/gpus/<bus>/information`, `/proc/driver/nvidia/version`): the driver is
loaded, its utilities are what is missing (a container without the driver's `utility`
capability), never "no NVIDIA driver is installed" (measure40d 09: dstackai/dstack #1356's
container on Lambda, whose information file names an NVIDIA A10)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.gpu_information import gpu_information, looks_like_gpu_information

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DSTACK = (
    "session__nvidia-smi-command-not-found-then-proc-driver-nvidia-gpus-information__a10-firmware-535.129.03"
    "__dstack-1356.txt"
)
MODULE = REAL / "proc-driver-nvidia-version__open-kernel-module-for-x86_64-565.57.01__nixgl-186.txt"
ORDER = "gpu_model: A10\ngpu_count: 1\nvram: 24GB\n"


def _driver_row(tmp_path: Path, text: str) -> tuple[str, str, str]:
    got = {c.name: c for c in checks(tmp_path, "s.txt", text, ORDER)}
    row = got["nvidia_driver"]
    return row.verdict, row.actual, row.detail


def test_the_dstack_container_has_the_driver_loaded_and_no_utilities(tmp_path: Path) -> None:
    verdict, actual, detail = _driver_row(tmp_path, (REAL / DSTACK).read_text())
    assert verdict == "fail"
    assert actual == (
        "nvidia-smi not found, though the NVIDIA kernel driver is loaded"
        " (/proc/driver/nvidia/gpus/0000:07:00.0/information: NVIDIA A10, firmware 535.129.03)"
    )
    assert "no NVIDIA driver is installed" not in detail and "utility` capability" in detail


def test_the_module_version_file_beside_a_missing_nvidia_smi_says_so_too(tmp_path: Path) -> None:
    """The dstack session with its information file replaced by nixGL #186's real
    /proc/driver/nvidia/version (565.57.01 open)."""
    head = (REAL / DSTACK).read_text().split("$ cat", 1)[0]
    text = head + "$ cat /proc/driver/nvidia/version\n" + MODULE.read_text()
    verdict, actual, detail = _driver_row(tmp_path, text)
    assert verdict == "fail"
    assert "the loaded kernel module is 565.57.01 (/proc/driver/nvidia/version)" in actual
    assert "no NVIDIA driver is installed" not in detail


def test_nvidia_smi_missing_alone_still_says_no_driver_may_be_installed(tmp_path: Path) -> None:
    head = (REAL / DSTACK).read_text().split("```", 1)[0]
    verdict, actual, detail = _driver_row(tmp_path, head)
    assert (verdict, actual) == ("fail", "nvidia-smi not found")
    assert "no NVIDIA driver is installed" in detail


def test_two_information_files_are_read_each() -> None:
    one = (REAL / DSTACK).read_text().split("information \n", 1)[1]
    two = (
        one
        + "\n"
        + one.replace("0000:07:00.0", "0000:08:00.0").replace("Device Minor:    0", "Device Minor:    1")
    )
    assert looks_like_gpu_information(two)
    assert [g.bus for g in gpu_information(two)] == ["0000:07:00.0", "0000:08:00.0"]
    assert not looks_like_gpu_information("Model: something\nColor: red\n")


def test_the_information_file_alone_is_read_and_judges_nothing(tmp_path: Path) -> None:
    """The dstack capture's information file saved alone: read (was "not a recognised command
    output"), the driver said loaded, nvidia_driver unverified (no nvidia-smi output given)."""
    alone = (REAL / DSTACK).read_text().split("information \n", 1)[1]
    verdict, actual, _ = _driver_row(tmp_path, alone)
    assert verdict == "unverified"
    assert "the NVIDIA kernel driver is loaded (/proc/driver/nvidia/gpus/0000:07:00.0/information" in actual
