"""A saved session's nvidia-smi outputs of one box before and after a command that changes its
state (`nvidia-smi -pm 1`, `-e 0`, `-mig 1`, `-r`, `-pl 300`, `-ac ...`, `mig -cgi ...`): the
later output is the box now and is judged; the earlier one's faults are the box's too, kept
beside it (facts/gpu_views.py folds each GPU's faults in by PCI address or UUID), so a fault
shown is never lost. Two outputs of other GPUs (another bus id set, another driver) are two
boxes' and stay refused (api/transcript.py `_refuse_two`); so do two around a command that may
move the shell (`ssh`, `exit`, `docker exec`, `su`, another prompt host), two of other UUIDs, and
two whose earlier output shows the GPUs in use (a process listed, memory held, a load: judging
the later alone would lose a job foreign_processes fails). Real shape: a B200 VM's session,
`nvidia-smi` (Persistence-M Off), `nvidia-smi -pm 1`, `nvidia-smi` (On) (measure33a 27)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from gpuonboard.facts.gpu_views import EARLIER
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.probe import ProbeOutput

# nvidia-smi's options that set the GPU's state (nvidia-smi(1), "Device Modification Options"),
# only before any subcommand word (`-i N` may come first: `dmon -c 1`, `pmon -c 1`, `nvlink -e`
# read and change nothing), and `mig` instance creation / removal
_ID = r"(?:\s+(?:-i|--id)(?:\s+|=)\S+)*"
_CHANGES = re.compile(
    r"(?:^|[\s;&|(])(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?nvidia-smi" + _ID + r"\s+"
    r"(?:-pm|--persistence-mode|-e|--ecc-config|-p|--reset-ecc-errors|-c|--compute-mode|-dm|--driver-model"
    r"|-mig|--multi-instance-gpu|-r|--gpu-reset|-pl|--power-limit|-ac|--applications-clocks|-rac"
    r"|--reset-applications-clocks|-lgc|--lock-gpu-clocks|-rgc|--reset-gpu-clocks|-lmc|--lock-memory-clocks"
    r"|-rmc|--reset-memory-clocks|-am|--accounting-mode|-caa|-acp|mig"
    + _ID
    + r"\s+-(?:cgi|dgi|cci|dci))(?=[\s=]|$)"
)
# a command after which the shell may be another box's or a container's (`ssh gpu02`, `exit`,
# `docker exec -it`, `kubectl exec`, `su`, `sudo -i`): two outputs around it are never one box's
_MOVES = re.compile(
    r"(?:^|[\s;&|(])(?:sudo\s+(?:-\S+\s+)*)?(?:"
    r"(?:ssh|mosh|telnet|exit|logout|su|srun|salloc|chroot|nsenter)(?=\s|$)"
    r"|(?:docker|podman|nerdctl|ctr|crictl|lxc|incus|machinectl)\s+(?:\S+\s+)*?(?:exec|attach|shell|login|run)\b"
    r"|(?:kubectl|oc)\s+(?:\S+\s+)*?(?:exec|attach|debug|run|rsh)\b"
    r"|(?:singularity|apptainer|toolbox|distrobox|pct)\s+(?:shell|exec|enter|run)\b"
    r"|sudo\s+(?:-\S+\s+)*-[A-Za-z]*[is][A-Za-z]*(?=\s|$)|sudo\s+(?:-\S+\s+)*(?:ba|z)?sh(?=\s|$))"
)
# an earlier output of a GPU in use: a process listed, memory held past an idle context's (usage.py
# IDLE_HELD_MIB) or a load (usage.py BUSY_UTIL_PCT): foreign_processes would judge it, and the later
# output judged alone would lose it; two such outputs stay refused
_IDLE_MIB, _IDLE_PCT = 50, 10


class _Part(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def command(self) -> str: ...
    @property
    def where(self) -> str: ...
    @property
    def host(self) -> str | None: ...


def changer_between(parts: Sequence[_Part], first: int, then: int) -> _Part | None:
    """The last part between lines `first` and `then` whose command changes the GPUs' state;
    None where any command between them may move the shell to another box or a container
    (`ssh`, `exit`, `docker exec`, `su`...) or the two outputs' prompts name other hosts."""
    between = [p for p in parts if first < p.line < then]
    hosts = {p.host for p in parts if p.line in (first, then)}
    if len(hosts) > 1 or any(_MOVES.search(p.command) for p in between):
        return None
    changers = [p for p in between if _CHANGES.search(p.command)]
    return changers[-1] if changers else None


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
    from gpuonboard.facts import gpu_agree

    uuids = [sorted(gpu_agree.uuid_of(g) or "" for g in r.gpus) for r in (before, now)]
    if all(any(u) for u in uuids) and uuids[0] != uuids[1]:
        return None
    if any(_in_use(g) for g in before.gpus):
        return None
    return replace(then, beside=(replace(first, partial=f"{EARLIER}(before `{said}`)"),))


def _in_use(g: GpuInfo) -> bool:
    """Whether an earlier output's GPU shows use: a process listed, memory held or a load."""
    held = g.memory_used_mib is not None and g.memory_used_mib > _IDLE_MIB
    load = g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= _IDLE_PCT
    return bool(g.processes) or held or load
