"""A wrapper that returns before the program it started prints (vgpu_unlock#30's
`/root/vgpu_unlock/vgpu_unlock nvidia-smi`): the output lands after the next prompt
(`root@pve:~# Sun Apr 18 12:26:51 2021` and the table). The note said "line 18 (...) printed
nothing" though its table was read and judged (under a 'command' that was its first line); the
output is now its command's (measure31a 28)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
VGPU_UNLOCK_30 = "session__vgpu-unlock-wrapper-outputs-after-next-prompt__quadro-p400__driver460.32.04__cut-at-processes__vgpu-unlock-30.txt"  # noqa: E501


def test_the_output_after_the_next_prompt_is_its_commands() -> None:
    notes: list[str] = []
    kinds = offline.load_outputs([str(REAL / VGPU_UNLOCK_30)], notes)
    assert "nvidia_smi_table" in kinds
    said = " ".join(notes)
    assert "printed nothing" not in said, said
    assert kinds["nvidia_smi_table"].stdout.startswith("Sun Apr 18 12:26:51 2021\n+---")
    assert "vgpu_unlock nvidia-smi" in kinds["nvidia_smi_table"].saved_as


def test_the_table_is_judged(tmp_path: Path) -> None:
    text = (REAL / VGPU_UNLOCK_30).read_text(encoding="utf-8")
    got = verdicts(tmp_path, VGPU_UNLOCK_30, text, "gpu_model: Quadro P400\ngpu_count: 1\n")
    assert got["nvidia_driver"] == ("fail", "driver 460.32.04, CUDA N/A")
    assert got["gpu_model"][0] == "pass"


def test_a_command_after_an_empty_one_stays_a_command(tmp_path: Path) -> None:
    """`dmesg | grep -i xid` printing nothing, then `ls` at the next prompt: no output moved."""
    session = tmp_path / "s.txt"
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    session.write_text(f"u@gpu-1:~$ dmesg | grep -i xid\nu@gpu-1:~$ ls\nfoo\nu@gpu-1:~$ nvidia-smi\n{table}")
    notes: list[str] = []
    offline.load_outputs([str(session)], notes)
    assert "line 1 (`dmesg | grep -i xid`) printed nothing" in " ".join(notes), notes
