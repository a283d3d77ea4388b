"""The NVIDIA kernel module's version where nvidia-smi does not give it (facts/driver_module.py):
the driver's own version file, /proc/driver/nvidia/version (saved alone or in a session), read
as the loaded module's version, min_driver judged from it, its source said; and the kernel log's
`NVRM: API mismatch: the client has the version X, but this kernel module has the version Y`,
whose module version min_driver reads as it reads the driver's load line. Before, the file was
refused ("not a recognised command output", in a session "not an output this tool reads") and
the mismatch's module version was left unread: min_driver said the module's "version is not
read here" beside a mismatch whose module version the box had printed.

Real captures: tests/fixtures/real/SOURCES.md, round 33 (neofetch#876, nixGL#186, nixGL#139),
tests/fixtures/sessions/SOURCES.md (truenas-nvidia-drivers#19); open-gpu-kernel-modules#626's
journal, its last four lines as a user pastes the mismatch alone; test_min_driver_mismatch.py
judges the h01 session's `dmesg | grep NVRM`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ORDER = 'gpu_count: 1\nmin_driver: "535"\n'
FILE_384 = "proc-driver-nvidia-version__x86_64-kernel-module-384.98__neofetch-876.txt"
FILE_565 = "proc-driver-nvidia-version__open-kernel-module-for-x86_64-565.57.01__nixgl-186.txt"
JETSON = "proc-driver-nvidia-version__jetson-orin-nx-l4t-35.3.1__nixgl-139.txt"
TRUENAS = (
    Path(__file__).parents[3]
    / "fixtures"
    / "sessions"
    / "transcript__nvidia-smi-NVMLmismatch-library-580.178+proc-driver-version-580.173.02__truenas-19.txt"
)
OGKM_626 = "journalctl__zh-cn-locale-snip-elision__nvrm-api-mismatch-550.76-550.67__ogkm-626.txt"


@pytest.mark.parametrize(
    ("name", "verdict", "version", "module_file"),
    [
        (FILE_384, "fail", "384.98", "Kernel Module 384.98"),
        (FILE_565, "pass", "565.57.01", "Open Kernel Module for x86_64 565.57.01"),
    ],
)
def test_the_version_file_judges_min_driver(
    tmp_path: Path, name: str, verdict: str, version: str, module_file: str
) -> None:
    got = verdicts(tmp_path, "version.txt", (REAL / name).read_text(), ORDER)
    assert got["min_driver"][0] == verdict, got["min_driver"]
    assert got["min_driver"][1].startswith(
        f"{version} (the loaded kernel module, /proc/driver/nvidia/version"
    )
    assert module_file in got["min_driver"][1]
    # (no nvidia-smi output: whether the driver reports the GPUs is not known, the module named)
    assert got["nvidia_driver"] == (
        "unverified",
        f"not judged: no nvidia-smi output was given (the loaded kernel module is {version}"
        " (/proc/driver/nvidia/version); whether it reports the GPUs is not known)",
    )


def test_a_jetson_module_number_is_no_driver_release(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "version.txt", (REAL / JETSON).read_text(), ORDER)
    assert got["min_driver"][0] == "unverified", got["min_driver"]
    assert "35.3.1 is no driver release number" in got["min_driver"][1]


def test_a_version_mismatch_session_names_the_module_beside_the_library(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "session.txt", TRUENAS.read_text(), ORDER)
    assert got["nvidia_driver"] == (
        "fail",
        "nvidia-smi failed (Failed to initialize NVML: Driver/library version mismatch); the loaded"
        " kernel module is 580.173.02 (/proc/driver/nvidia/version)",
    )
    assert got["min_driver"][0] == "pass", got["min_driver"]
    assert "NVML library is 580.178, not the module's" in got["min_driver"][1]


def test_the_kernel_log_s_api_mismatch_gives_the_module_version(tmp_path: Path) -> None:
    mismatch = "".join((REAL / OGKM_626).read_text().splitlines(keepends=True)[-4:])
    got = verdicts(tmp_path, "journal.txt", mismatch, 'gpu_count: 1\nmin_driver: "550.70"\n')
    assert got["min_driver"][0] == "fail", got["min_driver"]
    assert got["min_driver"][1].startswith(
        "550.67 (the kernel log's API mismatch line `API mismatch: the client has the version 550.76,"
        " but this kernel module has the version 550.67`"
    ), got["min_driver"]
