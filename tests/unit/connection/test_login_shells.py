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
from gpuonboard.connection.gather import build_script
from gpuonboard.connection.probe_commands import core_probes
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


def _as_sshd(
    login: str, text: str, cwd: Path, home: Path | None = None, shell_var: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`text` run as sshd runs a command for a user whose login shell is `login` (in `cwd`: a
    text the shell misreads may write files), with sshd's SSH_CLIENT; `home` and a $SHELL other
    than the login shell's path (an rc file's export) where given."""
    path = shutil.which(login)
    if path is None:
        pytest.skip(f"{login} is not installed here")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home) if home else os.environ.get("HOME", "/tmp"),
        "SHELL": shell_var or path,
        "LC_ALL": "C.UTF-8",
        "SSH_CLIENT": "192.0.2.1 50000 22",
        "SSH_CONNECTION": "192.0.2.1 50000 192.0.2.2 22",
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


# each login shell's rc files that a command run by sshd reads (bash: ~/.bashrc, as SSH_CLIENT is set
# and it is top level; zsh: ~/.zshenv, at every start); the others read none for a command
RC_FILES = {
    "bash": ".bashrc",
    "zsh": ".zshenv",
    "fish": ".config/fish/config.fish",
    "csh": ".cshrc",
    "tcsh": ".tcshrc",
}


@pytest.mark.parametrize("login", SHELLS)
def test_what_an_rc_file_defines_reaches_a_wrapped_command_as_one_sent_as_it_is(
    login: str, tmp_path: Path
) -> None:
    """A function an unguarded ~/.bashrc (or ~/.zshenv) defines, a conda-style `conda` or an Lmod
    `module`, is the command's, wrapped or not: a wrapper that stopped the second start of the login
    shell from reading its rc file (bash --norc, zsh -f) left a command step's `module load 'cuda
    12'` or `conda run -n x python -c 'print(1)'` with "command not found", where the same step of
    plain words ran. The cost: a POSIX login shell reads the file twice for a wrapped command (sshd's
    start, then the command's); a non-POSIX one once (the command runs in sh)."""
    home = tmp_path / "home"
    for name in RC_FILES.values():
        rc = home / name
        rc.parent.mkdir(parents=True, exist_ok=True)
        # (a line every shell here reads alike: csh, tcsh and fish too)
        rc.write_text(f"echo {name} >> {home}/count\n")
    for name in ("bash", "zsh"):  # (the POSIX shells' rc files: a function of their own syntax)
        with (home / RC_FILES[name]).open("a") as rc:
            rc.write("gpo_fn() { printf '%s|' fn \"$@\"; echo; }\n")
    command = "gpo_fn 'a b' \"$SHLVL\"" if login in ("bash", "zsh") else "printf '%s|' \"$SHLVL\"; echo"

    def run(text: str) -> tuple[str, int]:
        (home / "count").write_text("")
        got = _as_sshd(login, text, tmp_path, home)
        assert got.returncode == 0, got.stderr
        return got.stdout, (home / "count").read_text().count("\n")

    plain = run(f"sh -c {shell.quote(command)}") if login not in _POSIX else run(command)
    wrapped = run(shell.login_neutral(command))
    assert wrapped[0] == plain[0]
    if login in ("bash", "zsh"):
        assert plain[0] == "fn|a b|1|\n"  # (the case is real: the function comes from the rc file)
        assert (plain[1], wrapped[1]) == (1, 2)
    elif login in RC_FILES:  # (csh, where it is tcsh, reads ~/.tcshrc, else ~/.cshrc)
        assert (plain[1], wrapped[1]) == (1, 1)


_POSIX = {"bash", "dash", "zsh"}


@pytest.mark.parametrize("shell_var", ["missing/zsh", "dir/bash", "/usr/bin/busybox"])
@pytest.mark.parametrize("login", ["bash", "dash"])
def test_a_shell_var_naming_no_posix_shell_that_runs_runs_the_command_in_sh(
    login: str, shell_var: str, tmp_path: Path
) -> None:
    """$SHELL from an rc file's `export SHELL=/usr/local/bin/zsh` where zsh is not installed (or a
    directory) made every wrapped command exit 127, where sent as it is it ran; /bin/busybox,
    listed as a POSIX shell, was "applet not found". Each now runs the command in sh."""
    if shell_var.startswith("/") and not os.access(shell_var, os.X_OK):
        pytest.skip(f"{shell_var} is not installed here")
    (tmp_path / "dir" / "bash").mkdir(parents=True)
    command = COMMANDS["quoted"]
    path = shell_var if shell_var.startswith("/") else str(tmp_path / shell_var)
    got = _as_sshd(login, shell.login_neutral(command), tmp_path, shell_var=path)
    want = _as_sshd(login, command, tmp_path)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr
