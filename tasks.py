"""Invoke entry point: `invoke provision --host wuhan-a100-1`. All logic lives in src/gpuonboard."""

from gpuonboard.cli import ns, quiet_broken_pipe

namespace = ns
quiet_broken_pipe()  # `invoke --list | head`: no traceback from invoke's own print
