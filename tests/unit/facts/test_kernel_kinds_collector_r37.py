"""Kernel log sweep, round 37: a log collector's stamp before every line of a saved log of a few
kinds (`docker logs -t`'s, a GitHub Actions job's, Jenkins Timestamper's), the same value on each,
is the time the collector took the lines in, not the kernel's (facts/kernel_kinds.py). Before,
the m37d 05 KB example (11 unstamped AER lines of 2 kinds, `kernel: ` prefix) behind such a stamp
read as lines logged at one time, a burst with no gap, and gpu_xid and nvswitch_sxid passed
("the log read starts after boot") where the lines as saved are unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
KB_05 = "dmesg-syslog__kernel-prefix-no-stamps-aer-2-kinds-pcieport-pci__redhat-7128107.txt"
# a collector's stamp as each writes it before a line
COLLECTORS = [
    "2024-05-01T12:00:00.1234567Z ",
    "2024-05-01T12:00:00.123456789Z ",
    "[2024-05-01T12:00:00.123Z] ",
]


def _stamped(lines: list[str], stamp: str) -> str:
    return "".join(stamp + line + "\n" for line in lines)


@pytest.mark.parametrize("stamp", COLLECTORS)
def test_the_kb_example_behind_a_collectors_stamp_is_unverified_as_saved(tmp_path: Path, stamp: str) -> None:
    lines = (REAL / KB_05).read_text(encoding="utf-8").splitlines()
    got = verdicts(tmp_path, "journal.txt", _stamped(lines, stamp))
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", (stamp, got[rule])
        assert "2 kinds only (`pcieport`, `pci`) and carry no time stamps" in got[rule][1]


@pytest.mark.parametrize("stamp", COLLECTORS)
def test_the_kernels_own_stamps_after_a_collectors_are_its_times(tmp_path: Path, stamp: str) -> None:
    """Behind the one collector stamp, the kernel's `[seconds]` stamps are the lines' times: seconds
    apart a burst, 2 h apart a gap; either is a selection (unverified) as the lines alone are."""
    lines = [line.split("kernel: ", 1)[1] for line in (REAL / KB_05).read_text(encoding="utf-8").splitlines()]
    # (round 38: seconds apart is picked too, its words the kernel's span, not the collector's one time)
    for hours, said in ((0, "within 10 s"), (2, "and 2.0 h apart")):
        own = [
            f"kernel: [{5000 + (hours * 3600 if i == len(lines) - 1 else 0) + i}.000001] {line}"
            for i, line in enumerate(lines)
        ]
        got = verdicts(tmp_path, "journal.txt", _stamped(own, stamp))
        for rule in ("gpu_xid", "nvswitch_sxid"):
            assert got[rule][0] == "unverified", (stamp, hours, got[rule])
            assert f"2 kinds only (`pcieport`, `pci`) {said}" in got[rule][1], (stamp, hours, got[rule])
