"""A record cut between the parts a gpu_health rule judges (steps/checks/gpu_health/step.py
`RULE_PARTS`: every part whose fields the rule's judge reads): each real `-q` / `-q -x` capture
with a rule's fields edited to a failing value, cut after each line of its last GPU's record up
to the edit, gives that fail or unverified, never a pass or a warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[4] / "fixtures" / "real"

CAPTURES = sorted(p.name for p in REAL.glob("nvidia-smi-q__*.txt")) + sorted(
    p.name for p in REAL.glob("nvidia-smi-q-x__*.xml")
)

# rule -> variants of (a line's pattern, its replacement) edits, each making the rule fail; the
# recovery state twice: a pending action in either of its two spellings (the other saying none)
_EDITS: dict[str, tuple[tuple[tuple[str, str], ...], ...]] = {
    "gpu_recovery": (
        (
            (r"(Reset Required\s*:).*", r"\1 No"),
            (r"(Drain and Reset Recommended\s*:).*", r"\1 No"),
            (r"(GPU Recovery Action\s*:).*", r"\1 Reset"),
            (r"(<reset_required>)[^<]*", r"\1No"),
            (r"(<drain_and_reset_recommended>)[^<]*", r"\1No"),
            (r"(<gpu_recovery_action>)[^<]*", r"\1Reset"),
        ),
        (
            (r"(Reset Required\s*:).*", r"\1 Yes"),
            (r"(Drain and Reset Recommended\s*:).*", r"\1 No"),
            (r"(GPU Recovery Action\s*:).*", r"\1 None"),
            (r"(<reset_required>)[^<]*", r"\1Yes"),
            (r"(<drain_and_reset_recommended>)[^<]*", r"\1No"),
            (r"(<gpu_recovery_action>)[^<]*", r"\1None"),
        ),
    ),
    "temperature": (((r"(GPU Current Temp\s*:).*", r"\1 99 C"), (r"(<gpu_temp>)[^<]*", r"\g<1>99 C")),),
    "throttling": (
        (
            (r"(    HW Slowdown\s*:) Not Active", r"\1 Active"),
            (r"(<clocks_(?:event_reasons|throttle_reason)_hw_slowdown>)Not Active", r"\1Active"),
        ),
    ),
    "ecc_uncorrectable": (
        ((r"(DRAM Uncorrectable\s*:) 0$", r"\1 5"), (r"(<dram_uncorrectable>)0<", r"\g<1>5<")),
    ),
    # (-q's only `Pending : No` is Remapped Rows'; ECC Mode's says Enabled / Disabled)
    "memory_repair": (
        ((r"^(        Pending\s*:) No$", r"\1 Yes"), (r"(<remapped_row_pending>)No", r"\1Yes")),
    ),
    "pcie_replays": (
        ((r"(Replays Since Reset\s*:) \d+", r"\1 100000"), (r"(<replay_counter>)\d+", r"\g<1>100000")),
    ),
}
CASES = [
    (name, rule, k) for name in CAPTURES for rule, variants in _EDITS.items() for k in range(len(variants))
]


def _edited(name: str, rule: str, k: int) -> tuple[list[str], int, int]:
    """The capture's lines with the last GPU's fields of `rule` edited (variant `k`), the index of
    that GPU's first line and of the last line edited (-1: the capture has none of them)."""
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if re.match(r"GPU [0-9A-Fa-f]+:", line) or "<gpu id=" in line]
    start = starts[-1] if starts else 0
    last = -1
    for i in range(start, len(lines)):
        for pattern, repl in _EDITS[rule][k]:
            edited = re.sub(pattern, repl, lines[i])
            if edited != lines[i]:
                lines[i], last = edited, i
    return lines, start, last


def _verdicts(text: str, name: str, rule: str) -> set[str]:
    probe = "nvidia_smi" if name.endswith(".xml") else "nvidia_smi_q"
    facts = parse_facts({probe: ProbeOutput(text, "", 0)})
    return {c.verdict for c in gpu_health.evaluate(facts) if c.name == rule}


@pytest.mark.parametrize(("name", "rule", "k"), CASES)
def test_a_record_cut_between_a_rules_parts_keeps_no_pass_of_a_failing_field(
    name: str, rule: str, k: int
) -> None:
    """Edit: the last GPU's fields of `rule` set to a failing value (the recovery state: Reset
    Required / Drain and Reset Recommended `No` with GPU Recovery Action `Reset`, or Reset Required
    `Yes` with the action `None`; GPU Current Temp 99 C; HW Slowdown Active; 5 DRAM uncorrectable
    errors; a remapped row Pending; 100000 replays), the output cut after each of the 30 lines
    above the edit and the edited line (every 5th line above them, from that GPU's first line).
    Before round 29's fix the RTX 3060 570.124.04 `-q -x` cut after `</gpu_reset_status>` (its
    `No`s read, its `Reset` cut away) passed gpu_recovery: RULE_PARTS counted either spelling as
    the whole state."""
    lines, start, last = _edited(name, rule, k)
    if last < 0:
        pytest.skip("the capture prints none of the rule's fields")
    whole = _verdicts("".join(lines), name, rule)
    if whole != {"fail"}:
        pytest.skip(f"the edit does not fail the whole capture's GPUs ({whole})")
    # (each line in the 30 above the edit, where the parts the rule reads lie: every 5th above)
    near = max(start + 1, last - 30)
    for n in [*range(start + 1, near, 5), *range(near, last + 2)]:
        verdicts = _verdicts("".join(lines[:n]), name, rule)
        # (a warning read above the cut stands, of what was read: round 33; never a pass)
        assert verdicts <= {"fail", "unverified", "warn"}, (n, lines[n - 1], verdicts)


def test_a_cut_q_of_a_driver_older_than_mig_passes_mig_mode() -> None:
    """NVIDIA/nvidia-docker#1149: a 440.36 `-q` of a GTX 1050 Ti, cut in its GPU Operation Mode
    section. R440 prints no MIG Mode line at all; its place (before Accounting Mode) was read, so
    the cut took no MIG mode: mig_mode passes as for a cut `-q` that printed `MIG Mode`."""
    name = (
        "nvidia-smi-q__geforce-gtx-1050-ti__1gpu__driver440.36__no-mig-line__cut-in-gpu-operation-mode"
        "__nvidia-docker-1149.txt"
    )
    facts = parse_facts({"nvidia_smi_q": ProbeOutput((REAL / name).read_text(), "", 0)})
    [mig] = [c for c in gpu_health.evaluate(facts) if c.name == "mig_mode"]
    assert (mig.verdict, mig.actual) == ("pass", "Disabled; GPU 0: no MIG on this model"), mig
