"""Kernel crashes naming the NVIDIA driver (facts/kernel_oops.py), said by gpu_xid: a crash is no
Xid, yet a box fault that no GO may leave unnamed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GPF = (
    "dmesg__general-protection-fault-kmalloc-tainted-p-oe__rtx4090-driver555__trace-cut"
    "__k8s-device-plugin-941.txt"
)
ORDER = "gpu_model: RTX 4090\ngpu_count: 1\n"


def test_a_general_protection_fault_of_a_tainted_kernel_warns_gpu_xid(tmp_path: Path) -> None:
    """NVIDIA/k8s-device-plugin#941: a general protection fault in __kmalloc (`Tainted: P OE`) on
    an RTX 4090 box with the 555 driver. gpu_xid passed "no Xid in the kernel log" with the crash
    unnamed; now it warns, quoting the crash line, its process and the taint."""
    verdict, actual = verdicts(tmp_path, "dmesg.txt", (REAL / GPF).read_text(), ORDER)["gpu_xid"]
    assert verdict == "warn", actual
    assert (
        "a kernel crash (Oops) in the log: `general protection fault, probably for non-canonical address"
        " 0x78d29c0722bf7aa1: 0000 [#1] SMP NOPTI` (process ufep; kernel tainted P OE" in actual
    )


def test_an_untainted_crash_naming_no_nvidia_module_is_not_the_drivers() -> None:
    """The same report with its taint flags edited in-test to `Not tainted` (and its P taken out):
    no nvidia module named, no proprietary taint: not read as the NVIDIA driver's crash."""
    from gpuonboard.facts.kernel_oops import nvidia_crashes

    text = (REAL / GPF).read_text().replace("Tainted: P           OE     ", "Not tainted ")
    assert nvidia_crashes(text) == []


def test_a_crash_whose_trace_names_nvidia_is_read_without_a_taint() -> None:
    """The same report with a trace line naming the driver's module appended in-test
    (`nvidia_uvm_ioctl+0x2a/0x40 [nvidia_uvm]`) and its taint flags taken out: read as the
    driver's, by the module named."""
    from gpuonboard.facts.kernel_oops import nvidia_crashes

    text = (REAL / GPF).read_text().replace("Tainted: P           OE     ", "Not tainted ")
    text += "[243209.352450]  nvidia_uvm_ioctl+0x2a/0x40 [nvidia_uvm]\n"
    [crash] = nvidia_crashes(text)
    assert crash.nvidia_named and crash.process == "ufep"


TWO_BOOTS = "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"
# the line arch/x86/kernel/traps.c prints for a user-space process's fault (a signal to it, no
# kernel crash), and a hung task's report, whose CPU-less Tainted line says the proprietary taint
USER_TRAP = (
    "[ 5000.123456] traps: python[12345] general protection fault ip:7f3a1b2c3d4e sp:7ffd12345678"
    " error:0 in libc.so.6[7f3a1b200000+195000]\n"
)
HUNG = (
    "[ 5122.654321] INFO: task kworker/u256:3:812 blocked for more than 122 seconds.\n"
    "[ 5122.654330]       Tainted: P           OE     5.15.0-112-generic #122-Ubuntu\n"
)


def test_a_user_space_trap_is_no_kernel_crash(tmp_path: Path) -> None:
    """The real two-boots journal with, written by the test in the kernel's own shapes, a
    `traps: python[12345] general protection fault ip:...` line (a process's fault, which the
    kernel only reports) and a hung task's `Tainted: P` line after it: gpu_xid warned of a kernel
    crash; it passes "no Xid" now."""
    from gpuonboard.facts.kernel_oops import nvidia_crashes

    text = (REAL / TWO_BOOTS).read_text() + USER_TRAP + HUNG
    assert nvidia_crashes(text) == []
    assert verdicts(tmp_path, "dmesg.txt", text, ORDER)["gpu_xid"] == ("pass", "no Xid in the kernel log")


