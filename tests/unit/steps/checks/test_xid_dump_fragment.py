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
DUMP = REAL / "journalctl-k__nvidia-stack-dump-only-no-head__last-word-cut__pop-os-3363.txt"
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
