"""foreign_processes of a Windows table cut inside GPU 0's second row (`|  0%   37C    P8    17W /
350W |   1619MiB / 12288MiB |      8%      De`, measure34e 19): its utilisation, whole before
the compute mode the cut went through, is read; and under the WDDM driver model, whose
desktop (dwm.exe, explorer.exe ...) holds GPU memory with Display Active read Off, memory held
beside a process list the cut took is no job's from the figures alone: unverified."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_any

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
WSL = REAL / (
    "nvidia-smi__geforce-name-cut__1gpu-12288mib__driver526.47__windows-wddm__prompt-glyph"
    "__cut-in-gpu0-compute-mode__wsl-9099.txt"
)
WDDM_Q = REAL / "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm.txt"


def test_the_utilisation_before_a_cut_compute_mode_is_read() -> None:
    """The real table's GPU-Util cell `      8%      De`: 8 % read, the compute mode not."""
    (gpu,) = parse_any(WSL.read_text().split("\n", 1)[1]).gpus
    assert (gpu.utilization_gpu_pct, gpu.compute_mode, gpu.memory_used_mib) == (8, None, 1619)


def test_a_wddm_gpus_memory_beside_a_list_cut_away_is_unverified(tmp_path: Path) -> None:
    """The real WSL issue's table: unverified, naming 8 % and 1.6 GiB and the list cut away.
    Before: a fail "utilisation not reported with 1.6 GiB used ... another job"."""
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", WSL.read_text())["foreign_processes"]
    assert verdict == "unverified", actual
    assert actual.startswith("GPU 0 at 8 % utilisation with 1.6 GiB used")
    assert "cut" in actual


def test_a_wddm_desktop_holds_memory_with_display_active_off() -> None:
    """The ground for it: the real RTX 2080 SUPER -q under WDDM (591.86) reads Display Active
    Disabled while its desktop's processes (dwm.exe, explorer.exe ...) hold 1296 MiB."""
    (gpu,) = parse_any(WDDM_Q.read_text()).gpus
    assert (gpu.driver_model, gpu.display_active) == ("WDDM", "Disabled")
    assert gpu.memory_used_mib is not None and gpu.memory_used_mib > 1024
    assert any(p.name.endswith("dwm.exe") for p in gpu.processes)
