"""A kernel log saved by a syslog daemon in RFC 5424's format (`<4>1 2025-01-03T07:39:44.123456+00:00
gpu01 kernel - - - [17256.647980] NVRM: ...`: rsyslog's RSYSLOG_SyslogProtocol23Format, syslog-ng's
`flags(syslog-protocol)`, a forwarder's file) is read as the log its messages are: judged as the
same messages in a classic syslog file. Before (round 31), it was refused as "a kernel log with
several messages on one line (...: a chat or a page joined its lines)": its dmesg stamp after
the header's `- ` read as a second message's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (the real syslog kern.log fixtures whose every line is `Mon DD HH:MM:SS host kernel: [stamp] ...`)
LOGS = [
    "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt",
    "dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt",
]
_SYSLOG = re.compile(r"^[A-Z][a-z]{2} +(\d+) (\d\d:\d\d:\d\d) (\S+) kernel: ", re.MULTILINE)
ORDER = "gpu_count: 1\n"


def _rfc5424(text: str, structured: str) -> str:
    """Each syslog line as RFC 5424 writes it: `<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`."""
    return _SYSLOG.sub(
        lambda m: (
            f"<4>1 2025-01-{int(m.group(1)):02d}T{m.group(2)}.123456+00:00 {m.group(3)}"
            f" kernel - - {structured} "
        ),
        text,
    )


@pytest.mark.parametrize("structured", ["-", '[meta sequenceId="1"]'])
@pytest.mark.parametrize("name", LOGS)
def test_an_rfc5424_kernel_log_is_read_as_its_messages(tmp_path: Path, name: str, structured: str) -> None:
    text = (REAL / name).read_text(encoding="utf-8")
    assert len(_SYSLOG.findall(text)) == len([line for line in text.split("\n") if line.strip()])
    whole = verdicts(tmp_path, "kern.log", text, ORDER)
    got = verdicts(tmp_path, "kern.log", _rfc5424(text, structured), ORDER)
    assert {rule: row[0] for rule, row in got.items()} == {rule: row[0] for rule, row in whole.items()}
    assert got["gpu_xid"] == whole["gpu_xid"]
