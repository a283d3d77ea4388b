"""Where root's watcher goes: the cron.d dir only where a cron daemon reads it (it exists, and the
daemon is not busybox's crond, which reads its crontabs/ only), else root's crontab; and what
`status` says when cron has never run the watcher since its install."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import _parse_probe, _Remote, _state_probe_command
from gpuonboard.steps.autostop.install import cron_d_note, install_problem
from gpuonboard.steps.autostop.settings import parse_settings

from .box import T0, Box

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cron.d mode is root's")


def _probe(tmp_path: Path, mode: str = "auto") -> _Remote:
    command = _state_probe_command(str(tmp_path / "autostop"), str(tmp_path / "cron.d"), mode)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent"}
    out = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, timeout=30, check=True
    )
    return _parse_probe(out.stdout)


def test_a_missing_cron_d_dir_puts_roots_watcher_in_its_crontab(tmp_path: Path) -> None:
    # before: mode cron.d, the install made the dir (mkdir -p) and said OK; no daemon read it
    r = _probe(tmp_path)
    missing = f"{tmp_path}/cron.d does not exist"
    assert (r.uid, r.mode, r.cron_d_unread) == ("0", "crontab", missing)
    assert cron_d_note(r) == f"the cron.d dir is not used ({missing}): the watcher goes into root's crontab"
    (tmp_path / "cron.d").mkdir()
    r = _probe(tmp_path)
    assert (r.mode, r.cron_d_unread, cron_d_note(r)) == ("cron.d", "", None)


def test_a_cron_d_mode_asked_for_where_no_daemon_reads_it_is_refused(tmp_path: Path) -> None:
    r = dataclasses.replace(_probe(tmp_path, "cron.d"), cron_daemon="yes")  # (a cron runs there)
    assert r.mode == "cron.d"
    assert install_problem("gpu1", parse_settings({}), r) == (
        f"host gpu1: autostop_cron is cron.d but {tmp_path}/cron.d does not exist, so cron would never"
        " run the watcher and the box would never be shut down: set vars.autostop_cron to auto or"
        " crontab (the login's crontab), or cron_dir to the directory the cron daemon reads"
    )


@pytest.fixture
def busybox_crond(tmp_path: Path) -> Iterator[None]:
    """busybox's own crond (Alpine's cron), on an empty crontabs dir, ended by pid."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("needs busybox")
    link = tmp_path / "bb" / "crond"
    link.parent.mkdir()
    link.symlink_to(busybox)
    (tmp_path / "crontabs").mkdir()
    daemon = subprocess.Popen([str(link), "-f", "-c", str(tmp_path / "crontabs")])
    try:
        yield
    finally:
        daemon.kill()
        daemon.wait()


@pytest.mark.usefixtures("busybox_crond")
def test_busybox_crond_never_reads_the_cron_d_dir(tmp_path: Path) -> None:
    (tmp_path / "cron.d").mkdir()
    r = _probe(tmp_path)
    why = f"the cron daemon is busybox crond, which reads its crontabs only, never {tmp_path}/cron.d"
    assert (r.mode, r.cron_d_unread) == ("crontab", why)


def test_status_says_when_cron_has_never_run_the_watcher(tmp_path: Path) -> None:
    # before: "would act: after the first check (cron runs it every minute)" for ever
    box = Box(tmp_path, idle="30m")
    assert "would act: after the first check" in box.run(T0 + 120, "status").stdout
    out = box.run(T0 + 6 * 3600, "status").stdout
    assert (
        "would act: NEVER: the watcher has not run since it was installed 6h00m00s ago: cron is not"
        " running it (check the cron entry and that the cron daemon reads it)"
    ) in out
    box.run(T0 + 6 * 3600)  # one tick: it runs
    assert "would act: NEVER" not in box.run(T0 + 6 * 3600 + 60, "status").stdout
