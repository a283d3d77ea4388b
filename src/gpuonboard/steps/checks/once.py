"""`loaded_once` for the rules' reference-table loaders (data/*.yml): gpuonboard.once's (the
facts' parsers and the connection use it too)."""

from __future__ import annotations

from gpuonboard.once import loaded_once

__all__ = ["loaded_once"]
