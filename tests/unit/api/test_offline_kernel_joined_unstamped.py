"""A kernel log saved without its stamps (`dmesg -t`, `journalctl -o cat`, a syslog cut of its
heads) whose lines a chat or a web form joined: nothing but the kernel's own message heads
(`NVRM: `, `nvidia-nvswitch1: `, `pcieport 0000:00:01.0: `) says where a line began, so such a
log is not read (gpu_xid unverified, naming the joined line; facts/joined_log.py). Before (round
33), a joined line was read as its first message alone: `dmesg -t | grep Xid` of an NVSwitch box,
every two lines joined, read its Xid 79 as an SXid line's words ("no Xid in the kernel log"), and
the stamp-less boot log of open-gpu-kernel-modules#489, joined, passed gpu_xid. Since round 33
(joined9), a joined line is cut apart again at the driver's heads where every piece is then one
whole driver line: an Xid printed there is judged (a fatal Xid 79 fails), but such a log's other
lines (any not a driver's) cannot be told apart, so no Xid or SXid in it is never a pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GPUS = "nvidia-smi-L__l40s__1gpu__driver595.80.txt"
# every real dmesg-stamped log with an Xid line (the stamp dropped: what `dmesg -t` prints)
XID_LOGS = sorted(
    p.name
    for p in REAL.glob("dmesg*.txt")
    if "NVRM: Xid (" in p.read_text(encoding="utf-8") and p.read_text(encoding="utf-8").startswith("[")
)
_STAMP = re.compile(r"^\[[^\]]*\] ?", re.MULTILINE)


def _gpu_xid(folder: Path, log: str) -> tuple[str, str]:
    folder.mkdir()
    (folder / "dmesg.txt").write_text(log, encoding="utf-8")
    (folder / "nvidia-smi-L.txt").write_text((REAL / GPUS).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "order.yml").write_text("gpu_count: 1\n")
    facts = offline.parse_facts(
        offline.load_outputs([str(folder / "dmesg.txt"), str(folder / "nvidia-smi-L.txt")])
    )
    checks = {c.name: c for c in offline.judge(facts, offline.load_order(str(folder / "order.yml")))}
    return checks["gpu_xid"].verdict, f"{checks['gpu_xid'].actual} {checks['gpu_xid'].detail}"


def _pairs(lines: list[str]) -> str:
    return "\n".join(" ".join(lines[i : i + 2]) for i in range(0, len(lines), 2)) + "\n"


def _unstamped(name: str) -> list[str]:
    return [line for line in _STAMP.sub("", (REAL / name).read_text(encoding="utf-8")).split("\n") if line]


def test_xid_and_sxid_lines_without_stamps_joined_in_pairs_fail_on_the_xid_79(tmp_path: Path) -> None:
    # (`dmesg -t | grep Xid` on an NVSwitch box: the Xid 79 line, then the SXid lines)
    grepped = [line for line in _unstamped("dmesg__xid-79-sxid-20034__nvswitch.txt") if "Xid" in line]
    whole = _gpu_xid(tmp_path / "whole", "\n".join(grepped) + "\n")
    assert whole[0] == "fail"
    verdict, said = _gpu_xid(tmp_path / "joined", _pairs(grepped))
    assert verdict == "fail", said
    assert "Xid 79" in said


def test_a_boot_log_without_stamps_joined_in_pairs_does_not_pass(tmp_path: Path) -> None:
    lines = _unstamped("dmesg__e820-chipset-setup-error-open-module-530.41.03__ogkm-489.txt")
    verdict, said = _gpu_xid(tmp_path / "joined", _pairs(lines))
    assert verdict == "unverified"
    assert "several messages on one line" in said


# a kernel driver's own head at a stamp-less line's start (the test's own list)
_DRIVER_LINE = re.compile(r"^(?:NVRM: |nvidia-nvswitch\d*: |(?:pcieport|nvidia) [0-9a-f:.]+: )")
_XID = re.compile(r"Xid (\d+)")


@pytest.mark.parametrize("name", XID_LOGS)
def test_every_real_xid_log_without_stamps_joined_is_judged_as_whole_or_unread(
    name: str, tmp_path: Path
) -> None:
    """The log's driver lines alone (all, every two, every two from the second joined): judged
    as the same lines unjoined (a fatal Xid fails, the same Xids named); a log with other lines
    (a call trace's, the kernel's own) joined is not read (unverified), never a pass."""
    lines = _unstamped(name)
    driver = [line for line in lines if _DRIVER_LINE.match(line)]
    whole = _gpu_xid(tmp_path / "whole", "\n".join(driver) + "\n")
    assert whole[0] in ("fail", "warn"), whole
    for what, log in (("driver", driver), ("all", lines)):
        joined = {
            "all": " ".join(log) + "\n",
            "pairs": _pairs(log),
            "from-second": f"{log[0]}\n{_pairs(log[1:])}",
        }
        for how, text in joined.items():
            verdict, said = _gpu_xid(tmp_path / f"{what}-{how}", text)
            if log is driver or len(driver) == len(lines):
                # (an application's Xid alone warns on a whole log: here the log's other lines, a
                # fatal Xid's too, could be hidden in the words, so it is unverified, naming it)
                assert verdict == ("fail" if whole[0] == "fail" else "unverified"), (what, how, said)
                assert sorted(set(_XID.findall(said))) == sorted(set(_XID.findall(whole[1]))), (how, said)
            else:
                assert verdict != "pass", (what, how, said)
            assert "no Xid in the kernel log" not in said, (what, how, said)


@pytest.mark.parametrize(
    ("name", "keep"),
    [
        ("dmesg__sxid-22013-non-fatal-3-lines.txt", slice(0, 3)),
        ("dmesg__xid-79-sxid-20034__nvswitch.txt", slice(0, 2)),  # (the GPU's banner, before its Xid)
        ("dmesg__xid-79-sxid-20034__nvswitch.txt", slice(5, 13)),  # (the SXid lines)
    ],
)
def test_driver_lines_without_stamps_joined_and_no_xid_never_pass(
    name: str, keep: slice, tmp_path: Path
) -> None:
    """Driver lines without an Xid, joined: cut apart, but what else the log held (its other
    lines, joined onto a driver line's words, can no longer be told) is not known: no Xid and no
    SXid are unverified, never a pass."""
    lines = _unstamped(name)[keep]
    for how, text in {"all": " ".join(lines) + "\n", "pairs": _pairs(lines)}.items():
        folder = tmp_path / how
        verdict, said = _gpu_xid(folder, text)
        assert verdict == "unverified", (how, said)


def test_driver_lines_without_stamps_joined_that_pass_whole_are_unverified(tmp_path: Path) -> None:
    """Corrected AER lines and the NVIDIA driver's load line (real lines, the test's pick): whole,
    no Xid passes; joined, the pieces are read but the log's other lines could be hidden in their
    words: unverified, saying so (the kernel's own `e820: ...` would be one such line). (Whole,
    the lines all hold a PCI address or the driver's word: an excerpt, no pass either: revR F1.)"""
    lines = [
        *_unstamped("dmesg__pcieport-aer-fatal-surprise-down-xid-79__gpu-burn-1.txt")[:4],
        _unstamped("dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt")[0],
    ]
    whole = _gpu_xid(tmp_path / "whole", "\n".join(lines) + "\n")
    assert whole[0] == "unverified" and "only lines with a PCI address or `nvidia`" in whole[1], whole
    for how, text in {"all": " ".join(lines) + "\n", "pairs": _pairs(lines)}.items():
        verdict, said = _gpu_xid(tmp_path / how, text)
        assert verdict == "unverified", (how, said)
        assert "saved without their time stamps, were joined by a chat" in said, (how, said)


@pytest.mark.parametrize(
    "prefix",
    [
        "2025-04-15 16:50:03 ",
        "2025-04-15 16:50:03.123 gpu01 ",
        "gpu01 ",
        "Mon May 15 08:57:36 2024 ",
        "- ",
        "1. ",
    ],
)
def test_a_prefix_of_the_lines_own_before_the_drivers_head_is_no_joined_message(
    tmp_path: Path, prefix: str
) -> None:
    """Review revJ: each line of a whole log led by a prefix of its own (another stamp form, a host,
    a list mark) before `NVRM: ` was read as two messages joined, the log refused and its Xid 79
    unread (unverified, exit 0): no message's head (`word: ...`) stands in such a prefix."""
    lines = _unstamped("dmesg-T__xid-79-unknown-pid__titan-v.txt")
    verdict, said = _gpu_xid(tmp_path / "log", "".join(f"{prefix}{line}\n" for line in lines))
    assert verdict == "fail", said
    assert "Xid 79" in said
