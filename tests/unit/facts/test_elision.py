"""facts/elision.py: one definition of a line a paste put in place of lines it left out by hand,
`...` and its bracketed forms and the same with a word saying so (`[snip]`, `[...snip...]`,
`[... 200 lines omitted ...]`, `(12 lines skipped)`), read alike by every reader that checks for
one (kernel log, cpuinfo, ibstat, `-q`, CSV)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.elision import ELISION, elided
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
OGKM_626 = "journalctl__zh-cn-locale-snip-elision__nvrm-api-mismatch-550.76-550.67__ogkm-626.txt"
CUDA_SAMPLES_104 = (
    "journalctl-k__rminitadapter-failed-oops__vmware-guest__line-cut-as-stored__cuda-samples-104.txt"
)
MARKERS = (
    "...",
    "…",
    "[...]",
    "(...)",
    "[    ....    ]",
    "[snip]",
    "<snip>",
    "[...snip...]",
    "... snip ...",
    "--snip--",
    "*** snip ***",
    "[... 200 lines omitted ...]",
    "<truncated>",
    "(12 lines skipped)",
    "... 40 more lines ...",
)


@pytest.mark.parametrize("marker", MARKERS)
def test_every_hand_elision_marker_is_one(marker: str) -> None:
    """Each marker alone on its line, indented or not, is an elision."""
    assert ELISION.match(marker) and ELISION.match(f"  {marker}  ")
    assert elided(f"a\n{marker}\nb") == f"lines were left out by hand (`{marker}` on line 2)"


@pytest.mark.parametrize(
    "line",
    [
        "---",
        "=====",
        "cut",
        "removed",
        "Truncated",
        "CA type: ...",
        "  processor : 0",
        "****",
        "[ 12.3] snip",
    ],
)
def test_rules_words_and_redacted_values_are_no_elision(line: str) -> None:
    """A table's rule, a bare word, a value a paste redacted as `...`, a stamped line: none is."""
    assert ELISION.match(line) is None


def test_ogkm_626s_snip_leaves_sxid_unverified_and_names_the_api_mismatch() -> None:
    """open-gpu-kernel-modules#626's journal as stored (zh_CN dates, the driver's load banner, a
    `[...snip...]` line, then the driver's four-line `API mismatch` message): nvswitch_sxid is
    unverified naming the elision, and gpu_xid names the API mismatch (the library and kernel
    module versions; a program's own libraries, or a driver updated without a reboot: nvidia-smi's
    answer tells, review HHH) and is unverified for the lines left out. (Before: both passed "no
    Xid / SXid in the kernel log", the mismatch unnamed.)"""
    log = parse_kernel_log((REAL / OGKM_626).read_text())
    assert log.elided == "[...snip...]"
    sxid = rule_sxid(log.events, True, narrowed=log.left_out)
    assert sxid.verdict == "unverified", sxid
    assert "[...snip...]" in sxid.actual
    xid = rule_xid(log.events, True, narrowed=log.left_out)
    assert xid.verdict == "unverified", xid
    assert "another version than the kernel module (API mismatch)" in xid.actual
    assert "550.76" in xid.actual and "550.67" in xid.actual and "[...snip...]" in xid.actual


@pytest.mark.parametrize("marker", [m for m in MARKERS if m.strip(".…[]() ")])
def test_a_worded_marker_in_a_real_log_leaves_gpu_xid_unverified(marker: str) -> None:
    """cuda-samples#104's journal with its RmInitAdapter lines and its cut last line dropped
    in-test, a worded marker put after its first line: gpu_xid is unverified ("lines were left
    out of it by hand"), never "no Xid". (Before: pass for every worded marker.)"""
    lines = [line for line in (REAL / CUDA_SAMPLES_104).read_text().splitlines() if "NVRM" not in line]
    text = "\n".join([lines[0], marker, *lines[1:-1]]) + "\n"
    log = parse_kernel_log(text)
    check = rule_xid(log.events, True, narrowed=log.left_out)
    assert check.verdict == "unverified", (marker, check)
    assert marker in check.actual
