"""The live kernel-log probe keeps the newest KERNEL_LOG_MAX_LINES matching lines. It kept them of
all devices together, so a NIC (any device) flooding uncorrectable PCIe errors pushed a GPU's
Xid out of them, and nothing said the cap was reached: the log still began at boot, so gpu_xid
passed a GPU that had fallen off the bus. The GPU and NVSwitch drivers' lines are now capped apart
from the others, and the probe says how many matching lines it left out of each (`# dropped:
driver N other M`): a log of which some were left out is only part of the log, so a check that
finds no fault in it is unverified, never a pass. gpu_xid reads both kinds (a root port's
uncorrectable-error line naming the GPU is among the others); nvswitch_sxid the drivers' only, so
a NIC's flood left out no longer makes it unverified. A host without sort or cut keeps the newest
lines of all (one cap), where it kept none.

The lines are real: the Titan V host's log with its Xid 79 (tests/fixtures/real), after an
Ubuntu kernel's boot banner, a root port's two uncorrectable-error lines from
rwth-i6/returnn#1500 repeated as a flood, and an NVSwitch's non-fatal SXid 12028."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.extra_probes import KERNEL_LOG, KERNEL_LOG_MAX_LINES
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.base import Check

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XID_79 = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"  # Xid 79 on 0000:02:00
RETURNN = REAL / "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"
H100_8 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
TWO_BOOTS = REAL / "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"
SXID = REAL / "dmesg__sxid-12028-non-fatal__health-check-docstring.txt"
# a real boot's first line (the log then reaches back to boot)
BANNER = next(line for line in TWO_BOOTS.read_text().splitlines(keepends=True) if "Linux version" in line)


def _flood(events: int) -> str:
    """`events` times the root port's two uncorrectable-error lines (each matches the probe's
    filter; neither is a GPU driver's line)."""
    lines = RETURNN.read_text().splitlines(keepends=True)
    pair = "".join(line for line in lines if "Uncorrected (Fatal)" in line)
    assert pair.count("\n") == 2, pair
    return pair * events


def _probe(tmp_path: Path, text: str, tools: tuple[str, ...] = ("sort", "cut")) -> str:
    """The live probe's output on a host whose `dmesg` prints `text` (and that has `tools`)."""
    log = tmp_path / "dmesg.log"
    log.write_text(text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dmesg = bin_dir / "dmesg"
    dmesg.write_text(f"#!/bin/sh\nexec cat {shlex.quote(str(log))}\n")
    dmesg.chmod(0o755)
    for tool in ("cat", "grep", "tail", "head", *tools):
        found = next((f"{d}/{tool}" for d in ("/usr/bin", "/bin") if os.path.exists(f"{d}/{tool}")), None)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    argv, env = ["/bin/sh", "-c", KERNEL_LOG.command], {"PATH": str(bin_dir)}
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _rows(tmp_path: Path, probe_out: str) -> dict[str, Check]:
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "kernel_log.txt").write_text(probe_out)
    (folder / H100_8.name).write_text(H100_8.read_text())
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, None)}


def _gpu_xid(tmp_path: Path, probe_out: str) -> Check:
    return _rows(tmp_path, probe_out)["gpu_xid"]


def test_another_devices_flood_never_pushes_a_gpus_xid_out(tmp_path: Path) -> None:
    text = BANNER + XID_79.read_text() + _flood(KERNEL_LOG_MAX_LINES)  # 4,000 lines after the Xid
    out = _probe(tmp_path, text)
    log = parse_kernel_log(out)
    assert [(e.kind, e.code, e.pci) for e in log.xids()] == [("xid", 79, "0000:02:00")]
    assert (log.dropped, log.dropped_other) == (0, KERNEL_LOG_MAX_LINES)  # (the flood's oldest half)
    row = _gpu_xid(tmp_path, out)
    assert row.verdict == "fail", row
    assert "Xid 79" in row.actual


