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
from dataclasses import dataclass, replace

from gpuonboard.api.part import Part
from gpuonboard.facts.gpu_views import EARLIER
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.usage_levels import BUSY_UTIL_PCT, IDLE_HELD_MIB

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


@dataclass(frozen=True)
class KeptApart:
    """Why two outputs around a state-changing command are not read as one box before and after
    it: `why` names the reason in plain words (the GPU in use, the command that may move the
    shell, the UUIDs that differ)."""

    why: str


# what a user does with two outputs kept apart (each is judged as a file of its own)
KEEP_APART_ADVICE = "save each output in a file of its own and run `invoke facts` on each"


def changer_between(parts: Sequence[Part], first: int, then: int) -> Part | None:
    """The last part between lines `first` and `then` whose command changes the GPUs' state;
    None where any command between them may move the shell to another box or a container
    (`ssh`, `exit`, `docker exec`, `su`...) or the two outputs' prompts name other hosts."""
    found = around_change(parts, first, then)
    return None if isinstance(found, KeptApart) else found


def around_change(parts: Sequence[Part], first: int, then: int) -> Part | KeptApart | None:
    """The last part between lines `first` and `then` whose command changes the GPUs' state;
    KeptApart (why) where one does but another between them may move the shell (`ssh gpu02`,
    `exit`, `docker exec`, `su`...) or the two outputs' prompts name other hosts; None where no
    command between them changes the GPUs' state."""
    between = [p for p in parts if first < p.line < then]
    changers = [p for p in between if _CHANGES.search(p.command)]
    if not changers:
        return None
    hosts = sorted({p.host or "" for p in parts if p.line in (first, then)})
    if len(hosts) > 1:
        named = " and ".join(f"`{h}`" if h else "none" for h in hosts)
        return KeptApart(
            f"{changers[-1].where} changes the GPUs' state, but their prompts name other hosts ({named})"
        )
    if moved := next((p for p in between if _MOVES.search(p.command)), None):
        return KeptApart(
            f"{changers[-1].where} changes the GPUs' state, but {moved.where} may have moved the shell"
            " to another box or a container between them"
        )
    return changers[-1]


def joined_after_change(
    kind: str, first: ProbeOutput, then: ProbeOutput, said: str
) -> ProbeOutput | KeptApart | None:
    """`then` (the box now) with `first` kept beside it, named as the output before the command
    `said` (its faults folded in as the box's), where both are nvidia-smi outputs of the same GPUs
    through the same driver, read whole or not, neither a view; KeptApart (why) where they are
    of other GPU UUIDs or the earlier shows a GPU in use; None for any other two."""
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
    if differ := _uuids_differ(before.gpus, now.gpus):
        return KeptApart(differ)
    if busy := [use for g in before.gpus if (use := _in_use(g))]:
        return KeptApart(
            f"the earlier output shows {'; '.join(busy)}, a job that judging the later output alone"
            " would lose"
        )
    return replace(then, beside=(replace(first, partial=f"{EARLIER}(before `{said}`)"),))


def _uuids_differ(before: Sequence[GpuInfo], now: Sequence[GpuInfo]) -> str:
    """'the GPU UUIDs differ (GPU-73d1... in the earlier output, GPU-0a1b... in the later)' where
    both outputs give UUIDs and they are not the same set (identical servers share
    bus addresses and a driver); "" otherwise."""
    from gpuonboard.facts import gpu_agree

    uuids = [sorted(gpu_agree.uuid_of(g) or "" for g in gpus) for gpus in (before, now)]
    if not all(any(u) for u in uuids) or uuids[0] == uuids[1]:
        return ""
    only = [[u for u in one if u and u not in other] for one, other in (uuids, uuids[::-1])]
    return (
        f"the GPU UUIDs differ ({', '.join(only[0]) or 'none other'} in the earlier output,"
        f" {', '.join(only[1]) or 'none other'} in the later), two GPU sets"
    )


def _in_use(g: GpuInfo) -> str:
    """How an earlier output's GPU shows use (`GPU 0 at PCI 00000000:00:15.0: 40960 MiB held,
    a 100 % load, process python3 (PID 41234)`); "" for a GPU at rest."""
    shown = [
        f"{g.memory_used_mib} MiB held (more than an idle GPU's {IDLE_HELD_MIB} MiB)"
        if g.memory_used_mib is not None and g.memory_used_mib > IDLE_HELD_MIB
        else "",
        f"a {g.utilization_gpu_pct} % load ({BUSY_UTIL_PCT} % or more is a job's)"
        if g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= BUSY_UTIL_PCT
        else "",
        *(f"process {p.name or '?'}" + (f" (PID {p.pid})" if p.pid is not None else "") for p in g.processes),
    ]
    if not any(shown):
        return ""
    at = f" at PCI {g.pci_bus_id}" if g.pci_bus_id and not g.unplaced else ""
    return f"{g.called()}{at} in use: {', '.join(s for s in shown if s)}"
