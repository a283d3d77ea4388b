"""Unit tests of gpuonboard.inventory."""
