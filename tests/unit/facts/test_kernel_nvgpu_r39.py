"""The Jetson / Orin iGPU driver's lines (`nvgpu: 17000000.gpu <function>:<line>  [ERR]  ...`):
unstamped, as a serial console or `journalctl -o cat` prints them, they are a kernel log as
unstamped NVRM lines are (measure39c 19 was refused as "not a recognised command output"); and
nvgpu's own `[ERR]` fault lines are GPU fault events (data/nvrm_faults.yml nvgpu_*), never a pass:
an MMU fault with error notifier 31 warns as an application's fault (the Xid 31 class), a firmware
the driver could not load or recover (`Unable to recover GR falcon`) fails, any other `[ERR]` line
warns (measure39c 19, 20: "no Xid in the kernel log").

Real captures: tests/fixtures/real/SOURCES.md (OE4T/tegra-demo-distro #342,
balena-os/balena-jetson-orin #464)."""

from __future__ import annotations

import re
from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
MMU = (
    REAL
    / "dmesg-t__unstamped-nvgpu-mmu-fault-err-notifier-31-wrapped__jetson-orin__tegra-demo-distro-342.txt"
)
FALCON = (
    REAL
    / "dmesg__nvgpu-pmu-rpc-failed-lsf-load-gr-falcon-unrecovered__jetson-orin__balena-jetson-orin-464.txt"
)
ORDER = "gpu_model: Orin\ngpu_count: 1\n"


def test_unstamped_nvgpu_lines_are_read_as_a_kernel_log(tmp_path: Path) -> None:
    judged = verdicts(tmp_path, "console.txt", MMU.read_text(), ORDER)
    verdict, actual = judged["gpu_xid"]
    assert verdict != "pass", actual
    assert "MMU fault of a GPU channel (error notifier 31" in actual and "-> check_app" in actual, actual
    assert "nvgpu" in actual and "-> igpu_error" in actual, actual
    assert judged["nvswitch_sxid"][0] == "unverified", judged["nvswitch_sxid"]


def test_the_same_lines_unwrapped_or_stamped_are_read_alike(tmp_path: Path) -> None:
    unwrapped = MMU.read_text().replace("virt rea\nd,", "virt read,")
    stamped = "".join(
        f"[ {1200 + i}.{i:06d}] {line}\n" for i, line in enumerate(unwrapped.splitlines()) if line.strip()
    )
    for name, text in (("unwrapped.txt", unwrapped), ("dmesg.txt", stamped)):
        verdict, actual = verdicts(tmp_path, name, text, ORDER)["gpu_xid"]
        assert verdict != "pass", (name, actual)
        assert "error notifier 31" in actual, (name, actual)
    faults = [e.fault for e in parse_kernel_log(stamped).nvrm_faults()]
    assert faults.count("nvgpu_mmu_fault") == 2 and faults.count("nvgpu_error") == 5, faults


def test_a_gr_falcon_the_driver_could_not_recover_fails(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "dmesg.txt", FALCON.read_text(), ORDER)["gpu_xid"]
    assert verdict == "fail", actual
    assert "Unable to recover GR falcon" in actual and "-> reboot" in actual, actual


def test_nvgpu_err_lines_alone_never_pass_a_whole_boot_log(tmp_path: Path) -> None:
    # (the same errors in a journal of a whole boot: its banner first, other drivers' lines beside)
    kept = [line for line in FALCON.read_text().splitlines() if not re.search(r"falcon|LSF", line)]
    journal = [
        "Dec 01 10:00:00 orin kernel: Booting Linux on physical CPU 0x0000000000 [0x410fd421]",
        "Dec 01 10:00:00 orin kernel: Linux version 5.15.136-tegra (buildbrain@mobile-u64-6422) #1 SMP",
        "Dec 01 10:00:00 orin kernel: Machine model: NVIDIA Jetson AGX Orin Developer Kit",
        "Dec 01 10:00:01 orin kernel: usb 1-2: new high-speed USB device number 2 using tegra-xusb",
        "Dec 01 10:00:02 orin kernel: EXT4-fs (mmcblk0p1): mounted filesystem with ordered data mode",
        *(re.sub(r"^\[\s*[\d.]+\]", "Dec 01 10:01:10 orin kernel:", line) for line in kept),
    ]
    verdict, actual = verdicts(tmp_path, "journal.txt", "\n".join(journal) + "\n", ORDER)["gpu_xid"]
    assert verdict in ("warn", "unverified"), actual
    assert "-> igpu_error" in actual, actual
