"""An excerpt of `nvidia-smi -q` from inside a GPU's block that shows an active slowdown
(measure38c 10, 11: a C4130's V100 at `HW Slowdown : Active`, `HW Power Brake Slowdown :
Active`, SM 382 MHz) is refused as any such excerpt (no driver, count or GPU), and its sentence
names the slowdowns it shows, as it names a pending remap of a `Remapped Rows` excerpt: the fault
is never dropped silently. Reasons that are no fault (Idle, a power cap, a clock setting) are
not named. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
BLOG = (
    "part-of-nvidia-smi-q__clocks-throttle-reasons-hw-power-brake-active-then-clocks-sm-382mhz"
    "__4x-v100-sxm2-32gb-c4130__l4rz-blog.txt"
)
README = (
    "part-of-nvidia-smi-q__hw-slowdown-power-brake-active-lines-then-sm-382mhz-arrow-annotation"
    "__v100-sxm2-32gb-c4130__throttle-fix-readme.txt"
)
ORDER = "gpu_model: Tesla V100-SXM2-32GB\ngpu_count: 4\n"


def _refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "nvidia-smi-q.txt", text, ORDER)
    return str(refused.value)


@pytest.mark.parametrize("name", [BLOG, README])
def test_an_excerpt_with_a_power_brake_names_it(tmp_path: Path, name: str) -> None:
    said = _refusal(tmp_path, (REAL / name).read_text(encoding="utf-8"))
    assert "lines of `nvidia-smi -q` from inside a GPU's block" in said, said
    assert "it shows HW Slowdown Active, HW Power Brake Slowdown Active, a fault of the GPU" in said, said
    assert said.endswith("save the whole `nvidia-smi -q` output."), said


def test_the_newer_label_and_a_thermal_slowdown_are_named_too(tmp_path: Path) -> None:
    """The R535+ label `Clocks Event Reasons`, a software thermal slowdown active."""
    text = (
        (REAL / BLOG).read_text(encoding="utf-8").replace("Clocks Throttle Reasons", "Clocks Event Reasons")
    )
    text = text.replace(
        "HW Slowdown                       : Active", "HW Slowdown                       : Not Active"
    )
    text = text.replace(
        "HW Power Brake Slowdown       : Active", "HW Power Brake Slowdown       : Not Active"
    )
    text = text.replace(
        "SW Power Cap                      : Not Active", "SW Thermal Slowdown               : Active"
    )
    said = _refusal(tmp_path, text)
    assert "it shows SW Thermal Slowdown Active, a fault of the GPU" in said, said


def test_an_idle_gpu_s_reasons_name_no_fault(tmp_path: Path) -> None:
    """The same excerpt at rest (Idle Active, a power cap active, no slowdown): nothing named."""
    text = (REAL / BLOG).read_text(encoding="utf-8").replace(": Active", ": Not Active")
    text = text.replace(
        "Idle                              : Not Active", "Idle                              : Active"
    )
    text = text.replace(
        "SW Power Cap                      : Not Active", "SW Power Cap                      : Active"
    )
    said = _refusal(tmp_path, text)
    assert "it shows" not in said, said
