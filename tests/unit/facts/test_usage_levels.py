"""(round 34) The levels at which a GPU's numbers count as a job's live in one module
(facts/usage_levels.py), read by both the foreign-processes rule and the offline reading of two
nvidia-smi outputs around a state change; before, api/state_change.py held copies (api may not
import steps), which could drift apart."""

from __future__ import annotations

import ast
from pathlib import Path

from gpuonboard.api import state_change
from gpuonboard.facts import usage_levels
from gpuonboard.steps.checks.gpu_health import usage

SRC = Path(usage_levels.__file__).parents[1]


def test_both_users_read_the_one_module() -> None:
    for module in (usage, state_change):
        for name in ("IDLE_HELD_MIB", "BUSY_UTIL_PCT"):
            assert getattr(module, name) is getattr(usage_levels, name), (module.__name__, name)


def test_no_user_defines_a_level_of_its_own() -> None:
    """No module but facts/usage_levels.py assigns a number to a name of these levels (nor the
    copies state_change.py held, `_IDLE_MIB, _IDLE_PCT = 50, 10`)."""
    for path in (SRC / "api" / "state_change.py", SRC / "steps" / "checks" / "gpu_health" / "usage.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            for each in node.targets
            for target in (each.elts if isinstance(each, ast.Tuple) else [each])
            if isinstance(target, ast.Name)
        }
        levels = {"IDLE_HELD_MIB", "BUSY_UTIL_PCT", "BUSY_MEMORY_MIB", "_IDLE_MIB", "_IDLE_PCT"}
        assert not assigned & levels, path
