"""cron runs the watcher with PATH=/usr/bin:/bin, not the login's PATH: an nvidia-smi the
login finds elsewhere (a CUDA image's /usr/local/nvidia/bin, a PATH set in ~/.bashrc) was
invisible to the watcher, which then judged the box by the other signals alone and shut it
down under a GPU at 100 %. The install records where the login finds nvidia-smi (and docker,
for --container), and the watcher adds those directories to its PATH.

The real state probe and the real watcher run with /bin/sh; nvidia-smi is the project's replay
toolbox printing the REAL utilisation captured on an H200 under load (100 %); the shutdown
command only creates a marker file (never a power-off).
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

from gpuonboard.steps.autostop import (
    _parse_probe,
    _Remote,
    _state_probe_command,
    install_problem,
    parse_settings,
    with_tools,
)
from gpuonboard.steps.autostop.install import no_gpu_note
from gpuonboard.testing.gpu_samples import csv_sample
from gpuonboard.testing.toolbox import ReplayRule, add_executable, render_script

from .box import T0, Box

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
LOAD_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"
UTIL_ARGS = "--query-gpu=utilization.gpu --format=csv,noheader,nounits"
CRON_PATH = "/usr/bin:/bin"  # what cron gives a job (Debian's cron, cronie)


def gpu_dir(tmp: Path) -> Path:
    """A directory outside cron's PATH holding the replayed nvidia-smi of a busy H200."""
    files, tools = tmp / "replay", tmp / "usr-local-nvidia-bin"
    files.mkdir()
    (files / "util.csv").write_text(f"{csv_sample(LOAD_UTIL)['utilization.gpu']}\n")
    script = render_script("nvidia-smi", [ReplayRule(UTIL_ARGS, PurePosixPath("util.csv"))], files)
    add_executable(tools, "nvidia-smi", script)
    return tools


def probe(tmp: Path, path: str) -> _Remote:
    """The install's real state probe, run by a login whose PATH is `path`."""
    command = _state_probe_command(str(tmp / "autostop"), str(tmp / "cron.d"), "auto")
    env = {"PATH": path, "HOME": str(tmp)}
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    return _parse_probe(out.stdout)


def install_conf(box: Box, r: _Remote, **args: str) -> None:
    """What the install writes as the config, from what its probe found."""
    args.setdefault("shutdown_command", f"touch {box.marker}")
    (box.dir / "autostop.conf").write_text(with_tools(parse_settings(args), r).conf_text())


def test_the_probe_records_where_the_login_finds_nvidia_smi(tmp_path: Path) -> None:
    tools = gpu_dir(tmp_path)
    r = probe(tmp_path, f"{tools}:{CRON_PATH}")
    assert r.tools["nvidia-smi"] == str(tools / "nvidia-smi")
    conf = with_tools(parse_settings({}), r).conf_text()
    assert f"NVIDIA_SMI={tools}/nvidia-smi\n" in conf
    assert "DOCKER=''\n" in conf  # (docker only matters with --container)


def test_a_busy_gpu_outside_crons_path_keeps_the_box_up(tmp_path: Path) -> None:
    tools = gpu_dir(tmp_path)
    box = Box(tmp_path, idle="30m")
    install_conf(box, probe(tmp_path, f"{tools}:{CRON_PATH}"), idle="30m")
    for m in range(45):  # 45 minutes of cron ticks, with cron's PATH
        box.run(T0 + 60 * m, "tick", PATH=CRON_PATH)
    assert not box.marker.exists()
    log = (box.dir / "autostop.log").read_text()
    assert "busy: GPU 0 utilisation 100% > 5%; idle timer reset" in log
    assert "idle" not in log.replace("idle timer reset", "")


def test_an_nvidia_smi_gone_since_the_install_counts_as_unknown_activity(tmp_path: Path) -> None:
    tools = gpu_dir(tmp_path)
    box = Box(tmp_path, idle="1m", grace="1m")
    install_conf(box, probe(tmp_path, f"{tools}:{CRON_PATH}"), idle="1m", grace="1m")
    (tools / "nvidia-smi").unlink()
    for m in range(5):
        box.run(T0 + 60 * m, "tick", PATH=CRON_PATH)
    assert not box.marker.exists()
    line = (box.dir / "autostop.log").read_text().splitlines()[-1]
    assert line.endswith(
        f"busy: nvidia-smi is missing (invoke autostop found it at {tools}/nvidia-smi;"
        " GPU activity unknown); idle timer reset"
    )


