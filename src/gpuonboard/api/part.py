"""What the readers of a saved session's parts read of one part (api/transcript.Section): one
Protocol, so that the modules transcript.py imports need not import transcript.py back."""

from __future__ import annotations

from typing import Protocol


class Part(Protocol):
    """A session's part: `line` its prompt line's number (0 above the first prompt), `command`
    typed there, `host` it ran on (None where not known), `text` its output, `where` in words."""

    @property
    def line(self) -> int: ...
    @property
    def command(self) -> str: ...
    @property
    def host(self) -> str | None: ...
    @property
    def text(self) -> str: ...
    @property
    def where(self) -> str: ...
