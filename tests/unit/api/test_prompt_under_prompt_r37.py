"""Round 37: prompt lines one right under the other above a saved output (a command that printed
nothing, then the one whose output follows): the output is the last command's. Before, the first
prompt line was read as the command and the next as the output's first line, so the real
`# cat /var/log/messages | grep fail` capture (tests/fixtures/real/SOURCES.md, fixN7g) typed
under another prompt was read as the whole log: nvswitch_sxid passed ("the log read starts after
boot") on the lines grep kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
GREP = "dmesg-syslog__grep-fail-bar1-failed-to-assign-rminitadapter-0x24__esxi-debian11-vm__zh-notes.txt"
NVIDIA_SMI = "nvidia-smi__h100-80gb-hbm3__1gpu-of-8__driver545.23.08__prompt__princeton-della.txt"

# the prompt lines typed above the capture's own `# cat ... | grep fail` line
ABOVE = [
    "root@host:~# dmesg\n",
    "$ dmesg\n",
    "root@host:~# dmesg | tail -1\n\n",
    "[root@gpu01 ~]# dmesg\nroot@host:~# dmesg -T\n",
]


@pytest.mark.parametrize("above", ABOVE)
def test_a_grep_typed_under_another_prompt_is_read_as_the_grep(tmp_path: Path, above: str) -> None:
    text = (REAL / GREP).read_text(encoding="utf-8")
    whole = verdicts(tmp_path, GREP, text)
    got = verdicts(tmp_path, GREP, above + text)
    assert got["nvswitch_sxid"] == whole["nvswitch_sxid"], above
    assert got["nvswitch_sxid"][0] == "unverified"
    assert (
        "`cat /var/log/messages | grep fail` keeps only the lines grep let through" in got["nvswitch_sxid"][1]
    )
    assert got["gpu_xid"] == whole["gpu_xid"]


def test_an_output_under_one_prompt_is_judged_as_before(tmp_path: Path) -> None:
    """A table under its own `$ nvidia-smi` and a prompt typed above it that printed nothing: the
    table read as under its own prompt alone."""
    text = (REAL / NVIDIA_SMI).read_text(encoding="utf-8")
    assert verdicts(tmp_path, NVIDIA_SMI, "$ nvidia-smi -L\n" + text) == verdicts(tmp_path, NVIDIA_SMI, text)
