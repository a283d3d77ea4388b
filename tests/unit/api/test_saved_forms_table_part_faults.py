"""A part of nvidia-smi's table (GPU rows without banner and header, or after the poster's own
`[...]`) whose cells hold a fault (`ERR!` as a fan speed, a temperature, a power draw or the
utilisation; a whole row of ERR!, `[GPU is lost]`): the fault is printed, positive evidence, so
the part is read as a view of the GPUs pasted (api/table_part.py: the driver and the GPU count
unverified) and the fault judged as a whole table's is (a sensor's ERR! a warning, an unreadable
GPU a gpu_health failure). Before, the part was refused as a whole (its sentence naming the
fault): the fault went unjudged. A part with no fault is refused as before.

Real captures: tests/fixtures/real/SOURCES.md (azhpc-diagnostics#77, nvidia_gpu_exporter#393;
Lambda's documentation page in tests/fixtures/public/SOURCES.md;
the rows cut from the whole tables of the a30, a40, tesla-t4 and rtx-3090 captures as a post
quotes the rows it is about)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PUBLIC = Path(__file__).parents[2] / "fixtures" / "public"
LAMBDA = "nvidia-smi-fragment__a100-sxm4-80gb__gpu4-5__gpu5-err__lambda-doc.txt"
ORDER = "gpu_model: A100\ngpu_count: 8\nmin_driver: '525.60'\n"
V100 = "part-of-nvidia-smi__gpu-rows-only__1x-v100-pcie-power-draw-err__azure-ncv3__azhpc-diagnostics-77.txt"
RTX4000 = (
    "part-of-nvidia-smi__copied-command-elided-gpu13-14-rows__rtx-4000-ada-gpu14-fan-err"
    "__nvidia-gpu-exporter-393.txt"
)
A30 = "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt"
A40 = "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
T4 = "nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt"
RTX3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt"


def _rows(name: str, first: int, last: int) -> str:
    """Lines first..last (1-based, inclusive) of a real whole table: the rows a post quotes."""
    return "\n".join((REAL / name).read_text().splitlines()[first - 1 : last]) + "\n"


def _verdicts(tmp_path: Path, text: str) -> dict[str, tuple[str, str]]:
    (tmp_path / "order.yml").write_text(ORDER)
    order = offline.load_order(str(tmp_path / "order.yml"))
    path = tmp_path / "nvidia-smi.txt"
    path.write_text(text)
    facts = offline.parse_facts(offline.load_outputs([str(path)]))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


@pytest.mark.parametrize(
    ("text", "rule", "verdict", "fault"),
    [
        (
            (PUBLIC / LAMBDA).read_text(),
            "gpu_health",
            "fail",
            "GPU 5 (00000000:91:00.0): nvidia-smi reads ERR!",
        ),
        ((REAL / V100).read_text(), "sensor_faults", "warn", "GPU 1: power draw reads ERR!"),
        ((REAL / RTX4000).read_text(), "sensor_faults", "warn", "GPU 14: fan sensor reads ERR!"),
        (_rows(A30, 20, 23), "gpu_health", "fail", "GPU 3 (00000000:61:00.0): nvidia-smi reads ERR!"),
        (_rows(A40, 21, 28), "gpu_health", "fail", "GPU 4 (00000000:83:00.0): nvidia-smi reads ERR!"),
        (_rows(T4, 12, 16), "sensor_faults", "warn", "GPU 1: temperature sensor reads ERR!"),
        (_rows(RTX3090, 8, 12), "sensor_faults", "warn", "GPU 0: utilization reads ERR!"),
        (
            # (constructed from the a40 rows: the whole-GPU word nvidia-smi's other formats print)
            _rows(A40, 25, 28).replace("ERR!               ", "[GPU is lost]     ", 1),
            "gpu_health",
            "fail",
            "GPU is lost",
        ),
    ],
)
def test_a_part_showing_a_fault_is_judged_as_a_view(
    tmp_path: Path, text: str, rule: str, verdict: str, fault: str
) -> None:
    said = _verdicts(tmp_path, text)
    assert said[rule][0] == verdict and fault in said[rule][1], said[rule]
    # (the GPUs pasted are a view: the count and the driver are not known from them)
    assert said["gpu_count"][0] == "unverified", said["gpu_count"]
    assert said["nvidia_driver"][0] == "unverified", said["nvidia_driver"]
    assert "part of nvidia-smi's table" in said["gpu_count"][1], said["gpu_count"]


def test_a_part_with_no_fault_is_refused_as_before(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-smi.txt"
    path.write_text(_rows(A30, 9, 12))
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    assert "part of nvidia-smi's table" in str(err.value), err.value
