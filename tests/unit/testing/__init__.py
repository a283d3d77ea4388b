"""Unit tests of gpuonboard.testing."""
