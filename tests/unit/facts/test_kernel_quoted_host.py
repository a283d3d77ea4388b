"""A journal's or syslog's line head names the host (`Aug 30 11:11:00 nvidia-node01 kernel: ...`):
the grep-shape tells ("every line holds `nvidia`", "every line holds NVRM",
facts/kernel_quoted.py) read each line's text after its stamp and host, never the host's name
(review revB F3: a whole journal of a host named `nvidia-node01` read as `| grep nvidia`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_quoted import gpu_driver_only, nvidia_only

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
JOURNAL = REAL / "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"
OPEN515 = REAL / "dmesg__elided-by-hand-dots-line__rtx3070-laptop__open515.txt"


@pytest.mark.parametrize("host", ["nvidia-node01", "NVIDIA-DGX-07", "nvrm-lab"])
def test_a_hosts_name_is_no_grep_shape(host: str) -> None:
    """The real two-boot journal (host `gill-Lite`, no NVIDIA line), its host renamed in-test:
    neither tell fires, as for its own name."""
    lines = JOURNAL.read_text().replace("gill-Lite", host).splitlines()
    assert nvidia_only(lines) is None
    assert gpu_driver_only(lines) is None


def test_a_grep_of_a_journal_still_reads_as_one() -> None:
    """Lines whose text holds the word (a program's name or its message) still read as a grep's,
    the host's name aside."""
    lines = [
        "Aug 30 11:13:18 nvidia-node01 nvidia-persistenced[812]: Started (812)",
        "Aug 30 11:13:19 nvidia-node01 kernel: nvidia-nvlink: Nvlink Core is being initialized",
    ]
    assert nvidia_only(lines) is not None
    nvrm = ["Aug 30 11:13:19 nvrm-lab kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.86.05"]
    assert gpu_driver_only(nvrm) is not None


def _iso(text: str) -> list[str]:
    """The real open515 dmesg's stamped lines as `dmesg --time-format iso` prints them
    (`2025-01-03T00:00:23,989750+00:00 nvidia: ...`), its stamps moved onto one day in-test."""
    out = []
    for line in text.splitlines():
        if got := re.match(r"\[\s*(\d+)\.(\d+)\] (.*)", line):
            secs = int(got[1])
            out.append(f"2025-01-03T00:{secs // 60:02d}:{secs % 60:02d},{got[2]}+00:00 {got[3]}")
    return out


def test_a_grep_of_dmesg_iso_keeps_its_devices_name(tmp_path: Path) -> None:
    """Review revE F4: the real open515 dmesg under `dmesg --time-format iso`, then `grep -i
    nvidia`: `nvidia 0000:01:00.0: vgaarb: ...` names the device, no host (dmesg prints none),
    so every line holds `nvidia` and gpu_xid is unverified (a grep's pick, its Xid lines, which
    hold no such word, may be dropped). Before: `nvidia` was taken for a host, stripped, and
    gpu_xid passed "no Xid in the kernel log". The same of `grep NVRM` (`NVRM cpuidInfoAMD: ...`
    is the driver's text, not a host before a program's tag)."""
    lines = _iso(OPEN515.read_text())
    grepped = [line for line in lines if "nvidia" in line.lower()]
    assert len(grepped) == 3 and grepped[2].endswith(
        " nvidia 0000:01:00.0: vgaarb: changed VGA decodes: olddecodes=io+mem,decodes=none:owns=none"
    )
    assert nvidia_only(grepped) == grepped[0]
    got = verdicts(tmp_path, "dmesg.txt", "\n".join(grepped) + "\n", "gpu_count: 1\n")
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert "it holds only lines with `nvidia` (3" in got["gpu_xid"][1], got["gpu_xid"]
    nvrm = [line for line in lines if "NVRM" in line]
    assert gpu_driver_only(nvrm) == nvrm[0]
    # the whole log (its kernel's and intel_rapl's lines) is no grep's pick
    assert nvidia_only(lines) is None and gpu_driver_only(lines) is None


def test_a_journals_host_before_a_device_line_is_still_stripped() -> None:
    """A journal's `-o short-iso-precise` head (`.` microseconds, a host, `kernel:`) still loses
    its host: a whole journal of a host `nvidia-node01` is no grep of `nvidia` for its name."""
    head = "2025-01-03T00:00:24.059459+0000 nvidia-node01"
    lines = [f"{head} kernel: intel_rapl_common: Found RAPL domain package", f"{head} systemd[1]: Started"]
    assert nvidia_only(lines) is None
