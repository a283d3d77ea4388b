"""A saved session with a command that changes the GPUs' state between two nvidia-smi outputs of
the same box (round 33, measure33a 27): a B200 VM's `nvidia-smi` (Persistence-M Off), `nvidia-smi
-pm 1`, `nvidia-smi` (On) was refused as two table outputs. The later is the box now and is
judged; the earlier's faults are kept (folded into the same GPU by PCI address); two outputs of
other GPUs, or with no state change between them, stay refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.state_change import KeptApart, changer_between
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.steps.checks import gpu_health

SESSION = (
    Path(__file__).parents[2]
    / "fixtures"
    / "sessions"
    / "transcript__nvidia-smi+nvidia-smi-pm1+nvidia-smi__b200-vm-580.126.09__persistence-off-then-on.txt"
)


def _facts(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "session.txt").write_text(text, encoding="utf-8")
    notes: list[str] = []
    return parse_facts(offline.load_outputs([str(tmp_path / "session.txt")], notes=notes)), notes


def test_the_later_table_after_pm_1_is_judged(tmp_path: Path) -> None:
    facts, notes = _facts(tmp_path, SESSION.read_text())
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "persistence_mode"]
    assert check.verdict == "pass" and check.actual == "Enabled", check
    assert any("before and after line 22 (`nvidia-smi -pm 1`)" in n for n in notes), notes


def test_a_fault_of_the_earlier_table_is_kept(tmp_path: Path) -> None:
    """The earlier table edited: GPU 0's fan cell `N/A` -> `ERR!` (a sensor nvidia-smi cannot
    read): the later table's GPU holds it, named as of the earlier output."""
    text = SESSION.read_text()
    text = text.replace("| N/A   28C    P0            198W", "| ERR!  28C    P0            198W", 1)
    facts, _ = _facts(tmp_path, text)
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "sensor_faults"]
    assert check.verdict == "warn" and "fan" in check.actual, check


def test_two_boxes_around_a_state_change_stay_refused(tmp_path: Path) -> None:
    text = SESSION.read_text()
    at = text.index("nvidia-smi -pm 1")
    text = text[:at] + text[at:].replace("00000000:00:15.0 Off", "00000000:00:16.0 Off", 1)
    with pytest.raises(UsageError, match="two plain `nvidia-smi` table outputs"):
        _facts(tmp_path, text)


def test_without_a_state_change_between_them_two_tables_stay_refused(tmp_path: Path) -> None:
    text = SESSION.read_text().replace("nvidia-smi -pm 1", "nvidia-smi -L", 1)
    with pytest.raises(UsageError):
        _facts(tmp_path, text)


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("nvidia-smi -pm 1", True),
        ("sudo nvidia-smi -e 0", True),
        ("nvidia-smi -i 0 -mig 1", True),
        ("nvidia-smi --gpu-reset -i 0", True),
        ("sudo /usr/bin/nvidia-smi -pl 300", True),
        ("nvidia-smi -ac 1593,1410", True),
        ("nvidia-smi mig -cgi 9,9 -C", True),
        ("nvidia-smi -q -d PERFORMANCE", False),
        ("nvidia-smi -L", False),
        ("nvidia-smi --query-gpu=name,ecc.mode.current --format=csv", False),
    ],
)
def test_the_commands_that_change_state(command: str, changes: bool) -> None:
    from gpuonboard.api.transcript import Section

    parts = [Section(5, command, None, "")]
    assert (changer_between(parts, 1, 9) is not None) is changes


# (round 33, review revK) the real session edited: the earlier table shows a job at work
_JOB_ROW = "|    0   N/A  N/A           41234      C   python3                                  40950MiB |"


def test_a_job_in_the_earlier_table_keeps_the_two_refused(tmp_path: Path) -> None:
    """sc/s2-job-then-pm1: a `python3` holding 40950 MiB at 100 % in the earlier table, then
    `-pm 1`, then an idle table: judging the later alone passed foreign_processes ("none") and
    lost the job; the two stay refused."""
    text = SESSION.read_text()
    text = text.replace("|       0MiB / 183359MiB |      3%", "|   40960MiB / 183359MiB |    100%", 1)
    text = text.replace("|  No running processes found" + " " * 61 + "|", _JOB_ROW, 1)
    assert _JOB_ROW in text and "40960MiB" in text
    with pytest.raises(UsageError, match="two plain `nvidia-smi` table outputs") as refused:
        _facts(tmp_path, text)
    # (round 34) the refusal says which GPU counts as a job, with what, and what to do
    said = str(refused.value)
    assert "line 22 (`nvidia-smi -pm 1`) changes the GPUs' state" in said, said
    assert "GPU 0 at PCI 00000000:00:15.0 in use: 40960 MiB held" in said, said
    assert "a 100 % load" in said and "process python3 (PID 41234)" in said, said
    assert "save each output in a file of its own and run `invoke facts` on each" in said, said


