"""An nvidia-smi that failed on a driver/library version mismatch names the NVML library's version
below its failure on drivers of 2024 on (`NVML library version: 580.178`): min_driver stays
unverified (the library is the driver's user-space side, which does not match the loaded kernel
module, the driver that runs), and says which version was shown and why it is not the driver's.

Found by the truth sweep, round 32 (measure32a 33): zzzhouuu/truenas-nvidia-drivers#19's session
gave min_driver "unknown: nvidia-smi failed (...mismatch)", silent on the 580.178 it shows."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import verdicts

SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
TRUENAS = (
    SESSIONS
    / "transcript__nvidia-smi-NVMLmismatch-library-580.178+proc-driver-version-580.173.02__truenas-19.txt"
)
H01 = SESSIONS / "transcript__nvidia-smi-NVMLmismatch+dmesg-NVRM__h01.txt"
FAILED = "unknown: nvidia-smi failed (Failed to initialize NVML: Driver/library version mismatch)"


def test_the_library_version_a_mismatch_shows_is_named_and_not_judged(tmp_path: Path) -> None:
    """Since round 33 the session's `cat /proc/driver/nvidia/version` is read: min_driver is
    judged by the loaded module's version, the library's named beside it, never judged."""
    got = verdicts(tmp_path, "session.txt", TRUENAS.read_text(), "gpu_count: 1\nmin_driver: '580'\n")
    assert got["nvidia_driver"][0] == "fail"
    assert got["min_driver"] == (
        "pass",
        "580.173.02 (the loaded kernel module, /proc/driver/nvidia/version: `NVRM version: NVIDIA UNIX"
        " x86_64 Kernel Module 580.173.02`); nvidia-smi failed on a version mismatch: its NVML library"
        " is 580.178, not the module's",
    )


def test_the_library_version_alone_is_named_and_not_judged(tmp_path: Path) -> None:
    """The same failure without the version file: the library's version is said, not judged."""
    failure = "".join(TRUENAS.read_text().splitlines(keepends=True)[:3])
    got = verdicts(tmp_path, "session.txt", failure, "gpu_count: 1\nmin_driver: '580'\n")
    assert got["min_driver"] == (
        "unverified",
        f"{FAILED}; the version it shows, NVML library 580.178, is the driver's user-space library,"
        " which does not match the loaded kernel module (the driver that runs), whose version is not"
        " read here",
    )


def test_a_mismatch_without_the_library_line_reads_the_module_in_the_log(tmp_path: Path) -> None:
    """An older driver's mismatch prints no library version; the session's `dmesg | grep NVRM`
    holds the driver's API mismatch, which names the module loaded (470.103.01): said as the
    source, unverified since grep kept only some lines (a later load may be among those left)."""
    got = verdicts(tmp_path, "session.txt", H01.read_text(), "gpu_count: 1\nmin_driver: '470'\n")
    assert got["min_driver"] == (
        "unverified",
        "470.103.01 (the kernel log's API mismatch line `API mismatch: the client has the version"
        " 470.129.06, but this kernel module has the version 470.103.01`; nvidia-smi failed before"
        " naming it); `dmesg | grep NVRM` keeps only the lines grep let through",
    )
