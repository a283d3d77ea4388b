"""A poster's label line naming, in inline code, the command that printed the block below it is
that block's copied command, as a prompt line of the command is (api/label_lines.py): measure39e
17, gpu-operator's issue template's ticked checkbox ` - [x] Output from running `nvidia-smi` from
the driver container: `kubectl exec DRIVER_POD_NAME ... -- nvidia-smi`` above the driver
container's table. Before, the label was dropped without a word and the table read as the box's
own (gpu_count and nvidia_driver passed); under a `$ kubectl exec ...` prompt it is unverified."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpuonboard.api.label_lines import label_command

from ..offline_judge import column_wrapped, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TEMPLATE = (
    "nvidia-smi__rtx4090-535.129.03__template-checkbox-label-kubectl-exec-driver-ctr-indented-fence-CUT"
    "__gpu-operator-607.txt"
)
KUBECTL_L = (
    "nvidia-smi-L__a30__1gpu__prompt__kubectl-exec-driver-pod__defaulted-container-notice"
    "__gpu-operator-442.txt"
)
IN_CONTAINER = "shows only the GPUs of the container it ran in"


def test_the_templates_table_is_the_driver_containers_view(tmp_path: Path) -> None:
    got = verdicts(
        tmp_path, "smi.txt", (REAL / TEMPLATE).read_text(), "gpu_model: GeForce RTX 4090\ngpu_count: 1\n"
    )
    assert got["gpu_count"][0] == "unverified"
    assert (
        "`kubectl exec DRIVER_POD_NAME -n OPERATOR_NAMESPACE -c nvidia-driver-ctr -- nvidia-smi`"
        in got["gpu_count"][1]
    )
    assert IN_CONTAINER in got["gpu_count"][1]
    assert IN_CONTAINER in got["nvidia_driver"][1]


def _labelled(text: str, label: str) -> str:
    """`text` with its copied prompt line (its first) replaced by `label`."""
    return label + "\n" + text.split("\n", 1)[1]


# label lines of one command, in the shapes posters and issue templates write them
LABELS = [
    " - [x] Output from running `nvidia-smi` from the driver container: `{command}`",
    "Output of `{command}`:",
    "**Output of `{command}`:**",
    "`{command}` shows：",
    "3. Output from `{command}`:",
    "## Result of running `{command}` in the pod:",
]


@pytest.mark.parametrize("label", LABELS)
def test_a_label_line_reads_as_the_prompt_line_of_its_command(tmp_path: Path, label: str) -> None:
    """The real `kubectl exec ... -- nvidia-smi -L` of a driver pod, its prompt line written as
    each label: judged as under the prompt (the pod's view, unverified), never as the box's."""
    text = (REAL / KUBECTL_L).read_text()
    command = text.split("\n", 1)[0].removeprefix("$ ")
    order = "gpu_model: A30\ngpu_count: 1\n"
    prompted = verdicts(tmp_path, "l.txt", text, order)
    labelled = verdicts(tmp_path, "l.txt", _labelled(text, label.format(command=command)), order)
    assert prompted["gpu_count"][0] == "unverified" and IN_CONTAINER in prompted["gpu_count"][1]
    assert labelled["gpu_count"] == prompted["gpu_count"]
    assert labelled["gpu_model"] == prompted["gpu_model"]


@pytest.mark.parametrize(
    ("line", "command"),
    [
        (
            " - [x] Output from running `nvidia-smi` from the driver container:"
            " `kubectl exec POD -n NS -c ctr -- nvidia-smi`",
            "kubectl exec POD -n NS -c ctr -- nvidia-smi",
        ),
        ("Output of `docker info`:", "docker info"),
        ("`nvidia-smi` shows:", "nvidia-smi"),
        ("- [ ] `$ sudo lscpu`:", "sudo lscpu"),
        ("Command: numactl --hardware", "numactl --hardware"),
    ],
)
def test_the_command_a_label_names(line: str, command: str) -> None:
    assert label_command(line) == command


@pytest.mark.parametrize(
    ("line", "command"),
    [
        # (prose naming a command, no label's colon)
        ("I ran `kubectl exec POD -- nvidia-smi` and it hung", None),
        # (a colon, but the code names no command whose output is read)
        ("Output of `my-script.sh`:", None),
        # (a container CLI's name alone is no command that printed an output: the one before it)
        ("I executed the `nvidia-smi` command from a sample container using `ctr`:", "nvidia-smi"),
    ],
)
def test_what_names_no_command_is_no_label_command(line: str, command: str | None) -> None:
    assert label_command(line) == command


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_label_wrapped_inside_its_code_is_read_joined(tmp_path: Path, width: int) -> None:
    """The real template's label line (150 columns) wrapped by a page's word wrap or cut at a
    terminal's column, inside its `kubectl exec ...` code span: read joined, as whole."""
    text = (REAL / TEMPLATE).read_text()
    label, rest = text.split("\n", 1)
    for pasted in (
        "\n".join(textwrap.wrap(label, width)) + "\n" + rest,
        column_wrapped(label, width) + "\n" + rest,
    ):
        got = verdicts(tmp_path, "smi.txt", pasted, "gpu_count: 1\n")
        assert got["gpu_count"][0] == "unverified" and IN_CONTAINER in got["gpu_count"][1]
