"""The live probe keeps every kernel-log line the readers read: its filtered log, judged, gives the
events of the whole log saved and judged offline (`invoke facts dmesg.txt`), on every real kernel
log capture. Its filter once kept only NVRM/Xid/SXid/nvswitch lines, so the kernel's AER lines
about a GPU (`nvidia 0000:03:00.0: AER: can't recover`) never reached the live judge: a GPU the
kernel could not recover from a PCIe error failed `gpu_xid` offline and passed live."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from gpuonboard.facts import aer
from gpuonboard.facts.extra_probes import KERNEL_LOG
from gpuonboard.facts.kernel_log import KernelEvent, parse_kernel_log

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (a log stored cut inside its last line is cut only where that line is kept: the probe's filter
# drops another driver's line, rl-swarm#463's call trace)
LOGS = sorted(p.name for p in REAL.glob("dmesg*") if "__line-cut-as-stored__" not in p.name)


def _events(text: str) -> list[tuple[object, ...]]:
    """What gpu_xid and nvswitch_sxid judge (steps/checks/fabric_health.py): the log's events and
    its AER events, with what each says."""
    events: tuple[KernelEvent, ...] = parse_kernel_log(text).events + aer.aer_events(text)
    return [(e.kind, e.code, e.pci, e.message, e.fault, e.earlier_boot, e.cut) for e in events]


def _probe(tmp_path: Path, log: Path) -> str:
    """The live probe's output on a host whose `dmesg` prints `log`."""
    return probe_on(tmp_path, {"dmesg": f"exec cat {shlex.quote(str(log))}"})


def probe_on(tmp_path: Path, tools: dict[str, str]) -> str:
    """The live probe's output on a host whose PATH holds `tools` (name -> sh script body) and
    coreutils."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for tool in ("cat", "grep", "tail", "head", "sort", "cut"):  # (coreutils, as on a host)
        found = next((f"{d}/{tool}" for d in ("/usr/bin", "/bin") if os.path.exists(f"{d}/{tool}")), None)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    r = subprocess.run(
        ["/bin/sh", "-c", KERNEL_LOG.command],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_real_log_is_a_case() -> None:
    assert len(LOGS) >= 20  # (the glob finds the captures)


@pytest.mark.parametrize("name", LOGS)
def test_the_probes_filtered_log_gives_the_whole_logs_events(tmp_path: Path, name: str) -> None:
    text = (REAL / name).read_text()
    assert _events(_probe(tmp_path, REAL / name)) == _events(text)


def test_a_gpu_the_kernel_could_not_recover_is_read_live(tmp_path: Path) -> None:
    """rwth-i6/returnn#1500: two `nvidia 0000:03:00.0: AER: can't recover` lines, no NVRM line.
    Live, the first was read from the probe's `# first:` header alone and the second not at all."""
    name = "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"
    out = _probe(tmp_path, REAL / name)
    assert out.startswith("# source: dmesg\n# first: [  +0.000844] nvidia 0000:03:00.0: AER: can't recover")
    faults = [(e.pci, e.fault) for e in aer.aer_events(out)]
    assert faults == [("0000:03:00.0", "aer_unrecovered")] * 2


def test_a_flood_of_corrected_pcie_errors_never_pushes_out_an_xid(tmp_path: Path) -> None:
    """A flaky riser logs three AER lines an event, with the GPU driver's prefix
    (`nvidia 0000:01:00.0: AER: PCIe Bus Error: severity=Corrected ...`, its status/mask line,
    its `[ 0] RxErr` bit line): 700 events after the GPU fell off the bus kept 2,100 lines of
    them and no Xid, so the live gpu_xid passed. Lines no reader reads are dropped on the host."""
    xid = "[  12.345678] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n"
    event = (
        "[  13.000000] nvidia 0000:01:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical"
        " Layer, (Receiver ID)\n"
        "[  13.000001] nvidia 0000:01:00.0:   device [10de:2204] error status/mask=00000001/0000e000\n"
        "[  13.000002] nvidia 0000:01:00.0:    [ 0] RxErr                  (First)\n"
    )
    log = tmp_path / "dmesg.txt"
    log.write_text("[    0.000000] Linux version 6.8.0\n" + xid + event * 700)
    out = _probe(tmp_path, log)
    assert [(e.kind, e.code) for e in parse_kernel_log(out).events] == [("xid", 79)]


def test_a_host_without_grep_never_reads_as_a_log_without_faults(tmp_path: Path) -> None:
    """A host whose dmesg prints a real log with an Xid 79 (dmesg__xid-79-sxid-20034__nvswitch)
    but that has no grep (its PATH here: that dmesg, head, tail, sort and cut): the probe's
    filter printed its header alone, `# source: dmesg` and no line, and gpu_xid passed a GPU
    that fell off the bus. It now exits 126 naming grep: gpu_xid unverified, saying why."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt"
    (bin_dir / "dmesg").write_text(f"#!/bin/sh\nexec /bin/cat {shlex.quote(str(log))}\n")
    (bin_dir / "dmesg").chmod(0o755)
    for tool in ("tail", "head", "sort", "cut"):
        found = next(f"{d}/{tool}" for d in ("/usr/bin", "/bin") if os.path.exists(f"{d}/{tool}"))
        (bin_dir / tool).symlink_to(found)
    r = subprocess.run(
        ["/bin/sh", "-c", KERNEL_LOG.command], env={"PATH": str(bin_dir)}, capture_output=True, text=True
    )
    facts = parse_facts({"kernel_log": ProbeOutput(r.stdout, r.stderr, r.returncode)})
    xid = next(c for c in health_checks(facts) if c.name == "gpu_xid")
    assert xid.verdict == "unverified", xid
    assert "grep is not installed" in xid.actual + xid.detail
