"""Kernel log reading, round 35 (measure35d, measure35e; tests/fixtures/real/SOURCES.md, "Round 35
fixes (fixN5d)"): what a saved log's own lines say of how much of the log it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_pager import pager_view
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PAGER_TAIL = REAL / (
    "dmesg-journalctl-pager__screen-lines-101434-101480-of-101480-end-twice__macbook-forum.txt"
)


def test_a_pagers_last_screen_of_a_journal_is_not_the_whole_log() -> None:
    """measure35d 20: the last 47 of 101,480 journal lines (2 of the kernel's), below less's
    `lines 101434-101480/101480 (END)`: "no Xid in the kernel log" passed; it is a tail."""
    log = parse_kernel_log(PAGER_TAIL.read_text())
    assert "lines 101434-101480 of 101480" in log.left_out
    assert rule_xid(log.events, True, narrowed=log.left_out).verdict == "unverified"
    assert rule_sxid(log.events, True, narrowed=log.left_out).verdict == "unverified"


@pytest.mark.parametrize(
    "prompt",
    [
        "lines 101434-101480/101480 (END)",  # (a tail)
        "lines 1-52/1234 4%",  # (a head)
        "lines 53-104/1234 8%",
        "lines 2-40",
        "byte 2048/31337 6%",
        "42%",
        "--More--(42%)",
        "(END)",  # (the screen's first line not known)
        ":lines 10-52/52 (END)",
    ],
)
def test_every_pager_prompt_that_shows_part_of_the_output_says_so(prompt: str) -> None:
    lines = ["[ 5000.000001] usb 1-1: new high-speed USB device", prompt]
    assert pager_view(lines) != ""


@pytest.mark.parametrize(
    ("lines", "at_boot"),
    [
        (["[    0.000000] Linux version 6.8.0", "lines 1-22/22 (END)"], False),
        (["[    0.000000] Linux version 6.8.0", "(END)"], True),  # (from boot to the end)
        (["a", "lines 1-40/80 50%", "b", "lines 41-80/80 (END)"], False),  # (two screens, all)
        (["[ 1.0] a line saying 42% done"], False),  # (no prompt: a log's own words)
    ],
)
def test_a_pager_view_of_the_whole_output_is_whole(lines: list[str], at_boot: bool) -> None:
    assert pager_view(lines, at_boot) == ""


PIECES = REAL / "dmesg__sxid-22013-blank-lines-then-bond-mlx5-4428s-first-bracket-lost__ru-chat-hgx.txt"


def test_two_excerpts_pasted_with_blank_lines_between_are_not_the_whole_log() -> None:
    """measure35d 14: an SXid at 117.98 s, blank lines, then ` 4428.423595] bond0: ...` (its `[`
    lost): ~4,300 s of log missing; gpu_xid and nvswitch_sxid passed."""
    log = parse_kernel_log(PIECES.read_text())
    assert "4,310 s after the line above" in log.left_out
    assert rule_xid(log.events, True, narrowed=log.left_out).verdict == "unverified"
    assert rule_sxid(log.events, True, narrowed=log.left_out).verdict == "unverified"


def test_a_line_whose_stamp_lost_its_bracket_is_a_copy_begun_mid_line() -> None:
    """The same capture without its blank lines: the bond0 line that lost its `[` still says so."""
    text = "\n".join(line for line in PIECES.read_text().splitlines() if line.strip()) + "\n"
    assert "is a line copied from its middle" in parse_kernel_log(text).left_out


@pytest.mark.parametrize(
    "text",
    [
        # (double spacing: a forum's, every line)
        "[  1.000000] a\n\n[ 900.000000] b\n\n[ 901.000000] c\n\n[ 950.000000] d\n",
        # (blank lines, then the next second: a pause, no gap)
        "[  1.000000] a\n[  2.000000] b\n\n[  3.000000] c\n[  4.000000] d\n",
        # (a gap with no blank line: a log's own quiet hours)
        "[  1.000000] a\n[ 9000.000000] b\n",
        # (the first line lost its `[`: a copy begun there, said by where the log starts)
        " 4428.423595] bond0: a\n[ 4429.000000] b\n",
    ],
)
def test_one_run_of_a_log_is_no_excerpts(text: str) -> None:
    assert parse_kernel_log(text).pieced == ""


CUT_AFTER_CE = REAL / (
    "dmesg-syslog__edac-ce-reserved-x6-then-reboot__line-cut-as-stored__hisilicon-messages.txt"
)


def _health(text: str) -> dict[str, tuple[str, str]]:
    """The kernel log rules' verdicts and sentences on `text` as the box's log."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    checks = health_checks(parse_facts({"kernel_log": ProbeOutput(text, "", 0)}))
    return {c.name: (c.verdict, c.actual) for c in checks}


@pytest.mark.parametrize(
    "text",
    [
        CUT_AFTER_CE.read_text(),  # (measure35d 12: a newline after the cut head)
        "[    1.000000] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1"
        " slot:0 page:0x1 offset:0x0 grain:32 syndrome:0x0)\n[    2.000000] EDAC MC1: 1",
    ],
)
def test_corrected_errors_beside_a_cut_last_line_are_not_all_the_errors(text: str) -> None:
    """A log cut inside its last line (a head without its message, `EDAC MC1: 1` without its
    `UE` or `CE`): what it went on to say is not known. host_hw_errors passed the corrected
    errors above it, while gpu_xid said the log was cut."""
    verdict, actual = _health(text)["host_hw_errors"]
    assert verdict == "unverified"
    assert "the log ends inside a line, cut short" in actual


DRIVER_EXCERPTS = [
    REAL / "log-excerpt__dmesg-nvrm-rminitadapter-then-nvidia-drm-errors__rtx3090-rk3588.txt",
    REAL / "log-excerpt__nostamp-nvrm-rminitadapter-mapping-multiple-bars__p40-esxi-k3s.txt",
    REAL / "log-excerpt__nostamp-nvidia-irq-then-3-nvrm-vbios-rminitadapter__macbookpro81-ubuntuforums.txt",
]


@pytest.mark.parametrize("path", DRIVER_EXCERPTS, ids=lambda p: p.name[:40])
def test_an_excerpt_of_the_gpu_drivers_lines_says_nothing_of_sxids(path: Path) -> None:
    """measure35d 07, measure35e 22 and 24: a few lines of the NVIDIA driver (NVRM beside
    `nvidia 0000:01:00.0: irq 47`, `[nvidia_drm]`, `[nvidia]` lines) passed "no SXid in the kernel
    log", while an excerpt of NVRM lines alone was unverified: one rule for both."""
    health = _health(path.read_text())
    assert health["gpu_xid"][0] == "fail"  # (RmInitAdapter failed: read as before)
    verdict, actual = health["nvswitch_sxid"]
    assert verdict == "unverified"
    assert "it holds only lines with NVRM or `nvidia`" in actual
    assert "without the driver's load banner" in actual


def test_a_grep_of_the_drivers_lines_from_its_load_is_no_excerpt() -> None:
    """The driver's load banner among them: a grep of the boot's driver lines, which keeps an SXid
    line (`nvidia-nvswitch0: SXid ...` holds `nvidia`): no excerpt."""
    text = (
        "[    5.100000] nvidia: loading out-of-tree module taints kernel.\n"
        "[    5.200000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 2023\n"
        "[    5.300000] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX  535.54.03\n"
    )
    assert parse_kernel_log(text).driver_excerpt is None
    assert _health(text)["nvswitch_sxid"][0] == "pass"


CONSOLE = REAL / "dmesg-console__wall-time-then-uptime-stamp__edac-ue-ce-bios-error__lkml-2023.txt"


def test_a_console_loggers_time_before_the_kernel_stamp_is_read_past() -> None:
    """measure35d 11: a serial console's log, `[2023-06-22 21:55:31.352446][5975153.878190] EDAC
    MC0: 1 UE memory read error on ...`, was refused as no command output: a UE fails."""
    health = _health(CONSOLE.read_text())
    verdict, actual = health["host_hw_errors"]
    assert verdict == "fail"
    assert "CPU_SrcID#0_MC#0_Chan#1_DIMM#0: uncorrectable memory error (EDAC UE)" in actual


@pytest.mark.parametrize(
    "head",
    ["[2023-06-22 21:55:31.352446]", "2023-06-22 21:55:31 ", "[2023-06-22T21:55:31+08:00] "],
)
def test_every_console_time_before_a_kernel_stamp_is_read_past(head: str) -> None:
    line = "[5975153.878190] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    assert [(e.kind, e.code) for e in parse_kernel_log(head + line).events] == [("xid", 79)]


def test_the_saved_console_log_is_read_as_a_kernel_log(tmp_path: Path) -> None:
    """The offline reader takes the file as a kernel log (it was refused, the folder exit 2)."""
    from ..offline_judge import verdicts

    judged = verdicts(tmp_path, "console.log", CONSOLE.read_text())
    assert judged["host_hw_errors"][0] == "fail"


MCELOG_UC = REAL / "mcelog__uncorrected-srar-dcache-write-bank1__haswell-yoda-ubuntuforums.txt"
MCE_LOGGED = REAL / "dmesg-syslog__mce-events-logged-no-record__haswell-yoda-ubuntuforums.txt"


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        (
            "mcelog__uncorrected-srar-dcache-write-bank1__haswell-yoda-ubuntuforums.txt",
            "fail",
            "CPU 3 bank 1: uncorrected machine check (status bf80000000000124)",
        ),
        (
            "mcelog__uncorrected-internal-unclassified-410-bank0__mcelog-analysis-blog-case2.txt",
            "fail",
            "CPU 0 bank 0: uncorrected machine check (status a600000007600410)",
        ),
        ("mcelog__corrected-external-error-bank0__mcelog-analysis-blog-case1.txt", "warn", "CPU 2 bank 0"),
    ],
)
def test_mcelogs_records_are_read_as_the_kernels_machine_checks(
    tmp_path: Path, name: str, verdict: str, said: str
) -> None:
    """measure35d 26: mcelog's output (`mcelog --client`, /var/log/mcelog) was refused."""
    from ..offline_judge import verdicts

    judged, actual = verdicts(tmp_path, "mcelog.txt", (REAL / name).read_text())["host_hw_errors"]
    assert judged == verdict, actual
    assert said in actual


