"""Step registry: playbook `step:` names -> Step classes."""

from __future__ import annotations

from .acceptance import AcceptanceStep
from .autostop import AutostopStatusStep, AutostopStep
from .base import Check, Plan, Step, StepContext, StepResult
from .container import ContainerStep
from .dataset import DatasetStep
from .driver_compat import DriverCompatStep
from .files import CommandStep, TemplateStep
from .gpu_benchmark import GpuBenchmarkStep
from .gpu_health import GpuHealthStep
from .network import NetworkStep
from .prove import AllreduceStep, DiskSpeedStep, SmokeTrainStep
from .teardown import TeardownContainersStep, TeardownCostStep, TeardownFilesStep, TeardownPullStep

REGISTRY: dict[str, type[Step]] = {
    cls.name: cls
    for cls in (
        AcceptanceStep,
        GpuHealthStep,
        DriverCompatStep,
        TemplateStep,
        CommandStep,
        AutostopStep,
        AutostopStatusStep,
        ContainerStep,
        DatasetStep,
        TeardownPullStep,
        TeardownContainersStep,
        TeardownFilesStep,
        TeardownCostStep,
        SmokeTrainStep,
        AllreduceStep,
        DiskSpeedStep,
        GpuBenchmarkStep,
        NetworkStep,
    )
}

__all__ = ["REGISTRY", "Check", "Plan", "Step", "StepContext", "StepResult"]
