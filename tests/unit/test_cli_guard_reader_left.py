"""Any command whose reader leaves mid-output (`... | head -1`) exits 141 quietly, as a shell
tool killed by SIGPIPE, not 70 "internal error (BrokenPipeError)": the guard every task runs in
catches what a plain print into the closed pipe raises."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_broken_pipe_in_any_task_is_exit_141_without_a_word() -> None:
    script = textwrap.dedent(
        """
        import sys
        from invoke import Exit
        from gpuonboard.cli import _guard

        def command():
            for _ in range(100000):
                print("a line of output nobody reads any more")
            return 0

        try:
            _guard(command, debug=False)
        except Exit as exc:
            if exc.message:
                print(exc.message, file=sys.stderr)
            sys.exit(exc.code)
        """
    )
    r, w = os.pipe()
    os.close(r)  # the reader has gone before the first line
    try:
        p = subprocess.run([sys.executable, "-c", script], stdout=w, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(w)
    assert p.returncode == 141, p.stderr
    assert p.stderr == b""
