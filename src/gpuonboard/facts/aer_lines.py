"""The kernel's PCIe AER lines and the nvidia driver's lines about a GPU, as both readers of them
see them: the GPU's AER events (facts/aer.py) and the host's errors (facts/host_errors.py)."""

from __future__ import annotations

import re

from gpuonboard.once import lazy_re

__all__ = ["AER_RECEIVED", "AER_UNRECOVERED", "BDF", "NVIDIA_CUT", "NVIDIA_LINE"]

# a PCI address (domain:bus:device.function), its one group
BDF = r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
# a line of the nvidia driver about one GPU (`nvidia 0000:03:00.0: AER: ...`)
NVIDIA_LINE = re.compile(r"\bnvidia " + BDF + r":")
# a port's report of an error received from a device: "Uncorrected" until Linux 6.x,
# "Uncorrectable" since; "error received: BDF" / "error message received from BDF"
AER_RECEIVED = re.compile(
    r"AER: (?:Multiple )?Uncorrect(?:ed|able) \([^)]*\) error (?:message )?received(?: from)?:? " + BDF
)
# the kernel could not hand the device back to its driver (which has no AER handler)
AER_UNRECOVERED = lazy_re(r"AER: can't recover|device has no AER-aware driver", re.IGNORECASE)
# the start of a line of the nvidia driver about one GPU, cut anywhere after the driver's name:
# `nvidia` alone, or followed by the start of an address
NVIDIA_CUT = lazy_re(r"\bnvidia(?: [0-9a-fA-F][0-9a-fA-F:.]*(?::.*)?)?$")
