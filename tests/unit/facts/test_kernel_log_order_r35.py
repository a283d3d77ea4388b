"""A kernel stamp that falls back is a reboot only where the wall time goes forward with it (or,
with none, to a boot's first minutes): rotated syslogs joined newest first are pieces out of
order (review revP F2)."""

from __future__ import annotations

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log

NEWEST_FIRST = """\
Mar  3 11:42:17 gpu01 kernel: [ 9737.112233] NVRM: Xid (PCI:0000:c2:00): 79, GPU has fallen off the bus.
Mar  3 11:42:17 gpu01 kernel: [ 9737.112301] NVRM: GPU 0000:c2:00.0: GPU has fallen off the bus.
Mar  3 09:00:05 gpu01 kernel: [    5.101010] nvidia: loading out-of-tree module taints kernel.
Mar  3 09:00:05 gpu01 kernel: [    5.201010] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  555.42.02
"""


def _health(text: str) -> dict[str, tuple[str, str]]:
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    checks = health_checks(parse_facts({"kernel_log": ProbeOutput(text, "", 0)}))
    return {c.name: (c.verdict, c.actual) for c in checks}


def test_rotated_syslogs_joined_newest_first_are_no_reboot() -> None:
    """`cat kern.log kern.log.1`: the stamp falls from 9737 s to 5 s and the wall time from
    11:42 to 09:00 with it; the Xid 79 was called "logged before the log's last reboot" and
    asked for nothing but rebooted_since."""
    log = parse_kernel_log(NEWEST_FIRST)
    assert log.boots == 1
    assert not any(e.earlier_boot for e in log.events)
    assert "fall back in time at `Mar  3 09:00:05" in log.left_out
    verdict, actual = _health(NEWEST_FIRST)["gpu_xid"]
    assert verdict == "fail"
    assert "before the log's last reboot" not in actual


def test_pieces_out_of_order_with_no_xid_are_partial() -> None:
    """No Xid in pieces out of order: part of a log, never "no Xid in the kernel log"."""
    later = "Mar  3 11:42:17 gpu01 kernel: [ 9737.112233] usb 1-1: new high-speed USB device number 3\n"
    text = later + "".join(NEWEST_FIRST.splitlines(keepends=True)[2:])
    verdict, actual = _health(text)["gpu_xid"]
    assert verdict == "unverified"
    assert "fall back in time" in actual


@pytest.mark.parametrize(
    ("first", "then", "boots"),
    [
        # (wall time forward with the fall: a reboot whose banner is not among the lines)
        ("Mar  3 11:42:17 h kernel: [ 9737.1]", "Mar  3 19:00:05 h kernel: [    5.1]", 2),
        ("2024-03-03T11:42:17+00:00 h kernel: [ 9737.1]", "2024-03-03T09:00:05+00:00 h kernel: [    5.1]", 1),
        ("2024-03-03T11:42:17+00:00 h kernel: [ 9737.1]", "2024-03-04T09:00:05+00:00 h kernel: [    5.1]", 2),
        # (the year turned: forward)
        ("Dec 31 23:59:59 h kernel: [ 9737.1]", "Jan  1 00:05:00 h kernel: [    5.1]", 2),
        # (no wall time: a fall to a boot's first minutes is a boot, far from them pieces out of order)
        ("[ 9737.100000]", "[    5.100000]", 2),
        ("[ 9737.100000]", "[ 3000.100000]", 1),
    ],
)
def test_a_stamp_falls_back_as_a_boot_only_with_time_going_forward(first: str, then: str, boots: int) -> None:
    text = f"{first} usb 1-1: new device\n{then} usb 1-2: new device\n"
    log = parse_kernel_log(text)
    assert log.boots == boots
    assert bool(log.pieced) == (boots == 1)
