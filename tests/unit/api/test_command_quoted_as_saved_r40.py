"""A command line quoted from a saved capture is shown as saved but for a secret's value
(masking.command_said): a variable's expansion (`$PWD:/srv`, `${PWD}:/mnt`) is no field named
`PWD`, `NAME:VALUE` in one word is an image's tag, a host's port or a bind's two paths unless a
part of NAME is a secret's word, and a published port (`-p 8080:80`) is no password
(measure40d 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.masking import MASK, command_said

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
SINGULARITY = "nvidia-smi__singularity-home-pwd-bind-cut-after-gpu2__gtx1080ti-396.26__singularity-1548.txt"
ORDER = "order:\n  gpu_model: GTX 1080 Ti\n  gpu_count: 4\n  vram: 11GB\n"


def test_the_launchers_command_is_quoted_as_saved(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "box.txt", (REAL / SINGULARITY).read_text(encoding="utf-8"), ORDER)
    actual = got["gpu_count"][1]
    assert "--home $PWD:/srv --nv" in actual, actual
    assert MASK not in actual


@pytest.mark.parametrize(
    "command",
    [
        "singularity exec --bind ${PWD}:/mnt img nvidia-smi",
        "singularity exec -B $PWD:/data img nvidia-smi",
        "docker run --rm -p 8080:80 -p 127.0.0.1:9400:9400/tcp img nvidia-smi",
        "docker run --rm authelia/authelia:latest nvidia-smi",
        "docker run --rm -v $HOME/models:/models keycloak/keycloak:21.1 nvidia-smi",
    ],
)
def test_binds_ports_and_tags_are_shown(command: str) -> None:
    assert command_said(command) == command


@pytest.mark.parametrize(
    ("command", "secret"),
    [
        ("curl -H Authorization:Bearer1234567 http://x", "Bearer1234567"),
        ("curl -H 'X-Api-Key:abcdefgh' http://x", "abcdefgh"),
        ("docker run -e MYSQL_PWD=hunter22 img", "hunter22"),
        ("tool token:abcdef123", "abcdef123"),
    ],
)
def test_secret_fields_stay_masked(command: str, secret: str) -> None:
    said = command_said(command)
    assert secret not in said and MASK in said, said


@pytest.mark.parametrize("above", ["!nvidia-smi", "$ nvidia-smi"])
@pytest.mark.parametrize("fence", ["", "```"])
def test_the_launchers_prompt_under_another_prompt_is_the_command(
    tmp_path: Path, above: str, fence: str
) -> None:
    """The capture under a notebook cell's or a shell's prompt line (its fence glued on or not):
    the prompt right under it, `[0741] cuser1@cgpu-1 ~$ singularity ...` (a counter, then a user
    and a path a blank apart), is the command whose output follows (saved_text._SHELL_PROMPT);
    before, the line above was, and the launcher's view was lost. With 1 GPU ordered, the 3 the
    runtime's view lists pass on that floor (round 40's sess fix), said as that view's."""
    text = (REAL / SINGULARITY).read_text(encoding="utf-8").removeprefix("```")
    got = verdicts(tmp_path, "box.txt", f"{above}\n{fence}{text}", ORDER.replace("4", "1", 1))
    verdict, actual = got["gpu_count"]
    assert verdict == "pass", actual
    assert actual.startswith("3 listed; at least 3 on the box: `singularity exec"), actual
    assert "its container runtime was given" in actual
