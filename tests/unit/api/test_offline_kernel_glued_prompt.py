"""A saved session whose kernel log a chat joined onto a prompt line (every line break a space,
or every two lines one): the log's first line after the prompt line's command (`$ sudo
journalctl -k -b -1 Jan  3 07:39:44 ubuntu kernel: [...] ...`: its first message lost into the
command), or the next prompt after the previous output's words (`6.6.105+ $ sudo dmesg | head`:
the log read under `uname -r`, `| head`'s caveat lost). Neither is read as the whole log: the
kernel rules unverified, naming why (facts/joined_log.py glued_to_log). Before (round 32's
joined8), the rest of the log was cut apart and passed gpu_xid ("no Xid")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline

FIXTURES = Path(__file__).parents[2] / "fixtures"
# (an H100's GPU fallen off the bus, `root@ubuntu:~# sudo journalctl -k -b -1` and its lines)
JOURNAL = FIXTURES / "derived" / "journalctl-k-b-1__h100-hgx__fallen-off-bus__derived.txt"
# (Cloud Shell: `uname -a`, ..., `sudo dmesg | head` and its ten lines)
CLOUD_SHELL = (
    FIXTURES / "sessions" / "transcript__dmesg-REFUSED+sudo-dmesg+uname+lsmod__google-cloud-shell.txt"
)


def _xid(tmp_path: Path, text: str) -> tuple[str, str]:
    saved = tmp_path / "session.txt"
    saved.write_text(text, encoding="utf-8")
    (tmp_path / "order.yml").write_text("gpu_count: 1\n")
    facts = offline.parse_facts(offline.load_outputs([str(saved)]))
    checks = {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}
    return checks["gpu_xid"].verdict, checks["gpu_xid"].actual


def _pairs(lines: list[str]) -> list[str]:
    return [" ".join(lines[at : at + 2]) for at in range(0, len(lines), 2)]


@pytest.mark.parametrize("rest_joined", [True, False])
def test_the_logs_first_line_on_the_prompt_line_is_not_read_as_the_whole_log(
    tmp_path: Path, rest_joined: bool
) -> None:
    lines = JOURNAL.read_text(encoding="utf-8").rstrip("\n").split("\n")
    whole = _xid(tmp_path, "\n".join(lines) + "\n")  # (read whole: of an earlier boot, fallen off)
    assert "GPU has fallen off the bus" in whole[1]
    rest = _pairs(lines[2:]) if rest_joined else lines[2:]
    verdict, actual = _xid(tmp_path, "\n".join([" ".join(lines[:2]), *rest]) + "\n")
    assert verdict == "unverified", actual
    assert "the prompt line `sudo journalctl -k -b -1` holds the log's first line" in actual


@pytest.mark.parametrize("log_joined", [True, False])
def test_a_prompt_joined_after_an_output_is_not_read_as_that_outputs_log(
    tmp_path: Path, log_joined: bool
) -> None:
    lines = CLOUD_SHELL.read_text(encoding="utf-8").rstrip("\n").split("\n")
    at = next(n for n, line in enumerate(lines) if line.endswith("$ sudo dmesg | head"))
    log = [line for line in lines[at + 1 :] if not line.endswith("$ ")]
    whole = "\n".join(["$ uname -r", "6.6.105+", "$ sudo dmesg | head", *log]) + "\n"
    assert _xid(tmp_path, whole)[0] == "unverified"  # (`| head` kept only its first lines)
    glued = ["$ uname -r", "6.6.105+ $ sudo dmesg | head", *(_pairs(log) if log_joined else log)]
    verdict, actual = _xid(tmp_path, "\n".join(glued) + "\n")
    assert verdict == "unverified", actual
    assert "a shell prompt after words above the log (`6.6.105+ $ sudo dmesg | head`" in actual
