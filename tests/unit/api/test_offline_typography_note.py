"""A saved output holding typographic quotes (a web page's or a chat's `‘`, `’`, `“`, `”`, `…`) is
read as ASCII, and a line quoted from it shows the ASCII: a note says so, so that a quote is never
taken for the characters as printed (measure31d 24)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CURLY = "nvidia-smi__failed-couldnt-communicate-curly-quote__qixuema-envs-4.txt"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_quoted_failure_read_from_typographic_quotes_says_it_was_normalised(tmp_path: Path) -> None:
    """qixuema/envs#4's `couldn‘t communicate`: the failure is judged (it is recognised) and
    quoted as `couldn't`; a note names the character read as ASCII."""
    (tmp_path / "nvidia-smi.txt").write_text((REAL / CURLY).read_text(encoding="utf-8"), encoding="utf-8")
    spec = tmp_path.parent / f"{tmp_path.name}-order.yml"
    spec.write_text("gpu_count: 1\n")
    r = cli(str(tmp_path / "nvidia-smi.txt"), "--order", str(spec))
    assert r.returncode == 1, r.stderr
    stderr = " ".join(r.stderr.split())
    assert "nvidia-smi.txt: its typographic quotes are read, and quoted, as ASCII (`‘` as `'`)." in stderr
    assert "couldn't communicate" in r.stdout


def test_an_output_without_typographic_quotes_has_no_such_note(tmp_path: Path) -> None:
    """The same failure with its ASCII apostrophe: nothing normalised, no note."""
    text = (REAL / CURLY).read_text(encoding="utf-8").replace("\u2018", "'")
    (tmp_path / "nvidia-smi.txt").write_text(text, encoding="utf-8")
    r = cli(str(tmp_path / "nvidia-smi.txt"))
    assert "typographic" not in r.stderr
