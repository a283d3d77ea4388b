"""`sim.up` (the demo's simulated server): a test host shares this machine's file system and
runs as root, so its inventory points every place gpuonboard writes into the sim dir (data dir,
autostop and cron dirs, disk tests; the shutdown command only touches a file), and a second
sim.up keeps what the user edited in that inventory (it rewrote the file before)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Project
from test_autostop import cron_daemon

__all__ = ["cron_daemon"]  # the fixture, used by name


def _hosts(base: Path) -> dict[str, Any]:
    return yaml.safe_load((base / "inventory" / "hosts.yml").read_text())


@pytest.mark.usefixtures("cron_daemon")
def test_sim_up_keeps_edits_and_writes_nothing_outside_its_dir(project: Project, tmp_path: Path) -> None:
    base = tmp_path / "sim"
    try:
        r = project.cli("sim.up", "--base", str(base), "--name", "s1")
        assert r.returncode == 0, r.stdout + r.stderr
        doc = _hosts(base)
        s1 = doc["hosts"]["s1"]
        home = base.resolve()
        for value in [s1["data_dir"], *s1["vars"].values()]:
            assert str(home) in str(value), s1  # (inside the sim dir, never /etc/cron.d, /mnt/...)
        assert s1["vars"]["autostop_shutdown_command"].startswith("touch ")
        # the user's edits: a var, the order of another profile, a default
        s1["vars"]["train_python"] = "/opt/py/bin/python"
        s1["order"] = {"gpu_model": "H200", "gpu_count": 1}
        doc["defaults"]["vars"]["container_image"] = "nvcr.io/nvidia/pytorch:24.08-py3"
        (base / "inventory" / "hosts.yml").write_text(yaml.safe_dump(doc))
        r = project.cli("sim.up", "--base", str(base), "--name", "s2", "--profile", "h200-1gpu")
        assert r.returncode == 0, r.stdout + r.stderr
        doc = _hosts(base)
        assert set(doc["hosts"]) == {"s1", "s2"}
        assert doc["hosts"]["s1"]["vars"]["train_python"] == "/opt/py/bin/python"
        assert doc["hosts"]["s1"]["order"] == {"gpu_model": "H200", "gpu_count": 1}
        assert doc["defaults"]["vars"]["container_image"] == "nvcr.io/nvidia/pytorch:24.08-py3"
        # autostop against it plans in the sim dir, not this machine's /etc/cron.d
        inv = str(base / "inventory")
        r = project.cli("autostop", "--host", "s1", "--inventory", inv, "--idle", "30m", "--check")
        assert r.returncode == 0, r.stdout + r.stderr
        msg = project.summary()["hosts"][0]["steps"][0]["msg"]
        assert f"{home}/hosts/s1/cron.d/" in msg and "/etc/cron.d" not in msg, msg
    finally:
        project.cli("sim.down", "--base", str(base))


@pytest.mark.alone  # another sim.up (another worker's) could take the address freed meanwhile
def test_a_new_sim_host_on_an_old_ones_address_is_not_refused(project: Project, tmp_path: Path) -> None:
    """sim.down, then sim.up: the new host gets the old one's loopback address with a new key.
    Its inventory pins the new key; the project's recorded old key made every command refuse it
    as changed (exit 4). sim.up forgets that old line (only a loopback address's, only when the
    key differs)."""
    base = tmp_path / "sim"
    inv = str(base / "inventory")
    try:
        assert project.cli("sim.up", "--base", str(base), "--name", "s1").returncode == 0
        first = _hosts(base)["hosts"]["s1"]
        assert project.cli("check", "--host", "s1", "--inventory", inv).returncode in (0, 1)
        known = project.root / ".gpuonboard" / "known_hosts"
        assert first["address"] in known.read_text()
        assert project.cli("sim.down", "--base", str(base)).returncode == 0
        r = project.cli("sim.up", "--base", str(base), "--name", "s2")  # (another server: its own key)
        assert r.returncode == 0, r.stdout + r.stderr
        second = _hosts(base)["hosts"]["s2"]
        assert second["address"] == first["address"] and second["host_key"] != first["host_key"]
        assert "forgot the recorded host key of" in r.stdout
        r = project.cli("check", "--host", "s2", "--inventory", inv)
        assert r.returncode in (0, 1), r.stdout + r.stderr  # (not 4: a changed key)
        # the same server started again (same key): nothing forgotten
        r = project.cli("sim.up", "--base", str(base), "--name", "s2")
        assert r.returncode == 0 and "forgot" not in r.stdout, r.stdout
    finally:
        project.cli("sim.down", "--base", str(base))
