"""BROWSER TEST: the HTML acceptance report rendered by a real headless chromium (Debian package).

Renders a passing host (with benchmark data, so the SVG chart is present) and a failing host to
HTML, then runs `chromium --headless --dump-dom` and `--screenshot`; the screenshots stay under
pytest's tmp dir as artifacts (path printed with -s / -rA). Skipped, with the reason, when no
chromium is installed (`BOOTSTRAP_TESTS=1 scripts/bootstrap.sh` installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from gpuonboard.report import render

from .summaries import _host, _run

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium, or BOOTSTRAP_TESTS=1)"
    ),
]


def _chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run headless chromium once; a launch that hangs (seen under a loaded CI, the browser never
    exiting after its dump) is killed and tried again, up to three times, before the test fails."""
    assert CHROMIUM is not None
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *extra,
        url,
    ]
    for attempt in range(3):
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp, start_new_session=True
        )
        try:
            out, err = proc.communicate(timeout=60)
            return subprocess.CompletedProcess(argv, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test started: the browser and its children
            proc.communicate()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("case", "lang"), [("pass", "en"), ("fail", "en"), ("fail", "zh")])
def test_report_renders_in_headless_chromium(tmp_path: Path, case: str, lang: str) -> None:
    h = _host("gpu-1", case, "8" if case == "pass" else "4")
    if case == "pass":
        h["benchmarks"] = [
            {"name": "matmul bf16", "value": 250.0, "unit": "TFLOPS", "reference": 312, "verdict": "pass"},
            {"name": "nccl all_reduce", "value": 180.0, "unit": "GB/s", "reference": 200, "verdict": "pass"},
        ]
    _run(tmp_path, [h])
    out, _, go = render.report(tmp_path / "reports", "20261129-000000-aaaa", "html", REPO, lang)
    assert go is (case == "pass")
    url = out.resolve().as_uri()

    dom = _chromium(tmp_path, url, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    verdict = {"en": "GO" if go else "NO-GO", "zh": "验收通过（GO）" if go else "验收不通过（NO-GO）"}[lang]
    assert f'<span class="verdict {"go" if go else "nogo"}" id="verdict">{verdict}</span>' in html
    assert html.count('<tr class="rule"') == 2
    assert 'data-rule="gpu_count" data-verdict="' + case + '"' in html
    assert 'data-rule="ram" data-verdict="pass"' in html
    assert "<table" in html and ("Order vs delivered" if lang == "en" else "订购与交付对比") in html
    if case == "pass":
        assert "<svg" in html and html.count("<rect") >= 4  # two values, two references
    else:
        reason = {
            "en": "rule gpu_count failed: expected 8, got 4",
            "zh": "规则 gpu_count 不通过：期望 8，实际 4",
        }
        assert "<svg" not in html and reason[lang] in html

    shot = tmp_path / "report.png"
    done = _chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1280,2000")
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    print(f"screenshot artifact: {shot}")
