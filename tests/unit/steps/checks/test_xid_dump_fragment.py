"""A kernel log that starts inside a fault's dump in the NVIDIA driver (its stack words or
frames, `_nv013207rm+0x2c5/0x5b0 [nvidia]`) holds no evidence that no Xid was logged: the
fault's own first lines are before it. gpu_xid passed on such a fragment (measure32c 21).

Real capture: tests/fixtures/real/SOURCES.md (pop-os/pop#3363, turn 71)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_oops import dump_fragment

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DUMP = (
    REAL / "journalctl-k__nvidia-stack-dump-only-no-head__last-word-cut__line-cut-as-stored__pop-os-3363.txt"
)
POP = REAL / (
    "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel__last-line-cut__pop-os-3363.txt"
)


def test_a_log_of_a_driver_dump_alone_is_unverified(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "journal.txt", DUMP.read_text())["gpu_xid"]
    assert verdict == "unverified", actual
    assert "[nvidia]" in actual and "ends cut inside it (`00000000b55d5f01: ffff8d6`)" in actual, actual


# the class: the same dump as dmesg prints it, and as a Call Trace's frames
@pytest.mark.parametrize(
    "shape",
    [
        lambda m: f"[ 5107.644336] {m}",  # dmesg
        lambda m: f"[Tue Apr 29 19:24:11 2025] {m}",  # dmesg -T
        lambda m: f"Apr 29 19:24:11 EVE kernel: {m}",  # syslog, journalctl
    ],
)
def test_the_dump_in_each_log_shape_is_a_fragment(shape: object) -> None:
    messages = [line.split("kernel: ", 1)[1] for line in DUMP.read_text().splitlines()]
    text = "".join(f"{shape(m)}\n" for m in messages)  # type: ignore[operator]
    assert "starts inside a fault's dump" in dump_fragment(text)


def test_a_call_trace_of_the_driver_at_the_log_start_is_a_fragment() -> None:
    """Edit: a Call Trace's frames (as kernels from 4.x print them) in place of the stack words."""
    frames = [
        " ? _nv013207rm+0x2c5/0x5b0 [nvidia]",
        " ? _nv011486rm+0x48/0x60 [nvidia]",
        " rm_isr+0x5d/0xb0 [nvidia]",
        " nvidia_isr+0x65/0xe0 [nvidia]",
    ]
    text = "".join(f"[ 5107.6{i}] {f}\n" for i, f in enumerate(frames))
    assert "starts inside a fault's dump" in dump_fragment(text)


def test_a_whole_log_is_no_fragment() -> None:
    assert dump_fragment(POP.read_text()) == ""
    assert dump_fragment((REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt").read_text()) == ""


# NVIDIA/open-gpu-kernel-modules#1118 (turn 0): the middle of a `talosctl dmesg` of an 8xA100
# node, as posted (each line `192.168.11.119: kern: warning: [2026-04-22T21:27:SECONDSZ]: MESSAGE`):
# it starts and ends inside the driver's call trace (the post's later lines hold
# `NVRM: _kgspLogXid119` and `Xid ... 119`; measure32d 18)
TALOS = [
    ("51.29087688", " ? srso_alias_return_thunk+0x5/0xfbef5"),
    ("51.290880774", " ? portSyncSpinlockAcquire+0x18/0x30 [nvidia]"),
    ("51.290942992", " ? rm_ioctl+0x52/0x4f0 [nvidia]"),
    ("51.291069875", " ? srso_alias_return_thunk+0x5/0xfbef5"),
    ("51.291078766", " rm_ioctl+0x66/0x4f0 [nvidia]"),
    ("51.29120365", " ? __check_object_size+0x215/0x230"),
    ("51.291213998", " nvidia_unlocked_ioctl+0x447/0x950 [nvidia]"),
    ("51.291273871", " __x64_sys_ioctl+0x9f/0x100"),
    ("51.291283179", " ? srso_alias_return_thunk+0x5/0xfbef5"),
    ("51.291288033", " do_syscall_64+0x78/0x940"),
    ("51.291307702", " entry_SYSCALL_64_after_hwframe+0x76/0x7e"),
    ("51.291312635", "RIP: 0033:0x7f8079a2d67b"),
    ("51.291320264", "Code: ff ff ff 85 c0 79 9b 49 c7 c4 ff ff ff ff 5b 5d 4c 89 e0 41 5c c3 66 0f 1f"),
]


def test_a_talosctl_dmesg_inside_the_drivers_call_trace_is_a_fragment(tmp_path: Path) -> None:
    """talosctl's head (`NODE: kern: warning: [ISO time]: `) read as the message's: it passed."""
    text = "".join(f"192.168.11.119: kern: warning: [2026-04-22T21:27:{t}Z]: {m}\n" for t, m in TALOS)
    verdict, actual = verdicts(tmp_path, "talos.txt", text)["gpu_xid"]
    assert verdict == "unverified" and "[nvidia]" in actual, actual
