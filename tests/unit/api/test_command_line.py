"""Which part of the box a saved output shows is read from the command the copied line really
runs (api/command_line.py), one way for every kind: the remote command of `ssh HOST '...'`,
the string of `sh -c '...'`, the command after `sudo`, `env`, `docker exec CTR`, `kubectl exec POD
--`, with its own pipes; redirections are no words of it; of a list (`;`, `&&`), the command
of the output's tool. Before, a `|` inside a quoted remote command was an argument (the grep was
lost: a log kept by `grep -i nvidia`, its `NVRM: Xid` lines dropped, passed gpu_xid), `2>&1` /
`; echo done` were journalctl match operands, and a prompt line whose tool follows a quote or a
starship `❯` was not recognised (an earlier boot's fault judged as this boot's). Derived from real
captures (tests/fixtures/derived: derive.py); each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.command_line import commands, pipeline, run
from gpuonboard.api.kernel_command import earlier_boot, newest_first
from gpuonboard.api.narrowed import matrix_pci, narrowed

from ..offline_judge import checks

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"
REAL = Path(__file__).parents[2] / "fixtures" / "real"


@pytest.mark.parametrize(
    ("kind", "command", "tool"),
    [
        ("kernel_log", "ssh box 'dmesg | grep -i nvrm'", "grep"),
        ("kernel_log", 'ssh -i key -p 22 root@box "dmesg -T | grep -i xid"', "grep"),
        ("kernel_log", "docker exec ctr sh -c 'dmesg | grep -i nvidia'", "grep"),
        ("kernel_log", "kubectl exec -it pod -- sh -c 'dmesg | grep NVRM'", "grep"),
        ("kernel_log", "bash -c 'dmesg | grep NVRM'", "grep"),
        ("kernel_log", "watch -n 1 'dmesg | tail'", "tail"),
        ("kernel_log", 'ssh box "journalctl -k -b -1 | grep -i nvrm"', "grep"),  # (grep's -i, not -i FILE)
        ("nvidia_smi", "ssh box 'nvidia-smi -q | grep -i ecc'", "grep"),
        ("df", "ssh box 'df -h | grep -v tmpfs'", "grep"),
    ],
)
def test_a_pipe_inside_a_quoted_remote_command_keeps_lines(kind: str, command: str, tool: str) -> None:
    assert narrowed(kind, command) == f"`{command}` keeps only the lines {tool} let through"


@pytest.mark.parametrize(
    "command",
    [
        'sh -c "journalctl -k -b -1"',
        'bash -lc "journalctl -k -b -1"',
        "ssh box bash -c \"'journalctl -k -b -1'\"",
        "sudo bash -c 'journalctl -k -b -1 > /tmp/k.txt'",
        "env LC_ALL=C nice -n 5 journalctl -k -b -1",
        "cd /tmp && journalctl -k -b -1 2>&1",
    ],
)
def test_an_earlier_boot_inside_a_wrapper(command: str) -> None:
    assert earlier_boot(command)
    assert "is the log of an earlier boot" in narrowed("kernel_log", command)


def test_newest_first_inside_a_shell() -> None:
    assert newest_first("sh -c 'journalctl -k -r'")
    assert not newest_first("sh -c 'dmesg -r'")  # (dmesg's -r is --raw)


@pytest.mark.parametrize(
    "command",
    [
        "journalctl -k 2>/dev/null",
        "journalctl -k --no-pager 2>&1",
        "journalctl -k > /tmp/k.txt",
        "journalctl -k >k.txt",
        "journalctl -k &> k.txt",
        "journalctl -k ; echo done",
        "journalctl -k && echo ok",
        "echo start; journalctl -k",
    ],
)
def test_redirections_and_other_commands_are_no_match_operands(command: str) -> None:
    assert narrowed("kernel_log", command) == ""


def test_redirections_are_no_df_operands() -> None:
    assert narrowed("df", "df -h 2>/dev/null") == ""
    assert narrowed("df", "df -h > df.txt") == ""
    assert "lists only some" in narrowed("df", "df -h /data 2>/dev/null")


def test_a_pcie_matrix_through_ssh() -> None:
    assert matrix_pci("nvidia_topo", "ssh box 'nvidia-smi topo -mp'")
    assert not matrix_pci("nvidia_topo", "ssh box 'nvidia-smi topo -m'")


def test_the_command_line_is_cut_outside_quotes_only() -> None:
    assert commands("journalctl -k 2>&1 ; echo 'a;b' && true") == [
        "journalctl -k 2>&1 ",
        " echo 'a;b' ",
        " true",
    ]
    assert pipeline("journalctl -k -g 'Xid|NVRM' -b -1 || true") == ["journalctl -k -g 'Xid|NVRM' -b -1 "]
    ran = run("cd /var/log && sudo cat kern.log.1 | grep NVRM", ("cat",))
    assert ran.said == "sudo cat kern.log.1 | grep NVRM" and ran.stages == [
        ["cat", "kern.log.1"],
        ["grep", "NVRM"],
    ]


def _gpu_xid(tmp_path: Path, name: str):  # noqa: ANN202 (an offline_judge check)
    return {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]


def test_a_log_kept_by_a_grep_inside_ssh_is_not_this_boots_pass(tmp_path: Path) -> None:
    """`ssh node4 'dmesg -T | grep -i nvidia'` of a log with Xid 43, 31, 94 (the real `dmesg -T |
    grep NVRM`): the grep drops each `NVRM: Xid` line. Was PASS "no Xid in the kernel log"."""
    xid = _gpu_xid(tmp_path, "dmesg-T-grep-i-nvidia__xid-43-31-94-dropped__ssh-quoted-pipe__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "`ssh node4 'dmesg -T | grep -i nvidia'` keeps only the lines grep let through" in xid.actual


@pytest.mark.parametrize("prompt", ["ssh-quoted", "sudo-bash-c", "starship", "starship-dir-sudo"])
def test_an_earlier_boots_fault_under_any_prompt_is_history(tmp_path: Path, prompt: str) -> None:
    """`me@laptop:~$ ssh ubuntu 'journalctl -k -b -1'`, `$ sudo bash -c '...'`, `❯ ...`: the
    prompt line was not recognised (read as a log line) and the fault was judged this boot's."""
    xid = _gpu_xid(tmp_path, f"journalctl-k-b-1__h100-hgx__fallen-off-bus__prompt-{prompt}__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "(logged before the log's last reboot)" in xid.actual
    assert "is the log of an earlier boot" in xid.detail


def test_an_earlier_boots_clean_log_through_ssh_is_no_pass(tmp_path: Path) -> None:
    xid = _gpu_xid(
        tmp_path, "journalctl-k-b-1__ubuntu-20.04-forum__boot-banner__prompt-ssh-quoted__derived.txt"
    )
    assert xid.verdict == "unverified", xid
    assert "`ssh gill-Lite 'journalctl -k -b -1 --no-pager'` is the log of an earlier boot" in xid.actual


def test_this_boots_whole_log_with_stderr_redirected_is_judged(tmp_path: Path) -> None:
    """`journalctl -k -b 0 --no-pager 2>&1`: `2>&1` was read as a match (only some lines). The
    log is the boot's first second (its banner lines): since round 40 it ends during boot, before
    the GPU driver logged anything (unverified for that, never for a match)."""
    xid = _gpu_xid(
        tmp_path, "journalctl-k-b-0__ubuntu-20.04-forum__boot-banner__stderr-redirect__derived.txt"
    )
    assert xid.verdict == "unverified", xid
    assert "it ends during boot" in xid.actual and "grep" not in xid.actual, xid


MINDMINER = "nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv"
MINDMINER_QUERY = (
    " --query-gpu=gpu_name,utilization.gpu,utilization.memory,temperature.gpu,power.draw,power.limit,"
    "fan.speed,clocks.current.graphics,clocks.current.memory,power.default_limit --format=csv,nounits"
)


@pytest.mark.parametrize(
    "tool",
    [
        "nvidia-smi",
        "nvidia-smi.exe ",
        r"C:\Windows\System32\nvidia-smi.exe",
        r'"C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe"',
        r"PS C:\> nvidia-smi.exe",
    ],
)
def test_windows_nvidia_smi_exe_above_its_csv_is_the_tool(tmp_path: Path, tool: str) -> None:
    """Quake4/MindMiner#627's CSV (Windows, driver 442.19) with its command line put above it as
    a Windows console shows it (`nvidia-smi.exe`, its path): it was refused as not a recognised
    output, while the same line with `nvidia-smi` was read."""
    text = (REAL / MINDMINER).read_text()
    got = {
        c.name: c for c in checks(tmp_path, "smi.txt", tool + MINDMINER_QUERY + "\n" + text, "gpu_count: 1\n")
    }
    assert got["gpu_count"].verdict == "pass", got["gpu_count"]
    assert (
        run(tool.removeprefix("PS C:\\> ") + MINDMINER_QUERY, {"nvidia-smi"})
        .head[0]
        .endswith("nvidia-smi.exe" if "exe" in tool else "nvidia-smi")
    )
