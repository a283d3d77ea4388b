"""Unit tests of gpuonboard.api."""
