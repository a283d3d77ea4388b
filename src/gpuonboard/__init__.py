"""gpuonboard: acceptance-test and onboard rented GPU servers over SSH."""

__version__ = "0.1.0"
