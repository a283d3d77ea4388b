"""The GSP firmware's own reports without their Xid line (measure40c 05, 13).

A GSP-CrashCat report (R555+: `kgspHealthCheck_*: *** GSP-CrashCat Report ***`, then the
firmware's untagged `GSP task watchdog timeout @ pc:...` line and its register dump) and the GSP
core dump of the driver's timeout report (`kflcnCoreDumpNondestructive_IMPL: TRACE: NN = ...`,
printed only on its GSP timeout path) passed "no Xid in the kernel log": a crashed or hung GSP
said by no Xid line. Now each is a driver fault (data/nvrm_faults.yml gsp_crashcat,
gsp_crashcat_task, gsp_core_dump) asking for a GPU reset; with the Xid 119 line in the log, the
core dump is that Xid's, listed once.

Real captures: tests/fixtures/real/SOURCES.md (NVIDIA/open-gpu-kernel-modules #1307, #1118;
vllm-project/vllm #40652)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CRASHCAT = REAL / "dmesg-unprefixed__gsp-crashcat-report-task-watchdog-timeout__rtx5070__ogkm-1307.txt"
TRACE = REAL / "talosctl-dmesg__gsp-coredump-kflcn-trace-lines-only-headless__a100x8__ogkm-1118.txt"
WHOLE = REAL / "talosctl-dmesg__gsp-coredump-trace-then-kgsplogxid119-xid119__a100x8__vllm-40652.txt"
RTX = "gpu_model: GeForce RTX 5070\ngpu_count: 1\n"
A100 = "gpu_model: A100-SXM4-80GB\ngpu_count: 8\n"
JOURNAL = "Jun 12 16:25:44 fedora-box kernel: "


def _journal(text: str) -> str:
    return "".join(JOURNAL + line for line in text.splitlines(keepends=True))


@pytest.mark.parametrize("form", ["as posted", "journal"])
def test_a_gsp_crashcat_report_fails_gpu_xid(tmp_path: Path, form: str) -> None:
    text = CRASHCAT.read_text()
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text if form == "as posted" else _journal(text), RTX)[
        "gpu_xid"
    ]
    assert verdict == "fail", actual
    assert "GSP firmware crashed (a GSP-CrashCat report) -> reset_gpu" in actual, actual
    # (the banner explains the report's bare task line: one fault, listed once)
    assert actual.count("GSP firmware crashed") == 1, actual


def test_the_bare_crashcat_task_line_alone_fails_too(tmp_path: Path) -> None:
    # (a paste cut below the banner: the firmware's untagged line, a journal's `kernel:` head)
    line = next(x for x in CRASHCAT.read_text().splitlines() if x.startswith("GSP task"))
    verdict, actual = verdicts(tmp_path, "journal.txt", JOURNAL + line + "\n", RTX)["gpu_xid"]
    assert verdict == "fail", actual
    assert "`GSP task watchdog timeout`" in actual and "-> reset_gpu" in actual, actual


@pytest.mark.parametrize("form", ["talos", "dmesg"])
def test_gsp_core_dump_lines_without_their_xid_fail_as_a_gsp_timeout(tmp_path: Path, form: str) -> None:
    text = TRACE.read_text()
    if form == "dmesg":
        text = re.sub(r"(?m)^.*?\]: NVRM", "[ 9111.291635] NVRM", text)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, A100)["gpu_xid"]
    assert verdict == "fail", actual
    assert "GSP firmware timeout (the GSP's core dump" in actual and "-> reset_gpu" in actual, actual


def test_a_core_dump_with_its_xid_119_line_is_that_xid_listed_once(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "dmesg.txt", WHOLE.read_text(), A100)["gpu_xid"]
    assert verdict == "fail", actual
    assert actual == "GPU at PCI 0000:0b:00: Xid 119 GSP RPC Timeout -> reset_gpu", actual


def test_one_core_dump_counts_once_and_two_count_twice(tmp_path: Path) -> None:
    # (each line's label, `TRACE: 03`, is a form of its own: a dump of nine lines is one fault)
    one = TRACE.read_text()
    _verdict, actual = verdicts(tmp_path, "dmesg.txt", one, A100)["gpu_xid"]
    assert "record) -> reset_gpu" in actual and " x9" not in actual, actual
    two = one + one.replace("21:27:51", "21:37:51")
    _verdict, actual = verdicts(tmp_path, "dmesg.txt", two, A100)["gpu_xid"]
    assert "record) x2 -> reset_gpu" in actual, actual
