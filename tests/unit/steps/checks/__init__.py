"""Unit tests of gpuonboard.steps.checks."""