@pytest.mark.parametrize(
    "moved",
    [
        "ssh gpu02",
        "exit",
        "docker exec -it trainer bash",
        "kubectl exec -it pod-0 -- bash",
        "su -",
        "sudo -i",
    ],
)
def test_a_command_that_moves_the_shell_between_them_keeps_the_two_refused(
    tmp_path: Path, moved: str
) -> None:
    """sc/s7-two-boxes: `ssh gpu02` (the same prompt) before `nvidia-smi -pm 1`: the two tables may
    be two boxes' of one build (same bus ids, same driver), never joined as one."""
    text = SESSION.read_text()
    at = text.index("[root@localhost ~]# nvidia-smi -pm 1")
    text = text[:at] + f"[root@localhost ~]# {moved}\nLast login: Wed Jan 28 06:50:00 2026\n" + text[at:]
    with pytest.raises(UsageError, match="two plain `nvidia-smi` table outputs") as refused:
        _facts(tmp_path, text)
    # (round 34) the refusal quotes the command that may have moved the shell, and what to do
    said = str(refused.value)
    assert f"line 22 (`{moved}`) may have moved the shell to another box or a container" in said, said
    assert "run `invoke facts` on each" in said, said


@pytest.mark.parametrize(
    "command",
    ["nvidia-smi dmon -c 1", "nvidia-smi pmon -c 1", "nvidia-smi nvlink -e", "nvidia-smi nvlink -c"],
)
def test_a_read_only_subcommand_between_them_keeps_the_two_refused(tmp_path: Path, command: str) -> None:
    """sc/s3, s5, s6: `dmon -c 1`, `pmon -c 1`, `nvlink -e` read and change nothing."""
    text = SESSION.read_text().replace("nvidia-smi -pm 1", command, 1)
    with pytest.raises(UsageError):
        _facts(tmp_path, text)


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("nvidia-smi dmon -c 1", False),
        ("nvidia-smi pmon -c 1", False),
        ("nvidia-smi nvlink -e", False),
        ("nvidia-smi nvlink -c", False),
        ("nvidia-smi nvlink -p 0", False),
        ("nvidia-smi -i 0 -pm 1", True),
        ("nvidia-smi --id=1 -e 0", True),
        ("nvidia-smi mig -i 0 -dci", True),
    ],
)
def test_only_options_before_a_subcommand_change_state(command: str, changes: bool) -> None:
    from gpuonboard.api.transcript import Section

    parts = [Section(5, command, None, "")]
    assert (changer_between(parts, 1, 9) is not None) is changes


def test_two_prompt_hosts_are_never_one_box() -> None:
    from gpuonboard.api.transcript import Section

    parts = [Section(1, "nvidia-smi", "gpu01", ""), Section(5, "nvidia-smi -pm 1", "gpu01", "")]
    parts.append(Section(9, "nvidia-smi", "gpu02", ""))
    assert changer_between(parts, 1, 9) is None
    parts[-1] = Section(9, "nvidia-smi", "gpu01", "")
    assert changer_between(parts, 1, 9) is not None


A10_Q = (
    Path(__file__).parents[2] / "fixtures" / "real" / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
).read_text()


def test_two_q_outputs_of_other_uuids_are_never_joined() -> None:
    """Identical servers share bus addresses and a driver: a real A10's `-q` and the same with its
    UUID changed (derived) are two GPUs, never one box before and after `-pm 1`."""
    from gpuonboard.api.state_change import joined_after_change
    from gpuonboard.facts.probe import ProbeOutput

    first = ProbeOutput(A10_Q, "", 0)
    assert (
        joined_after_change("nvidia_smi_q", first, ProbeOutput(A10_Q, "", 0), "nvidia-smi -pm 1") is not None
    )
    other = ProbeOutput(A10_Q.replace("GPU-73d12ef7-f589", "GPU-0a1b2c3d-f589"), "", 0)
    kept = joined_after_change("nvidia_smi_q", first, other, "nvidia-smi -pm 1")
    assert isinstance(kept, KeptApart) and "the GPU UUIDs differ (GPU-73d12ef7-f589" in kept.why, kept


def test_a_session_of_two_q_outputs_of_other_uuids_says_the_uuids(tmp_path: Path) -> None:
    """(round 34) the A10's `-q`, `nvidia-smi -pm 1`, the same `-q` with its UUID changed (derived):
    refused, naming the two UUIDs and what to do."""
    other = A10_Q.replace("GPU-73d12ef7-f589", "GPU-0a1b2c3d-f589")
    text = f"$ nvidia-smi -q\n{A10_Q}\n$ nvidia-smi -pm 1\nEnabled persistence mode\n$ nvidia-smi -q\n{other}"
    with pytest.raises(UsageError, match="the GPU UUIDs differ") as refused:
        _facts(tmp_path, text)
    said = str(refused.value)
    assert "GPU-73d12ef7-f589" in said and "GPU-0a1b2c3d-f589" in said, said
    assert "(`nvidia-smi -pm 1`) changes the GPUs' state" in said and "invoke facts" in said, said


def test_the_earlier_output_kept_beside_names_the_command() -> None:
    """(round 34) The earlier output kept beside the later is named by the command between them."""
    from gpuonboard.api.state_change import joined_after_change
    from gpuonboard.facts.probe import ProbeOutput

    both = joined_after_change(
        "nvidia_smi_q", ProbeOutput(A10_Q, "", 0), ProbeOutput(A10_Q, "", 0), "nvidia-smi -pm 1"
    )
    assert isinstance(both, ProbeOutput) and both.beside[0].partial.endswith("(before `nvidia-smi -pm 1`)"), (
        both
    )
