"""A Slurm session's login shell and its job steps: after `salloc`, the shell runs on the login
node and `srun` runs each command on the allocated node (m35e 32: the login's `nvidia-smi` said
`No devices were found`, `srun -n1 nvidia-smi` showed a healthy V100 on node t016). The job
step's answer is the allocated node's, the box rented; the login's failure is the login node's,
another host with no GPU: noted, never judged as the box's driver failing. Where salloc's shell
runs on the allocated node itself (its prompt names the node salloc named: a cluster whose
salloc starts the shell there), the failure is that shell's, outside any job step and with no
GPU bound to it, and the note says so (review revP F7)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuonboard.api import transcript
from gpuonboard.facts.gpu_failed import failed_as_a_whole
from gpuonboard.facts.probe import ProbeOutput

# the command that gives the session an allocation whose shell stays on the login node
_SALLOC = re.compile(r"^(?:sudo\s+)?salloc(?:\s|$)")
# salloc's line naming the allocated nodes (`salloc: Nodes t016 are ready for job`)
_NODES = re.compile(r"^salloc: Nodes? (\S+) (?:is|are) ready for job", re.M)
# srun (Slurm's job step launcher) at the head of the command that printed an answer
_SRUN = re.compile(r"`srun\b")


def job_step_over_login(
    name: str,
    parts: Sequence[transcript.Section],
    found: list[tuple[str, ProbeOutput, str]],
    notes: list[str],
) -> list[tuple[str, ProbeOutput, str]]:
    """The session's outputs, where after `salloc` the login's own nvidia-smi failed as a whole
    and a later `srun ... nvidia-smi` (a job step on the allocated node) answered: without the
    login's failure, noted (the login node's, another host); `found` as given otherwise."""
    salloc = next((p for p in parts if _SALLOC.match(p.command.strip())), None)
    if salloc is None:
        return found
    smi = [(kind, out, where) for kind, out, where in found if kind.startswith("nvidia_smi")]
    failed = [
        (o, w) for _, o, w in smi if not o.ran_elsewhere and failed_as_a_whole(f"{o.stdout}\n{o.stderr}")
    ]
    step = [(o, w) for _, o, w in smi if _SRUN.match(o.ran_elsewhere) and (o, w) not in failed]
    line_of = {f"{name} {p.where}": p.line for p in parts}
    login = [(o, w) for o, w in failed if line_of.get(w, 0) > salloc.line]
    if not login or not step or not all(line_of.get(w, 0) > salloc.line for _, w in step):
        return found
    nodes = _NODES.search(salloc.text)
    on = f" ({nodes.group(1)}, as salloc named it)" if nodes else ""
    lost = {id(o) for o, _ in login}
    said = login[0][0].stdout.strip().splitlines()[0][:80] if login[0][0].stdout.strip() else "its failure"
    host = next((p.host for p in parts if f"{name} {p.where}" == login[0][1]), None)
    shell = (
        f" on the allocated node itself ({host}, as its prompt names it), outside any job step: its"
        f" `{said}` says that shell has no GPU bound to it (Slurm binds the allocation's GPUs to its"
        " job steps), not that the box has none"
        if nodes and host and host in nodes.group(1).split(",")
        else f", which runs on the login node, another host than the allocated one: its `{said}` says"
        " the login node has no GPU the driver sees, not the box's"
    )
    notes.append(
        f"{name}: {login[0][1].removeprefix(name).strip()} ran at the shell `salloc` opened{shell};"
        f" {step[0][1].removeprefix(name).strip()} ran as a job step on the allocated node{on}, whose"
        " answer is judged as the box."
    )
    return [(kind, out, where) for kind, out, where in found if id(out) not in lost]
