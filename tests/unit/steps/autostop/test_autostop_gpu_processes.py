"""`--gpu-processes`: the watcher counts the box busy while any process holds a GPU, at any
utilisation (a training run in a long CPU-bound phase: evaluation on the CPU, a checkpoint on a
slow disk, preprocessing, a stalled dataloader). The real watcher script runs with /bin/sh, its
clock under test control, and an `nvidia-smi` made by the project's replay toolbox from REAL
captured outputs: `--query-gpu=utilization.gpu` from an idle H100 (0 %), `--query-compute-apps`
from an H200 (idle: no process; load: three; see tests/fixtures/compute-apps/SOURCES.md).
Any other arguments get the toolbox's "no capture" answer and exit 2: a failing nvidia-smi.
The shutdown command only creates a marker file (never a power-off).
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path, PurePosixPath

import pytest

from gpuonboard.api.autostop import AutostopOptions, build_spec
from gpuonboard.steps.autostop import parse_settings, render
from gpuonboard.steps.base import StepArgsError
from gpuonboard.testing.gpu_samples import csv_sample
from gpuonboard.testing.toolbox import ReplayRule, add_executable, render_script

from .box import T0, Box

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
IDLE_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
APPS = FIXTURES / "compute-apps"
NO_PROCESS = APPS / "nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__idle.csv"
THREE_PROCESSES = APPS / "nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__load.csv"

UTIL_ARGS = "--query-gpu=utilization.gpu --format=csv,noheader,nounits"
APPS_ARGS = "--query-compute-apps=pid --format=csv,noheader"
BUSY_LINE = "busy: GPU process 12249 holds GPU memory (and 2 more); idle timer reset"


def pid_column(capture: Path) -> str:
    """What `--query-compute-apps=pid --format=csv,noheader` prints on the captured box: the
    `pid` column of the real capture (picked by its header name), one value a line, no header."""
    header, *rows = list(csv.reader(io.StringIO(capture.read_text()), skipinitialspace=True))
    col = [h.strip() for h in header].index("pid")
    return "".join(f"{row[col].strip()}\n" for row in rows)


def replay(box: Box, apps: Path | None) -> Path:
    """The toolbox's nvidia-smi replay on the box: the real idle utilisation, and the pid column
    of `apps` (None: no capture for that query, so nvidia-smi exits 2). Every call is logged."""
    files = box.bin.parent / "replay"
    files.mkdir(exist_ok=True)
    (files / "util.csv").write_text(f"{csv_sample(IDLE_UTIL)['utilization.gpu']}\n")
    rules = [ReplayRule(UTIL_ARGS, PurePosixPath("util.csv"))]
    if apps is not None:
        (files / "apps.csv").write_text(pid_column(apps))
        rules.append(ReplayRule(APPS_ARGS, PurePosixPath("apps.csv")))
    script = render_script("nvidia-smi", rules, files)
    calls = box.bin.parent / "nvidia-smi-calls"
    logged = script.replace('case "$*" in', f'printf \'%s\\n\' "$*" >>{calls}\ncase "$*" in', 1)
    add_executable(box.bin, "nvidia-smi", logged)
    return calls


def new_box(tmp_path: Path, name: str, **args: object) -> Box:
    where = tmp_path / name
    where.mkdir()
    return Box(where, idle="10m", grace="2m", billing_aware="false", **args)


def test_the_replay_holds_the_captured_pids() -> None:
    # the derivation reads the real captures, not a made-up list
    assert csv_sample(IDLE_UTIL)["utilization.gpu"] == "0"
    assert pid_column(THREE_PROCESSES) == "12249\n12250\n12267\n"
    assert pid_column(NO_PROCESS) == ""


def test_a_process_holding_a_gpu_at_zero_utilisation_keeps_the_box_up(tmp_path: Path) -> None:
    # the known risk: a run in a CPU-bound phase (0 % utilisation) but holding its GPU memory.
    # Without the flag the box is shut down under it; with it, never, and the log says why.
    off = new_box(tmp_path, "off")
    replay(off, THREE_PROCESSES)
    off.ticks(T0, 16)
    assert off.shut_down  # the default trade-off, unchanged: utilisation only

    on = new_box(tmp_path, "on", gpu_processes=True)
    replay(on, THREE_PROCESSES)
    on.ticks(T0, 16)
    on.run(T0 + 6 * 3600)
    assert not on.shut_down
    assert on.state()["idle_since"] == ""
    assert BUSY_LINE in on.log()
    assert "idle" not in on.log().replace("idle timer reset", "")

    status = on.run(T0 + 6 * 3600 + 30, "status").stdout
    assert "watching: GPU utilisation > 5%; GPU processes (any process holding GPU memory)" in status
    assert "idle since: - (busy at the last check: GPU process 12249 holds GPU memory (and 2 more))" in status
    assert "would act: not while busy" in status


def test_no_gpu_process_is_idle_exactly_as_without_the_flag(tmp_path: Path) -> None:
    # the flag adds a signal, nothing else: with no process listed the box goes idle, is warned
    # and shut down at the same ticks, with the same log, as a box without the flag
    on, off = new_box(tmp_path, "on", gpu_processes=True), new_box(tmp_path, "off")
    calls_on, calls_off = replay(on, NO_PROCESS), replay(off, NO_PROCESS)
    for m in range(16):
        for box in (on, off):
            box.run(T0 + 60 * m)
        assert on.shut_down == off.shut_down, f"minute {m}"
    assert on.shut_down and off.shut_down
    assert on.log().replace("/on/", "/off/") == off.log()  # (the marker lies in each box's dir)
    assert "warn: idle for 10m00s" in on.log()
    # without the flag the watcher never asks for the process list (exactly as before)
    assert APPS_ARGS not in calls_off.read_text()
    assert APPS_ARGS in calls_on.read_text()


def test_a_failing_nvidia_smi_counts_as_busy(tmp_path: Path) -> None:
    box = new_box(tmp_path, "box", gpu_processes=True)
    replay(box, None)  # the process query gets "no capture" and exit 2
    box.ticks(T0, 3)
    box.run(T0 + 6 * 3600)
    assert not box.shut_down
    assert (
        "busy: nvidia-smi --query-compute-apps failed (exit 2: nvidia-smi: this test host replays no"
        f" capture for arguments: {APPS_ARGS}; GPU process activity unknown); idle timer reset"
    ) in box.log()


def test_a_hanging_process_query_counts_as_busy(tmp_path: Path) -> None:
    box = new_box(tmp_path, "box", gpu_processes=True)
    replay(box, NO_PROCESS)
    tool = box.bin / "nvidia-smi"
    # the same replay, except that the process query hangs (a hung driver)
    hang = f'case "$*" in {APPS_ARGS!r}) exec sleep 60 ;; esac\n'.replace("'", '"')
    tool.write_text(tool.read_text().replace('case "$*" in', hang + 'case "$*" in', 1))
    box.run(T0, GPUONBOARD_PROBE_TIMEOUT="1")
    assert not box.shut_down
    assert "busy: nvidia-smi did not answer within 1s (GPU process activity unknown)" in box.log()


def test_a_gpu_that_cannot_list_its_processes_says_so_and_counts_as_busy(tmp_path: Path) -> None:
    # no capture of an unsupported process query exists: `[N/A]` is the value nvidia-smi's csv
    # prints for a field the GPU does not report (the real MIG capture's utilization.gpu)
    box = new_box(tmp_path, "box", gpu_processes=True)
    replay(box, NO_PROCESS)
    (box.bin.parent / "replay" / "apps.csv").write_text("[N/A]\n")
    box.ticks(T0, 16)
    assert not box.shut_down
    assert (
        "busy: nvidia-smi cannot list the GPU processes here ('[N/A]' is not a pid: not supported on"
        " this GPU, e.g. a MIG or vGPU instance; GPU process activity unknown)"
    ) in box.log()


def test_no_nvidia_smi_is_said_in_the_status(tmp_path: Path) -> None:
    system = render.WATCHER_PATH  # (the watcher adds these)
    if shutil.which("nvidia-smi", path=system):
        pytest.skip("this machine has an nvidia-smi of its own")
    box = new_box(tmp_path, "box", gpu_processes=True)
    (box.bin / "nvidia-smi").unlink()
    status = box.run(T0, "status").stdout
    assert "GPU processes (NOT watched: no nvidia-smi on this box)" in status


@pytest.mark.parametrize(("value", "conf"), [(True, "GPU_PROCESSES=1\n"), ("yes", "GPU_PROCESSES=1\n")])
def test_the_setting_reaches_the_config(value: object, conf: str) -> None:
    assert conf in parse_settings({"gpu_processes": value}).conf_text()
    assert "GPU_PROCESSES=0\n" in parse_settings({}).conf_text()
    assert build_spec(AutostopOptions(gpu_processes=True)).args["gpu_processes"] is True
    assert build_spec(AutostopOptions()).args["gpu_processes"] is False


def test_a_bad_setting_names_it() -> None:
    with pytest.raises(StepArgsError, match="argument 'gpu_processes' must be true or false"):
        parse_settings({"gpu_processes": "sometimes"})


def test_a_warning_on_stderr_is_no_process(tmp_path: Path) -> None:
    # only stdout holds the list; whatever the driver says on stderr (any text: not a capture)
    # neither keeps the box busy nor hides a process
    box = new_box(tmp_path, "box", gpu_processes=True)
    replay(box, NO_PROCESS)
    tool = box.bin / "nvidia-smi"
    tool.write_text(tool.read_text().replace('case "$*" in', 'echo "stderr line" >&2\ncase "$*" in', 1))
    box.ticks(T0, 16)
    assert box.shut_down
    assert "busy:" not in box.log()
