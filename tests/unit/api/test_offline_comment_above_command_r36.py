"""A poster's comment lines above the command they copied without a prompt, and the output under
it (a blog's fence: `# To check for GPU error messages` / `sudo dmesg | grep -iE "nouveau|nvidia|pci"
| grep -i "error"` / `# It gave a response of` / the NVRM lines, measure36e 12; a notes file's `#
Errror` / `nvidia-smi` / NVML's failure, measure36e 16). Before, the comment was read as the
text's first line, so the command under it was not found (api/saved_text.py _prompt_line): the
indented kernel log was refused as "not a recognised command output", hiding an Xid 79, and the
same lines flush left were read as the whole log (nvswitch_sxid passed on a grep's lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_text import copied_command, strip_prompt

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
BLOG = REAL / (
    "log-excerpt__dmesg-grep-xid79__copied-command-under-poster-comments__indented__940mx"
    "__driver550.163.01__hugo-blog.txt"
)
# (measure36e 16's notes file, search index id 10936686305, its last paragraph as written: a test
# input here, not a fixture)
NOTES = (
    "# Errror\nnvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n"
    "NVML library version: 550.90\n"
)
GREP = 'sudo dmesg | grep -iE "nouveau|nvidia|pci" | grep -i "error"'


def test_the_xid_79_under_the_poster_s_comments_fails_gpu_xid(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg-grep.txt", BLOG.read_text(), "gpu_count: 1\n")
    assert got["gpu_xid"][0] == "fail"
    assert "Xid 79" in got["gpu_xid"][1]
    # (a grep's lines: no SXid could be among them)
    assert got["nvswitch_sxid"][0] == "unverified"
    assert "grep" in got["nvswitch_sxid"][1]


@pytest.mark.parametrize("indent", ["as posted", "flush left", "comments dropped"])
def test_the_copied_command_is_read_under_the_comments(tmp_path: Path, indent: str) -> None:
    text = BLOG.read_text()
    if indent == "flush left":
        text = "\n".join(line.strip() for line in text.split("\n"))
    elif indent == "comments dropped":
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))
    assert copied_command(text) == GREP
    got = verdicts(tmp_path, "dmesg.txt", text)
    assert got["gpu_xid"][0] == "fail"
    # (flush left, the log was read as the whole boot's: "no SXid in the kernel log" passed)
    assert got["nvswitch_sxid"][0] == "unverified"


def test_the_bare_nvidia_smi_under_a_heading_comment_is_its_command(tmp_path: Path) -> None:
    text = NOTES
    assert copied_command(text) == "nvidia-smi"
    assert strip_prompt(text).lstrip().startswith("Failed to initialize NVML: Driver/library version")
    assert verdicts(tmp_path, "notes.txt", text)["nvidia_driver"][0] == "fail"


@pytest.mark.parametrize(
    "text",
    [
        # (dmon's header lines: its rows under them, no command)
        "# gpu   pwr  gtemp  mtemp\n# Idx     W      C      C\n    0    43     30      -\n",
        # (a comment above a log with no command: the log's first line kept)
        "# the box's log\n[    5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n",
        # (a command as the last line: no output under it, nothing of it read as one)
        "# then I ran\nnvidia-smi\n",
    ],
)
def test_comment_lines_over_no_command_are_left_as_they_are(text: str) -> None:
    assert strip_prompt(text) == text
    assert copied_command(text) == ""
