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
ARROW = REAL / (
    "nvidia-smi__failed-couldnt-communicate__arrow-before-output__copied-command__b300-vm"
    "__proxmox-forum-179366.txt"
)
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


COMMUNICATE = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"


def test_a_posters_arrow_before_the_failure_is_taken_off(tmp_path: Path) -> None:
    """m34e 23a: `nvidia-smi` / `→ NVIDIA-SMI has failed ...` was refused "not a recognised command
    output"; the arrow is the poster's, the line nvidia-smi's: it fails quoting nvidia-smi alone."""
    got = verdicts(tmp_path, "nvidia-smi.txt", ARROW.read_text())["nvidia_driver"]
    assert got == ("fail", f"nvidia-smi failed ({COMMUNICATE})"), got


@pytest.mark.parametrize("arrow", ["⇒ ", "=> ", "-> ", "▶ ", "  → "])
def test_other_arrows_are_the_posters_too(tmp_path: Path, arrow: str) -> None:
    text = ARROW.read_text().replace("→ ", arrow)
    assert verdicts(tmp_path, "nvidia-smi.txt", text)["nvidia_driver"][0] == "fail"


def test_an_arrow_before_other_words_stays_unread() -> None:
    """Only nvidia-smi's failure words lose the arrow: `→ 6.17.0-1014-nvidia` is no output read."""
    from gpuonboard.api.failure_record import unmarked_failure

    assert unmarked_failure("→ 6.17.0-1014-nvidia\n") == "→ 6.17.0-1014-nvidia\n"


OTHER_TOOL = REAL / (
    "nvidia-smi__failed-unknown-error-gpu0__below-another-tools-line-quoting-it__rtx4080__warranty-report.txt"
)


def test_nvidia_smis_own_line_is_quoted_not_another_tools(tmp_path: Path) -> None:
    """m34c 27: `NVIDIA GPU Details | Failed: Unable ...` (another tool's line) above nvidia-smi's
    own `Unable to determine the device handle for GPU0: ...`: the fail quotes nvidia-smi's."""
    got = verdicts(tmp_path, "nvidia-smi.txt", OTHER_TOOL.read_text())["nvidia_driver"]
    want = "nvidia-smi failed (Unable to determine the device handle for GPU0: 0000:01:00.0: Unknown Error)"
    assert got == ("fail", want), got
