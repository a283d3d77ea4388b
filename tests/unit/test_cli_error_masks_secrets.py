"""The terminal's `error:` line (a GpuonboardError's sentence, and the internal-error line of a
bug of ours) masks every live Secret, as the run log does: an error quoting a passphrase or a
registry password (a tool's refusal that echoes it) never shows it on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

GUARDED = """
import sys
from gpuonboard import cli, masking
from gpuonboard.errors import CryptoError

secret = masking.Secret("hunter2-passphrase-XYZ")

def fail_known():
    raise CryptoError("age refused the identity 'hunter2-passphrase-XYZ': bad key")

def fail_bug():
    raise ValueError("unexpected 'hunter2-passphrase-XYZ'")

for fn in (fail_known, fail_bug):
    try:
        cli._guard(fn, False)
    except BaseException as exc:
        sys.stderr.write(str(getattr(exc, "message", exc)) + "\\n")
"""


def test_error_lines_mask_live_secrets() -> None:
    env = {**os.environ, "GPUONBOARD_DEBUG": ""}
    r = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True, env=env)
    assert "hunter2-passphrase-XYZ" not in r.stderr, r.stderr
    assert "error: age refused the identity '********': bad key" in r.stderr, r.stderr
    assert "error: internal error (ValueError: unexpected '********')" in r.stderr, r.stderr