def test_mcelogs_records_beside_the_kernel_log_that_asks_for_them(tmp_path: Path) -> None:
    """The syslog's `Machine check events logged` alone is unverified (asking for `mcelog
    --client`); with mcelog's output beside it (one folder) the record is judged: fail. The folder
    was refused (exit 2) for the mcelog file."""
    from ..offline_judge import judged_box

    _, alone = judged_box(tmp_path / "a", {"syslog.txt": MCE_LOGGED.read_text()}, "gpu_count: 1\n")
    assert alone["host_hw_errors"].verdict == "unverified"
    files = {"syslog.txt": MCE_LOGGED.read_text(), "mcelog.txt": MCELOG_UC.read_text()}
    _, both = judged_box(tmp_path / "b", files, "gpu_count: 1\n")
    assert both["host_hw_errors"].verdict == "fail"
    assert "uncorrected machine check (status bf80000000000124)" in both["host_hw_errors"].actual


STAMPS_FALL = (
    REAL / "dmesg-syslog__xid13-x10-rminitadapter-x11-then-stamps-fall-to-4s-reboot__cctvserver-forum.txt"
)


def test_faults_before_the_stamps_fall_back_are_of_an_earlier_boot() -> None:
    """measure35e 19: RmInitAdapter up to `[159303.524890]`, then `[    4.774224] nvidia: ...`:
    the box rebooted between (its banner not among the lines); the faults were said as this boot's."""
    log = parse_kernel_log(STAMPS_FALL.read_text())
    assert log.boots == 2
    faults = [e for e in log.events if e.kind in ("xid", "nvrm")]
    assert len(faults) >= 21 and all(e.earlier_boot for e in faults)
    assert "logged before the log's last reboot" in _health(STAMPS_FALL.read_text())["gpu_xid"][1]


