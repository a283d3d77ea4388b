"""Invoke entry point: `invoke provision --host wuhan-a100-1`. All logic lives in src/gpuonboard."""

from gpuonboard.cli import ns

namespace = ns
