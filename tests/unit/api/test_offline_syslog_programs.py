"""A saved syslog or full journal holds other programs' lines beside the kernel's (an X
server's, systemd's): each is a stamped line of its own, so a file whose kernel lines are
fewer than the others is still a kernel log, its Xid read, never refused as no command output
and never glued onto the kernel line above it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# pop-os/pop#3363: a laptop's syslog, 5 kernel lines (Xid 79) among 7 of gdm-x-session, the
# last one cut inside its program's name
POP = REAL / (
    "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel__last-line-cut__pop-os-3363.txt"
)


def test_a_syslog_whose_other_programs_outnumber_the_kernel_is_a_kernel_log() -> None:
    assert detect_kind(POP.read_text()) == "kernel_log"


def test_the_xid_79_of_a_syslog_mostly_of_other_programs_fails(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "syslog", POP.read_text())["gpu_xid"]
    assert verdict == "fail", actual
    assert "Xid 79" in actual, actual


def test_an_other_programs_line_is_not_read_as_the_rest_of_a_kernel_line(tmp_path: Path) -> None:
    """Edit: the real capture's kernel lines first, then its gdm-x-session lines, so the kernel's
    stamped lines are the most; the NVRM line above the X server's is read as it is."""
    lines = POP.read_text().splitlines()
    text = "\n".join(lines[:5] + lines[5:7] + lines[:5]) + "\n"
    verdict, actual = verdicts(tmp_path, "syslog", text)["gpu_xid"]
    assert verdict == "fail", actual
    assert "sideband" not in actual and "gdm" not in actual, actual


def test_a_log_of_other_programs_alone_is_no_kernel_log() -> None:
    """Edit: only the capture's 7 gdm-x-session lines: no kernel line, so no kernel log."""
    lines = POP.read_text().splitlines()
    assert detect_kind("\n".join(lines[5:11]) + "\n") != "kernel_log"


def test_a_journal_in_short_precise_whose_other_programs_outnumber_the_kernel_is_a_kernel_log() -> None:
    """Edit: each line's time given microseconds (`18:37:03.000000`), as `journalctl -o
    short-precise` prints it."""
    text = POP.read_text().replace("18:37:03 ", "18:37:03.000000 ")
    assert detect_kind(text) == "kernel_log"


def _others_quoting(quote: str) -> str:
    """The capture's 6 whole gdm-x-session lines, then a sudo line of the same box whose COMMAND
    quotes `quote` (as `sudo grep NVRM: /var/log/kern.log` logs it): no line is the kernel's."""
    lines = POP.read_text().splitlines()[5:11]
    sudo = (
        f"Sep 23 18:37:04 xxx sudo[40301]:   ubuntu : TTY=pts/0 ; USER=root ; COMMAND=/usr/bin/grep {quote}"
    )
    return "\n".join([*lines, sudo]) + "\n"


def test_a_syslog_of_other_programs_quoting_nvrm_is_no_kernel_log() -> None:
    """Edit: _others_quoting `NVRM: /var/log/kern.log`: an `NVRM: ` inside another program's
    message is that program's line, so gpu_xid never passes "no Xid" on a log with no kernel line."""
    assert detect_kind(_others_quoting("NVRM: /var/log/kern.log")) != "kernel_log"


def test_a_health_checkers_nvrm_line_is_no_kernel_line() -> None:
    """Edit: the capture's gdm-x-session lines then `gpud[2201]: health check: NVRM: no errors
    reported`, as a health checker logs it."""
    lines = POP.read_text().splitlines()[5:11]
    text = "\n".join([*lines, "Sep 23 18:40:02 xxx gpud[2201]: health check: NVRM: no errors reported"])
    assert detect_kind(text + "\n") != "kernel_log"


def test_an_xid_quoted_by_another_program_is_no_xid(tmp_path: Path) -> None:
    """Edit: the capture's first 2 kernel lines (no Xid) above _others_quoting an Xid 48 line
    (`NVRM: Xid (PCI:0000:01:00): 48, ...`): the kernel log has no Xid; sudo's line is not one."""
    kernel = POP.read_text().splitlines()[:2]
    text = (
        "\n".join(kernel) + "\n" + _others_quoting("'NVRM: Xid (PCI:0000:01:00): 48, DBE' /var/log/kern.log")
    )
    verdict, actual = verdicts(tmp_path, "syslog", text)["gpu_xid"]
    assert verdict == "pass", actual
    assert "48" not in actual, actual


# the capture's `Sep 23 18:37:0N ` time as the other `journalctl -o` shorts print it (the kernel
# lines' own `[   34.193735] ` stamp then left out of -o short-monotonic: it is the prefix)
_SHORTS = {
    "short-full": lambda line: re.sub(r"^Sep 23 (\S+) ", r"Wed 2020-09-23 \1 UTC ", line),
    "short-unix": lambda line: re.sub(r"^Sep 23 18:37:0(\d) ", r"1600886220.00000\1 ", line),
    "short-monotonic": lambda line: re.sub(
        r"^Sep 23 18:37:0\d (\S+ kernel: )\[\s*(\d+\.\d+)\] |^Sep 23 18:37:0(\d) ",
        lambda m: f"[{m.group(2):>12}] {m.group(1)}" if m.group(1) else f"[   3{m.group(3)}.000000] ",
        line,
    ),
}
# `-o short-monotonic --no-hostname` (the host word after the stamp left out) and `-o short-delta`
# (each stamp followed by its gap since the line before, here `<    0.000000>`)
_SHORTS["short-monotonic-no-hostname"] = lambda line: re.sub(
    r"^(\[[^\]]+\]) \S+ ", r"\1 ", _SHORTS["short-monotonic"](line)
)
_SHORTS["short-delta"] = lambda line: re.sub(
    r"^\[\s*(\d+\.\d{6})\]", lambda m: f"[{m.group(1):>12} <    0.000000>]", _SHORTS["short-monotonic"](line)
)


