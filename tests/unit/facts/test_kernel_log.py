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
    assert log.covers_boot is None  # a saved log without the probe's header


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
    assert len(sx) == 8 and {e.code for e in sx} == {20034}
    assert sx[0].device == "nvidia-nvswitch1" and sx[0].pci == "0000:06:00.0"
    assert sx[0].message == "Fatal, Link 48 LTSSM Fault Up"


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


def _run_probe(tmp_path: Path, dmesg: str, journalctl: str | None) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("dmesg", dmesg), ("journalctl", journalctl), ("sudo", "exit 1")):
        if body is None:
            continue
        f = bin_dir / name
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(0o755)
    tools = ("sh", "grep", "tail", "head", "printf", "cat")
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
    assert log.source == "journalctl -k -b" and len(log.xids()) == 1 and len(log.sxids()) == 8


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
