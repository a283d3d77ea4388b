"""sshd runs every command with the login user's shell (`$SHELL -c TEXT`, argv[0] the shell's
name). Commands were built for POSIX shells, so on a host whose login shell is tcsh (csh: "Unmatched
'" at a newline inside quotes) the whole batched probe printed nothing and acceptance said
`nvidia_driver` FAIL "nvidia-smi failed (probe produced no output)" on a box whose driver works;
fish reads `\\\\` inside single quotes as one backslash. Every command now reaches sshd through
shell.login_neutral: the same command runs alike under bash, dash, fish, csh and tcsh.

Each case runs as sshd runs it, with the real shells installed here (one not installed is
skipped), on the project's own commands."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard import shell
from gpuonboard.connection.gather import build_script, core_probes
from gpuonboard.facts.extra_probes import KERNEL_LOG

SHELLS = ["bash", "dash", "zsh", "fish", "csh", "tcsh"]
# the project's commands, each with a quote, a newline, `$`, `\\`, `!` or `%` in it
COMMANDS = {
    "gather": shell.sh_c(build_script(list(core_probes()), "@@tok")),
    "kernel_log": KERNEL_LOG.command,
    "env": shell.sh_c(shell.with_env('printf \'%s\\n\' "$GPO_X" "$0"', {"GPO_X": "a 'b' $c \\d"})),
    "quoted": shell.join(["printf", "%s|", "a\\b", "it's", "x!y", "$HOME", "é", "tab\there", "two\nlines"]),
    "heredoc": "cat <<'EOF'\n$not expanded\nEOF\n",
}


def _as_sshd(login: str, text: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`text` run as sshd runs a command for a user whose login shell is `login` (in `cwd`: a
    text the shell misreads may write files)."""
    path = shutil.which(login)
    if path is None:
        pytest.skip(f"{login} is not installed here")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "SHELL": path,
        "LC_ALL": "C.UTF-8",
    }
    argv = [os.path.basename(path), "-c", text]
    quiet = {"capture_output": True, "text": True, "timeout": 60, "stdin": subprocess.DEVNULL}
    return subprocess.run(argv, executable=path, env=env, cwd=cwd, **quiet)


@pytest.mark.parametrize("login", SHELLS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_login_shell_runs_the_command_as_sh_does(login: str, name: str, tmp_path: Path) -> None:
    command = COMMANDS[name]
    sent = shell.login_neutral(command)
    got = _as_sshd(login, sent, tmp_path)
    want = subprocess.run(
        ["sh", "-c", command],
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert (got.returncode, _stable(name, got.stdout)) == (want.returncode, _stable(name, want.stdout)), (
        got.stderr
    )


def _stable(name: str, out: str) -> str:
    """The output, or of the gather (whose probes read a live machine) its framing lines: each
    probe's begin and end with its exit code."""
    if name != "gather":
        return out
    return "\n".join(line for line in out.splitlines() if line.startswith("@@tok "))


def test_the_gather_as_sent_before_printed_nothing_under_tcsh(tmp_path: Path) -> None:
    """The old text (the command itself) under tcsh: the failure this fixes."""
    got = _as_sshd("tcsh", COMMANDS["gather"], tmp_path)
    assert got.returncode != 0 and "Unmatched" in got.stderr


def test_plain_words_go_as_they_are() -> None:
    assert shell.login_neutral("df -P -k") == "df -P -k"
    assert shell.login_neutral("nproc") == "nproc"


def test_the_wrapper_holds_nothing_a_non_posix_shell_reads_otherwise() -> None:
    sent = shell.login_neutral(COMMANDS["quoted"])
    payload = sent.split("'", 2)[1]
    assert not set(payload) & set("'\n!\\") - {"\\"}  # (a backslash only before 3 octal digits)
    assert all(payload[i + 1 : i + 4].isdigit() for i, c in enumerate(payload) if c == "\\")
