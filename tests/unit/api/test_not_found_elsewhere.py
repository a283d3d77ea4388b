"""A saved "command not found" is the box's answer that its login lacks the tool only where the
copied command ran the tool itself in the login's shell (`nvidia-smi`, `/usr/bin/nvidia-smi -q`,
`CUDA_VISIBLE_DEVICES=0 nvidia-smi`). Said by sudo or doas (their own search path, sudo's
secure_path), or answering a command that runs the tool elsewhere (`docker exec`, `docker run`,
`kubectl exec/logs`, `ssh otherhost`, `srun`), it says nothing of the box: never `nvidia_driver`
failed "nvidia-smi not found"; one sentence naming the file and what to save (exit 2 alone; in a
session, a note and the rest judged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
SUDO = REAL / "sudo__nvidia-smi-not-found__secure-path__gt710-vm-check-sh.txt"
FREE = REAL / "free-k__h200-vm__procps-4.0.2.txt"
# the real line a pod's bash printed (`kubectl logs -n gpu-test1 gpu-deployment-7497756fc-nb25q`:
# search index file 10966108687, a DRA GPU test's notes), and the GH200 login node's own shell's
# (tests/fixtures/sessions, the Miyabi session)
POD_LINE = "bash: line 1: nvidia-smi: command not found"
LOGIN_LINE = (
    (FIXTURES / "sessions" / "transcript__nvidia-smi-NOTFOUND+nvcc-version__gh200-miyabi-login-node.txt")
    .read_text()
    .splitlines()[1]
)
ELSEWHERE = [
    "kubectl logs -n gpu-test1 gpu-deployment-7497756fc-nb25q",
    "docker exec -it trainer bash -c nvidia-smi",
    'docker run --rm ubuntu:22.04 bash -c "nvidia-smi"',
    "kubectl exec -it cuda-pod -- nvidia-smi",
    "ssh otherhost nvidia-smi",
    "srun -p gpu --gres=gpu:1 nvidia-smi",
    "sudo nvidia-smi",
]
ITSELF = ["nvidia-smi", "/usr/bin/nvidia-smi -q", "CUDA_VISIBLE_DEVICES=0 nvidia-smi -L", "nvidia-smi | head"]


def _driver(paths: list[Path], notes: list[str] | None = None) -> tuple[str, str]:
    facts = parse_facts(offline.load_outputs([str(p) for p in paths], notes))
    check = next(c for c in offline.judge(facts, OrderSpec(gpu_count=1)) if c.name == "nvidia_driver")
    return check.verdict, check.actual


@pytest.mark.parametrize("command", ELSEWHERE)
def test_in_a_session_a_not_found_elsewhere_is_not_the_boxs(tmp_path: Path, command: str) -> None:
    session = tmp_path / "session.txt"
    session.write_text(f"$ {command}\n{POD_LINE}\n$ free -k\n{FREE.read_text()}")
    notes: list[str] = []
    assert _driver([session], notes) == ("unverified", "not judged: no nvidia-smi output was given")
    assert len(notes) == 1 and f"line 1 (`{command}`)" in notes[0], notes
    if "nvidia-smi" in command:  # (a command naming no tool this tool reads: `is not an output ...`)
        assert f"(`{command}`): `{POD_LINE}`" in notes[0]
        assert "does not say whether the box has nvidia-smi" in notes[0]


@pytest.mark.parametrize("command", [c for c in ELSEWHERE if "nvidia-smi" in c.split("|")[0].split()[-1:]])
def test_alone_under_its_prompt_it_is_refused_in_one_sentence(tmp_path: Path, command: str) -> None:
    saved = tmp_path / "nvidia-smi.txt"
    saved.write_text(f"root@gpu01:~# {command}\n{POD_LINE}\n")
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    said = str(refused.value)
    assert said.startswith(f"{saved}: `{POD_LINE}` ") and "\n" not in said
    assert "does not say whether the box has nvidia-smi: save `nvidia-smi` run" in said


@pytest.mark.parametrize("command", ITSELF)
def test_a_command_that_runs_the_tool_itself_is_the_boxs_answer(tmp_path: Path, command: str) -> None:
    session = tmp_path / "session.txt"
    session.write_text(f"$ {command}\n{LOGIN_LINE}\n$ free -k\n{FREE.read_text()}")
    assert _driver([session]) == ("fail", "nvidia-smi not found")
    alone = tmp_path / "alone.txt"
    alone.write_text(f"{LOGIN_LINE}\n")  # (no copied command: the shell's word is the box's)
    assert _driver([alone]) == ("fail", "nvidia-smi not found")


def test_sudos_not_found_is_not_the_tool_absent(tmp_path: Path) -> None:
    """The real `sudo: nvidia-smi: command not found` (a GT 710 VM's check script): sudo's own
    search path, not the login's; it failed nvidia_driver "nvidia-smi not found"."""
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(SUDO)])
    assert str(refused.value) == (
        f"{SUDO}: `sudo: nvidia-smi: command not found` is sudo's answer: sudo looks nvidia-smi up on its"
        " own search path (sudo's secure_path), not the login's, so it does not say whether the box has"
        " nvidia-smi: save `nvidia-smi` run without sudo (or `sudo $(command -v nvidia-smi)`)."
    )
    session = tmp_path / "session.txt"
    session.write_text(f"$ sudo dmesg -T\nsudo: dmesg: command not found\n$ free -k\n{FREE.read_text()}")
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(session)], notes))
    assert "line 1 (`sudo dmesg -T`): `sudo: dmesg: command not found` is sudo's answer" in notes[0]
    assert not [c for c in offline.judge(facts, OrderSpec(gpu_count=1)) if "not found" in c.actual]


@pytest.mark.parametrize("by", ["sudo", "doas", "/usr/bin/sudo"])
def test_sudo_and_doas_say_it_of_their_own_path(by: str) -> None:
    from gpuonboard.api.saved_forms import not_this_box, tool_missing

    missing = tool_missing(f"{by}: nvidia-smi: command not found\n")
    assert missing is not None and missing.by == by.rsplit("/", 1)[-1]
    assert "search path" in (not_this_box(missing, "") or "")
    shell = tool_missing("-bash: nvidia-smi: command not found\n")
    assert shell is not None and not_this_box(shell, "") is None


@pytest.mark.parametrize(
    ("probe", "said", "rules"),
    [
        ("kernel_log", "-bash: journalctl: command not found", ("gpu_xid", "nvswitch_sxid")),
        ("kernel_log", "sh: 1: dmesg: not found", ("gpu_xid", "nvswitch_sxid")),
        ("lscpu", "sh: 1: lscpu: not found", ("cpu_cores",)),
    ],
)
def test_a_missing_reader_is_said_to_be_missing(probe: str, said: str, rules: tuple[str, ...]) -> None:
    """A tool not installed (exit 127, as a saved not-found is read) is said so, with what to do
    about a missing tool: it was advised read access to the kernel log (sudo, the adm group), or
    said "lscpu gave no readable output"."""
    from gpuonboard.facts.probe import ProbeOutput

    facts = parse_facts({probe: ProbeOutput("", said, 127)})
    judged = {c.name: c for c in offline.judge(facts, OrderSpec(cpu_cores=4))}
    for name in rules:
        check = judged[name]
        assert check.verdict == "unverified" and "not installed" in check.actual and said in check.actual
        assert "read access" not in check.detail and "no readable output" not in check.actual
