"""Round 34 (measure34e 29, measure34a 10): a session's `kubectl exec -it POD -- sh` opened a shell
in the pod, and the commands typed at that shell's prompt below it ran there (api/shell_opened.py):
the note said the exec "printed nothing" and the pod shell's `sh: nvidia-smi: not found` could not
be read; a table typed at `root@POD:/#` was read as the box's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.shell_opened import opened_shell, without_bare_prompts

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
SH_POD = SESSIONS / (
    "transcript__kubectl-exec-it-sh-OPENS-POD-SHELL+sh-nvidia-smi-not-found+kubectl-exec-nvidia-smi-5090d"
    "__ssa-notes.txt"
)
BASH_POD = SESSIONS / (
    "transcript__kubectl-exec-it-bash-OPENS-POD-SHELL+nvidia-smi-at-pod-prompt-460.73-CUT__k8s-device-plugin-257.txt"
)


def _read(path: Path) -> tuple[dict, str]:
    notes: list[str] = []
    outputs = offline.load_outputs([str(path)], notes)
    return outputs, " ".join(notes)


def test_the_opener_opened_a_shell_and_the_pods_answer_is_said() -> None:
    outputs, said = _read(SH_POD)
    assert (
        "line 1 (`kubectl exec -it gpu-test-99bb5ff46-dwxnd -- sh`) opened a shell in the container" in said
    )
    assert "printed nothing" not in said.split("opened a shell")[0], said
    assert "line 2 (`nvidia-smi`): `sh: nvidia-smi: not found` answers" in said, said
    assert "could not read what it printed" not in said, said
    assert "in the box's own login shell, so it does not say whether the box has nvidia-smi" in said, said
    assert list(outputs) == ["nvidia_smi_table"]


def test_a_table_typed_at_the_pods_prompt_is_the_pods_view() -> None:
    outputs, said = _read(BASH_POD)
    assert (
        "line 4 (`kubectl -n kube-system exec -it nvidia-device-plugin-qffmb -- bash`) opened a shell" in said
    )
    table = outputs["nvidia_smi_table"]
    assert "shows only the GPUs of the container it ran in" in table.partial, table.partial
    assert "ran in a container" in table.ran_elsewhere, table.ran_elsewhere


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("kubectl exec -it gpu-test -- sh", "kubectl exec -it gpu-test --"),
        ("kubectl -n ns exec -it pod -c main -- /bin/bash", "kubectl -n ns exec -it pod -c main --"),
        ("docker exec -it app bash", "docker exec -it app"),
        ("docker run -it --rm --gpus all nvcr.io/nvidia/pytorch:24.05-py3 bash", None),
        ("oc exec -ti pod -- bash", "oc exec -ti pod --"),
        ("kubectl exec pod -- sh", ""),  # (no terminal: the shell reads nothing)
        ("kubectl exec -it pod -- nvidia-smi", ""),  # (a command, no shell)
        ("ssh -t box bash", ""),
    ],
)
def test_which_commands_open_a_shell(command: str, prefix: str | None) -> None:
    want = command.rsplit(" ", 1)[0] if prefix is None else prefix
    assert opened_shell(command) == want


def test_the_shells_bare_prompt_after_an_answer_is_no_output() -> None:
    assert without_bare_prompts("sh: nvidia-smi: not found\n/ # \n\n") == "sh: nvidia-smi: not found\n"
