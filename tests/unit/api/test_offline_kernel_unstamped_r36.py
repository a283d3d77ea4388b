"""Kernel lines without stamps of DRM's own kind, `[drm] Initialized nvidia-drm 0.0.0 20160202 for
0000:3b:00.0 on minor 1` (measure36d 14: 5 lines a poster picked from a boot's log: `nvidia
0000:3b:00.0: enabling device`, `[drm] Initialized nvidia-drm`, `nvidia-uvm: Loaded the UVM
driver`). Before, `[drm]` was no kernel line's shape (api/saved_kinds.py _KERNEL_SHAPE): the text
was refused as "of 2 kinds only (`nvidia`, `nvidia-uvm`)", an untrue count. Now its 3 kinds are
counted and the text is read, as the offline guide's rule says (3 lines of 3 kinds); being lines
that all hold `nvidia`, an excerpt, it passes no rule: gpu_xid and nvswitch_sxid are unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_kinds import detect_kind, unstamped_kinds

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PICKED = REAL / (
    "log-excerpt__nostamp-nvidia-enabling-device-drm-initialized-uvm-loaded-5-lines-picked"
    "__2x-rtx4090-post-reboot__incident-notes.txt"
)


def test_drm_s_lines_are_a_kind_of_kernel_line() -> None:
    text = PICKED.read_text()
    assert detect_kind(text) == "kernel_log"
    # (the refusal's count, where too few: DRM's lines one kind, whatever function they name)
    drm = "[drm] Initialized nvidia-drm 0.0.0 20160202 for 0000:3b:00.0 on minor 1\n"
    drm += "[drm:nv_drm_load [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to allocate\n"
    assert unstamped_kinds(drm + "nvidia-uvm: Loaded the UVM driver, major device number 509.\n") == [
        "[drm]",
        "nvidia-uvm",
    ]


def test_the_picked_lines_pass_no_rule(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg-after-reboot.txt", PICKED.read_text(), "gpu_count: 2\n")
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]


@pytest.mark.parametrize("keep", ["[drm]", "nvidia-uvm"])
def test_one_kind_of_the_lines_alone_is_still_refused(keep: str) -> None:
    text = "".join(line for line in PICKED.read_text().splitlines(True) if line.startswith(keep))
    assert detect_kind(text) is None


# (the PCI core's lines of the two GPUs the picked lines name, as `dmesg -t` prints them: a test input)
PCI_LINES = (
    "pci 0000:3b:00.0: [10de:2684] type 00 class 0x030000\n"
    "pci 0000:3b:00.0: reg 0x10: [mem 0xd0000000-0xd0ffffff]\n"
    "pci 0000:86:00.0: [10de:2684] type 00 class 0x030000\n"
    "pci 0000:86:00.0: reg 0x10: [mem 0xe0000000-0xe0ffffff]\n"
)


def test_a_grep_by_bus_addresses_is_refused_drm_making_no_third_kind() -> None:
    """`dmesg -t | grep -E '0000:3b:00|0000:86:00'`: the PCI core's, the driver's and DRM's lines
    of the two GPUs, `pci` and `nvidia` lines of 2 kinds: refused as a grep (revR F1: `[drm]`
    counted as a third kind, the excerpt was read and passed gpu_xid and nvswitch_sxid)."""
    picked = [line for line in PICKED.read_text().splitlines(True) if "0000:" in line]
    text = PCI_LINES + "".join(picked)
    assert detect_kind(text) is None
    assert unstamped_kinds(text) == ["pci", "nvidia"]


def test_the_picked_lines_and_a_pci_line_pass_no_rule(tmp_path: Path) -> None:
    """The picked lines and one PCI core line of the same GPU (a grep for `nvidia` and its bus
    address): read, but an excerpt, so gpu_xid and nvswitch_sxid are unverified (revR F1 c5:
    both passed "no Xid in the kernel log")."""
    text = PCI_LINES.splitlines(True)[0] + PICKED.read_text()
    got = verdicts(tmp_path, "dmesg-after-reboot.txt", text, "gpu_count: 2\n")
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
