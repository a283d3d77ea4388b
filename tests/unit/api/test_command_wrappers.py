"""The command a copied line runs, behind the wrappers and shell syntax a user types (api/
command_line.py, api/saved_text.py's prompt line): `bash -euxo pipefail -c` (the flag group's `o`
takes a value), `su -c`, `runuser`, a shell given `-c` behind a wrapper not known (`crictl exec`,
`chroot`, `nsenter`), `( ... )`, `dmesg|grep` with no blanks, `grep` as the command, `watch -d`
(its value optional), `podman exec -l` (no container), a `#` comment. Before, each read the log
whole (a grep's lines passed `gpu_xid`) or read a comment's `-b -1` as an earlier boot. Derived
from real captures (tests/fixtures/derived: derive.py); each verdict test fails on the code
before (`( ... )`, `dmesg|grep`, `grep` as the command were read right, their prompt line not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.kernel_command import earlier_boot
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"


def _gpu_xid(tmp_path: Path, name: str):  # noqa: ANN202 (an offline_judge check)
    return {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]


@pytest.mark.parametrize(
    "command",
    [
        'bash -euxo pipefail -c "dmesg | grep -i nvrm"',
        'su -c "dmesg | grep -i nvrm"',
        'sudo su -c "dmesg | grep -i nvrm"',
        "su - root --command='dmesg | grep -i nvrm'",
        "runuser -l root -c 'dmesg | grep -i nvrm'",
        "crictl exec -it ctr sh -c 'dmesg | grep -i nvrm'",
        "oc exec pod -- sh -c 'dmesg | grep -i nvrm'",
        "nerdctl exec ctr sh -c 'dmesg | grep -i nvrm'",
        "lxc exec c1 -- bash -c 'dmesg | grep -i nvrm'",
        "chroot /host bash -c 'dmesg | grep -i nvrm'",
        "nsenter -t 1 -m -- sh -c 'dmesg | grep -i nvrm'",
        "(dmesg | grep -i nvrm)",
        "dmesg|grep NVRM",
        "grep -i nvrm <(dmesg)",
        "grep NVRM /var/log/kern.log",
    ],
)
def test_a_filter_behind_any_wrapper_keeps_lines(command: str) -> None:
    assert "keeps only the lines grep let through" in narrowed("kernel_log", command)


@pytest.mark.parametrize(
    "command",
    [
        "watch -n1 -d 'journalctl -k -b -1'",
        "watch -d -n 5 'journalctl -k -b -1'",
        "podman exec -l journalctl -k -b -1",
        "podman exec --latest journalctl -k -b -1",
        "sudo su - root -c 'journalctl -k -b -1'",
    ],
)
def test_an_earlier_boot_behind_these_wrappers(command: str) -> None:
    assert earlier_boot(command)


@pytest.mark.parametrize(
    "command", ["journalctl -k # -b -1", "journalctl -k #-b -1", "journalctl -k -b 0 # -b -1"]
)
def test_a_comment_is_no_option(command: str) -> None:
    assert not earlier_boot(command)
    assert narrowed("kernel_log", command) == ""


def test_a_hash_inside_a_word_or_quotes_is_no_comment() -> None:
    assert earlier_boot("journalctl -k -g 'a #b' -b -1") and earlier_boot("journalctl -k -b -1 -t a#b")


@pytest.mark.parametrize(
    "prompt",
    ["no-blanks", "subshell", "grep-kern-log", "bash-euxo-pipefail", "sudo-su-c", "crictl-exec-sh-c"],
)
def test_a_grep_under_any_prompt_is_no_pass(tmp_path: Path, prompt: str) -> None:
    """The real `dmesg -T |grep NVRM`'s `NVRM: loading` line alone: was PASS "no Xid"."""
    xid = _gpu_xid(tmp_path, f"dmesg-T-grep-NVRM__loading-line-alone__prompt-{prompt}__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "keeps only the lines grep let through" in xid.actual


def test_a_commented_out_boot_is_this_boots_whole_log(tmp_path: Path) -> None:
    """`journalctl -k --no-pager # -b -1 next time`: was an earlier boot's (unverified). The log
    is the boot's first second: since round 40 it ends during boot (unverified for that, and
    said as this boot's, never an earlier one's)."""
    xid = _gpu_xid(tmp_path, "journalctl-k-comment-b-1__ubuntu-20.04-forum__boot-banner__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "it ends during boot" in xid.actual and "earlier boot" not in xid.actual, xid
