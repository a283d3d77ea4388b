"""A table's process row whose memory cell nvidia-smi shortened to the terminal's width
(`...16/swift_uv/.venv/bin/python3      12724... |` under `watch`, measure34c 03, a real
Slurm how-to's session): the process is read (GPU, PID, type, name), its memory not, and
foreign_processes names it, never "no process list was read from this output"."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
SLURM = SESSIONS / (
    "transcript__squeue+ssh-node+watch-nvidia-smi-h200-580.65-process-memory-cell-shortened+exit__slurm-howto.txt"
)


def test_the_shortened_memory_cells_process_is_read() -> None:
    text = SLURM.read_text()
    table = text[text.index("Fri Aug 21") : text.index("[userA@25a-hgpn001 ~]$ exit")]
    (gpu,) = parse_any(table).gpus
    assert [(p.pid, p.type, p.name, p.used_memory_mib) for p in gpu.processes] == [
        (1082305, "C", "...16/swift_uv/.venv/bin/python3", None)
    ]


def test_foreign_processes_names_the_process(tmp_path: Path) -> None:
    """The real session: a fail naming pid 1082305. Before: "no process list was read"."""
    verdict, actual = verdicts(tmp_path, "session.txt", SLURM.read_text())["foreign_processes"]
    assert verdict == "fail"
    assert actual.startswith("GPU 0: pid 1082305 ...16/swift_uv/.venv/bin/python3")
    assert "no process list" not in actual
