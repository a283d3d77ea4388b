"""Where the shipped playbooks and templates live when the current directory has none.

A project directory (the repository, or a team's own copy) wins; outside one, the console
script `gpuonboard` falls back to the copies installed with the package
(`<prefix>/share/gpuonboard/`) or, in a source checkout, the repository's own.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def shipped_root() -> Path | None:
    """The installed (or source-checkout) directory holding playbooks/ and templates/."""
    for candidate in (
        Path(sys.prefix) / "share" / "gpuonboard",
        Path(__file__).resolve().parents[2],
    ):
        if (candidate / "playbooks").is_dir():
            return candidate
    return None


def search_dirs(project: Path, kind: str) -> list[Path]:
    """`project/<kind>` first, then the shipped copy (kind: playbooks or templates)."""
    dirs = [project / kind]
    root = shipped_root()
    if root is not None and (root / kind).resolve() != (project / kind).resolve():
        dirs.append(root / kind)
    return dirs
