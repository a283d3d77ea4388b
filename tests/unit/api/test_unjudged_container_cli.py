"""`nvidia-container-cli info` (api/unjudged.py `container_cli_info`): the NVIDIA Container
Toolkit's view of the driver, named in a note and not judged; never an lscpu for its GPU's
`Architecture:   6.1` line (api/saved_kinds.py `_LSCPU_ARCH`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CLI_INFO = (
    "nvidia-container-cli-info__geforce-gtx-1080-max-q__1gpu__driver390.87__glog-tail__nvidia-docker-904.txt"
)


def test_nvidia_container_cli_info_is_no_lscpu() -> None:
    """NVIDIA/nvidia-docker#904: its `Architecture:   6.1` (the GPU's compute capability) made
    the whole output an lscpu (cpu architecture "6.1", source lscpu)."""
    assert detect_kind((REAL / CLI_INFO).read_text()) != "lscpu"


def test_nvidia_container_cli_info_alone_is_named_not_judged(tmp_path: Path) -> None:
    """The output alone, with an order's cpu_cores: cpu_cores said "lscpu gave no readable
    output" though no lscpu was given; now the file is named for what it is, nothing judged."""
    (tmp_path / "info.txt").write_text((REAL / CLI_INFO).read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "info.txt")])
    said = str(refused.value)
    assert "an `nvidia-container-cli info` output (the NVIDIA Container Toolkit's view: driver 390.87" in said
    assert "CUDA 9.1, 1 GPU(s): GeForce GTX 1080 with Max-Q Design at 00000000:01:00.0" in said
    assert "lscpu" not in said


def test_a_real_lscpu_cut_after_its_first_line_is_still_an_lscpu() -> None:
    """lscpu's `Architecture:` line with a CPU architecture, the rest cut away (written by the
    test), is still read as lscpu (an incomplete one), not refused."""
    assert detect_kind("Architecture:                    x86_64\n") == "lscpu"


CUT_8 = (
    "nvidia-container-cli-info__8x-rtx-2080-ti__driver465.19.01__cut-in-gpu0-bus-location"
    "__nvidia-docker-1506.txt"
)
JETSON = "nvidia-container-cli-info__jetson-xavier__null-driver-uuid-bus__nvidia-docker-1775.txt"


def test_a_cut_info_and_a_jetson_s_null_fields_are_said_as_read(tmp_path: Path) -> None:
    """Round 32 (m32b 07, 08): nvidia-docker#1506's info lists 8 devices in its log lines and is
    cut inside GPU 0's block: the note said "1 GPU(s)", untrue; it says 8 devices listed and 1
    block read before the cut. nvidia-docker#1775's Jetson Xavier prints `(null)` for the driver
    version, UUID and bus: it was "not a recognised command output"; it is named, its driver
    said not named and its GPU by its model alone."""
    said = {}
    for name in (CUT_8, JETSON):
        (tmp_path / "info.txt").write_text((REAL / name).read_text())
        with pytest.raises(UsageError) as refused:
            offline.load_outputs([str(tmp_path / "info.txt")])
        said[name] = str(refused.value)
    assert (
        "driver 465.19.01, CUDA 11.3, 8 devices listed by its log lines (/dev/nvidia0 to /dev/nvidia7),"
        " 1 GPU block(s) read before the output is cut short (NVIDIA GeForce RTX 2080 Ti))"
    ) in said[CUT_8]
    assert "1 GPU(s)" not in said[CUT_8]
    assert (
        "an `nvidia-container-cli info` output (the NVIDIA Container Toolkit's view: driver not named"
        " (`NVRM version: (null)`), CUDA 10.2, 1 GPU(s): Xavier), shown as read and not judged"
    ) in said[JETSON]


JETSON_CUT = (
    "nvidia-container-cli-info__jetson-tegra-32.1.0__debug-log-cut-before-info-block__nvidia-docker-1039.txt"
)
SESSION_CUT = (
    Path(__file__).parents[2]
    / "fixtures"
    / "sessions"
    / "page__lsmod+container-cli-k-d-info-CUT-before-info-block__INDENTED__nvidia-docker-1060.txt"
)
CUT_BEFORE = "an `nvidia-container-cli -d` info output cut inside its debug log, before its info block"


def test_an_info_output_cut_inside_its_debug_log_is_said_cut_before_its_info_block(tmp_path: Path) -> None:
    """nvidia-docker#1039 (a Jetson): `nvidia-container-cli -k -d /dev/tty info` cut inside its glog
    lines got the generic "not a recognised command output", whose list leaves this tool's reading
    of the info output out (measure33b 22): it is said cut before its info block."""
    (tmp_path / "info.txt").write_text((REAL / JETSON_CUT).read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "info.txt")])
    said = str(refused.value)
    assert CUT_BEFORE in said and "13 log line(s)" in said, said
    assert "not a recognised command output" not in said


def test_a_session_s_info_output_cut_inside_its_debug_log_is_said_so(tmp_path: Path) -> None:
    """nvidia-docker#1060's session: its `nvidia-container-cli -k -d /dev/tty info` part was "not
    an output this tool reads", untrue: this tool reads that output (measure33b 21)."""
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(SESSION_CUT)])
    said = " ".join(str(refused.value).split())
    assert f"line 5 (`nvidia-container-cli -k -d /dev/tty info`): {CUT_BEFORE}" in said, said


def test_an_info_output_that_failed_is_not_said_cut() -> None:
    """Its error line after the log lines (`nvidia-container-cli: initialization error: ...`) is a
    failure, not a cut: no such note."""
    from gpuonboard.api.unjudged import container_cli_cut

    text = (REAL / JETSON_CUT).read_text().rsplit("\n", 1)[0] + "\n"
    assert container_cli_cut(text) is not None
    assert container_cli_cut(text + "nvidia-container-cli: initialization error: driver error\n") is None
