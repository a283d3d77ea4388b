"""Scripts shipped to the host over the SSH channel's stdin (never imported by gpuonboard itself)."""
