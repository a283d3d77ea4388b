"""Kernel log sweep, round 32 (measure32d; tests/fixtures/real/SOURCES.md).

m32d 3: a syslog whose every line is a PCIe/AER line (`kernel: [68183.615790] pcieport ...`, 19 h
after boot) passed gpu_xid without the after-boot note: every line held `pcie`, so the log was
taken for a user's grep, whose first line says nothing of where the log starts. A grep for PCIe
lines keeps no Xid line, so such a log is read by its first line as any whole log is.

m32d 4: a WSL2 guest's dmesg that ends 0.87 s into boot (`[    0.869739] FS-Cach`, no NVIDIA
line) passed "no Xid in the kernel log": a log that ends before the GPU driver logged anything
says nothing of Xids since; its last line, cut inside the `FS-Cache:` head its other lines
print, is a cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_cut import cut_by_shape, ends_unfinished, line_heads
from gpuonboard.facts.kernel_log import parse_kernel_log

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
AER = "dmesg-syslog__aer-correctable-bracketed-68183s-no-nvrm__pop-3363.txt"
WSL = "dmesg__wsl2-0.87s-fscache__line-cut-as-stored__wsl-11293.txt"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _plain_dmesg(text: str) -> str:
    """The syslog's lines as dmesg prints them (its `Sep 19 16:18:02 bubz kernel: ` head off)."""
    return "".join(line.split("kernel: ", 1)[1] + "\n" for line in text.splitlines())


@pytest.mark.parametrize("shape", ["syslog", "dmesg"])
def test_a_log_of_pcie_lines_alone_starting_after_boot_does_not_cover_boot(shape: str) -> None:
    text = read(AER) if shape == "syslog" else _plain_dmesg(read(AER))
    assert parse_kernel_log(text).covers_boot is False


@pytest.mark.parametrize("shape", ["syslog", "dmesg"])
def test_it_says_the_log_starts_after_boot(tmp_path: Path, shape: str) -> None:
    """(round 38: its lines, one kind's seconds apart, are picked: unverified, no longer a pass)"""
    text = read(AER) if shape == "syslog" else _plain_dmesg(read(AER))
    got = verdicts(tmp_path, "dmesg.txt", text)
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = got[rule]
        assert verdict == "unverified"
        assert "starts after boot" in actual and "1 kind only (`pcieport`)" in actual


def test_a_grep_for_the_gpu_driver_still_says_nothing_of_where_the_log_starts() -> None:
    """(unchanged) every line holds `nvidia`: maybe `dmesg | grep -i nvidia`, its first line
    late though the log starts at boot."""
    text = "[  300.1] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver\n"
    text += "[  301.2] nvidia 0000:01:00.0: enabling device\n"
    assert parse_kernel_log(text).covers_boot is None


def test_a_last_line_cut_inside_a_head_the_log_prints_is_a_cut() -> None:
    lines = read(WSL).splitlines()
    heads = line_heads(lines[:-1])
    assert "FS-Cache:" in heads
    assert cut_by_shape(lines[-1], None, heads)
    assert ends_unfinished(lines[-1], None, heads)
    # (a whole head, or a word no line prints as a head, is not)
    assert not cut_by_shape("[    0.869739] FS-Cache: Duplicate cookie detected", None, heads)
    assert not cut_by_shape("[    0.869739] FS-Cache", None, frozenset({"EXT4-fs"}))
    assert not ends_unfinished("[    0.869739] done", None, heads)


def test_the_wsl_log_ending_in_early_boot_is_no_pass(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", read(WSL))
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]


def test_a_whole_log_ending_before_the_gpu_driver_logged_is_no_pass(tmp_path: Path) -> None:
    """The same log with its last line whole: it ends 0.87 s into boot, no GPU driver line."""
    text = read(WSL).rsplit("\n", 2)[0] + "\n"
    log = parse_kernel_log(text)
    assert "0.869533" in log.early_end
    got = verdicts(tmp_path, "dmesg.txt", text)
    for rule in ("gpu_xid", "nvswitch_sxid"):
        verdict, actual = got[rule]
        assert verdict == "unverified", got[rule]
        assert "before the GPU driver" in actual


def test_a_log_that_shows_the_driver_loaded_is_judged_as_before() -> None:
    text = (
        read(WSL).rsplit("\n", 2)[0]
        + "\n[    0.9] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01\n"
    )
    assert parse_kernel_log(text).early_end == ""
    late = read(WSL).rsplit("\n", 2)[0] + "\n[  600.5] usb 1-1: new high-speed USB device\n"
    assert parse_kernel_log(late).early_end == ""


# m32d 1: `journalctl -k --no-hostname` prints a multi-line message's further lines indented to
# its message's column; they were counted as lines of no kernel log, and the file refused
JOURNAL = "dmesg-journalctl-k-no-hostname__check-failed-indented-continuation-lines__ogkm-1140.txt"


def _with_host(text: str) -> str:
    """The journal as `journalctl -k` prints it with the host's name (the indent widened too)."""
    out = []
    for line in text.splitlines():
        out.append(
            line.replace(" kernel: ", " gpu01 kernel: ") if not line[:1].isspace() else "      " + line
        )
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("shape", ["no-hostname", "hostname"])
def test_a_journals_indented_continuation_lines_are_read_as_its_message(tmp_path: Path, shape: str) -> None:
    text = read(JOURNAL) if shape == "no-hostname" else _with_host(read(JOURNAL))
    got = verdicts(tmp_path, "journal.txt", text)
    assert got["gpu_xid"][0] in ("pass", "unverified"), got["gpu_xid"]
    if got["gpu_xid"][0] == "pass":
        assert "starts after boot" in got["gpu_xid"][1]


def test_indented_lines_after_no_kernel_line_are_no_kernel_log(tmp_path: Path) -> None:
    """(unchanged) a text of indented lines under another program's line is not read as one."""
    from gpuonboard.api.saved_kinds import detect_fabric_kind

    text = "Aug 18 23:50:24 sshd[12]: Accepted key\n                        for user x\n"
    assert detect_fabric_kind(text) is None


# m32d 7: `kubectl describe node | grep Xid` (a node condition row) was refused as a headerless CSV
NODE = "kubectl-describe-node-grep-xid__copied-command__xidcriticalerror-31-condition__gke-p100__cea-497.txt"


def test_a_kubernetes_node_condition_is_named_as_one(tmp_path: Path) -> None:
    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    (tmp_path / "describe.txt").write_text(read(NODE))
    with pytest.raises(UsageError) as said:
        offline.load_outputs([str(tmp_path / "describe.txt")])
    assert "a Kubernetes node's condition rows" in str(said.value)
    assert "XidCriticalError True" in str(said.value) and "CSV" not in str(said.value)


# m32d 8: a session of `systemctl restart nvidia-fabricmanager.service` (`Job for ... failed`) and
# `journalctl -xeu nvidia-fabricmanager.service`: said as if journalctl's output were damaged
SESSION = "session__systemctl-restart-fabricmanager-job-failed+journalctl-xeu__h20__nvtrust-128.txt"


def test_a_services_journal_is_said_to_be_one_and_the_failed_job_named(tmp_path: Path) -> None:
    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    (tmp_path / "session.txt").write_text(read(SESSION))
    with pytest.raises(UsageError) as said:
        offline.load_outputs([str(tmp_path / "session.txt")])
    text = str(said.value)
    assert (
        "the journal of the service nvidia-fabricmanager.service (`journalctl -u`), not the kernel's" in text
    )
    assert "could not read what it printed" not in text
    assert "`Job for nvidia-fabricmanager.service failed because" in text and "did not start" in text
