"""Review K of round 38's kernel-log fixes, on real captures and their restamped or re-marked
copies (tests/fixtures/real/SOURCES.md).

F1: a driver reload's banner after the fallen GPU's lines (measure38c 16) passed nvswitch_sxid in
every stamp form but dmesg's seconds: a banner after other driver lines of its boot is a
reload's, whatever the stamps. F4: a whole `grep -i nvidia` of a driver loaded late (312 s, a GPU
Operator's container) starts at the modules' load lines: no excerpt. F3: a `--` (grep's, a mail's
signature) says lines were left out only between two kernel lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
RELOAD_16 = "dmesg__h100-driver-reload-banner-14387s-after-fallen-off-bus-gsp-fw-x7__zh-k8s-notes.txt"
# (a real boot's driver load at 160 s: its taint notes, then the probe's refusal, no banner)
LATE_LOAD = "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt"
# (a dmesg from `Linux version` to the driver's lines, no fault; its poster's `[ .... ]` line dropped)
WHOLE = "dmesg__elided-by-hand-dots-line__rtx3070-laptop__open515.txt"
HGX = "gpu_model: H100 80GB HBM3\ngpu_count: 8\n"
ONE = "gpu_count: 1\n"
_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\] ?")


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def whole() -> str:
    """WHOLE without its poster's `[    ....    ]` line: a dmesg from `Linux version` on, no fault."""
    return re.sub(r"^\[\s*\.+\s*\]\n", "", read(WHOLE), flags=re.M)


def _journal(text: str) -> str:
    """dmesg's lines as `journalctl -k` prints them: a wall clock and the host, no seconds."""
    return "".join(
        _STAMP.sub("Jun 01 14:00:40 gpu-node-3 kernel: ", line) + "\n" for line in text.splitlines()
    )


def _wall(text: str) -> str:
    """dmesg -T's form."""
    return "".join(_STAMP.sub("[Thu Jun  1 14:00:40 2023] ", line) + "\n" for line in text.splitlines())


def _bare(text: str) -> str:
    """dmesg -t's form: no stamp."""
    return "".join(_STAMP.sub("", line).strip() + "\n" for line in text.splitlines())


def _early(text: str) -> str:
    """The stamps moved to 87 s into boot."""
    shift = 87.0 - float(_STAMP.match(text).group(1))  # type: ignore[union-attr]
    return re.sub(r"\[\s*(\d+\.\d+)\]", lambda m: f"[{float(m.group(1)) + shift:12.6f}]", text)


@pytest.mark.parametrize("form", [_journal, _wall, _bare, _early], ids=["journal", "T", "t", "early"])
def test_a_reload_excerpt_is_unverified_in_every_stamp_form(tmp_path: Path, form: object) -> None:
    text = form(read(RELOAD_16))  # type: ignore[operator]
    got = verdicts(tmp_path, "dmesg.txt", text, HGX)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "load banner at boot" in got["nvswitch_sxid"][1]
    assert got["gpu_xid"][0] == "fail" and "0000:5d:00.0" in got["gpu_xid"][1]


def test_a_whole_driver_grep_of_a_late_load_is_no_excerpt(tmp_path: Path) -> None:
    """`grep -i nvidia` of a real boot whose driver loaded at 160 s, and the same at 312 s: it
    starts with the kernel's taint notes for the module, where the driver loaded."""
    grep = "".join(
        line + "\n" for line in read(LATE_LOAD).splitlines() if re.search("nvidia|nvrm", line, re.I)
    )
    # (the real capture's driver refused the GPU and never printed its banner: its taint notes
    # alone do not say the lines start at the load, as a README's five picked lines of a load
    # show, api/test_offline_vgpu_host_q_r35.py; with the banner a grep keeps after them, they do)
    got = verdicts(tmp_path, "dmesg.txt", grep, ONE)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    lines = grep.splitlines(keepends=True)
    banner = "[  160.900000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.86.06  Fri Jul 14 2023\n"
    loaded = "".join(lines[:3]) + banner + "".join(lines[3:])
    for text in (loaded, re.sub(r"\[\s*16(\d)\.", lambda m: f"[  31{m.group(1)}.", loaded)):
        got = verdicts(tmp_path, "dmesg.txt", text, ONE)
        assert got["nvswitch_sxid"][0] == "pass", got["nvswitch_sxid"]
        assert "excerpt" not in got["nvswitch_sxid"][1]


def test_a_reload_banner_first_hours_into_boot_keeps_the_120_s_rule(tmp_path: Path) -> None:
    """Only the banner and after (no taint note of a boot's first load above it)."""
    lines = read(RELOAD_16).splitlines()
    at = next(i for i, line in enumerate(lines) if "loading NVIDIA UNIX" in line)
    text = "\n".join(lines[at:]) + "\n"
    got = verdicts(tmp_path, "dmesg.txt", text, HGX)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "load banner at boot" in got["nvswitch_sxid"][1]


@pytest.mark.parametrize("tail", ["-- \nJohn Doe, ACME HPC\n", "--\n", "\n-- \n-- \nJohn Doe\n"])
def test_a_dash_dash_after_the_last_kernel_line_says_nothing(tmp_path: Path, tail: str) -> None:
    text = whole()
    got = verdicts(tmp_path, "dmesg.txt", text + tail, ONE)
    assert got["gpu_xid"] == verdicts(tmp_path, "dmesg.txt", text, ONE)["gpu_xid"]
    assert got["gpu_xid"][0] == "pass" and "left out" not in got["gpu_xid"][1], got["gpu_xid"]


def test_a_dash_dash_between_kernel_lines_is_greps(tmp_path: Path) -> None:
    lines = whole().splitlines()
    half = len(lines) // 2
    text = "\n".join([*lines[:half], "--", *lines[half:]]) + "\n"
    got = verdicts(tmp_path, "dmesg.txt", text, ONE)
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert "marked `--` (grep's line between the groups of lines it kept)" in got["gpu_xid"][1]


def test_a_rule_above_the_log_says_nothing(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", "dmesg output:\n-----\n" + whole(), ONE)
    assert got["gpu_xid"][0] == "pass" and "left out" not in got["gpu_xid"][1], got["gpu_xid"]
