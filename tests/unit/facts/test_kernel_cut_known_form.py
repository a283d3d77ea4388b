"""A kernel log cut inside a token of a known form that reads as whole (`6.8.0-78-gen` of a
kernel release, `#122-Ubu` of Ubuntu's build tag) is cut short (round 31: it was read as whole,
the lines after the cut lost unsaid). Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_cut import ends_unfinished
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# the Dell XE9680's Xid 119 log: its line 25, `... Tainted: P OE 5.15.0-112-generic #122-Ubuntu`
H100 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"


@pytest.mark.parametrize("cut_at", ["5.15.0-112-gen", "5.15.0-112-generic #122-Ubu"])
def test_a_real_log_cut_inside_a_kernel_release_is_cut_short(cut_at: str) -> None:
    text = H100.read_text()
    cut = text[: text.index(cut_at) + len(cut_at)]  # (no newline after: the file ends there)
    log = parse_kernel_log(cut)
    assert log.events[-1].kind == "cut" and log.events[-1].cut is not None
    assert log.events[-1].cut.endswith(cut_at)
    # (before: "no SXid in the kernel log", the lines after the cut lost unsaid)
    assert rule_sxid(log.events, True).verdict == "unverified"


@pytest.mark.parametrize(
    ("line", "cut"),
    [
        ("[    0.000000] Linux version 6.8.0-78-gen", True),
        ("[    0.000000] Linux version 6.8.0-78-generic", False),
        ("[    0.000000] Linux version 6.8.0-1015-aw", True),
        ("[    0.000000] Linux version 6.8.0-1015-aws", False),
        ("[    0.000000] Linux version 6.8.0-1015-nvidia-6", True),
        ("[    0.000000] Linux version 6.8.0-1015-nvidia-64k", False),
        ("[ 12.0] CPU: 1 PID: 2 Comm: x Tainted: P OE 5.15.0-112-generic #122-Ubuntu", False),
        # (Ubuntu's linux-intel flavour, a strict start of `intel-iotg`: whole, revB F6)
        ("[    0.000000] Linux version 6.8.0-1010-intel", False),
        ("[    0.000000] Linux version 6.8.0-1010-intel-iot", True),
    ],
)
def test_a_known_form_cut_before_its_end(line: str, cut: bool) -> None:
    assert ends_unfinished(line) is cut
