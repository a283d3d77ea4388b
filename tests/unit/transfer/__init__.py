"""Unit tests of gpuonboard.transfer."""
