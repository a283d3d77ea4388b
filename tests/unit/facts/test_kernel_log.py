"""Kernel log Xid/SXid parser on real dmesg captures (tests/fixtures/real/dmesg*)."""

import os
import subprocess
from pathlib import Path

from gpuonboard.facts.extra_probes import KERNEL_LOG
from gpuonboard.facts.kernel_log import parse_kernel_log, pci_key

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_xid_119_gsp_timeouts_dmesg_T() -> None:
    log = parse_kernel_log(read("dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"))
    assert [e.code for e in log.events] == [119] * 5
    first = log.events[0]
    assert (first.kind, first.pci, first.timestamp) == ("xid", "0000:9b:00", "[Sun Feb 23 16:24:18 2025]")
    assert first.message.startswith("pid=2024380, name=nvidia-smi, Timeout after 6s")
    # a saved log without the probe's header, judged by its own first line (whole: it holds
    # lines no grep for the drivers' keeps), which is weeks after boot
    assert log.covers_boot is False


def test_decode_iso_format_xid_13_and_43() -> None:
    log = parse_kernel_log(read("dmesg-decode-iso__xid-13-43__plus-oom.txt"))
    codes = [e.code for e in log.events]
    assert codes.count(13) == 16 and codes.count(43) == 1 and len(codes) == 17
    assert log.events[-1].message == "pid=2924364, name=pt_main_thread, Ch 00000008"
    assert log.events[0].timestamp == "kern  :warn  : 2025-01-21T04:41:44,283302+00:00"


def test_xid_79_with_nvswitch_sxid_20034() -> None:
    log = parse_kernel_log(read("dmesg__xid-79-sxid-20034__nvswitch.txt"))
    assert [(e.code, e.pci) for e in log.xids()] == [(79, "0000:91:00")]
    sx = log.sxids()
    # 8 driver lines, 5 events: a `Data` / `Severity` line belongs to the event of its switch,
    # address and code (interleaved across switches); nvswitch2's `Severity 1 Engine instance 60`
    # is an event whose first line is not in the excerpt (Severity 1: fatal)
    assert len(sx) == 5 and {e.code for e in sx} == {20034} and sum(e.lines for e in sx) == 8
    assert sx[0].device == "nvidia-nvswitch1" and sx[0].pci == "0000:06:00.0"
    assert sx[0].message == "Fatal, Link 48 LTSSM Fault Up" and sx[0].severity == "fatal"
    assert [(e.device, e.lines, e.severity) for e in sx[1:]] == [
        ("nvidia-nvswitch0", 2, "fatal"),  # Link 63 + its Data line
        ("nvidia-nvswitch2", 1, "fatal"),  # Severity 1 Engine instance 60, alone
        ("nvidia-nvswitch2", 2, "fatal"),  # Link 37 + Severity 1 Engine instance 37
        ("nvidia-nvswitch0", 2, "fatal"),  # Link 62 + Severity 1 Engine instance 62
    ]


def test_sxid_event_of_three_driver_lines_is_one_event() -> None:
    log = parse_kernel_log(read("dmesg__sxid-22013-non-fatal-3-lines.txt"))
    (e,) = log.sxids()
    assert (e.code, e.device, e.pci, e.severity, e.lines) == (
        22013,
        "nvidia-nvswitch3",
        "0000:08:00.0",
        "non-fatal",
        3,
    )
    assert e.message.startswith(
        "Non-fatal, Link 60 Minion Link DLREQ interrupt | Severity 0 Engine instance 60"
    )


def test_sxid_lines_of_another_link_or_code_are_other_events() -> None:
    text = read("dmesg__sxid-22013-non-fatal-3-lines.txt").splitlines()
    # the same switch and code, a Severity line of another engine instance: another event
    other_link = text[1].replace("instance 60", "instance 12")
    other_code = text[2].replace("22013, Data", "22014, Data")
    log = parse_kernel_log("\n".join([text[0], other_link, other_code]))
    assert [(e.code, e.lines) for e in log.sxids()] == [(22013, 1), (22013, 1), (22014, 1)]
    assert log.sxids()[1].severity == "non-fatal"  # Severity 0


def test_sxid_severity_word_is_the_drivers_own() -> None:
    log = parse_kernel_log(read("dmesg__sxid-12028-non-fatal__health-check-docstring.txt"))
    (e,) = log.sxids()
    assert (e.code, e.severity, e.message) == (
        12028,
        "non-fatal",
        "Non-fatal, Link 61 egress non-posted PRIV error (First)",
    )
    fatal = parse_kernel_log(
        read("dmesg__sxid-12028-non-fatal__health-check-docstring.txt").replace("Non-fatal", "Fatal")
    )
    assert fatal.sxids()[0].severity == "fatal"
    said_nothing = read("dmesg__sxid-12028-non-fatal__health-check-docstring.txt").replace("Non-fatal, ", "")
    assert parse_kernel_log(said_nothing).sxids()[0].severity is None


def test_old_xid_format_without_pci_tag_is_read() -> None:
    # a 2007 driver: "NVRM: Xid (0001:00): 6, ..." (two-part address, no "PCI:" tag)
    log = parse_kernel_log(read("dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt"))
    assert [(e.code, e.pci) for e in log.xids()] == [(6, "0001:00"), (30, "0001:00")]
    assert log.xids()[1].message == "L1 -> L0" and log.unread() == ()
    assert log.xids()[0].timestamp == "Apr 29 01:07:28 Adventure kernel: [ 9438.840000]"
    # kept as printed: it matches no modern nvidia-smi address
    assert pci_key("0001:00") == "0001:00" != pci_key("00000000:01:00.0")


