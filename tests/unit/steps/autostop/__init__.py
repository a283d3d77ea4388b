"""Unit tests of gpuonboard.steps.autostop."""
