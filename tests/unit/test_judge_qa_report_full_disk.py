"""`invoke report` on a disk that takes no more (a real write failure: the file-size limit of
the process, RLIMIT_FSIZE, which makes write() fail with EFBIG as a full disk does ENOSPC)."""

from __future__ import annotations

import hashlib
import resource
import signal
import subprocess
import sys
from pathlib import Path

from .test_report_render import _host, _run

RUN = "20261129-000000-aaaa"


def report(cwd: Path, max_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if max_file_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--run", RUN]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, preexec_fn=limit)


def test_a_report_that_cannot_be_written_is_one_sentence_and_the_old_one_stays(tmp_path: Path) -> None:
    """It was `error: internal error (OSError: [Errno 27] File too large); rerun with --debug and
    report it.`, exit 70: a bug of the tool, for a full disk."""
    run = _run(tmp_path, [_host("gpu-1", "pass", "8")])
    first = report(tmp_path)
    assert first.returncode == 0, first.stderr
    html, sha = run / "report.html", run / "report.html.sha256"
    before = html.read_bytes(), sha.read_text()

    r = report(tmp_path, max_file_bytes=4096)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: cannot write {html} (File too large); free space there (or fix its permissions)"
        " and run `invoke report` again."
    )
    assert "Traceback" not in r.stderr
    # the earlier report is whole, its checksum still matches, and no temp file is left behind
    assert (html.read_bytes(), sha.read_text()) == before
    assert sha.read_text().split()[0] == hashlib.sha256(html.read_bytes()).hexdigest()
    assert sorted(p.name for p in run.iterdir()) == [
        "raw",
        "report.html",
        "report.html.sha256",
        "summary.json",
    ]
