"""Unit tests of gpuonboard.remote."""
