"""A session pasted as raw HTML (a terminal's HTML export: `<pre><font color=...>╰─</font>
nvidia-smi -L`, YoshitakaMo/localcolabfold#74): its tags dropped and its references decoded in
the shared normaliser (api/paste.py), so that its prompts split it. Before, the whole file was
read as one table: no GPU row, gpu_model, gpu_count and min_driver unverified, its nvcc and -L
sections lost without a note (measure31b 22)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpuonboard.api import transcript
from gpuonboard.api.paste import normalise

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
HTML = (
    "page__nvcc-version+nvidia-smi-L+nvidia-smi-CUT__HTML-PRE-FONT-TAGS-p10k-prompts__"
    "gtx1650-localcolabfold-74.txt"
)


def test_the_html_session_is_split_at_its_prompts() -> None:
    text = normalise((SESSIONS / HTML).read_text())
    assert "<font" not in text and "<pre>" not in text
    parts = transcript.sections(text)
    assert parts is not None
    assert [p.tool_command for p in parts] == ["nvcc --version", "nvidia-smi -L", "nvidia-smi"]


def test_the_html_session_is_judged_as_its_text_would_be(tmp_path: Path) -> None:
    (tmp_path / "order.yml").write_text('gpu_model: GTX 1650\ngpu_count: 1\nmin_driver: "470"\n')
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json"]
    r = subprocess.run(
        [*cmd, str(SESSIONS / HTML), "--order", str(tmp_path / "order.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert [rules[n]["verdict"] for n in ("gpu_model", "gpu_count", "min_driver")] == ["pass"] * 3, rules
    assert rules["min_driver"]["actual"] == "470.103.01"


def test_references_inside_html_are_decoded_once() -> None:
    """A test input: `<pre>` with `&lt;`, `&amp;lt;` and `&nbsp;`; `<br>` as a line end."""
    text = normalise("<pre>$ free -m<br>a &lt;b&gt; &amp;lt; c&nbsp;d\n</pre>")
    assert text == "$ free -m\na <b> &lt; c d\n"


def test_an_xml_and_plain_angle_brackets_are_left_alone() -> None:
    """nvidia-smi's XML has no HTML tag; `<6>` of dmesg -r, `<none>` are not tags of a page."""
    xml = (
        '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>535.54.03</driver_version>\n'
        "</nvidia_smi_log>\n"
    )
    assert normalise(xml) == xml
    plain = "<6>[    0.000000] Linux version 6.8.0\nREPOSITORY <none> &amp;\n"
    assert "<6>" in normalise(plain) and "<none>" in normalise(plain)


# aha's (the Ansi HTML Adapter's) default export around a terminal's text: an XHTML document
# that starts with an XML declaration (`aha < session.txt`; `aha -n` writes no head)
AHA_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" ?>\n'
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN"'
    ' "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
    "<!-- This file was created with the aha Ansi HTML Adapter. https://github.com/theZiz/aha -->\n"
    '<html xmlns="http://www.w3.org/1999/xhtml">\n<head>\n'
    '<meta http-equiv="Content-Type" content="application/xml+xhtml; charset=UTF-8"/>\n'
    "<title>stdin</title>\n</head>\n<body>\n"
)


def test_an_aha_export_with_its_xml_declaration_is_read_as_the_page() -> None:
    """The HTML session inside aha's default document (its `<?xml` declaration, head and body):
    read as the bare page. Before, the `<?xml` kept the page's tags: it was read as a broken
    nvidia-smi XML ("mismatched tag")."""
    bare = (SESSIONS / HTML).read_text()
    text = normalise(AHA_HEAD + bare + "\n</body>\n</html>\n")
    assert text.strip() == normalise(bare).strip()
