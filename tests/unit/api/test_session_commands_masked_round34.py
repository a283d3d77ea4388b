"""(round 34) Three gaps of the masking of a typed command (masking.command_said, the notes of
`invoke facts`, and command_shown, the autostop watcher's log and status), each checked where a
user sees it:

- `docker login -u me -p hunter registry`: the registry login's `-p` given apart is the password by
  the program's own row of PASSWORD_OPTIONS (`docker login`, `podman login`...), whatever it
  looks like; before, a plain lower-case word was shown (read as `journalctl -p err`'s priority,
  which, like `srun -p gpu`'s partition, stays as typed);
- `echo PW | docker login --password-stdin`: echo's words that go on to another program are
  masked in the notes as command_shown masks them (one rule); before, the notes showed PW;
- `mongo --authenticationDatabase admin -p PW`: an option named for a secret but ending in what
  is none (the database it authenticates against) shows its value; before, `admin` was masked.

The sessions are constructed (the commands a user types are the case); the nvidia-smi table
after them is the real one of tests/fixtures/real (SOURCES.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.masking import MASK, command_said, command_shown

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TABLE = (REAL / "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt").read_text()
M = MASK
# (command typed, how the notes quote it, the secret)
FORMS = [
    (
        "docker login -u me -p hunter registry.example.com",
        f"docker login -u me -p {M} registry.example.com",
        "hunter",
    ),
    ("podman login -u me -p hunterpod quay.io", f"podman login -u me -p {M} quay.io", "hunterpod"),
    (
        "echo hunterecho | docker login -u me --password-stdin nvcr.io",
        f"echo {M} | docker login -u me --password-stdin nvcr.io",
        "hunterecho",
    ),
    ("docker login --password-stdin <<< hunterhere", f"docker login --password-stdin <<< {M}", "hunterhere"),
    (
        "mongo --authenticationDatabase admin -p huntermongo",
        f"mongo --authenticationDatabase admin -p {M}",
        "huntermongo",
    ),
]


def _facts_json(tmp_path: Path, session: str) -> tuple[subprocess.CompletedProcess[str], str]:
    path = tmp_path / "session.txt"
    path.write_text(session)
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return r, r.stdout + r.stderr


@pytest.mark.parametrize(("command", "said", "secret"), FORMS)
def test_the_facts_json_and_its_notes_quote_the_command_masked(
    tmp_path: Path, command: str, said: str, secret: str
) -> None:
    r, out = _facts_json(tmp_path, f"$ {command}\nLogin Succeeded\n$ nvidia-smi\n{TABLE}")
    assert r.returncode in (0, 1), out
    json.loads(r.stdout)
    assert secret not in out, out
    assert f"`{said}`" in " ".join(out.split()), out


@pytest.mark.parametrize("command", ["journalctl -p err -b", "srun -p gpu --gres=gpu:1 hostname"])
def test_a_p_that_is_no_password_is_quoted_as_typed(command: str) -> None:
    assert command_said(command) == command


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("docker login -u me -p hunter registry", f"docker login -u {M} -p {M} registry"),
        ("echo hunter | docker login --password-stdin", f"echo {M} | docker login --password-stdin"),
        ("mongo --authenticationDatabase admin -p hunter", f"mongo --authenticationDatabase admin -p {M}"),
    ],
)
def test_command_shown_masks_the_same_forms(command: str, shown: str) -> None:
    """command_shown (the watcher's log and status) masks each password, and shows mongo's
    authentication database and the `--password-stdin` login's registry (a flag taking no value)."""
    got = command_shown(command)
    assert "hunter" not in got and got.startswith(shown + " [sha256:"), got


def test_the_watcher_s_status_and_log_show_the_login_masked(tmp_path: Path) -> None:
    """End to end through the autostop watcher: a before_shutdown that logs in with a password
    apart; its status and log show the command masked, never the password."""
    from ..steps.autostop.box import T0, Box

    before = "docker login -u me -p hunterwatch registry.example.com || true"
    box = Box(tmp_path, idle="1m", grace="1m", before_shutdown=before, shutdown_command="true")
    status = box.run(T0, "status").stdout
    box.ticks(T0, 4)
    for text in (status, box.log()):
        assert "hunterwatch" not in text and f"docker login -u {M} -p {M} registry.example.com" in text, text


@pytest.mark.parametrize(
    "command", ["echo $HF_TOKEN | docker login --password-stdin", 'echo "$PATH" | tr : " "']
)
def test_a_variable_echo_prints_into_a_pipe_is_shown_by_both(command: str) -> None:
    """A `$VAR` is a name, never the secret it holds: shown by the notes and command_shown alike
    (command_shown masked it in a pipe, while printf's `$VAR` was shown: one rule now)."""
    assert command_said(command) == command
    assert command_shown(command).startswith(command.replace('"', "").split(" | ")[0] + " | ")
