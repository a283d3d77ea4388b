"""Unit tests of gpuonboard.steps.prove."""
