"""What the host rules (steps/checks/host_rules.py, disk_rules.py) ask of a probe's raw output:
what it printed, whether it answered but could not be read, and the unverified Check of a tool
that did not answer."""

from __future__ import annotations

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.probe import first_line
from gpuonboard.steps.base import Check


def answered(facts: Facts, probe: str) -> str:
    """What the probe printed when it ran and exited 0; '' otherwise."""
    out = facts.raw.get(probe)
    return out.stdout if out is not None and out.exit_code == 0 else ""


def unread(facts: Facts, probe: str) -> bool:
    """The probe's output is there (the tool ran and printed something, exit 0) but the facts
    read from it are empty: an output not understood, which says nothing about the hardware."""
    return facts.given(probe) and bool(answered(facts, probe).strip())


def tool_failed(rule: str, expected: str, facts: Facts, probe: str, command: str) -> Check:
    """A rule whose tool did not answer on the host (missing: exit 127; failed: its exit code and
    first line of stderr): nothing is known of the hardware, so unverified, saying why."""
    out = facts.raw.get(probe)
    if out is not None and out.absent:
        said = f"{probe} is not installed on the host"
    elif out is not None and out.exit_code != 0:
        said = f"{probe} failed ({out.failure()})"
    else:  # (exit 0, nothing on stdout: its stderr line, where it printed one, says why)
        line = first_line(out.stderr) if out is not None else ""
        said = f"{probe} printed nothing" + (f" on stdout, and on stderr: {line[:120]}" if line else "")
    return Check(
        rule,
        expected,
        f"unknown: {said}",
        "unverified",
        f"the {probe} output gives what this rule judges: run `{command}` on the box, or ask the vendor"
        " why it does not answer",
    )
