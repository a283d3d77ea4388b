"""A folder's file that is no output this tool reads (round 32, m32b 02): one missing answer, named
in a note, the folder's other files judged, as a file that cannot be read is (round 31,
api/unread_files.py); named itself it is still refused, and a folder of nothing else read too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LSCPU = "lscpu__epyc-7281-2s-16c-8-numa__cut-at-l3-cache__inxi-136.txt"
COUNT = "cpuinfo-grep-c-processor__copied-command__32__inxi-136.txt"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_an_unrecognised_file_beside_an_lscpu_is_one_missing_answer(tmp_path: Path) -> None:
    """inxi#136's `grep -c ^processor /proc/cpuinfo` (`32`, under its prompt line) saved beside
    the same box's lscpu refused the whole folder (exit 2, "not a recognised command output"), the
    lscpu unjudged. It is named in a note, what it holds unverified, and the lscpu judged (2 x
    16 cores: 32 ordered passes, 64 fails); a folder where it is the only file is still refused,
    and so is the file named alone (named beside the lscpu, it is a note too: round 35)."""
    folder = tmp_path / "box"
    folder.mkdir()
    shutil.copy(REAL / LSCPU, folder / "lscpu.txt")
    shutil.copy(REAL / COUNT, folder / "cpuinfo-count.txt")
    count = folder / "cpuinfo-count.txt"
    for cores, verdict, code in ((32, "pass", 0), (64, "fail", 1)):
        order = tmp_path / "order.yml"
        order.write_text(f"cpu_cores: {cores}\n")
        r = cli(tmp_path, str(folder), "--order", str(order), "--json")
        assert r.returncode == code, r.stderr
        assert r.stderr.startswith(f"note: {count}: not a recognised command output (expected ")
        assert r.stderr.strip().endswith(
            "Not read: what it would have shown is unverified (one missing answer: the other files"
            " are judged)."
        )
        doc = json.loads(r.stdout)
        (rule,) = [x for x in doc["rules"] if x["name"] == "cpu_cores"]
        assert rule["verdict"] == verdict and rule["actual"].startswith("32 cores"), rule
        assert any(str(count) in note for note in doc["notes"])
    r = cli(tmp_path, f"{folder / 'lscpu.txt'},{count}")  # (named among several: a note too, round 35)
    assert r.returncode == 0 and r.stderr.startswith(f"note: {count}: not a recognised command output")
    r = cli(tmp_path, str(count))  # (named alone: refused)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {count}: not a recognised command output")
    (folder / "lscpu.txt").unlink()
    r = cli(tmp_path, str(folder))
    assert r.returncode == 2 and r.stderr.strip().endswith("No other output was given, so nothing is judged.")
