"""Round 34 (measure34e 21, measure34c 15): nvidia-smi's failure quoted by another program's log or
by a person is that program's record or that person's words, never the box's nvidia-smi failing now
(docs/guides/offline.md, as an exporter's journal line quoting it already was).

- nvOC's tempcontrol watchdog log (2019) quotes `Unable to determine the device handle for GPU
  0000:01:00.0: GPU is lost` between its own time-stamped `WARNING: ...` line and `=========` frame:
  it failed nvidia_driver as the box's nvidia-smi; now noted, nothing judged from it.
- an incident write-up's `nvidia-smi: "Unable to determine ..."` (a label and a quote) was read as
  nvidia-smi's own line: only a line that starts with nvidia-smi's own words is its failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.saved_kinds import nvidia_smi_failed
from gpuonboard.connection.gather import parse_facts

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NVOC = REAL / "nvoc-tempcontrol-log__quotes-nvidia-smi-gpu-is-lost-3gpu__2019__excerpt-cut__nvoc-261.txt"
H100 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
LOST = (
    "Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost."
    " Reboot the system to recover this GPU"
)


def test_a_watchdogs_log_quoting_nvidia_smi_is_its_record(tmp_path: Path) -> None:
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "tempcontrol.log").write_text(NVOC.read_text())
    (folder / "nvidia-smi.txt").write_text(H100.read_text())
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(folder)], notes))
    checks = {c.name: c for c in offline.judge(facts, None)}
    assert checks["nvidia_driver"].verdict == "pass", checks["nvidia_driver"]
    said = " ".join(notes)
    assert "tempcontrol.log: another program's log quoting nvidia-smi's failure" in said, notes
    assert "`WARNING: Tue Mar  5 15:17:06 +0330 2019 - tempcontrol@[GPU0] Problem detected" in said, notes
    assert "not the box's nvidia-smi failing now" in said, notes


def test_the_quoted_line_alone_is_nvidia_smis_own_failure(tmp_path: Path) -> None:
    """Edit: the line the log quotes, saved alone, is a failing nvidia-smi's output: it fails."""
    assert LOST in NVOC.read_text()
    assert verdicts(tmp_path, "nvidia-smi.txt", LOST + "\n")["nvidia_driver"][0] == "fail"


@pytest.mark.parametrize(
    "text",
    [  # (test inputs of the shapes the captures show)
        f'nvidia-smi: "{LOST}"\n',
        f'NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\nnvidia-smi: "{LOST}"\n',
        f"2024-05-01 12:00:00 gpu-watch: nvidia-smi query failed:\n{LOST}\n",
    ],
)
def test_a_quote_of_it_is_no_failure(text: str) -> None:
    assert not nvidia_smi_failed(text)


@pytest.mark.parametrize(
    "text",
    [
        f"{LOST}\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "Failed to initialize NVML: Driver/library version mismatch\n",
        "Tue Mar  5 15:17:06 2019\nNo devices were found\n",  # (nvidia-smi's own date line)
    ],
)
def test_nvidia_smis_own_failure_still_is(text: str) -> None:
    assert nvidia_smi_failed(text)