def test_a_box_without_nvidia_smi_still_goes_idle(tmp_path: Path) -> None:
    """(the other direction: nothing recorded, nothing found: judged by the other signals)"""
    box = Box(tmp_path, idle="1m", grace="1m")
    r = probe(tmp_path, CRON_PATH)
    assert "nvidia-smi" not in r.tools
    install_conf(box, r, idle="1m", grace="1m")
    for m in range(4):
        box.run(T0 + 60 * m, "tick", PATH=CRON_PATH)
    assert box.marker.exists()


def test_a_box_without_nvidia_smi_is_said_not_watched_at_install_and_in_status(tmp_path: Path) -> None:
    """No nvidia-smi on the login's PATH (a driver being replaced, an SSH login into a CUDA image
    whose ENV put /usr/local/nvidia/bin on PATH for its own processes only): the watcher cannot
    see the GPUs, and a run on them does not keep the box up. Before, the install said nothing
    and `status` claimed `watching: GPU utilisation > 5%`."""
    r = probe(tmp_path, CRON_PATH)
    assert "nvidia-smi" not in r.tools
    said = "no nvidia-smi on the login's PATH there, so the watcher cannot see GPU activity"
    assert no_gpu_note(parse_settings({}), r) == (
        f"{said}: a run on the GPUs does not keep the box up (give --job, --pid or --container)"
    )
    assert (
        no_gpu_note(parse_settings({"job": "train.py"}), r)
        == f"{said}: only --job 'train.py' keeps the box up"
    )
    assert (
        no_gpu_note(parse_settings({"container": "t1"}), r)
        == f"{said}: only --container 't1' keeps the box up"
    )
    box = Box(tmp_path, idle="1m", grace="1m")
    (box.bin / "nvidia-smi").unlink()
    install_conf(box, r, idle="1m", grace="1m")
    status = box.run(T0, "status", PATH=CRON_PATH).stdout
    assert "watching: GPU utilisation (NOT watched: no nvidia-smi on this box)\n" in status
    # found (outside cron's PATH too): nothing to say, and `status` names the threshold
    tools = gpu_dir(tmp_path)
    found = probe(tmp_path, f"{tools}:{CRON_PATH}")
    assert no_gpu_note(parse_settings({}), found) is None
    install_conf(box, found, idle="1m", grace="1m")
    status = box.run(T0, "status", PATH=CRON_PATH).stdout
    assert "watching: GPU utilisation > 5%\n" in status


def test_docker_outside_crons_path_still_sees_the_running_container(tmp_path: Path) -> None:
    """A snap docker lives in /snap/bin, outside cron's PATH: the container was never checked."""
    snap = tmp_path / "snap-bin"
    add_executable(snap, "docker", "#!/bin/sh\necho true\n")  # `docker inspect` of a running one
    box = Box(tmp_path, idle="1m", grace="1m", container="trainer")
    install_conf(box, probe(tmp_path, f"{snap}:{CRON_PATH}"), idle="1m", grace="1m", container="trainer")
    for m in range(4):
        box.run(T0 + 60 * m, "tick", PATH=CRON_PATH)
    assert not box.marker.exists()
    assert "busy: container 'trainer' is running" in (box.dir / "autostop.log").read_text()


def test_a_job_watch_without_pgrep_is_refused_at_install() -> None:
    r = _Remote(uid="0", user="root", dir="/var/lib/gpuonboard/autostop", mode="cron.d", pgrep=False)
    assert install_problem("gpu1", parse_settings({"job": "train.py"}), r) == (
        "host gpu1: --job 'train.py' needs pgrep, which this host lacks, so the watcher could never"
        " see the job running: install procps (apt-get install procps), or watch the job by --pid or"
        " --container instead"
    )
    r.pgrep = True
    assert install_problem("gpu1", parse_settings({"job": "train.py"}), r) is None


def test_a_failing_pgrep_never_reads_as_a_finished_job(tmp_path: Path) -> None:
    """pgrep exits 1 for "no such process" only; a pgrep that fails (3: a fatal error, 127:
    procps removed since the install) says nothing about the job: before, the box shut down."""
    box = Box(tmp_path, idle="1m", grace="1m", job="train.py")
    add_executable(box.bin, "pgrep", "#!/bin/sh\necho 'pgrep: fatal error' >&2\nexit 3\n")
    for m in range(4):
        box.run(T0 + 60 * m)
    assert not box.marker.exists()
    log = (box.dir / "autostop.log").read_text()
    assert "busy: pgrep failed (exit 3; job activity unknown); idle timer reset" in log
