"""virtualization of a `-q` cut inside its last GPU's `GPU Virtualization Mode` section after
its `Virtualization mode` line (measure34a 03: the real Quadro M1000M -q, `Attached GPUs : 1`):
the one line the rule reads was read whole of every attached GPU, so it is judged, as
persistence_mode and mig_mode are; a cut inside that line or above it leaves it unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from ....offline_judge import verdicts

REAL = Path(__file__).parents[4] / "fixtures" / "real"
M1000M = (
    REAL
    / "nvidia-smi-q__quadro-m1000m__1gpu__driver375.82__cut-after-virtualization-mode__nvidia-docker-688.txt"
)
ORDER = "gpu_model: Quadro M1000M\ngpu_count: 1\n"


def test_the_mode_line_read_whole_above_the_cut_is_judged(tmp_path: Path) -> None:
    """The real -q as posted: virtualization passes on `None`. Before: unverified ("of what was
    read; incomplete probe")."""
    got = verdicts(tmp_path, "nvidia-smi-q.txt", M1000M.read_text(), ORDER)
    assert got["virtualization"] == ("pass", "None")


@pytest.mark.parametrize(
    "cut",
    [
        lambda t: t[: t.rindex("None")] + "No",  # (inside its value, no newline after it)
        lambda t: t[: t.index("        Virtualization mode")],  # (after the section's header)
    ],
)
def test_a_cut_inside_or_above_the_mode_line_stays_unverified(tmp_path: Path, cut) -> None:  # type: ignore[no-untyped-def]
    """The same -q cut inside its mode's value, or after the section's header (in-test cuts):
    unverified, never a pass of a value not read whole."""
    got = verdicts(tmp_path, "nvidia-smi-q.txt", cut(M1000M.read_text()), ORDER)
    assert got["virtualization"][0] == "unverified", got["virtualization"]
