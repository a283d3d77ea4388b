"""Billing-aware autostop only when the vendor's billing unit is known (issue 26).

A vendor profile without `billing:` (or without `billing.unit`) used to be taken for hourly
billing: the watcher then waited for the end of the "paid hour" (up to ~55 min past idle +
grace). Installed over real SSH; cron's own command from the installed cron entry runs each
tick with a controlled clock (GPUONBOARD_NOW, a boot id and boot time of the test's own), and
`--status` reads the mode back from the host. The shutdown command only creates a marker.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import Project, host_entry
from test_autostop import cron_d_entries, cron_daemon, paths

from gpuonboard.steps.autostop.install import INIT_SYSTEMS
from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # fixtures, used by name

pytestmark = pytest.mark.usefixtures("cron_daemon")

VENDORS = {
    "nobill": {"name": "No Billing Key"},
    "rateonly": {"name": "Rate Only", "billing": {"rate": 5.0, "currency": "CNY"}},
    "hourly": {"name": "Hourly", "billing": {"unit": "hour", "rate": 58.0, "currency": "CNY"}},
    "persecond": {"name": "Per Second", "billing": {"unit": "second", "rate": 9.8}},
    "keepsbilling": {"name": "Keeps Billing", "billing": {"unit": "second", "after_poweroff": "continues"}},
}
BASE = ["autostop", "--host", "autostop", "--idle", "1m", "--grace", "1m"]


def setup(
    project: Project,
    pool: TestHostPool,
    paths: dict[str, Path],
    tmp_path: Path,
    vendor: str,
    shutdown: str = "",
) -> None:
    """An inventory whose one host uses `vendor` from a vendors dir of this test's own (its
    shutdown command creates a marker unless `shutdown` is given)."""
    vendors = tmp_path / "vendors"
    vendors.mkdir(exist_ok=True)
    for name, doc in VENDORS.items():
        (vendors / f"{name}.yml").write_text(yaml.safe_dump(doc))
    entry = host_entry(pool.hosts["autostop"], pool, vendor=vendor)
    entry["vars"].update(
        {
            "autostop_dir": str(paths["dir"]),
            "cron_dir": str(paths["cron"]),
            "autostop_shutdown_command": shutdown or f"touch {paths['marker']}",
        }
    )
    project.write_inventory({"autostop": entry}, vendors_dir=str(vendors))


def cron_tick(paths: dict[str, Path], now: int, boot_time: int) -> None:
    """The installed cron entry's command, as cron runs it, at wall-clock time `now`."""
    entries = cron_d_entries((paths["cron"] / "gpuonboard-autostop").read_text())
    env = {
        "PATH": "/usr/bin:/bin",
        "GPUONBOARD_NOW": str(now),
        "GPUONBOARD_BOOT_ID": "billing-mode-test",
        "GPUONBOARD_BOOT_TIME": str(boot_time),
    }
    subprocess.run(["sh", "-c", entries[0][6]], check=True, timeout=20, env=env)


def fmt(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def status(project: Project) -> str:
    r = project.cli("autostop", "--host", "autostop", "--status")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def mode_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.startswith("mode: ")]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("vendor", ["nobill", "rateonly"])
def test_unknown_billing_unit_shuts_down_after_idle_plus_grace(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path, vendor: str
) -> None:
    # the QA case: 1 min idle + 1 min grace scheduled the shutdown 7.5 min later (the "paid hour")
    setup(project, pool, paths, tmp_path, vendor)
    r = project.cli(*BASE)
    assert r.returncode == 0, r.stdout + r.stderr

    t0 = (int(time.time()) // 3600) * 3600 + 600  # 10 minutes into an hour since boot
    boot = t0 - 600
    cron_tick(paths, t0, boot)  # idle timer starts
    cron_tick(paths, t0 + 60, boot)  # idle 1m: warned, acts one grace later
    log = (paths["dir"] / "autostop.log").read_text()
    assert f"will act at {fmt(t0 + 120)}" in log
    assert "paid hour" not in log
    assert not paths["marker"].exists()
    cron_tick(paths, t0 + 120, boot)  # idle + grace: acts now, not at the end of the hour
    assert paths["marker"].exists()
    assert mode_line(status(project)) == (
        f"mode: idle (billing unit unknown: add `billing: {{unit: hour}}` (or minute, second) to vendor"
        f" profile {vendor}, or pass --billing-aware, for billing-aware shutdown): acts after idle + grace"
    )
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0


def test_hourly_billing_waits_for_the_end_of_the_paid_hour_and_says_so(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    setup(project, pool, paths, tmp_path, "hourly")
    r = project.cli(*BASE)
    assert r.returncode == 0, r.stdout + r.stderr
    line = mode_line(status(project))
    assert line.startswith(
        "mode: billing-aware (hourly billing, per vendor profile hourly): acts in the last 5m00s of a"
        " started hour, hours counted from "
    ), line

    t0 = (int(time.time()) // 3600) * 3600 + 600
    boot = t0 - 600  # the billing hour started at boot: its last 5 minutes begin at boot + 55m
    cron_tick(paths, t0, boot)
    cron_tick(paths, t0 + 60, boot)
    cron_tick(paths, t0 + 120, boot)
    assert not paths["marker"].exists()
    log = (paths["dir"] / "autostop.log").read_text()
    assert f"waiting for the end of the paid hour: acting at {fmt(boot + 3300)}" in log
    cron_tick(paths, boot + 3300, boot)
    assert paths["marker"].exists()
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0


def test_status_names_the_mode_for_each_way_it_was_chosen(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    setup(project, pool, paths, tmp_path, "persecond")
    assert project.cli(*BASE).returncode == 0
    assert mode_line(status(project)) == (
        "mode: idle (billed per second, per vendor profile persecond: no paid hour to wait for):"
        " acts after idle + grace"
    )
    # (--no-billing-aware: test_autostop.py's status check)
    setup(project, pool, paths, tmp_path, "nobill")
    assert project.cli(*BASE, "--billing-aware").returncode == 0
    assert mode_line(status(project)).startswith(
        "mode: billing-aware (--billing-aware): acts in the last 5m00s of a started hour, hours counted from "
    )
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert not paths["dir"].exists() and not paths["marker"].exists()
    assert os.listdir(paths["cron"]) == []


def test_an_os_power_off_for_a_vendor_that_keeps_billing_is_refused_and_nothing_installed(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # (refused in the plan: the shutdown command is never run, nothing is written on the host)
    setup(project, pool, paths, tmp_path, "keepsbilling", shutdown="shutdown -h now")
    r = project.cli(*BASE)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "vendor 'keepsbilling' keeps billing a box that is powered off" in " ".join(out.split())
    assert not (paths["cron"] / "gpuonboard-autostop").exists()
    assert not (paths["dir"] / "autostop.sh").exists()


def _pid1() -> str:
    try:
        return Path("/proc/1/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.skipif(
    _pid1() not in INIT_SYSTEMS,
    reason="PID 1 is no init system here (a container): an OS power-off is refused before the note",
)
def test_a_profile_silent_on_billing_after_power_off_is_said_in_the_plan(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    setup(project, pool, paths, tmp_path, "hourly", shutdown="shutdown -h now")
    r = project.cli(*BASE, "--check")
    out = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 0, out
    assert "vendor profile 'hourly' does not say whether billing stops" in out
