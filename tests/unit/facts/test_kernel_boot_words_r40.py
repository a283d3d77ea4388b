"""Kernel logs judged right, and said right (measure40c 02, 16, 18, 19, 20).

- 18: a journal of a boot's first second (EDAC and MCE set-up, udev's coldplug), no line of the
  GPU driver, passed gpu_xid and nvswitch_sxid: the "ends early in boot" rule (facts/kernel_span)
  read only stamps in seconds since boot. A wall-clock-stamped log is anchored at a line only a
  boot logs: it ends during boot, unverified.
- 16: nv-pci.c's 64-bit BAR message (`This is a 64-bit BAR mapped above 4GB ... a matching
  prefetchable memory window.`, several NVRM lines) is the cause of the failed probe beside it:
  fix_bar_mapping, not a reboot.
- 02: a `journalctl -b -1` log of driver faults and no Xid was said to "span more than one boot:
  these Xids were ...".
- 19, 20: a picked-kinds sentence named the drivers `athk` and `rtlee` (every digit of the first
  word stripped): `ath9k`, `rtl8192ee`.

Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import checks, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
EDAC = (
    REAL
    / "journal__first-boot-second-edac-amd64-udev-coldplug-no-nvidia-line__a100x4__ovirt-node-ng-image-88.txt"
)
BAR = (
    REAL
    / "dmesg__64bit-bar-above-4gb-no-bridge-window-nvrm-continuation-probe-failed__gtx960m__bumblebee-739.txt"
)
PREVIOUS = (
    REAL / "journalctl-b-1-grep-tail__prompt__rpc-failed-0xf-no-xid-previous-boot__rtx5090__ogkm-1080.txt"
)
ATH9K = REAL / "dmesg__ath9k-aer-corrected-rxerr-wifi-not-gpu__rtx3060-laptop__dasharo-issues-639.txt"
RTL = (
    REAL
    / "unstamped-kernel-lines__aer-error-of-this-agent-rtl8192ee-two-lines__gtx1650__archinstall-1554.txt"
)


def _iso(text: str) -> str:
    """The journal's lines as rsyslog's ISO-stamped kern.log writes them."""
    return re.sub(r"(?m)^Oct 14 (\d\d:\d\d:\d\d) ", r"2025-10-14T\1.000000+02:00 ", text)


@pytest.mark.parametrize("form", [lambda t: t, _iso], ids=["journal", "rsyslog-iso"])
def test_a_wall_clock_log_of_a_boots_first_second_is_unverified(tmp_path: Path, form) -> None:  # type: ignore[no-untyped-def]
    got = verdicts(
        tmp_path, "journal.txt", form(EDAC.read_text()), "gpu_model: A100-PCIE-40GB\ngpu_count: 4\n"
    )
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = got[rule]
        assert verdict == "unverified", (rule, actual)
        assert (
            "it ends during boot, 1 s after the boot's `MCE: In-kernel MCE decoding enabled` line" in actual
        )


def test_a_wall_clock_log_going_on_long_after_boot_is_no_early_end(tmp_path: Path) -> None:
    # (the same lines, then one an hour later: the log reaches far past the driver's load)
    text = (
        EDAC.read_text() + "Oct 14 16:45:43 ovnode02.ws-datenservice.de kernel: EDAC MC: UMC2 chip selects:\n"
    )
    verdict, actual = verdicts(tmp_path, "journal.txt", text, "gpu_model: A100-PCIE-40GB\ngpu_count: 4\n")[
        "gpu_xid"
    ]
    assert "ends during boot" not in actual, actual


@pytest.mark.parametrize("form", ["dmesg", "journal"])
def test_a_64bit_bar_outside_the_bridge_window_is_the_probe_failures_cause(tmp_path: Path, form: str) -> None:
    text = BAR.read_text()
    if form == "journal":
        text = re.sub(r"(?m)^(?:\[\s*[\d.]+\]|\s+)\s*", "Feb 26 10:00:08 laptop kernel: ", text)
    row = {
        c.name: c for c in checks(tmp_path, "dmesg.txt", text, "gpu_model: GeForce GTX 960M\ngpu_count: 1\n")
    }["gpu_xid"]
    assert row.verdict == "fail", row.actual
    assert (
        "64-bit BAR is mapped above 4 GB outside the upstream PCI bridge's prefetchable window" in row.actual
    )
    assert row.actual.count("-> fix_bar_mapping") == 1 and "-> reboot" not in row.actual, row.actual
    assert "no fault of the GPU" in row.detail, row.detail


def test_a_previous_boots_driver_faults_are_not_said_to_be_xids_of_a_log_of_boots(tmp_path: Path) -> None:
    row = {
        c.name: c
        for c in checks(
            tmp_path, "journal.txt", PREVIOUS.read_text(), "gpu_model: GeForce RTX 5090\ngpu_count: 1\n"
        )
    }["gpu_xid"]
    assert row.verdict == "unverified", row.actual
    assert "spans more than one boot" not in row.detail and "these Xids" not in row.detail, row.detail
    assert (
        "these driver faults, no Xid among them, were logged in a boot before the one the box runs now"
        in row.detail
    )


def test_a_picked_kinds_sentence_keeps_the_drivers_names(tmp_path: Path) -> None:
    got = verdicts(
        tmp_path, "dmesg.txt", ATH9K.read_text(), "gpu_model: GeForce RTX 3060 Laptop GPU\ngpu_count: 1\n"
    )
    assert got["gpu_xid"][0] == "unverified"
    assert "(`pcieport`, `ath9k`)" in got["gpu_xid"][1], got["gpu_xid"][1]
    with pytest.raises(UsageError, match=r"2 kinds only \(`pcieport`, `rtl8192ee`\)"):
        offline.load_outputs([str(RTL)])


@pytest.mark.parametrize(
    ("driver", "line"),
    [
        ("mlx5_core", "mlx5_core 0000:17:00.0: mlx5_pcie_event:301: PCIe slot advertised sufficient power"),
        ("i915", "i915 0000:00:02.0: [drm] GT0: GuC firmware i915/tgl_guc_70.bin version 70.5.1"),
        ("ata", "ata1.00: ATA-10: Samsung SSD 870 EVO 1TB, SVT02B6Q, max UDMA/133"),
    ],
)
def test_a_driver_with_digits_in_its_name_is_named_whole(tmp_path: Path, driver: str, line: str) -> None:
    # (two kinds of line, a second apart: a transformed copy of 19 with another driver's line)
    text = ATH9K.read_text().splitlines(keepends=True)
    stamped = [x for x in text if "pcieport" in x][:1]
    stamp = re.match(r"\[\s*[\d.]+\]\s*", stamped[0])
    assert stamp is not None
    got = verdicts(tmp_path, "dmesg.txt", stamped[0] + stamp.group(0) + line + "\n", "gpu_count: 1\n")
    assert f"`{driver}`" in got["gpu_xid"][1], got["gpu_xid"][1]
