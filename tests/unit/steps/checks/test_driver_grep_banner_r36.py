"""`nvidia-smi | grep Driver`: the copied command kept nvidia-smi's banner line and no GPU row (a
filter's choice; measure36e 07, OpenHPC slides' `sudo ssh gpunode002 nvidia-smi | grep Driver`;
an environment notes page's `nvidia-smi | grep Driver`). The banner's version is whole: min_driver
is judged from it, and the GPU rules say the filter kept no GPU row. Before, min_driver was
unverified and every sentence said the output was "cut short or mangled"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...facts.test_nvidia_smi_frames_r36 import REAL
from ...offline_judge import verdicts

K80 = "session__sudo-ssh-nvidia-smi-grep-driver__tesla-k80__driver470.199.02__ohpc-slides.txt"
NOTES = "nvidia-smi-grep-driver__driver430.26__copied-command__env-notes.txt"


@pytest.mark.parametrize(("name", "driver"), [(K80, "470.199.02"), (NOTES, "430.26")])
def test_a_real_grepped_banner_judges_the_driver_and_names_the_filter(
    tmp_path: Path, name: str, driver: str
) -> None:
    major = driver.split(".")[0]
    text = (REAL / name).read_text()
    got = verdicts(tmp_path, name, text, f'min_driver: "{major}"\ngpu_count: 1\n')
    assert got["min_driver"] == ("pass", driver)
    assert got["gpu_count"][0] == "unverified"
    for rule in ("gpu_count", "nvidia_driver"):
        assert "grep let through" in got[rule][1]
        assert "a filter, not a cut" in got[rule][1]
        assert "mangled" not in got[rule][1]
    newer = verdicts(tmp_path, name, text, f'min_driver: "{int(major) + 1}"\n')
    assert newer["min_driver"][0] == "fail"


GREPS = ["grep Driver", "grep -i 'driver version'", "grep NVIDIA-SMI", "egrep Driver"]


@pytest.mark.parametrize("grep", GREPS)
def test_every_grep_keeping_the_banner_of_a_real_table_judges_its_driver(tmp_path: Path, grep: str) -> None:
    """Each real table's banner line, kept by a grep of the command line: judged, never 'cut'."""
    for path in sorted(REAL.glob("nvidia-smi__*__driver5*.txt"))[:12]:
        banner = next((line for line in path.read_text().splitlines() if "NVIDIA-SMI" in line), None)
        if banner is None or "Driver Version:" not in banner:
            continue
        kept = f"$ nvidia-smi | {grep}\n{banner}\n"
        got = verdicts(tmp_path, "nvidia-smi.txt", kept, 'min_driver: "400"\n')
        assert got["min_driver"][0] == "pass", (path.name, got["min_driver"])