def test_taint_and_module_come_from_the_crash_itself() -> None:
    """The real report with its taint edited in-test to `Not tainted`, then (appended) a
    `Modules linked in: nvidia_uvm(POE) nvidia(POE)` line, and after it a hung task's report
    tainted P: no nvidia symbol in its RIP or trace and no proprietary taint on its own CPU line,
    so not the driver's crash (it was read as the driver's by the modules list and the later
    report's taint)."""
    from gpuonboard.facts.kernel_oops import nvidia_crashes

    text = (REAL / GPF).read_text().replace("Tainted: P           OE     ", "Not tainted ")
    assert nvidia_crashes(text + "[243209.352450] Modules linked in: nvidia_uvm(POE) nvidia(POE)\n") == []
    assert nvidia_crashes(text + HUNG) == []


def test_a_crash_before_the_last_reboot_is_said_as_an_earlier_boots(tmp_path: Path) -> None:
    """The real general protection fault report (k8s-device-plugin#941) put by the test before
    the real two-boots journal's `-- Reboot --` line: the crash was of a boot the box has left, so
    gpu_xid says it as logged before the last reboot (it warned as this boot's); the last boot's
    log is its first second, so it is unverified for that (round 40), never a warn."""
    lines = (REAL / TWO_BOOTS).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("-- Reboot --"))
    text = "".join([*lines[:at], (REAL / GPF).read_text(), *lines[at:]])
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, ORDER)["gpu_xid"]
    assert verdict == "unverified" and "it ends during boot" in actual, actual
    assert "SMP NOPTI` (logged before the log's last reboot) (process ufep" in actual


def _mail_wrapped(text: str, trimmed: bool) -> str:
    """`text` quoted by a mail (`> ` before each line) then cut at 80 columns, each piece past
    the 80th column a line of its own without `> `; `trimmed`: each line's trailing blanks
    dropped too (an editor's or a chat's)."""
    out = []
    for line in text.splitlines():
        quoted = "> " + line
        pieces = [quoted[i : i + 80] for i in range(0, len(quoted), 80)] or [""]
        out += [piece.rstrip() if trimmed else piece for piece in pieces]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("trimmed", [False, True], ids=["wrapped", "wrapped-trimmed"])
def test_a_mail_quoted_then_wrapped_crash_still_warns_gpu_xid(tmp_path: Path, trimmed: bool) -> None:
    """The real k8s-device-plugin#941 report quoted by a mail and wrapped at 80 columns in-test
    (_mail_wrapped): its `Tainted: P           OE     5.15.0-83-generic` line cut after `P` and
    some blanks, the rest (`    OE     5.15...`) indented on a line of its own. Before, the Oops
    reader read its own lines, lost the taint, and gpu_xid passed; now it reads the lines the
    kernel log reader reads (the wrap undone) and warns."""
    pasted = _mail_wrapped((REAL / GPF).read_text(), trimmed)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", pasted, ORDER)["gpu_xid"]
    assert verdict == "warn", actual
    assert "general protection fault" in actual and "kernel tainted P" in actual


def test_an_old_kernels_crash_line_gives_its_taint_and_process() -> None:
    """Review MMM: the same report with its CPU line edited in-test to the form kernels before 3.10
    print (RHEL 6's 2.6.32: `Pid: 389232, comm: ufep Tainted: P  --------------- 2.6.32-431.el6`):
    its taint and process read from it, as from `CPU: N PID: N Comm:`; before, the crash went
    unsaid (gpu_xid pass)."""
    from gpuonboard.facts.kernel_oops import nvidia_crashes

    text = (REAL / GPF).read_text()
    text = text.replace(
        "CPU: 21 PID: 389232 Comm: ufep Kdump: loaded Tainted: P           OE     5.15.0-83-generic"
        " #92-Ubuntu",
        "Pid: 389232, comm: ufep Tainted: P           --------------- 2.6.32-431.el6.x86_64 #1",
    )
    crashes = nvidia_crashes(text)
    assert [(c.process, c.taint.split()) for c in crashes] == [("ufep", ["P"])], crashes
