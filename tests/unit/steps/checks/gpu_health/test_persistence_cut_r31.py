"""A persistence mode read `Enabled` before a cut passes where the GPU set is known whole: the
driver model (RULE_PARTS) only explains an N/A (a Windows driver model has no persistence mode),
so a record cut inside or before it keeps the pass of a mode read, in -q -x as in -q text. It was
unverified (netdata#15755's -q -x cut inside <driver_model>, measure31a 39)."""

from __future__ import annotations

from pathlib import Path

from ....offline_judge import verdicts

REAL = Path(__file__).parents[4] / "fixtures" / "real"
QX = "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05__cut-in-driver-model__netdata-15755.xml"
Q_A10 = "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
Q_WDDM = "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm.txt"


def _lines(name: str, upto: str) -> str:
    """The real -q's lines up to and including the first that starts (stripped) with `upto`."""
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.strip().startswith(upto))
    return "".join(lines[: end + 1])


def test_the_xml_cut_inside_driver_model_passes_its_enabled_mode(tmp_path: Path) -> None:
    text = (REAL / QX).read_text(encoding="utf-8")
    got = verdicts(tmp_path, QX, text, "gpu_model: RTX 4090\ngpu_count: 1\n")
    assert got["persistence_mode"] == ("pass", "Enabled")


def test_the_text_cut_inside_driver_model_passes_as_the_xml(tmp_path: Path) -> None:
    text = _lines(Q_A10, "Current")  # (the Driver Model's first line)
    got = verdicts(tmp_path, "q.txt", text, "gpu_model: A10\ngpu_count: 1\n")
    assert got["persistence_mode"] == ("pass", "Enabled")


def test_an_na_mode_cut_before_its_driver_model_stays_unverified(tmp_path: Path) -> None:
    """N/A with the driver model cut away: a Windows driver model (no persistence mode) or not."""
    text = _lines(Q_WDDM, "Addressing Mode")
    got = verdicts(tmp_path, "q.txt", text, "gpu_model: RTX 2080 SUPER\ngpu_count: 1\n")
    assert got["persistence_mode"][0] == "unverified"
