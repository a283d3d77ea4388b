"""Step registry: playbook `step:` names -> Step classes, imported only when a playbook uses them.

A run of one small playbook should not pay for importing every step (container, dataset,
training ...) and what they import: with 50 hosts the start-up is serial time.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from gpuonboard.steps.base import Check, Plan, Step, StepContext, StepResult

# step name -> (module under gpuonboard.steps, class name)
_LOCATIONS: dict[str, tuple[str, str]] = {
    "acceptance": ("checks.acceptance", "AcceptanceStep"),
    "gpu_health": ("checks.gpu_health", "GpuHealthStep"),
    "gpu_identity": ("checks.identity", "GpuIdentityStep"),
    "driver_compat": ("checks.driver_compat", "DriverCompatStep"),
    "template": ("files", "TemplateStep"),
    "command": ("files", "CommandStep"),
    "python": ("python", "PythonStep"),
    "autostop": ("autostop", "AutostopStep"),
    "autostop_status": ("autostop", "AutostopStatusStep"),
    "container": ("container", "ContainerStep"),
    "dataset": ("dataset", "DatasetStep"),
    "teardown_pull": ("teardown", "TeardownPullStep"),
    "teardown_containers": ("teardown", "TeardownContainersStep"),
    "teardown_files": ("teardown", "TeardownFilesStep"),
    "teardown_cost": ("teardown", "TeardownCostStep"),
    "smoke_train": ("prove", "SmokeTrainStep"),
    "allreduce": ("prove", "AllreduceStep"),
    "disk_speed": ("prove", "DiskSpeedStep"),
    "gpu_benchmark": ("prove.gpu_benchmark", "GpuBenchmarkStep"),
    "gpu_perf": ("prove.perf", "GpuPerfStep"),
    "network": ("prove.network", "NetworkStep"),
}

# Steps whose plan reads only the batched fact probe (and local state): no command of their own,
# nothing changed, so they cost nothing to run again. A --resume runs them again rather than
# trust an older run's verdict: the resumed run's report carries the box's verdict of now, and
# a box that changed since (another machine behind the name, a GPU fallen off the bus) fails
# them again, so no later step changes it.
FACT_CHECKS: frozenset[str] = frozenset(
    {"acceptance", "gpu_health", "gpu_identity", "driver_compat", "teardown_cost"}
)


class _Registry(Mapping[str, type[Step]]):
    """A read-only mapping whose values are imported on first use."""

    def __init__(self, locations: Mapping[str, tuple[str, str]]) -> None:
        self._locations = dict(locations)
        self._loaded: dict[str, type[Step]] = {}

    def __getitem__(self, name: str) -> type[Step]:
        if name not in self._loaded:
            module, cls = self._locations[name]  # KeyError for an unknown step, as a dict
            step = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
            if step.name != name:  # pragma: no cover - a table typo, caught by the tests
                raise RuntimeError(f"step table says {name!r} but {cls}.name is {step.name!r}")
            self._loaded[name] = step
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._locations

    def __iter__(self) -> Iterator[str]:
        return iter(self._locations)

    def __len__(self) -> int:
        return len(self._locations)


REGISTRY: Mapping[str, type[Step]] = _Registry(_LOCATIONS)

__all__ = ["FACT_CHECKS", "REGISTRY", "Check", "Plan", "Step", "StepContext", "StepResult"]
