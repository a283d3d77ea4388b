"""Text from a rented box never reaches the operator's terminal as an escape sequence (a window
title, an OSC 52 clipboard write, a cursor move over earlier output): the project's console
writes every control character of what it draws as its Python escape, whatever the renderable
(a string, rich Text, a table cell), and CLI error lines do the same. rich's own colours stay."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.table import Table
from rich.text import Text

from gpuonboard import termtext
from gpuonboard.report import terminal

HOSTILE = "gpu0\x1b]52;c;cm0gLXJmIH4K\x07 ok\r\x9b2J"


def _drawn(renderable: object, color: bool) -> str:
    con = terminal.console()
    con.file = io.StringIO()
    if color:
        con._force_terminal = True  # (as on a terminal: rich adds its own style sequences)
        con._color_system = con._detect_color_system() or None
    con.print(renderable)
    out = con.file.getvalue()
    assert isinstance(out, str)
    return out


def test_for_terminal_escapes_controls_but_keeps_lines_tabs_and_text() -> None:
    assert termtext.for_terminal("a\nb\tc é 中") == "a\nb\tc é 中"
    assert termtext.for_terminal(HOSTILE) == "gpu0\\x1b]52;c;cm0gLXJmIH4K\\x07 ok\\r\\x9b2J"


def test_a_hosts_text_is_drawn_escaped_in_any_renderable() -> None:
    table = Table()
    table.add_column("host")
    table.add_row(HOSTILE)
    for renderable in (HOSTILE, Text(HOSTILE), table, f"[red]{HOSTILE}[/]"):
        out = _drawn(renderable, color=False)
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, repr(out)
        assert "\\x1b]52;c;cm0gLXJmIH4K" in out, repr(out)  # (rich drops BEL and CR itself)


def test_rich_keeps_its_own_colours() -> None:
    out = _drawn(Text("fine", style="red"), color=True)
    assert "\x1b[" in out and "fine" in out


GUARDED = """
import sys
from gpuonboard import cli
from gpuonboard.errors import CommandError

def fail():
    raise CommandError("host h1: nvidia-smi said: gpu0\\x1b]0;owned\\x07 failed")

try:
    cli._guard(fail, False)
except Exception as exc:
    sys.stderr.write(str(getattr(exc, "message", exc)))
"""


def test_a_cli_error_line_is_escaped() -> None:
    """An error sentence quoting a host's words (here an ESC sequence in them) reaches stderr
    without the raw ESC."""
    r = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True)
    assert "error: host h1: nvidia-smi said: gpu0" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr, repr(r.stderr)
