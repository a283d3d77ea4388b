"""An issue's numbered reproduction steps, each a command after its list number and its output
below it, read as a session's commands: the list number is the step's prompt (api/numbered_steps.py,
api/saved_text.py). measure39e 12, nvidia-container-toolkit#146: `2. nvidia-smi -L` and its GPU line
among `1. sudo apt-get install ...`, `3. nvidia-ctk --version`, `4. sudo nvidia-ctk cdi list`, ...
was refused as "not a recognised command output"; with `$ ` prompts before the steps it was read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api.numbered_steps import step_heads
from gpuonboard.api.transcript import runs_read_tool

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
STEPS = (
    "session__numbered-steps-apt+nvidia-smi-L+nvidia-ctk-version+cdi-list__rtx2060"
    "__nvidia-container-toolkit-146.txt"
)
ORDER = "gpu_model: GeForce RTX 2060\ngpu_count: 1\nmin_driver: '535'\n"


def test_the_issues_steps_are_read(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "steps.txt", (REAL / STEPS).read_text(), ORDER)
    assert got["gpu_model"] == ("pass", "1 x NVIDIA GeForce RTX 2060")
    assert got["gpu_count"] == ("pass", "1")
    assert got["min_driver"][0] == "unverified"  # (`-L` prints no driver; prose is no output)


def test_the_steps_read_as_under_prompts(tmp_path: Path) -> None:
    text = (REAL / STEPS).read_text()
    prompted = re.sub(r"(?m)^\d\. ", "$ ", text)
    assert verdicts(tmp_path, "s.txt", text, ORDER) == verdicts(tmp_path, "s.txt", prompted, ORDER)


@pytest.mark.parametrize("number", ["2. ", "2.", "3) ", "12. "])
def test_one_step_and_its_listing(tmp_path: Path, number: str) -> None:
    """The step alone with its GPU line (its list number with or without a blank after it)."""
    lines = (REAL / STEPS).read_text().split("\n")
    at = lines.index("2. nvidia-smi -L")
    text = f"{number}nvidia-smi -L\n{lines[at + 1]}\n"
    assert verdicts(tmp_path, "s.txt", text, ORDER)["gpu_model"] == ("pass", "1 x NVIDIA GeForce RTX 2060")


KUBECTL_L = (
    "nvidia-smi-L__a30__1gpu__prompt__kubectl-exec-driver-pod__defaulted-container-notice"
    "__gpu-operator-442.txt"
)
TABLE = (
    "nvidia-smi__tesla-t4-cgpu-share-3231mib__1gpu__driver418.87.01__kubectl-exec-pod__copied-command"
    "__table-on-one-line__aliyun-ack-edge.txt"
)


@pytest.mark.parametrize(("name", "order"), [(KUBECTL_L, "gpu_count: 1\n"), (TABLE, "gpu_count: 1\n")])
def test_a_steps_container_command_narrows_as_a_prompts_does(tmp_path: Path, name: str, order: str) -> None:
    """Real captures whose copied command runs nvidia-smi in a pod (`kubectl exec ... --`, `oc
    exec ...`), that command written as a numbered step (HAMi's `3.sudo docker run ...`: no
    blank): judged as under its prompt (the pod's view), never as the box's own."""
    text = (REAL / name).read_text()
    first, rest = text.split("\n", 1)
    command = re.sub(r"^.*?[$#]\s*", "", first)
    prompted = verdicts(tmp_path, "p.txt", f"$ {command}\n{rest}", order)
    stepped = verdicts(tmp_path, "p.txt", f"3.{command}\n{rest}", order)
    assert prompted["gpu_count"][0] == "unverified"
    assert stepped["gpu_count"] == prompted["gpu_count"]


@pytest.mark.parametrize(
    "lines",
    [
        ["1. Install the driver", "2. Reboot", "3. Run the job"],  # (no step types a read command)
        ["2.5 GHz nvidia-smi", "10.0.0.1$ nvidia-smi"],  # (a number, a host: no list number)
    ],
)
def test_numbers_that_type_no_read_command_are_no_steps(lines: list[str]) -> None:
    assert step_heads(lines, set(), runs_read_tool, 400) == []


def test_every_step_of_a_list_is_a_part() -> None:
    lines = ["1. sudo apt-get install x", "done", "2. nvidia-smi -L", "GPU 0: A", "3.Check user group"]
    assert [i for i, _ in step_heads(lines, set(), runs_read_tool, 400)] == [0, 2, 4]
