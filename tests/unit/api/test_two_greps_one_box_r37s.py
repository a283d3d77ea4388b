"""Two grep excerpts of a kernel log are joined as one log's (api/unread.joined_greps) only where
they are of one box and one boot (revS F2): typed at one prompt in one saved session, the
journal's host the same wherever a line names one, neither a rotated older log (`kern.log.1`,
`syslog.2.gz`) beside the current one. Two greps saved as two files (two boxes' names), two
hosts' journal lines, or last week's rotated log beside this boot's dmesg were joined and called
"two excerpts of the kernel log of this boot" (gpu_xid failed on the other box's Xid 79); they
are refused again, as two rival kernel logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

LOADING = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024"
XID = "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."


def _session(host_a: str, host_b: str) -> str:
    return (
        "$ grep -i nvrm /var/log/syslog\n"
        f"Dec  7 08:00:05 {host_a} kernel: [    6.104412] {LOADING}\n"
        "$ grep -i xid /var/log/syslog\n"
        f"Dec  7 10:48:02 {host_b} kernel: [74889.644138] {XID}\n"
    )


def _rotated(log: str) -> str:
    return (
        "$ sudo dmesg | grep -i nvrm\n"
        f"[    6.104412] {LOADING}\n"
        f"$ grep -h NVRM {log}\n"
        f"Nov 28 03:11:02 gpu-node kernel: [74889.644138] {XID}\n"
    )


def _load(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / name) for name in files], notes)
    return notes


@pytest.mark.parametrize(
    "files",
    [
        {"session.txt": _session("gpu-a", "gpu-b")},
        {
            "a.txt": _session("gpu-a", "gpu-a").split("$ grep -i xid")[0],
            "b.txt": "$ grep -i xid" + _session("gpu-b", "gpu-b").split("$ grep -i xid")[1],
        },
        {"session.txt": _rotated("/var/log/kern.log.1")},
        {"session.txt": _rotated("/var/log/syslog.1")},
        {"session.txt": _rotated("/var/log/messages.2.gz")},
        {"session.txt": _rotated("/var/log/messages-20261129")},
        {
            "boxA_grep_error.txt": "$ sudo dmesg | grep -i error\n[    2.113201] ACPI Error: AE_NOT_FOUND\n",
            "boxB_grep_nvrm.txt": f"$ sudo dmesg | grep -i nvrm\n[74889.644138] {XID}\n",
        },
    ],
    ids=[
        "two-hosts-one-session",
        "two-hosts-two-files",
        "kern.log.1",
        "syslog.1",
        "messages.2.gz",
        "messages-dated",
        "two-files",
    ],
)
def test_greps_not_known_to_be_of_one_box_and_boot_are_refused(tmp_path: Path, files: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="kernel log output"):
        _load(tmp_path, files)


@pytest.mark.parametrize("hosts", [("gpu-node", "gpu-node"), ("", "")], ids=["one-host", "dmesg"])
def test_greps_of_one_box_at_one_prompt_are_still_joined(tmp_path: Path, hosts: tuple[str, str]) -> None:
    if hosts[0]:
        text = _session(*hosts)
    else:
        text = (
            f"$ sudo dmesg | grep -i nvrm\n[    6.104412] {LOADING}\n"
            f"$ sudo dmesg | grep -i xid\n[74889.644138] {XID}\n"
        )
    notes = _load(tmp_path, {"session.txt": text})
    assert any("two excerpts of the kernel log of this boot" in n for n in notes), notes
