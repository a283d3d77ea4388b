"""Unit tests of gpuonboard.connection."""
