"""Unit tests of gpuonboard.steps."""
