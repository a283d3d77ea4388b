"""Unit tests of gpuonboard.steps.dataset."""
