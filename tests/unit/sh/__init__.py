"""Unit tests of gpuonboard.sh."""
