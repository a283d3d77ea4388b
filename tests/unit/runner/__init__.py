"""Unit tests of gpuonboard.runner."""