def test_another_devices_flood_left_out_narrows_gpu_xid_only(tmp_path: Path) -> None:
    """The lines left out are a root port's uncorrectable errors: they may have named the GPU
    (gpu_xid reads them, facts/aer.py), never an NVSwitch's SXid: nvswitch_sxid, all its driver's
    lines kept, is judged (it was unverified)."""
    out = _probe(tmp_path, BANNER + _flood(KERNEL_LOG_MAX_LINES // 2 + 10))
    assert "\n# dropped: driver 0 other 20 host 0\n" in out
    rows = _rows(tmp_path, out)
    assert rows["gpu_xid"].verdict == "unverified", rows["gpu_xid"]
    assert "left out 20 older matching lines" in rows["gpu_xid"].actual
    assert rows["nvswitch_sxid"].verdict == "pass", rows["nvswitch_sxid"]


def test_the_drivers_lines_left_out_narrow_both_rules(tmp_path: Path) -> None:
    sxid = SXID.read_text()
    assert sxid.count("\n") == 1 and "SXid" in sxid
    out = _probe(tmp_path, BANNER + sxid * (KERNEL_LOG_MAX_LINES + 4) + _flood(2))
    assert "\n# dropped: driver 5 other 0 host 0\n" in out  # (the banner and the 4 oldest SXid lines)
    rows = _rows(tmp_path, out)
    assert rows["gpu_xid"].verdict == "unverified", rows["gpu_xid"]
    assert "left out 5 older" in rows["nvswitch_sxid"].actual + rows["nvswitch_sxid"].detail


def test_an_older_probes_single_count_narrows_both_rules(tmp_path: Path) -> None:
    """`# dropped: N` (the probe before the counts were apart) does not say whose lines: read as
    the drivers', so neither rule passes a log that may have lost an Xid or an SXid."""
    out = _probe(tmp_path, BANNER + _flood(10)).replace("# dropped: driver 0 other 0 host 0", "# dropped: 7")
    log = parse_kernel_log(out)
    assert (log.dropped, log.dropped_other) == (7, None)
    rows = _rows(tmp_path, out)
    assert rows["gpu_xid"].verdict == rows["nvswitch_sxid"].verdict == "unverified"


def test_a_log_within_the_caps_says_none_dropped_and_passes(tmp_path: Path) -> None:
    out = _probe(tmp_path, BANNER + _flood(10))
    assert "\n# dropped: driver 0 other 0 host 0\n" in out
    assert (parse_kernel_log(out).dropped, parse_kernel_log(out).dropped_other) == (0, 0)
    rows = _rows(tmp_path, out)
    assert rows["gpu_xid"].verdict == rows["nvswitch_sxid"].verdict == "pass"


def test_the_lines_kept_stay_in_the_logs_order(tmp_path: Path) -> None:
    """The drivers' lines and the others' are capped apart and put back in the log's order."""
    text = BANNER + _flood(3) + XID_79.read_text() + _flood(2)
    out = _probe(tmp_path, text)
    kept = [line for line in out.splitlines() if not line.startswith("# ")]
    wanted = [line for line in text.splitlines() if line in kept]
    assert kept == wanted and len(kept) == 1 + 6 + 5 + 4  # (Titan V's log: 5 NVRM lines)


@pytest.mark.parametrize("tools", [("cut",), ("sort",), ()])
def test_a_host_without_sort_or_cut_keeps_the_newest_lines_of_all(
    tmp_path: Path, tools: tuple[str, ...]
) -> None:
    """The lines cannot be put back in order: the newest of all are kept, as one cap (the probe
    kept none: `# dropped: 2104`, a real Xid unverified where it fails), and the counts say of
    which kind those left out were."""
    text = BANNER + XID_79.read_text() + _flood(3)
    out = _probe(tmp_path, text, tools=tools)
    assert "\n# dropped: driver 0 other 0 host 0\n" in out
    assert [line for line in out.splitlines() if not line.startswith("# ")] == text.splitlines()
    assert _gpu_xid(tmp_path, out).verdict == "fail"
    (tmp_path / "big").mkdir()
    out = _probe(
        tmp_path / "big", BANNER + XID_79.read_text() + _flood(KERNEL_LOG_MAX_LINES // 2 + 10), tools=tools
    )
    # (the banner, Titan V's 5 lines, 20 of the flood)
    assert "\n# dropped: driver 6 other 20 host 0\n" in out


# openstreetmap/operations#300's kern.log: `mce: ... Machine check events logged` and seven `EDAC
# MC0: N CE error on CPU#0Channel#2_DIMM#0` lines (16 corrected errors on one DIMM)
OSM_CE = REAL / "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt"
LWA = REAL / "dmesg__edac-ue-apei-pcie-recoverable__lwa-issues-117.txt"


def test_the_host_errors_lines_are_read_live(tmp_path: Path) -> None:
    """lwa-issues#117's dmesg (an EDAC UE, an APEI record of an NVMe's PCIe error, machine checks
    logged) on a host whose `dmesg` prints it: the probe keeps the host errors' lines, so
    host_hw_errors fails live as it does offline. (Before: the probe's filter kept none of them:
    no row live, the box GO, where the saved log fails.)"""
    out = _probe(tmp_path, BANNER + LWA.read_text())
    assert "\n# dropped: driver 0 other 0 host 0\n" in out
    row = _rows(tmp_path, out)["host_hw_errors"]
    assert row.verdict == "fail", row
    dimm = "MC3 CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (row 1a1e8)"
    assert f"{dimm}: uncorrectable memory error (EDAC UE)" in row.actual
    assert "PCI 0000:5e:00.0: PCIe error reported by the firmware (APEI, severity recoverable)" in row.actual


def test_a_storm_of_corrected_memory_errors_never_pushes_a_gpus_xid_out(tmp_path: Path) -> None:
    """The Titan V's Xid 79 followed by osm#300's corrected-error lines repeated 300 times (2,400
    host error lines, more than the cap): the host errors' lines have a cap of their own, so the
    Xid is kept and gpu_xid, none of its kinds' lines left out, fails on it, never unverified;
    host_hw_errors warns on the DIMM's corrected errors the probe kept, and the 400 it left out are
    counted as the host's (`host 400`)."""
    text = BANNER + XID_79.read_text() + OSM_CE.read_text() * 300
    out = _probe(tmp_path, text)
    assert "\n# dropped: driver 0 other 0 host 400\n" in out
    log = parse_kernel_log(out)
    assert (log.dropped, log.dropped_other, log.dropped_host) == (0, 0, 400)
    assert log.cut_by_cap == "" and log.host_cut_by_cap != ""
    rows = _rows(tmp_path, out)
    assert rows["gpu_xid"].verdict == "fail" and "Xid 79" in rows["gpu_xid"].actual, rows["gpu_xid"]
    assert "left out" not in rows["gpu_xid"].actual
    assert rows["host_hw_errors"].verdict == "warn", rows["host_hw_errors"]
    assert "MC0 CPU#0Channel#2_DIMM#0: corrected memory error (EDAC CE)" in rows["host_hw_errors"].actual


@pytest.mark.parametrize("tools", [("cut",), ("sort",), ()])
def test_a_storm_of_corrected_memory_errors_never_pushes_a_gpus_xid_out_without_sort_or_cut(
    tmp_path: Path, tools: tuple[str, ...]
) -> None:
    """The Titan V's Xid 79 followed by osm#300's corrected-error lines repeated 300 times (2,400
    host error lines), on a host without sort or cut: the one cap the probe keeps there is the
    drivers' and the others' lines only, the host errors' left out (and counted, `host 2400`), so
    gpu_xid fails on the Xid. (Before: the host lines shared that cap and pushed the Xid out:
    `driver 6`, gpu_xid unverified where it fails.)"""
    out = _probe(tmp_path, BANNER + XID_79.read_text() + OSM_CE.read_text() * 300, tools=tools)
    assert "\n# dropped: driver 0 other 0 host 2400\n" in out
    row = _gpu_xid(tmp_path, out)
    assert row.verdict == "fail" and "Xid 79" in row.actual, row
    assert "left out" not in row.actual


def test_a_few_corrected_errors_in_a_log_whose_host_lines_were_capped_are_unverified(tmp_path: Path) -> None:
    """radiasoft#134's machine check detail line (`EDAC sbridge MC1: TSC 0`) 2,010 times, then its
    whole log (one corrected error): the host lines left out may have held errors, so the one CE
    read is no pass: unverified, the lines left out said."""
    one_ce = (REAL / "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt").read_text()
    detail = next(line for line in one_ce.splitlines(keepends=True) if line.endswith("TSC 0\n"))
    out = _probe(tmp_path, BANNER + detail * (KERNEL_LOG_MAX_LINES + 10) + one_ce)
    assert "\n# dropped: driver 0 other 0 host 18\n" in out
    row = _rows(tmp_path, out)["host_hw_errors"]
    assert row.verdict == "unverified" and "left out 18" in row.actual, row


@pytest.mark.parametrize("tools", [("cut",), ("sort",), ()])
def test_host_error_lines_left_out_without_sort_or_cut_are_unverified(
    tmp_path: Path, tools: tuple[str, ...]
) -> None:
    """mcelog#70's kern.log (an uncorrected machine check at boot; each line's syslog prefix
    `Sep 16 19:51:15 kernel: ` cut off in-test, as dmesg prints it), then the Titan V's Xid 79, on
    a host without sort or cut: the probe keeps the drivers' and the others' lines only and counts
    the host's it left out (`host 4`). Before, host_hw_errors gave no row (no claim either way:
    the machine check dropped unsaid). Now unverified, naming the lines left out."""
    mce = (REAL / "kern-log__mce-uncorrected-bank4-at-boot__mcelog-70.txt").read_text()
    dmesg = "".join(line.split("kernel: ", 1)[1] for line in mce.splitlines(keepends=True))
    out = _probe(tmp_path, dmesg + XID_79.read_text(), tools=tools)
    assert "\n# dropped: driver 0 other 0 host 4\n" in out
    row = _rows(tmp_path, out).get("host_hw_errors")
    assert row is not None and row.verdict == "unverified", row
    assert "left out 4 host error lines" in row.actual and "sort and cut" in row.detail
