"""Unit tests of gpuonboard.steps.teardown."""
