"""gpu_xid / nvswitch_sxid on kernel-log forms the parser once misread (real captures):
an old driver's Xid address, Xid lines it cannot read, the driver's own Fatal / Non-fatal
word on an SXid event, and one SXid event logged as three lines."""

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.fabric_health import rule_sxid, rule_xid

REAL = Path(__file__).parents[3] / "fixtures" / "real"
OLD_XID = "dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt"
SXID_12028 = "dmesg__sxid-12028-non-fatal__health-check-docstring.txt"
SXID_22013 = "dmesg__sxid-22013-non-fatal-3-lines.txt"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_old_xid_format_fails_naming_the_address_as_printed() -> None:
    log = parse_kernel_log(read(OLD_XID))
    c = rule_xid(log.events, True, gpus=[(0, "00000000:01:00.0")])
    assert c.verdict == "fail"
    # (a modern address still names its GPU index: test_fabric_health.py, Xid 79 on GPU 4)
    # Xid 6 / 30: NVIDIA's catalogue says CONTACT_SUPPORT; the old two-part address matches no
    # nvidia-smi address, so it is named as printed, not guessed to be GPU 0
    # (NVIDIA's "Unused": codes only old drivers logged, named by their mnemonic: round 32)
    old = "(logged only by old drivers; current drivers no longer use this Xid)"
    assert c.actual == (
        f"GPU at PCI 0001:00: Xid 6 ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR {old} -> replace;"
        f" GPU at PCI 0001:00: Xid 30 ROBUST_CHANNEL_BAD_ADDR_ACCESS {old} -> replace"
    )


def _lines(name: str) -> list[str]:
    return read(name).splitlines()


def test_an_xid_line_that_cannot_be_read_is_unverified_never_a_pass() -> None:
    unreadable = _lines(OLD_XID)[3].replace("): 6,", "): six,")
    c = rule_xid(parse_kernel_log(unreadable).events, True)
    assert c.verdict == "unverified" and "no Xid" not in c.actual
    assert c.actual.startswith("1 Xid line this tool cannot read (first: 'NVRM: Xid (0001:00): six, PE0000")
    # beside an application Xid (a warning) it is still unverified, both said
    app = _lines("dmesg-decode-iso__xid-13-43__plus-oom.txt")[0]
    c = rule_xid(parse_kernel_log(f"{app}\n{unreadable}").events, True)
    assert c.verdict == "unverified" and "Xid 13" in c.actual and "cannot read" in c.actual


def test_an_unreadable_xid_line_beside_a_failing_one_keeps_the_failure() -> None:
    lines = _lines(OLD_XID)
    c = rule_xid(parse_kernel_log(f"{lines[3]}\n{lines[4].replace('): 30,', '): x,')}").events, True)
    assert c.verdict == "fail" and "Xid 6 ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR (logged only" in c.actual
    assert "also 1 Xid line this tool cannot read" in c.actual


def test_non_fatal_sxid_12028_warns_not_a_replace_the_box_failure() -> None:
    c = rule_sxid(parse_kernel_log(read(SXID_12028)).events, True)
    assert c.verdict == "warn"
    assert c.actual == (
        "NVSwitch nvidia-nvswitch2 (0000:85:00.0): SXid 12028 egress nonposted PRIV error, non-fatal -> watch"
    )
    assert "non-fatal" in c.detail and "Fabric Manager guide" in c.detail
    # the same line without the driver's word is judged by the catalogue alone (reboot)
    said_nothing = rule_sxid(parse_kernel_log(read(SXID_12028).replace("Non-fatal, ", "")).events, True)
    assert (said_nothing.verdict, said_nothing.actual.endswith("PRIV error -> reboot")) == ("fail", True)


@pytest.mark.parametrize(
    ("edit", "verdict", "tail"),
    [
        (("Non-fatal", "Fatal"), "fail", "fatal -> reboot"),  # the driver's word for this event
        (("12028, ", "12999, "), "warn", "SXid 12999 not in NVIDIA's catalogue, non-fatal -> watch"),
        (
            ("12028, Non-fatal", "12999, Fatal"),
            "fail",
            "SXid 12999 not in NVIDIA's catalogue, fatal -> reboot",
        ),
    ],
)
def test_sxid_verdict_follows_the_lines_own_word(edit: tuple[str, str], verdict: str, tail: str) -> None:
    c = rule_sxid(parse_kernel_log(read(SXID_12028).replace(*edit)).events, True)
    assert (c.verdict, c.actual.endswith(tail)) == (verdict, True), c.actual


def test_one_sxid_event_of_three_lines_is_counted_once() -> None:
    c = rule_sxid(parse_kernel_log(read(SXID_22013)).events, True)
    assert c.verdict == "pass"
    assert c.actual == (
        "NVSwitch nvidia-nvswitch3 (0000:08:00.0): SXid 22013 Minion Link DLREQ interrupt, non-fatal"
        " -> ignore"
    )


def test_fatal_sxids_are_counted_per_event() -> None:
    c = rule_sxid(parse_kernel_log(read("dmesg__xid-79-sxid-20034__nvswitch.txt")).events, True)
    assert c.verdict == "fail"
    assert "nvidia-nvswitch0 (0000:05:00.0): SXid 20034 LTSSM Fault Up, fatal x2 -> reboot" in c.actual


def test_an_sxid_line_that_cannot_be_read_is_unverified() -> None:
    unreadable = _lines(SXID_22013)[0].replace("22013, ", "")
    c = rule_sxid(parse_kernel_log(unreadable).events, True)
    assert c.verdict == "unverified" and "1 SXid line this tool cannot read" in c.actual