@pytest.mark.parametrize("shape", sorted(_SHORTS))
def test_an_xid_quoted_by_another_program_is_no_xid_in_other_journal_shorts(
    tmp_path: Path, shape: str
) -> None:
    """Edit: test_an_xid_quoted_by_another_program_is_no_xid's text with each line's time as
    `journalctl -o short-full` (`Wed 2020-09-23 18:37:03 UTC`), `-o short-unix`
    (`1600886220.000003`) or `-o short-monotonic` (the kernel lines' own stamp first, `[
    34.193735] xxx kernel: ...`; the other programs' lines `[   3N.000000]`) prints it, a whole
    journal without `-k`: sudo's line quoting an Xid 48 was read as the kernel's Xid 48 (gpu_xid
    failed a box with no Xid); it is sudo's line, no Xid. So too in `-o short-monotonic
    --no-hostname` and `-o short-delta` (`[   34.193735 <    0.000000>] xxx kernel: ...`), where
    it still failed."""
    kernel = POP.read_text().splitlines()[:2]
    text = (
        "\n".join(kernel) + "\n" + _others_quoting("'NVRM: Xid (PCI:0000:01:00): 48, DBE' /var/log/kern.log")
    )
    shaped = "".join(_SHORTS[shape](line) + "\n" for line in text.splitlines())
    assert "Sep 23" not in shaped
    verdict, actual = verdicts(tmp_path, "syslog", shaped)["gpu_xid"]
    assert verdict == "pass", actual
    assert "48" not in actual, actual


@pytest.mark.parametrize("shape", sorted(_SHORTS))
def test_the_xid_79_of_a_journal_in_other_shorts_fails(tmp_path: Path, shape: str) -> None:
    """Edit: the real capture with each line's time as _SHORTS prints it: its Xid 79 fails, read
    as in the plain syslog (the gdm-x-session lines skipped, the last one cut in its name)."""
    shaped = "".join(_SHORTS[shape](line) + "\n" for line in POP.read_text().splitlines())
    verdict, actual = verdicts(tmp_path, "syslog", shaped.rstrip("\n"))["gpu_xid"]
    assert verdict == "fail", actual
    # (the Xid's part; the cut last line, a gdm-x-session line cut in its name, is said after it)
    xid = actual.split("; also the log ends inside a line")[0]
    assert "Xid 79" in xid and "gdm" not in xid, actual


def test_a_dmesg_line_shaped_like_a_program_s_is_the_kernel_s(tmp_path: Path) -> None:
    """Edit: the real NVSwitch dmesg's Xid 79 line with `fabric manager[1234]: ` put after its
    stamp, the capture's other lines as they are: a dmesg (its lines name no program) has no
    other program's line, so this is the kernel's Xid 79 (it was dropped as the program
    `manager`'s, as in a `journalctl -o short-monotonic` line, and gpu_xid passed)."""
    lines = (REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "NVRM: Xid" in line)
    lines[at] = lines[at].replace("] NVRM: Xid", "] fabric manager[1234]: NVRM: Xid", 1)
    assert "manager[1234]: NVRM: Xid" in lines[at]
    verdict, actual = verdicts(tmp_path, "dmesg", "\n".join(lines) + "\n")["gpu_xid"]
    assert verdict == "fail", actual
    assert "Xid 79" in actual, actual


# utkuozdemir/nvidia_gpu_exporter#65: `# w`, then `systemctl status` of an exporter whose journal
# line of 09:02:39 (just after boot) quotes the nvidia-smi it ran then: `... stdout: NVIDIA-SMI has
# failed because it couldn't communicate with the NVIDIA driver ...`
EXPORTER = (
    Path(__file__).parents[2]
    / "fixtures"
    / "sessions"
    / "transcript__w+systemctl-status-exporter-QUOTES-nvidia-smi-failure-at-boot__nvidia-gpu-exporter-65.txt"
)


def test_a_programs_log_record_quoting_nvidia_smi_is_no_nvidia_smi_output() -> None:
    """The session's systemctl status (the text below its prompt line) is no nvidia-smi output:
    its words are the exporter's record of an earlier run."""
    status = EXPORTER.read_text().split("-l\n", 1)[1]
    assert detect_kind(status) is None


def test_a_session_whose_only_nvidia_smi_words_are_a_log_records_is_refused_naming_its_commands() -> None:
    """Judged before as the box's nvidia-smi failing now (nvidia_driver FAIL, "the NVIDIA kernel
    module is not loaded"); no output of the box is in it."""
    from .test_offline_refusals_r13 import refused

    said = refused(EXPORTER)
    assert "a saved terminal session holding no output this tool reads" in said, said
    command = "`systemctl status prometheus-nvidia-exporter-2.service -l`"
    assert f"{command}) is not an output this tool reads" in said, said


def test_nvidia_smis_own_failure_under_a_prompt_still_fails(tmp_path: Path) -> None:
    """Edit: the exporter's quoted sentence, cut where it ends, as `nvidia-smi`'s own output
    under the same session's prompt: nvidia-smi's own failure is still judged."""
    line = EXPORTER.read_text().splitlines()[-1]
    sentence = line[line.index("NVIDIA-SMI has failed") :].split("\\n", 1)[0]
    verdict, actual = verdicts(tmp_path, "session.txt", f"# nvidia-smi\n{sentence}\n")["nvidia_driver"]
    assert verdict == "fail", actual
