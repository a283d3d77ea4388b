"""`talosctl dmesg`, Talos Linux's kernel log (facts/kernel_shapes.py `TALOS_LINE`,
api/saved_kinds.py `talos_cut`): recognised by its lines' shape, whatever their facility and
level, not only where it holds NVRM lines; read as a kernel log, a copy cut inside a line's head
incomplete."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.saved_kinds import detect_kind

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TALOS = "talosctl-dmesg__talos-1.4-node-boot-head__elided__cut-in-line-head__talos-7043.txt"
ORDER = "gpu_model: RTX A5000\ngpu_count: 1\n"


def test_a_talosctl_dmesg_without_nvrm_lines_is_a_kernel_log() -> None:
    """siderolabs/talos#7043: a Talos node's boot head (kern and user lines, no NVRM line) was
    refused as not a recognised command output; a Talos log with NVRM lines was read."""
    assert detect_kind((REAL / TALOS).read_text()) == "kernel_log"


def test_a_talosctl_dmesg_cut_inside_a_line_head_is_unverified(tmp_path: Path) -> None:
    """The same capture with its `....skipped....` line taken out (by the test): the excerpt ends
    inside a line's head (`10.20.30.29: kern:    info`), so gpu_xid is unverified, never a pass."""
    text = "\n".join(line for line in (REAL / TALOS).read_text().splitlines() if "skipped" not in line)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text + "\n", ORDER)["gpu_xid"]
    assert verdict == "unverified", actual
    assert "its last line ends inside its head, before its message (`10.20.30.29: kern:    info`)" in actual


def test_a_whole_talosctl_dmesg_passes_gpu_xid(tmp_path: Path) -> None:
    """The capture's first line and its two `kern: info` loop lines (whole, the test's pick):
    a Talos log of the boot with no Xid passes, never refused."""
    from gpuonboard.api.saved_kinds import talos_cut

    lines = (REAL / TALOS).read_text().splitlines()
    text = "\n".join([lines[0], *(line for line in lines if "loop" in line)]) + "\n"
    assert talos_cut(text) == ""
    assert verdicts(tmp_path, "dmesg.txt", text, ORDER)["gpu_xid"][0] == "pass"


def test_a_talosctl_dmesg_a_chat_joined_still_ends_inside_a_line_head(tmp_path: Path) -> None:
    """The same saved file with every two lines joined by a chat (pairs, and pairs from the second
    line): its last line's cut head (`10.20.30.29: kern:    info`) was the end of a joined line's
    words, no line of its own, and the log passed "no Xid" (round 33, joined9): the log is cut
    apart at its own heads and its cut last line seen on the pieces, as on the unjoined file."""
    lines = (REAL / TALOS).read_text().splitlines()
    for start in (0, 1):
        joined = [*lines[:start], *(" ".join(lines[i : i + 2]) for i in range(start, len(lines), 2))]
        verdict, actual = verdicts(tmp_path, "dmesg.txt", "\n".join(joined) + "\n", ORDER)["gpu_xid"]
        assert verdict == "unverified", (start, actual)
        assert "its last line ends inside its head" in actual, (start, actual)
