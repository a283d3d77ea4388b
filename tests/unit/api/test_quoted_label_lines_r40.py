"""A poster's sentence naming in double (or typographic) quotes the command that printed the
block below it is that block's copied command, as the same sentence with the command in inline
code is (api/label_lines.py): measure40a 05, frigate's `EG this "docker exec -it frigate
nvidia-smi" shows:` above a table. Before, the quoted command was not read and the container's
table passed 8 rules as the box's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.label_lines import label_command

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FRIGATE = (
    "nvidia-smi__geforce-gt1030-525.85.12__prose-double-quoted-docker-exec-label-CUT-in-processes-header"
    "__frigate-5483.txt"
)
KUBECTL_L = (
    "nvidia-smi-L__a30__1gpu__prompt__kubectl-exec-driver-pod__defaulted-container-notice"
    "__gpu-operator-442.txt"
)
IN_CONTAINER = "shows only the GPUs of the container it ran in"
BOX_OWN = ("gpu_count", "vram", "temperature", "persistence_mode", "mig_mode", "ecc_mode")


def test_the_frigate_table_under_a_quoted_command_is_the_containers_view(tmp_path: Path) -> None:
    order = "gpu_model: GeForce GT 1030\ngpu_count: 1\nvram: 2GB\n"
    got = verdicts(tmp_path, "smi.txt", (REAL / FRIGATE).read_text(), order)
    for rule in BOX_OWN:
        assert got[rule][0] == "unverified", rule
        assert IN_CONTAINER in got[rule][1], rule
    assert "`docker exec -it frigate nvidia-smi`" in got["gpu_count"][1]


@pytest.mark.parametrize(
    "label",
    [
        'EG this "{command}" shows:',
        "Running “{command}” gives:",
        "Here's what ‘{command}’ says:",
        "Here's what '{command}' says:",
        'The output of "{command}":',
    ],
)
def test_a_quoted_label_reads_as_the_prompt_line(tmp_path: Path, label: str) -> None:
    """The real `kubectl exec ... -- nvidia-smi -L` of a driver pod, its prompt line written as a
    sentence quoting the command: judged as under the prompt (the pod's view)."""
    text = (REAL / KUBECTL_L).read_text()
    first, rest = text.split("\n", 1)
    command = first.removeprefix("$ ")
    order = "gpu_model: A30\ngpu_count: 1\n"
    prompted = verdicts(tmp_path, "l.txt", text, order)
    quoted = verdicts(tmp_path, "l.txt", label.format(command=command) + "\n" + rest, order)
    assert IN_CONTAINER in prompted["gpu_count"][1]
    assert quoted["gpu_count"] == prompted["gpu_count"]
    assert quoted["gpu_model"] == prompted["gpu_model"]


@pytest.mark.parametrize(
    "line",
    [
        'He said "it works" and then:',  # a quote that names no command
        'EG this "docker exec -it frigate nvidia-smi" shows',  # no colon: a sentence, no label
    ],
)
def test_a_quote_naming_no_command_or_ending_no_label_is_none(line: str) -> None:
    assert label_command(line) is None
