"""kubectl's own stderr notices above `kubectl exec POD -- CMD`'s output are no part of it
(api/command_line.py ENGINE_OWN_LINE; measure38b 08: `Defaulted container "x" out of: ...` made a pod's
`nvidia-smi -L` "not a recognised command output")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
A30 = (
    "nvidia-smi-L__a30__1gpu__prompt__kubectl-exec-driver-pod"
    "__defaulted-container-notice__gpu-operator-442.txt"
)
ORDER = "gpu_model: A30\ngpu_count: 1\n"


def test_the_defaulted_container_notice_is_kubectls_not_the_output(tmp_path: Path) -> None:
    text = (REAL / A30).read_text(encoding="utf-8")
    got = verdicts(tmp_path, A30, text, ORDER)
    assert "gpu_count" in got and got["gpu_count"][0] == "unverified", got
    assert "1 x NVIDIA A30" in got["gpu_model"][1] and "the container it ran in" in got["gpu_model"][1]
    without = "\n".join(line for line in text.split("\n") if not line.startswith("Defaulted container"))
    assert verdicts(tmp_path, A30, without, ORDER) == got


@pytest.mark.parametrize(
    "notices",
    [
        [
            "Defaulting container name to main.",
            "Use 'kubectl describe pod/gpu-pod -n default' to see all of the containers in this pod.",
        ],
        ["Unable to use a TTY - input is not a terminal or the right kind of file"],
    ],
)
def test_kubectls_other_notices_in_its_place(tmp_path: Path, notices: list[str]) -> None:
    """The family: older kubectl's two lines, and `-t` without a terminal, where the notice was."""
    text = (REAL / A30).read_text(encoding="utf-8")
    lines = text.split("\n")
    other = "\n".join(n for line in lines for n in (notices if line.startswith("Defaulted") else [line]))
    assert other != text
    assert verdicts(tmp_path, A30, other, ORDER) == verdicts(tmp_path, A30, text, ORDER)
