"""sensor_faults on a `-q` record cut before any sensor line, a field that is no sensor reading a
fault (`Product Brand : Unknown Error`): "no sensor read", unverified, never "every sensor read"
(measure40b 20: NVIDIA/dcgm-exporter #319's GPU 0 cut at `Display`). The same field's fault on a
record read through its sensors still says every sensor was read."""

from __future__ import annotations

from pathlib import Path

from ....offline_judge import verdicts

REAL = Path(__file__).parents[4] / "fixtures" / "real"
DCGM = (
    "nvidia-smi-q__a10g-8-attached__gpu0-product-brand-unknown-error__driver535.161.08__cut-at-display"
    "__dcgm-exporter-319.txt"
)
RTX4090 = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__addressing-mode-unknown-error.txt"


def test_a_record_cut_before_its_sensors_reads_no_sensor(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "q.txt", (REAL / DCGM).read_text(), "gpu_model: A10G\ngpu_count: 8\n")
    verdict, actual = got["sensor_faults"]
    assert verdict == "unverified"
    assert actual.startswith("no sensor read; not read (no sensor, no check uses it): GPU 0: Product Brand")
    assert "every sensor read" not in actual


def test_the_4090_record_cut_before_its_sensors_reads_none_too(tmp_path: Path) -> None:
    """The real 8x RTX 4090 `-q`, whose GPUs' Addressing Mode reads Unknown Error, cut inside its
    first record after that line: no sensor read; whole, every sensor read (a pass)."""
    text = (REAL / RTX4090).read_text()
    order = "gpu_model: RTX 4090\ngpu_count: 8\n"
    whole = verdicts(tmp_path, "q.txt", text, order)["sensor_faults"]
    assert whole[0] == "pass" and whole[1].startswith("every sensor read; not read")
    cut = text[: text.index("\n", text.index("Addressing Mode")) + 1]
    got = verdicts(tmp_path, "q.txt", cut, order)["sensor_faults"]
    assert got[0] == "unverified" and got[1].startswith("no sensor read; not read")
