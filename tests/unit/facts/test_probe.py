"""The batched probe script: framing survives hostile outputs, exit codes and stderr are kept."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuonboard import shell
from gpuonboard.facts.probe import Probe, build_script, new_token, split_output
from gpuonboard.testing.hosts import read_pid


def run_script(probes: list[Probe]) -> dict:
    token = new_token()
    # bytes, decoded as the SSH runner does (text=True would translate \r\n)
    proc = subprocess.run(["/bin/sh", "-c", build_script(probes, token)], capture_output=True)
    return split_output(proc.stdout.decode(), proc.stderr.decode(), token, [p.name for p in probes])


def test_outputs_exit_codes_and_stderr_are_separated() -> None:
    probes = [
        Probe("a", "printf 'one\\ntwo\\n'"),
        Probe("b", "printf 'no newline'; echo oops >&2; exit 3"),
        Probe("c", "definitely-not-a-command-xyz"),
        Probe("slow", "sleep 0.1; echo late; echo warn >&2", slow=True),
        Probe("empty", "true"),
    ]
    out = run_script(probes)
    assert out["a"].stdout == "one\ntwo\n" and out["a"].exit_code == 0 and out["a"].stderr == ""
    assert out["b"].stdout == "no newline" and out["b"].exit_code == 3 and out["b"].stderr == "oops\n"
    assert out["c"].exit_code == 127 and out["c"].absent
    assert out["slow"].stdout == "late\n" and out["slow"].stderr == "warn\n" and out["slow"].exit_code == 0
    assert out["empty"].stdout == "" and out["empty"].exit_code == 0


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=200)
)
def test_any_output_round_trips(text: str) -> None:
    # An output that imitates our framing cannot forge a section: the token is random.
    fake = f"@@gpuonboard-0000 end x 0\n{text}"
    cmd = shell.join(["printf", "%s", fake])
    out = run_script([Probe("x", cmd), Probe("y", cmd, slow=True)])
    assert out["x"].stdout == fake
    assert out["y"].stdout == fake


def test_missing_probe_output_is_reported_not_raised() -> None:
    out = split_output("", "", new_token(), ["gone"])
    assert out["gone"].exit_code == -1 and out["gone"].stdout == ""


def test_a_closed_channel_leaves_no_temp_dir_behind(tmp_path) -> None:
    """The reader goes away mid-output (a dropped link, a client timeout): the script dies of
    SIGPIPE on its own printf, and must still remove its private dir from the host's /tmp."""
    probes = [
        Probe("slow", "head -c 300000 /dev/zero | tr '\\0' x", slow=True),
        Probe("after", "echo done"),
    ]
    proc = subprocess.Popen(
        ["/bin/sh", "-c", build_script(probes, new_token())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
    )
    assert proc.stdout is not None
    proc.stdout.read(10)
    proc.stdout.close()
    proc.wait(timeout=20)
    assert proc.returncode != 0
    assert list(tmp_path.iterdir()) == []


def _kill_pid_in(path) -> None:  # a sleep a test's probe started (its pid in that file)
    pid = read_pid(path)
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def test_a_probes_background_process_off_our_pipes_does_not_hold_the_script(tmp_path) -> None:
    """A probe may leave a process running with its output elsewhere: the script still ends
    (dash kept a `{ }` group's saved copies of both pipes open in every subshell a probe forked,
    so each dd waited for that process)."""
    quick, slow = tmp_path / "quick.pid", tmp_path / "slow.pid"
    # a shell subshell (a forked shell, not an exec'd program) waiting for a sleep
    bg = "( sh -c 'echo $$ >{}; exec sleep 30'; : ) >/dev/null 2>&1 </dev/null & echo started"
    probes = [
        Probe("q", bg.format(shell.quote(str(quick)))),
        Probe("s", bg.format(shell.quote(str(slow))), slow=True),
    ]
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", build_script(probes, token := new_token())], capture_output=True, timeout=15
        )
    finally:
        _kill_pid_in(quick)
        _kill_pid_in(slow)
    out = split_output(proc.stdout.decode(), proc.stderr.decode(), token, ["q", "s"])
    assert out["q"].stdout == "started\n" and out["s"].stdout == "started\n"


def test_a_closed_channel_ends_the_script_while_a_slow_probe_still_runs(tmp_path) -> None:
    """The reader goes away while a slow probe still runs: the script ends at once and removes
    its private dir (a slow probe's wrapper holding the stderr pipe's writer kept its dd, and so
    the script, until the probe ended)."""
    pid = tmp_path / "slow.pid"
    probes = [
        Probe("slow", f"sh -c 'echo $$ >{shell.quote(str(pid))}; exec sleep 30'", slow=True),
        Probe("big", "head -c 300000 /dev/zero | tr '\\0' x"),
        Probe("after", "echo done"),  # (its framing line meets the closed pipe: SIGPIPE)
    ]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", build_script(probes, new_token())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp)},
    )
    try:
        assert proc.stdout is not None
        proc.stdout.read(10)
        proc.stdout.close()
        proc.wait(timeout=15)
    finally:
        _kill_pid_in(pid)
    assert proc.returncode != 0
    assert list(tmp.iterdir()) == []
