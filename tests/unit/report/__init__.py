"""Unit tests of gpuonboard.report."""
