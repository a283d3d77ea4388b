"""Unit tests of gpuonboard.steps.container."""
