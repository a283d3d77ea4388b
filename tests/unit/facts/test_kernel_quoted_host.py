"""A journal's or syslog's line head names the host (`Aug 30 11:11:00 nvidia-node01 kernel: ...`):
the grep-shape tells ("every line holds `nvidia`", "every line holds NVRM",
facts/kernel_quoted.py) read each line's text after its stamp and host, never the host's name
(review revB F3: a whole journal of a host named `nvidia-node01` read as `| grep nvidia`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_quoted import gpu_driver_only, nvidia_only

REAL = Path(__file__).parents[2] / "fixtures" / "real"
JOURNAL = REAL / "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"


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
