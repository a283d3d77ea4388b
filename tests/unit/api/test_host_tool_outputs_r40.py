"""Outputs of host tools this tool does not read, refused by name (api/named_outputs.py,
api/journal_refusal.py; measure40a 15, measure40c 15, 21): a gpu_burn run (its `nvidia-smi -L`
lines, then its progress lines), rasdaemon's `ras-mc-ctl --summary` (and `edac-util -v`), and a
`systemctl status UNIT` with its journal below other commands' lines; never the generic "not a
recognised command output", whose list of what is read names `nvidia-smi -L`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
BURN = "gpu-burn__docker-run-L-lines-then-progress-cut__2x-gtx1080__gpu-burn-48.txt"
RAS = "ras-mc-ctl-summary__no-memory-aer-errors-1-corrected-mce__7800x3d__rasdaemon-121.txt"
MCELOG = "systemctl-status-mcelog__failed-amd-family-23-journal-under-lsmod__mcelog-80.txt"
GENERIC = "not a recognised command output"


def _refusal(tmp_path: Path, text: str, name: str = "box.txt") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / name)])
    return str(err.value)


def _real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("cut", [None, 6])
def test_a_gpu_burn_run_is_named_with_its_gpus(tmp_path: Path, cut: int | None) -> None:
    """The run as saved, and cut after its first progress line."""
    text = "\n".join(_real(BURN).split("\n")[:cut])
    said = _refusal(tmp_path, text)
    assert GENERIC not in said, said
    assert "gpu_burn's own output" in said and "(2 x NVIDIA GeForce GTX 1080)" in said, said
    assert "errors 0 - 0" in said


def test_a_gpu_burn_run_of_its_own_binary_is_named(tmp_path: Path) -> None:
    """The family: `./gpu_burn 60` at a bash prompt, the -L lines without the fence."""
    lines = [ln for ln in _real(BURN).split("\n") if not ln.startswith(("```", "➜"))]
    said = _refusal(tmp_path, "$ ./gpu_burn 60\n" + "\n".join(lines))
    assert "gpu_burn's own output" in said, said


def test_ras_mc_ctl_summary_is_named_with_what_it_says(tmp_path: Path) -> None:
    said = _refusal(tmp_path, _real(RAS))
    assert GENERIC not in said, said
    assert "`ras-mc-ctl --summary` output" in said and "no Memory, PCIe AER" in said, said
    assert "`1 Corrected error, no action required. errors`" in said and "`sudo dmesg -T`" in said


def test_edac_util_is_named(tmp_path: Path) -> None:
    text = "$ edac-util -v\nmc0: 0 Uncorrected Errors with no DIMM info\nmc0: csrow0: 0 Uncorrected Errors\n"
    text += "mc0: csrow0: ch0: 0 Corrected Errors\nmc0: csrow0: ch1: 0 Corrected Errors\n"
    said = _refusal(tmp_path, text)
    assert "`edac-util -v` output" in said, said


def test_systemctl_status_below_other_commands_is_a_journal_of_other_programs(tmp_path: Path) -> None:
    said = _refusal(tmp_path, _real(MCELOG))
    assert GENERIC not in said, said
    assert said.split(": ", 1)[1].startswith(
        "`systemctl status mcelog` (Active: failed (Result: exit-code))"
    ), said
    assert "a journal of other programs' lines only (7 lines of systemd, mcelog)" in said
    assert "`mcelog: ERROR: AMD Processor family 23: mcelog does not support this processor." in said


def test_systemctl_status_alone_is_a_journal_of_other_programs(tmp_path: Path) -> None:
    """The family: the status and its journal without the `lsmod` lines above."""
    text = _real(MCELOG)
    said = _refusal(tmp_path, text[text.index("systemctl status") :])
    assert "`systemctl status mcelog` (Active: failed (Result: exit-code)) and a journal" in said, said
