"""Unit tests of gpuonboard.facts."""