def test_xid_lines_that_cannot_be_read_are_kept_as_unread() -> None:
    first = read("dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt").splitlines()[3]
    lines = [
        first.replace("(0001:00): 6,", "(0001:00): six,"),  # no code
        first.replace("NVRM: Xid (0001:00): 6,", "NVRM: Xid PCI:0000:3b:00: 79,"),  # no parentheses
        "[ 5.1] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): , Fatal, Link 1",  # no SXid code
    ]
    log = parse_kernel_log("\n".join(lines))
    assert [(e.kind, e.code, e.pci) for e in log.events] == [
        ("xid_unread", 0, ""),
        ("xid", 79, "0000:3b:00"),
        ("sxid_unread", 0, "0000:05:00.0"),
    ]
    assert (
        log.unread()[0].message == "NVRM: Xid (0001:00): six, PE0000 0374 00000000 001cbdf8 00ffffff 00000001"
    )


def test_probe_header_and_journal_prefix() -> None:
    text = (
        "# source: journalctl -k -b\n# first: Jan 01 00:00:00 h kernel: Linux version 6.8\n"
        "Oct 02 10:41:07 srv-r07-u12 kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=0, GPU"
        " has fallen off the bus.\n"
    )
    log = parse_kernel_log(text)
    assert log.source == "journalctl -k -b" and log.covers_boot is True
    assert log.events[0].timestamp == "Oct 02 10:41:07 srv-r07-u12"
    wrapped = parse_kernel_log("# source: dmesg\n# first: [ 9921.1] eth0: link up\n")
    assert wrapped.covers_boot is False and wrapped.events == ()


def test_pci_key_agrees_across_forms() -> None:
    assert pci_key("0000:9b:00") == pci_key("00000000:9B:00.0") == pci_key("0000:9b:00.0") == "0000:9b:00"


def _run_probe(
    tmp_path: Path, dmesg: str, journalctl: str | None, sudo: str = "exit 1"
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("dmesg", dmesg), ("journalctl", journalctl), ("sudo", sudo)):
        if body is None:
            continue
        f = bin_dir / name
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(0o755)
    tools = ("sh", "grep", "tail", "head", "printf", "cat", "sort", "cut")
    for tool in tools:
        for d in ("/usr/bin", "/bin"):
            if os.path.exists(f"{d}/{tool}") and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(f"{d}/{tool}")
    return subprocess.run(
        ["/bin/sh", "-c", KERNEL_LOG.command],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_probe_refused_dmesg_falls_back_to_journalctl(tmp_path: Path) -> None:
    line = read("dmesg__xid-79-sxid-20034__nvswitch.txt")
    r = _run_probe(
        tmp_path,
        "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1",
        "cat <<'X'\nJan 01 h kernel: Linux version 6.8\n" + line + "X",
    )
    assert r.returncode == 0, r.stderr
    log = parse_kernel_log(r.stdout)
    assert log.source == "journalctl -k -b" and len(log.xids()) == 1 and len(log.sxids()) == 5


def test_probe_says_why_when_nothing_readable(tmp_path: Path) -> None:
    r = _run_probe(
        tmp_path,
        "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1",
        "echo 'Hint: You are currently not seeing messages from other users and the"
        " system.'; echo '-- No entries --'",
    )
    assert r.returncode == 126
    assert "dmesg: read kernel buffer failed: Operation not permitted" in r.stderr
    assert "journalctl -k -b: Hint" in r.stderr


def test_probe_names_each_refusal_once(tmp_path: Path) -> None:
    """`dmesg_restrict=1`, no sudo password, a journalctl that prints nothing: the sentence was
    `dmesg: dmesg: read kernel buffer failed ...; journalctl -k -b:` (util-linux names itself;
    sudo's refusal unsaid; journalctl's empty answer said as nothing)."""
    r = _run_probe(
        tmp_path,
        "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1",
        "exit 0",
        sudo="echo 'sudo: a password is required' >&2; exit 1",
    )
    assert r.returncode == 126
    assert r.stderr.strip() == (
        "dmesg: read kernel buffer failed: Operation not permitted; sudo -n dmesg: sudo: a password is"
        " required; journalctl -k -b: printed nothing"
    )


def test_a_vmd_domain_is_its_own_gpu_in_both_keys() -> None:
    """An Intel VMD domain has 5 hex digits: the driver prints it `%04x` (`PCI:10000:01:00`,
    kernel_rc.c), nvidia-smi as `00010000:01:00.0`. pci_key kept its last four digits, domain 0's:
    the Xid was tied to the GPU at 0000:01:00.0 while gpu_ids.bus_key kept every digit. One
    domain key (gpu_ids.pci_domain) serves both now (round 31)."""
    from gpuonboard.facts.gpu_ids import bus_key
    from gpuonboard.steps.checks.xid_rules import rule_xid

    assert pci_key("10000:01:00") == pci_key("00010000:01:00.0") != pci_key("00000000:01:00.0")
    assert bus_key("10000:01:00.0") == bus_key("00010000:01:00.0") != bus_key("0000:01:00.0")
    # the real Titan V's Xid 79 line (dmesg-T__xid-79-unknown-pid__titan-v.txt), its GPU behind VMD
    line = (
        "[Tue Apr 15 16:50:03 2025] NVRM: Xid (PCI:10000:01:00): 79, pid='<unknown>', name=<unknown>,"
        " GPU has fallen off the bus.\n"
    )
    gpus = [(0, "00000000:01:00.0"), (1, "00010000:01:00.0")]
    check = rule_xid(parse_kernel_log(line).events, True, gpus=gpus)
    assert check.verdict == "fail" and check.actual.startswith("GPU 1 "), check.actual
