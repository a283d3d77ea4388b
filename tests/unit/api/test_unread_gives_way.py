"""An output that read nothing of the box (a kernel log reader's refusal, the shell's `nvidia-smi:
command not found`) gives way to an output of its kind that read it, in one saved session (`dmesg`
refused, then `sudo dmesg`) and in a folder of saved files: it is no rival view of the box, and the
output that read the box is judged as if given alone. Two outputs that both read the box stay
refused (tests/unit/api/test_transcript.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
SESSIONS = FIXTURES / "sessions"
CLOUD_SHELL = SESSIONS / "transcript__dmesg-REFUSED+sudo-dmesg+uname+lsmod__google-cloud-shell.txt"
ORDER = OrderSpec(gpu_model="RTX 4090", gpu_count=1, min_driver="535")

# what the box answered where nothing was read: real captures (the shell's line is the one the GH200
# login node's session printed)
DMESG_REFUSED = (REAL / "dmesg__refused-operation-not-permitted__aws-log-collector__scylla.txt").read_text()
JOURNAL_REFUSED = (
    REAL / "journalctl__refused-not-in-adm-group__hint-no-entries__systemd-250.txt"
).read_text()
NOT_FOUND = (
    SESSIONS / "transcript__nvidia-smi-NOTFOUND+nvcc-version__gh200-miyabi-login-node.txt"
).read_text().splitlines()[1] + "\n"
# outputs of the same kinds that read the box: a fatal Xid 79, an XML, a -q text and a table
XID = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"
XML = REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
Q = REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
PAIRS = [
    ("dmesg", DMESG_REFUSED, "sudo dmesg -T", XID),
    ("journalctl -k -b", JOURNAL_REFUSED, "sudo dmesg -T", XID),
    ("nvidia-smi -q -x", NOT_FOUND, "/usr/local/nvidia/bin/nvidia-smi -q -x", XML),
    ("nvidia-smi -q", NOT_FOUND, "/usr/local/nvidia/bin/nvidia-smi -q", Q),
    ("nvidia-smi", NOT_FOUND, "/usr/local/nvidia/bin/nvidia-smi", TABLE),
]


def _judged(paths: list[Path]) -> list[tuple[str, str, str, str]]:
    facts = parse_facts(offline.load_outputs([str(p) for p in paths]))
    return [(c.name, c.verdict, c.actual, c.detail) for c in offline.judge(facts, ORDER)]


def test_the_real_cloud_shell_session_judges_the_log_sudo_read() -> None:
    """Google Cloud Shell: `dmesg | head` refused, then `sudo dmesg | head` read the log (it was
    refused with exit 2 as two kernel_log outputs)."""
    notes: list[str] = []
    assert sorted(offline.load_outputs([str(CLOUD_SHELL)], notes)) == ["kernel", "kernel_log"]
    assert notes == [
        f"{CLOUD_SHELL}: a saved terminal session; not read: the text above its first prompt (`Welcome to"
        ' Cloud Shell! Type "help" to get started, or type ...`) is not an output this tool reads;'
        " line 6 (`whoami`) is not an output this"
        " tool reads; line 8 (`lsmod | head`) is not an output this tool reads; line 19 (`dmesg | head`)"
        " answered `dmesg: read kernel buffer failed: Operation not permitted`; line 21"
        " (`sudo dmesg | head`) is judged."
    ]
    xid = {name: actual for name, _, actual, _ in _judged([CLOUD_SHELL])}["gpu_xid"]
    assert xid.startswith("no Xid in the kernel log")  # (the log read, cut by `head`: not a refusal)


@pytest.mark.parametrize(("failed", "answer", "command", "capture"), PAIRS)
@pytest.mark.parametrize("failed_first", [True, False])
def test_in_a_session_the_output_that_read_the_box_is_judged(
    tmp_path: Path, failed: str, answer: str, command: str, capture: Path, failed_first: bool
) -> None:
    parts = [f"$ {failed}\n{answer}", f"$ {command}\n{capture.read_text()}"]
    session = tmp_path / "session.txt"
    session.write_text("".join(parts if failed_first else parts[::-1]))
    assert _judged([session]) == _judged([capture])


@pytest.mark.parametrize(("failed", "answer", "command", "capture"), PAIRS)
@pytest.mark.parametrize("failed_name", ["a.txt", "zz.txt"])
def test_in_a_folder_the_output_that_read_the_box_is_judged(
    tmp_path: Path, failed: str, answer: str, command: str, capture: Path, failed_name: str
) -> None:
    (tmp_path / failed_name).write_text(answer)
    (tmp_path / f"m-{capture.name}").write_text(capture.read_text())
    notes: list[str] = []
    offline.load_outputs([str(tmp_path)], notes)
    said = [n for n in notes if n.startswith(str(tmp_path / failed_name))]
    if _kind(capture) in ("kernel_log", "nvidia_smi"):  # (the same kind: the unread one is noted)
        assert len(said) == 1 and said[0].endswith(f"; {tmp_path / ('m-' + capture.name)} is judged.")
    assert _judged([tmp_path]) == _judged([capture])


def _kind(capture: Path) -> str:
    return next(iter(offline.load_outputs([str(capture)])))


def test_two_refusals_of_one_kind_are_one_unread_log(tmp_path: Path) -> None:
    session = tmp_path / "session.txt"
    session.write_text(f"$ dmesg\n{DMESG_REFUSED}$ journalctl -k\n{JOURNAL_REFUSED}")
    judged = {name: verdict for name, verdict, _, _ in _judged([session])}
    assert (judged["gpu_xid"], judged["nvswitch_sxid"]) == ("unverified", "unverified")


def test_two_logs_that_read_the_box_stay_refused(tmp_path: Path) -> None:
    session = tmp_path / "session.txt"
    log = XID.read_text()
    session.write_text(
        f"$ sudo dmesg -T\n{log}$ sudo dmesg -T | tail -3\n{''.join(log.splitlines(True)[-3:])}"
    )
    with pytest.raises(UsageError, match="are two kernel log outputs"):
        offline.load_outputs([str(session)])


@pytest.mark.parametrize(("failed", "answer", "command", "capture"), PAIRS[:3])  # (one kind each)
def test_an_unread_output_gives_way_only_within_one_folder(
    tmp_path: Path, failed: str, answer: str, command: str, capture: Path
) -> None:
    """Two folders (two hosts' raw/<host>/, or one host's two runs) may be two boxes or two times:
    an unread answer in one and a real one in the other stay two outputs (exit 2), never one box
    judged on another's answer, nor on its own older one since its driver broke."""
    (tmp_path / "hostA").mkdir()
    (tmp_path / "hostB").mkdir()
    (tmp_path / "hostA" / "a.txt").write_text(answer)
    (tmp_path / "hostB" / f"m-{capture.name}").write_text(capture.read_text())
    assert _kind(capture) in ("kernel_log", "nvidia_smi")
    with pytest.raises(UsageError, match="a second"):
        offline.load_outputs([str(tmp_path / "hostA" / "a.txt"), str(tmp_path / "hostB")])
