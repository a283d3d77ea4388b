"""The all-reduce launcher (remote/allreduce.py) waited for torchrun 900 s whatever
vars.train_timeout said: a run allowed 30 minutes was stopped at 15 with "torchrun did not
finish within 900 s". Its wait now lies beyond the host's own bound of the script, so the
step's timeout governs; the launcher's parser takes the flag (the real script, run here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpuonboard.steps.prove import Launch, host_bound, launcher_argv

SCRIPT = Path(__file__).resolve().parents[2] / "src" / "gpuonboard" / "remote" / "allreduce.py"


def test_the_launchers_wait_follows_train_timeout() -> None:
    for timeout in (60.0, 900.0, 1800.0, 7200.0):
        argv = launcher_argv(Launch("python3", False, "", "/tmp", timeout), None)
        wait = float(argv[argv.index("--timeout") + 1])
        assert wait > host_bound(timeout), (timeout, argv)
    assert launcher_argv(Launch("python3", False, "", "/tmp", 1800.0), 3)[:2] == ["--nproc", "3"]


def test_the_launcher_parses_its_wait() -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('a', {str(SCRIPT)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(m.parse_args(['--nproc', '2', '--timeout', '1850']).timeout)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1850.0"
