"""An `nvidia-smi -q` (or `-q -x`) that counts fewer GPUs attached than a GPU's own Minor Number
(its /dev/nvidiaN) shows only some of the box's GPUs: a container's or a job's view. Round 31
(fresh16): NVIDIA/CUDALibrarySamples#104's `nvidia-smi -a`, `Attached GPUs : 1` and its
A100-SXM4-80GB's `Minor Number : 4`, failed an order of 8 GPUs "1 (7 of the 8 ordered GPUs
missing)": a false fail, the box's GPUs of minors 0-3 not in the container's view."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.gpu_minor_view import minor_view
from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CUDALIB = "nvidia-smi-q__a100-sxm4-80gb__1-attached-minor-number-4__driver470.103.01__cut__cudalibrarysamples-104.txt"


def test_a_minor_number_beyond_the_attached_count_is_a_view(tmp_path: Path) -> None:
    text = (REAL / CUDALIB).read_text()
    assert (
        "Attached GPUs                             : 1" in text
        and "Minor Number                          : 4" in text
    )
    said = minor_view(text, parse_any(text))
    assert said.startswith("a GPU's Minor Number is 4 (/dev/nvidia4) where nvidia-smi counts 1 GPU attached")
    got = verdicts(tmp_path, "nvidia-smi-q.txt", text, "gpu_model: A100 80GB SXM\ngpu_count: 8\n")
    verdict, actual = got["gpu_count"]
    assert verdict == "unverified" and actual.startswith(
        "1 listed; incomplete probe: a GPU's Minor Number is 4"
    )
    # the model read is still an A100's: a wrong model ordered still fails
    assert verdicts(tmp_path, "nvidia-smi-q.txt", text, "gpu_model: H100\n")["gpu_model"][0] == "fail"


def test_the_same_record_as_minor_0_is_no_view(tmp_path: Path) -> None:
    """The capture edited in-test to minor 0, as a whole box of one GPU prints it: its count is
    the box's (a fail for 8 ordered), and the XML's `<minor_number>` is read alike."""
    text = (
        (REAL / CUDALIB)
        .read_text()
        .replace("Minor Number                          : 4", "Minor Number                          : 0")
    )
    assert minor_view(text, parse_any(text)) == ""
    assert verdicts(tmp_path, "nvidia-smi-q.txt", text, "gpu_count: 8\n")["gpu_count"][0] == "fail"
    xml = "<nvidia_smi_log>\n<attached_gpus>2</attached_gpus>\n<minor_number>6</minor_number>\n"
    assert "Minor Number is 6 (/dev/nvidia6) where nvidia-smi counts 2 GPUs" in minor_view(
        xml, parse_any(text).__class__("xml", None, None, 2, parse_any(text).gpus)
    )
