"""Saved `nvidia-smi dmon` / `nvidia-smi pmon` samples (real captures): refused by name, saying
which GPUs (and processes) they show, never misread as another format nor as an unknown text."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi.monitor import monitor_kind, monitor_refusal

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DMON_TD = "nvidia-smi-dmon-s-mutc-o-TD__1gpu__driver-unknown__xuesongtap-blog.txt"
DMON_M = "nvidia-smi-dmon-s-m__8gpu__driver-unknown__xuesongtap-blog.txt"
PMON = "nvidia-smi-pmon-s-mu__4gpu-10-processes__nordichpc-sonar.txt"
# `nvidia-smi dmon -s u` as pasted in https://github.com/influxdata/telegraf/issues/5532 (comment
# by sturgeo, 2020-03-12): the header pair and the first three of its nine rows
DMON_U = (
    "# gpu    sm   mem   enc   dec\n# Idx     %     %     %     %\n" + "    0     0     0     0     0\n" * 3
)
# `nvidia-smi dmon -d 1 -s pucvmet` as quoted in https://github.com/mozilla/DeepSpeech/issues/178
# (description by lissyx, 2016-11-11), the Markdown quote's `> \` and `> ` dropped
DMON_ALL = (
    "# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol    fb  bar1 sbecc dbecc   pci rxpci txpci\n"  # noqa: E501
    "# Idx     W     C     %     %     %     %   MHz   MHz     %  bool    MB    MB  errs  errs  errs  MB/s  MB/s\n"  # noqa: E501
    "    0   111    83    25     7     0     0  4513  1683     0     0 11651     2     -     -     0    41     8\n"  # noqa: E501
    "    1   111    84    18     5     0     0  4513  1733     0     0 11653     2     -     -     0    25    14\n"  # noqa: E501
)


def _refused(path: Path) -> str:
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(path)])
    return str(refused.value)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            DMON_TD,
            "an `nvidia-smi dmon` sample (memory use, utilisation, PCIe, clocks of GPU 0 per interval)",
        ),
        (DMON_M, "an `nvidia-smi dmon` sample (memory use of GPU 0, 1, 2, 3, 4, 5, 6, 7 per interval)"),
        (
            PMON,
            "an `nvidia-smi pmon` sample (4 processes on GPU 0; 2 processes on GPU 1; 2 processes on GPU 2;"
            " 2 processes on GPU 3)",
        ),
    ],
)
def test_a_saved_sample_is_refused_by_name(name: str, said: str) -> None:
    """Each was refused as "not a recognised command output", naming no nvidia-smi form."""
    refused = _refused(REAL / name)
    assert said in refused and "not a recognised command output" not in refused
    assert "save `nvidia-smi -q` (or the plain `nvidia-smi`) of the box" in refused


@pytest.mark.parametrize(("text", "kind"), [(DMON_U, "dmon"), (DMON_ALL, "dmon")])
def test_pasted_samples_are_told(tmp_path: Path, text: str, kind: str) -> None:
    assert monitor_kind(text) == kind
    (tmp_path / "gpu.txt").write_text(text)
    assert f"an `nvidia-smi {kind}` sample" in _refused(tmp_path / "gpu.txt")


def test_dmon_names_what_its_columns_measure() -> None:
    said = monitor_refusal(DMON_ALL) or ""
    assert (
        "(power, temperature, utilisation, clocks, throttling, memory use, ECC errors, PCIe of GPU 0, 1 "
        in said
    )


def test_an_idle_gpu_of_pmon_is_said_to_run_nothing() -> None:
    """pmon prints a row of `-` for a GPU with no process in the interval."""
    text = (REAL / PMON).read_text().split("\n")[:5]
    idle = "\n".join([*text, "    1          -     -     -     -     -     -     -   -"])
    assert "(1 process on GPU 0; none on GPU 1)" in (monitor_refusal(idle) or "")


@pytest.mark.parametrize("name", ["nvidia-smi__tesla-k20m__1gpu__driver361.93.02.txt"])
def test_other_outputs_are_no_sample(name: str) -> None:
    assert monitor_kind((REAL / name).read_text()) is None
