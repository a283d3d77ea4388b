"""BROWSER TEST: the HTML acceptance report rendered by a real headless chromium (Debian package).

Renders a passing host (with benchmark data, so the SVG chart is present) and a failing host to
HTML, then runs `chromium --headless --dump-dom` and `--screenshot`; the screenshots stay under
pytest's tmp dir as artifacts (path printed with -s / -rA). Skipped, with the reason, when no
chromium is installed (`BOOTSTRAP_TESTS=1 scripts/bootstrap.sh` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from html import unescape
from pathlib import Path

import pytest

from gpuonboard.i18n import t
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

    # one launch: the DOM as rendered, and a screenshot (an artifact under pytest's tmp dir)
    shot = tmp_path / "report.png"
    dom = _chromium(tmp_path, url, "--dump-dom", f"--screenshot={shot}", "--window-size=1280,2000")
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

    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    print(f"screenshot artifact: {shot}")


# Measured inside the report (a copy of it: the report itself has no script) once it is laid out:
# the page's width, and per verdict/status cell and verdict badge the lines its text takes.
_MEASURE = """<script>
(function () {
  function box(el) {
    var r = document.createRange(); r.selectNodeContents(el);
    var tops = [];
    for (var q of r.getClientRects()) {
      if (q.width > 0 && !tops.some(function (t) { return Math.abs(t - q.top) < 2; })) tops.push(q.top);
    }
    return {text: el.textContent, lines: tops.length, height: r.getBoundingClientRect().height,
            font: em(el)};
  }
  document.querySelectorAll("details").forEach(function (e) { e.open = true; });  // the raw outputs too
  var d = document.documentElement;
  function all(selector) { return Array.from(document.querySelectorAll(selector)); }
  function em(e) { return parseFloat(getComputedStyle(e).fontSize); }
  var out = {
    scrollWidth: d.scrollWidth, clientWidth: d.clientWidth,
    cells: all("td.v, th.v, .verdict, td.pass, td.warn, td.fail, td.unverified").map(box),
    narrow: all("td.x").filter(function (e) { return e.getBoundingClientRect().width < 5 * em(e); }).length,
    bare: all("table").filter(function (t) { return !t.parentElement.classList.contains("scroll"); }).length
  };
  parent.document.getElementById("measure").textContent = JSON.stringify(out);
})();
</script>"""


def _harness(report: str, width: int, height: int) -> str:
    """A page that shows the report in a `width` px wide frame (a phone's width: a headless
    window is never narrower than 500 px) and collects its measures."""
    from html import escape

    inner = report.replace("</body>", _MEASURE + "</body>")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;display:block}'
        f'</style></head><body><iframe width="{width}" height="{height}" srcdoc="{escape(inner)}"></iframe>'
        '<pre id="measure"></pre></body></html>'
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1280, 390])
def test_report_layout_at_desktop_and_phone_width(tmp_path: Path, lang: str, width: int) -> None:
    """Both languages at desktop and phone width: the page never scrolls sideways (wide tables
    scroll inside their own box), and no verdict or status word wraps (the Chinese verdict column
    took one character per line)."""
    import json

    from .rich_run import RUN_ID, rich_run

    rich_run(tmp_path)
    out, _, _ = render.report(tmp_path / "reports", RUN_ID, "html", REPO, lang)
    page = tmp_path / f"layout-{lang}-{width}.html"
    page.write_text(_harness(out.read_text(encoding="utf-8"), width, 2400), encoding="utf-8")
    shot = tmp_path / f"layout-{lang}-{width}.png"
    done = _chromium(
        tmp_path, page.as_uri(), "--dump-dom", f"--screenshot={shot}", f"--window-size={width},2400"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="measure">(.*?)</pre>', done.stdout, re.S)
    assert found and found.group(1), done.stdout[-2000:]
    m = json.loads(unescape(found.group(1)))
    print(f"screenshot artifact: {shot}; measures: {m['scrollWidth']} of {m['clientWidth']} px")
    assert m["bare"] == 0  # every table in its scrolling box
    assert m["narrow"] == 0  # nor is a value squeezed to a few characters a line to fit
    assert m["clientWidth"] <= width and m["scrollWidth"] <= m["clientWidth"], m
    cells = m["cells"]
    words = {"pass", "warn", "fail", "unverified", "raw_verified", "raw_mismatch", "raw_missing", "s_skipped"}
    assert len(cells) >= 20 and {t(f"v_{w}" if "_" not in w else w, lang) for w in words} <= {
        c["text"] for c in cells
    }
    for c in cells:
        assert c["lines"] == 1 and c["height"] < 2 * c["font"], c  # one line (two: ~2.8 font sizes)