@pytest.mark.parametrize(
    ("second", "boots"),
    [("[  100.000000]", 2), ("[ 5000.400000]", 1), ("[ 5000.600000]", 1), ("[  +0.000040]", 1)],
)
def test_only_a_stamp_that_falls_back_is_a_reboot(second: str, boots: int) -> None:
    """Lines printed out of order by CPUs fall back by microseconds; dmesg -H's deltas are no
    seconds since boot."""
    text = f"[ 5000.500000] usb 1-1: new device\n{second} usb 1-2: new device\n"
    assert parse_kernel_log(text).boots == boots


NOUVEAU_ONLY = REAL / "dmesg__nouveau-ga102-core-notifier-timeout-no-nvidia-driver__rtx3090-rk3588.txt"


def test_a_gpu_nouveau_holds_with_no_nvidia_driver_line_says_nothing_of_xids() -> None:
    """measure35e 23: nouveau holds an RTX 3090 (`core notifier timeout`) and the NVIDIA driver
    logged nothing: "no Xid in the kernel log" passed; the driver that logs Xids was not loaded."""
    health = _health(NOUVEAU_ONLY.read_text())
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = health[rule]
        assert verdict == "unverified"
        assert "nouveau holds the GPU (`[    2.955312] nouveau 0000:01:00.0: NVIDIA GA102" in actual
        assert "the NVIDIA driver was not loaded" in actual


def test_nouveau_beside_the_nvidia_drivers_lines_is_no_such_log() -> None:
    text = (
        NOUVEAU_ONLY.read_text()
        + "[  120.000000] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver\n"
    )
    assert parse_kernel_log(text).early_end == ""
