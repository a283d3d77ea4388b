"""A host rule's verdict from an output a launcher ran (`srun -p a64fx lscpu`, `pdsh -w n[1-4]
free -g`, `apptainer exec img.sif df -h`: ProbeOutput.ran_elsewhere, api/narrowed.py): that
call's answer, of a node Slurm chose or of a container, not certainly the box's; the same rule
as nvidia-smi's (command_line.LAUNCHERS), for every host output."""

from __future__ import annotations

from gpuonboard.connection.gather import Facts
from gpuonboard.steps.base import Check

# the saved outputs each host rule reads, and the command to save in the box's own shell
_READS = {
    "cpu_cores": (("lscpu", "lscpu"), ("nproc", "nproc")),
    "ram": (("free", "free -k"), ("numactl", "numactl --hardware")),
    "data_disk": (("df", "df -k"), ("lsblk", "lsblk")),
}


def launched_elsewhere(check: Check, facts: Facts) -> Check:
    """`check` unverified where an output it read ran through a launcher (a pass, warning or fail
    of another machine's answer says nothing certain of the box), naming the command and what to
    save instead; as it is otherwise (an unverified one already says why)."""
    if check.verdict not in ("pass", "warn", "fail"):
        return check
    for kind, save in _READS.get(check.name, ()):
        out = facts.raw.get(kind)
        if out is not None and out.ran_elsewhere and _read_from(check.name, kind, facts):
            return Check(
                check.name,
                check.expected,
                f"{check.actual} ({out.ran_elsewhere})",
                "unverified",
                f"its answer is that call's own: save `{save}` run in the box's own shell",
            )
    return check


def _read_from(rule: str, kind: str, facts: Facts) -> bool:
    """Whether `rule`'s verdict may rest on the output of `kind`: RAM's on free or numactl by the
    memory's source (the other given is not judged), every other rule's on each output it reads."""
    if rule == "ram" and facts.memory is not None:
        return {"top": "free"}.get(facts.memory.source, facts.memory.source) == kind  # (top: free's kind)
    return True
