"""An idle decision is checked again after before_shutdown: the upload it runs may take up to
--before-timeout (10 minutes by default), and activity that resumed meanwhile (a job started
after the idle warning) cancels the shutdown, as at any check. Before, the tick probed once, at
its start, ran before_shutdown, then the shutdown command: the box was powered off under a
training run started while the last checkpoint was being uploaded.

Each test's before_shutdown stands in for the upload and, while it runs, for the user: it makes
the GPU busy or starts the job (real processes, the watcher's own probes; the shutdown command
only creates a marker file).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .box import T0, Box


def _busy_gpu_script(path: Path) -> str:
    """A before_shutdown that rewrites the fake nvidia-smi to read 97% (a job took the GPU)."""
    return f"printf '#!/bin/sh\\necho 0\\necho 97\\n' > {path}"


def test_a_gpu_busy_again_after_before_shutdown_cancels_the_idle_shutdown(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no")
    box.reconfigure(
        idle="1m", grace="0", billing_aware="no", before_shutdown=_busy_gpu_script(box.bin / "nvidia-smi")
    )
    box.gpu("0", "0")
    box.run(T0)
    box.run(T0 + 60)  # idle past the threshold: warns, runs before_shutdown, checks again
    log = box.log()
    assert not box.shut_down, log
    assert "before_shutdown done" in log
    assert (
        "busy: GPU 1 utilisation 97% > 5% (checked again after before_shutdown); idle shutdown"
        " cancelled, idle timer reset" in log
    )
    assert "shutdown: idle" not in log
    state = box.state()
    assert state["idle_since"] == "" and state["warned_at"] == "0"
    assert state["busy"] == "GPU 1 utilisation 97% > 5%"
    status = box.run(T0 + 90, "status").stdout
    assert "idle since: - (busy at the last check: GPU 1 utilisation 97% > 5%)" in status
    assert "OVERDUE" not in status


def test_a_job_started_during_before_shutdown_cancels_the_idle_shutdown(tmp_path: Path) -> None:
    name = f"trainjob-{tmp_path.name}"
    started = tmp_path / "job.pid"
    # (the job outlives before_shutdown: started in the background, its pid kept to end it)
    job = f"{sys.executable} -c 'import time; time.sleep(60)' {name} >/dev/null 2>&1 & echo $! > {started}"
    box = Box(tmp_path, idle="1m", grace="0", job=name, billing_aware="no", before_shutdown=job)
    try:
        box.run(T0)
        box.run(T0 + 60)
        log = box.log()
        assert not box.shut_down, log
        pid = started.read_text().strip()
        assert f"busy: job '{name}' is running (pid {pid}) (checked again after before_shutdown)" in log
    finally:
        if started.exists():
            subprocess.run(["kill", started.read_text().strip()], check=False)


def test_a_box_still_idle_after_before_shutdown_is_shut_down(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no", before_shutdown="echo uploaded")
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down, box.log()
    assert "checked again" not in box.log()


def test_after_a_cancelled_idle_shutdown_the_next_one_runs_before_shutdown_again(tmp_path: Path) -> None:
    # the cancelled decision's upload does not count for the next decision: a new warning, a new
    # before_shutdown (the checkpoint the resumed job wrote is uploaded too), then the shutdown
    count = tmp_path / "uploads"
    smi = tmp_path / "bin" / "nvidia-smi"
    before = (
        f"echo x >> {count}; [ -e {tmp_path}/once ] || {{ touch {tmp_path}/once; {_busy_gpu_script(smi)}; }}"
    )
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no", before_shutdown=before)
    box.run(T0)
    box.run(T0 + 60)  # cancelled: the GPU is busy again
    assert not box.shut_down
    smi.write_text("#!/bin/sh\necho 0\n")  # the job ended
    box.run(T0 + 120)  # idle timer starts again
    assert not box.shut_down
    box.run(T0 + 180)  # idle 1m: warns, uploads again, still idle: acts
    assert box.shut_down, box.log()
    assert count.read_text().count("x") == 2
    assert "before_shutdown already ran for this decision" not in box.log()


def test_a_hard_trigger_is_not_cancelled_by_activity_after_before_shutdown(tmp_path: Path) -> None:
    # --max-hours acts whatever the activity, before_shutdown included
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="2", billing_aware="no")
    box.reconfigure(
        idle="30m",
        grace="5m",
        max_hours="2",
        billing_aware="no",
        before_shutdown=_busy_gpu_script(box.bin / "nvidia-smi"),
    )
    box.gpu("0")  # (idle at the tick's probes; before_shutdown makes the GPU busy)
    box.run(T0 + 2 * 3600 - 300)  # warns
    box.run(T0 + 2 * 3600)
    assert box.shut_down, box.log()
    assert "checked again" not in box.log()
