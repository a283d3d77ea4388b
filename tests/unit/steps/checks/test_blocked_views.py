"""Views a provider restricts, against real captures: what the login is shown is not the box.

A gVisor sandbox answers `dmesg` with its own emulated kernel's lines: the host kernel, whose
NVIDIA driver logs Xids, is out of sight, so no Xid there is no evidence (it passed).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import kernel_log
from gpuonboard.facts.extra_probes import KERNEL_LOG_PATTERN
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import fabric_health

from ...offline_judge import checks, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
GVISOR = "dmesg__gvisor-sandbox__emulated-kernel-log__k8s-image-builder-docs.txt"
H200 = "nvidia-smi__h200__1gpu__driver580.159.04.txt"
# a kernel's own log of a box with no Xid (control): the same rules pass it
KERNEL_LOGS = sorted(p.name for p in REAL.glob("dmesg*") if p.name != GVISOR)


def test_a_sandbox_kernels_log_is_no_evidence_offline(tmp_path: Path) -> None:
    """The saved `dmesg` of a gVisor pod: gpu_xid and nvswitch_sxid passed "no Xid in the kernel
    log"; now unverified, naming the sandbox's first line and asking for the host's log."""
    text = (REAL / GVISOR).read_text()
    found = {c.name: c for c in checks(tmp_path, GVISOR, text)}
    for name, what in (("gpu_xid", "Xid"), ("nvswitch_sxid", "SXid")):
        check = found[name]
        assert check.verdict == "unverified", check
        assert check.actual == (
            "kernel log not readable: the sandbox's own (its first line '[    0.000000] Starting gVisor...')"
        )
        assert f"whose NVIDIA driver logs {what}s" in check.detail
        assert "the host's kernel log" in check.detail


def test_a_sandbox_kernels_log_is_no_evidence_live() -> None:
    """Live, the probe keeps only the driver's lines (none here) and heads its output with the
    log's first line: that line tells the sandbox (it passed "no Xid since boot": the line is
    at 0.000000, so the log seemed to reach back to boot)."""
    text = (REAL / GVISOR).read_text()
    kept = [line for line in text.splitlines() if re.search(KERNEL_LOG_PATTERN, line)]
    assert kept == []
    first = text.splitlines()[0]
    out = ProbeOutput(f"# source: dmesg\n# first: {first}\n", "", 0)
    log = kernel_log.parse_kernel_log(out.stdout)
    assert log.sandbox == "[    0.000000] Starting gVisor..." and log.covers_boot
    facts = parse_facts({"kernel_log": out})
    found = {c.name: c for c in fabric_health.health_checks(facts)}
    assert found["gpu_xid"].verdict == "unverified"
    assert found["nvswitch_sxid"].verdict == "unverified"


def test_a_sandbox_banner_under_any_time_stamp(tmp_path: Path) -> None:
    """`dmesg -T` prints the same line under a date: still the sandbox's log."""
    text = (REAL / GVISOR).read_text().replace("[    0.000000]", "[Thu Jan  1 00:00:00 1970]", 1)
    assert verdicts(tmp_path, "dmesg.txt", text)["gpu_xid"][0] == "unverified"


@pytest.mark.parametrize("name", KERNEL_LOGS)
def test_no_kernels_own_log_is_taken_for_a_sandbox(name: str) -> None:
    """No real kernel log reads as a sandbox's."""
    assert kernel_log.parse_kernel_log((REAL / name).read_text(errors="replace")).sandbox is None


def test_the_sandbox_log_beside_the_gpus_still_judges_them(tmp_path: Path) -> None:
    """With the box's nvidia-smi beside it, the GPU rules are judged as before; only the kernel
    log rules are unverified."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / GVISOR).write_text((REAL / GVISOR).read_text())
    (folder / H200).write_text((REAL / H200).read_text())
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    assert judged["gpu_xid"].verdict == "unverified"
    assert judged["temperature"].verdict == "pass"
