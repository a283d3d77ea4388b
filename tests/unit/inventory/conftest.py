"""Fixtures shared by the inventory tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    """An empty SSH config (no user's ~/.ssh/config reaches the test); a test file that needs
    entries in it defines its own."""
    path = tmp_path / "ssh_config"
    path.write_text("")
    return path
