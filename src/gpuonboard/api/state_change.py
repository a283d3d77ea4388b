"""A saved session's nvidia-smi outputs of one box before and after a command that changes its
state (`nvidia-smi -pm 1`, `-e 0`, `-mig 1`, `-r`, `-pl 300`, `-ac ...`, `mig -cgi ...`): the
later output is the box now and is judged; the earlier one's faults are the box's too, kept
beside it (facts/gpu_views.py folds each GPU's faults in by PCI address or UUID), so a fault
shown is never lost. Two outputs of other GPUs (another bus id set, another driver) are two
boxes' and stay refused (api/transcript.py `_refuse_two`). Real shape: a B200 VM's session,
`nvidia-smi` (Persistence-M Off), `nvidia-smi -pm 1`, `nvidia-smi` (On) (measure33a 27)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from gpuonboard.facts.gpu_views import EARLIER
from gpuonboard.facts.probe import ProbeOutput

# nvidia-smi's options that set the GPU's state (nvidia-smi(1), "Device Modification Options"),
# and `mig` instance creation / removal
_CHANGES = re.compile(
    r"(?:^|[\s;&|(])(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?nvidia-smi\b[^;&|]*?\s"
    r"(?:-pm|--persistence-mode|-e|--ecc-config|-p|--reset-ecc-errors|-c|--compute-mode|-dm|--driver-model"
    r"|-mig|--multi-instance-gpu|-r|--gpu-reset|-pl|--power-limit|-ac|--applications-clocks|-rac"
    r"|--reset-applications-clocks|-lgc|--lock-gpu-clocks|-rgc|--reset-gpu-clocks|-lmc|--lock-memory-clocks"
    r"|-rmc|--reset-memory-clocks|-am|--accounting-mode|-caa|-acp|mig\s+-(?:cgi|dgi|cci|dci))(?=[\s=]|$)"
)


class _Part(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def command(self) -> str: ...
    @property
    def where(self) -> str: ...


def changer_between(parts: Sequence[_Part], first: int, then: int) -> _Part | None:
    """The last part between lines `first` and `then` whose command changes the GPUs' state."""
    between = [p for p in parts if first < p.line < then and _CHANGES.search(p.command)]
    return between[-1] if between else None


def joined_after_change(kind: str, first: ProbeOutput, then: ProbeOutput, said: str) -> ProbeOutput | None:
    """`then` (the box now) with `first` kept beside it, named as the output before the command
    `said` (its faults folded in as the box's), where both are nvidia-smi outputs of the same GPUs
    through the same driver, read whole or not, neither a view; None for any other two."""
    if not kind.startswith("nvidia_smi") or kind == "nvidia_smi_csv":
        return None
    if any(o.partial or o.in_container or o.beside or o.exit_code != 0 for o in (first, then)):
        return None
    from gpuonboard.facts.gpu_ids import bus_key
    from gpuonboard.facts.nvidia_smi import parse_any

    before, now = parse_any(first.stdout), parse_any(then.stdout)
    buses = [sorted(bus_key(g.pci_bus_id) or "" for g in r.gpus) for r in (before, now)]
    if not buses[0] or buses[0] != buses[1] or "" in buses[0]:
        return None
    if not before.driver_version or before.driver_version != now.driver_version:
        return None
    return replace(then, beside=(replace(first, partial=f"{EARLIER}(before `{said}`)"),))
