"""`sim.up` (the demo's simulated server): a test host shares this machine's file system and
runs as root, so its inventory points every place gpuonboard writes into the sim dir (data dir,
autostop and cron dirs, disk tests; the shutdown command only touches a file), and a second
sim.up keeps what the user edited in that inventory (it rewrote the file before)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, Project
from test_autostop import cron_daemon

from gpuonboard.testing import simcontainers

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
        paths = [v for k, v in s1["vars"].items() if k != "registry_mirror"]  # (a URL: the sim's registry)
        for value in [s1["data_dir"], *paths]:
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
        r = project.cli(
            "autostop", "--host", "s1", "--inventory", inv, "--idle", "30m", "--max-hours", "12", "--check"
        )
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


def _running(base: Path, name: str) -> bool:
    """Whether the simulated server `name` under base answers (its sshd, by its own pid file)."""
    from gpuonboard.testing.hosts import process_alive, sshd_of

    host_dir = base.resolve() / "hosts" / name
    try:
        pid = int((host_dir / "sshd.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return sshd_of(pid, host_dir / "sshd_config") and process_alive(pid)


def test_rerunning_the_demo_keeps_the_other_simulated_servers(project: Project, tmp_path: Path) -> None:
    """`make demo` stopped every simulated server of the base first (and with them their
    inventory entries) and ended with a `next:` hint naming the server it had just stopped.
    Now it replaces only demo-a100, and its last line says how to start it again."""
    import subprocess
    import sys

    from conftest import REPO

    base = tmp_path / "sim"
    try:
        r = project.cli("sim.up", "--base", str(base), "--name", "other", "--profile", "h200-1gpu")
        assert r.returncode == 0, r.stdout + r.stderr
        console = Path(sys.executable).parent / "gpuonboard"
        make = ["make", "-s", "-o", "bootstrap", "-f", str(REPO / "Makefile"), "demo"]
        for _ in range(2):  # (the second run replaces its own demo-a100, nothing else)
            done = subprocess.run(
                [*make, f"INVOKE={console}", f"SIM={base}"],
                cwd=project.root,
                capture_output=True,
                text=True,
                timeout=180,
                env=project.env(),
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert _running(base, "other") and not _running(base, "demo-a100")
            assert set(_hosts(base)["hosts"]) == {"other"}
        lines = done.stdout.strip().splitlines()
        assert not any(ln.startswith("next:") for ln in lines), done.stdout
        assert lines[-1].startswith("to start it again: gpuonboard sim.up --name demo-a100"), lines[-1]
        assert "then gpuonboard check --host demo-a100" in lines[-1]
        r = project.cli("check", "--host", "other", "--inventory", str(base / "inventory"))
        assert r.returncode in (0, 1), r.stdout + r.stderr  # (reachable: not 3)
    finally:
        project.cli("sim.down", "--base", str(base))


def test_sim_down_name_stops_only_that_server(project: Project, tmp_path: Path) -> None:
    base = tmp_path / "sim"
    try:
        for name in ("s1", "s2"):
            assert project.cli("sim.up", "--base", str(base), "--name", name).returncode == 0
        r = project.cli("sim.down", "--base", str(base), "--name", "s1")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "stopped simulated server 's1'; still running: s2" in r.stdout
        assert not _running(base, "s1") and _running(base, "s2")
        assert set(_hosts(base)["hosts"]) == {"s2"}
        r = project.cli("sim.down", "--base", str(base), "--name", "s1")  # (again: nothing to stop)
        assert r.returncode == 0 and "no simulated server named 's1'" in r.stdout, r.stdout
        assert _running(base, "s2")
    finally:
        project.cli("sim.down", "--base", str(base))


def test_monitor_on_a_simulated_server_gets_live_samples(project: Project, tmp_path: Path) -> None:
    """The simulated nvidia-smi replays a stream for monitor's `--query-gpu ... -l N` (it said
    "replays no capture for arguments": STALE, exit 3)."""
    import json

    base = tmp_path / "sim"
    inv = str(base / "inventory")
    try:
        assert (
            project.cli("sim.up", "--base", str(base), "--name", "h2", "--profile", "h200-1gpu").returncode
            == 0
        )
        assert project.cli("sim.up", "--base", str(base), "--name", "a8").returncode == 0
        r = project.cli(
            "monitor", "--host", "h2", "--inventory", inv, "--interval", "0.2", "--duration", "2", "--json"
        )
        assert r.returncode == 0, r.stdout + r.stderr
        docs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
        samples = [d for d in docs if "event" not in d]
        assert len(samples) >= 3, r.stdout
        assert {s["name"] for s in samples} == {"NVIDIA H200"}
        # the real sampler stream, in its order: idle first (0 %, 123.94 W), then the next line
        assert [s["power_w"] for s in samples[:2]] == [123.94, 123.98], samples[:2]
        assert not [d for d in docs if d.get("event") == "stale"], docs
        r = project.cli("monitor", "--host", "a8", "--inventory", inv, "--once", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert doc["hosts"]["a8"]["status"] == "ok" and doc["hosts"]["a8"]["gpus"] == 8, doc["hosts"]
    finally:
        project.cli("sim.down", "--base", str(base))


def _cron_runner_pids(host_dir: Path) -> list[int]:
    import os

    out = []
    for entry in os.listdir("/proc"):
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if comm == "cron" and str(host_dir).encode() in cmd:
            out.append(int(entry))
    return out


def test_the_simulated_cron_runs_the_autostop_watcher(project: Project, tmp_path: Path) -> None:
    """autostop refused the simulator (no cron daemon) and, with one, its cron file sat in a
    dir no cron reads (`--status`: "no check yet" forever). sim.up starts the host's own cron
    (a process named cron, stopped by sim.down); sim.cron runs its entries now."""
    base = tmp_path / "sim"
    inv = str(base / "inventory")
    host_dir = base.resolve() / "hosts" / "s1"
    try:
        assert project.cli("sim.up", "--base", str(base), "--name", "s1").returncode == 0
        assert _cron_runner_pids(host_dir), "no cron runner for the simulated server"
        # (the replayed A100 has MIG on: no utilisation, never idle, so a deadline is asked for)
        r = project.cli(
            "autostop",
            "--host",
            "s1",
            "--inventory",
            inv,
            "--idle",
            "30m",
            "--max-hours",
            "12",
            "--no-billing-aware",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        r = project.cli("autostop", "--host", "s1", "--inventory", inv, "--status")
        assert "no check yet" in r.stdout, r.stdout
        r = project.cli("sim.cron", "--base", str(base), "--name", "s1")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "gpuonboard-autostop: ran " in r.stdout and "(exit 0)" in r.stdout, r.stdout
        r = project.cli("autostop", "--host", "s1", "--inventory", inv, "--status")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "no check yet" not in r.stdout and "idle since: " in r.stdout, r.stdout
        assert not (host_dir / "shutdown-ran").exists()  # (30 minutes idle are not over)
    finally:
        project.cli("sim.down", "--base", str(base))
    assert not _cron_runner_pids(host_dir), "sim.down left the cron runner running"


def test_the_simulated_box_has_its_data_dir_for_disk_speed(project: Project, tmp_path: Path) -> None:
    """prove's disk_speed said "no such directory" on the simulator: sim.up now creates the
    data dir and the disk test dir it points the host's inventory at, and the host's df answers
    for a path there with this machine's real df (the test file is really written there)."""
    base = tmp_path / "sim"
    inv = str(base / "inventory")
    try:
        assert project.cli("sim.up", "--base", str(base), "--name", "s1").returncode == 0
        doc = _hosts(base)
        s1 = doc["hosts"]["s1"]
        assert Path(s1["data_dir"]).is_dir() and Path(s1["vars"]["disk_test_dir"]).is_dir(), s1
        s1["vars"]["disk_test_size"] = "16MiB"
        (base / "inventory" / "hosts.yml").write_text(yaml.safe_dump(doc))
        r = project.cli(
            "provision", "--host", "s1", "--inventory", inv, "--playbook", "prove", "--only", "disk_speed"
        )
        step = next(s for s in project.summary()["hosts"][0]["steps"] if s["step"] == "disk_speed")
        # (before: "no such directory"; then "df -Pk printed '202G'": the replayed df -h capture)
        assert step["status"] == "ok", (r.stdout, step["msg"])
    finally:
        project.cli("sim.down", "--base", str(base))


def _container_step(project: Project) -> dict[str, Any]:
    return next(s for s in project.summary()["hosts"][0]["steps"] if s["step"] == "container")


@pytest.mark.skipif(
    simcontainers.unavailable() is not None, reason="needs podman, runc, docker-registry and busybox"
)
def test_the_simulated_server_runs_the_container_step(project: Project, tmp_path: Path) -> None:
    """The container step on the simulator said NO-GO (no NVIDIA container toolkit) with a
    785-character install line. sim.up now gives the server podman as `docker`, a simulated
    NVIDIA toolkit and a local registry mirroring the inventory's NGC image: the pull and the
    smoke runs really run in containers, and the result says what is simulated."""
    base = tmp_path / "sim"
    inv = str(base / "inventory")
    try:
        r = project.cli("sim.up", "--base", str(base), "--name", "c1")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "container runtime: podman as docker, the NVIDIA toolkit simulated" in r.stdout, r.stdout
        mirror = _hosts(base)["hosts"]["c1"]["vars"]["registry_mirror"]
        r = project.cli("provision", "--host", "c1", "--inventory", inv, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        step = _container_step(project)
        assert step["status"] == "changed", step
        address = mirror.removeprefix("http://").rstrip("/")
        assert step["msg"].startswith(f"pulled nvcr.io/nvidia/pytorch:23.10-py3 via mirror {address} ("), step
        assert step["diff"]["after"]["pulled_from"] == f"{address}/nvidia/pytorch:23.10-py3"
        assert step["diff"]["smoke"] == [
            "plain container run ok",
            "container sees 8 GPUs",
            "simulated: the 8 GPUs are replayed, no torch in the stand-in image (no matmul or NCCL ran)",
        ]
        r = project.cli("provision", "--host", "c1", "--inventory", inv, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        step = _container_step(project)
        assert step["status"] == "ok", step
        assert "NVIDIA runtime simulated by gpuonboard sim" in step["msg"], step
    finally:
        project.cli("sim.down", "--base", str(base))
    assert simcontainers.mirror_url(base.resolve()) is None, "sim.down left the registry running"


def test_without_podman_sim_up_says_in_one_line_why_the_container_step_is_skipped(
    project: Project, tmp_path: Path
) -> None:
    """On a machine without podman, sim.up says in one line why the simulated server has no
    container runtime, and the server gets none (no `docker` wrapper, no registry mirror)."""
    path_dir = tmp_path / "path"
    path_dir.mkdir()
    for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for tool in Path(d).iterdir() if Path(d).is_dir() else []:
            if tool.name != "podman" and not (path_dir / tool.name).exists():
                (path_dir / tool.name).symlink_to(tool)
    base = tmp_path / "sim"
    env = {**project.env(), "PATH": str(path_dir)}
    try:
        r = subprocess.run(
            [*project.cli_argv(), "sim.up", "--base", str(base), "--name", "c2"],
            cwd=project.root,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        said = [line for line in (r.stdout + r.stderr).splitlines() if "container" in line]
        assert said == [
            "container step skipped on 'c2': the simulator needs podman for it (apt-get install podman);"
            " pass --skip container to provision"
        ], r.stdout + r.stderr
        assert "registry_mirror" not in _hosts(base)["hosts"]["c2"]["vars"]
        assert not (base / "hosts" / "c2" / "bin" / "docker").exists()
    finally:
        project.cli("sim.down", "--base", str(base))


# `sim.up` from an installed package (pip install of the wheel, no repository around it): it
# wrote `vendors_dir: <the repository>/inventory/vendors` and read the captures its test host
# replays from `<the repository>/tests/fixtures`, neither of which an installed package has, so it
# failed ("fixture .../lib/python3.11/tests/fixtures/... does not exist") or wrote an inventory
# that does not load. The package ships both as data files (pyproject's `data-files`, installed
# under `<prefix>/share/gpuonboard/`), and sim.up finds them there.
#
# The install is laid out as pip lays out the wheel: the package's modules in a site directory
# of their own, and each `data-files` entry of pyproject.toml copied under the prefix's
# `share/gpuonboard/`; the CLI runs with that prefix and that copy of the package (no checkout
# above it).


def _install(root: Path) -> tuple[Path, Path]:
    """(prefix, site dir) of a copy of the package laid out as an installed wheel."""
    prefix, site = root / "prefix", root / "prefix" / "lib" / "site"
    shutil.copytree(
        REPO / "src" / "gpuonboard", site / "gpuonboard", ignore=shutil.ignore_patterns("__pycache__")
    )
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    for dest, patterns in data_files.items():
        (prefix / dest).mkdir(parents=True, exist_ok=True)
        for pattern in patterns:
            for src in REPO.glob(pattern):
                if src.is_file():
                    shutil.copy2(src, prefix / dest / src.name)
    return prefix, site


def _cli(prefix: Path, site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.prefix = {str(prefix)!r}; sys.path.insert(0, {str(site)!r});"
        " import gpuonboard; assert gpuonboard.__file__.startswith(sys.path[0]), gpuonboard.__file__;"
        " from gpuonboard.cli import main; main()"
    )
    env = {
        **os.environ,
        "COLUMNS": "200",
        "GPUONBOARD_SSH_CONFIG": "/dev/null",
        "XDG_CACHE_HOME": str(cwd / ".cache"),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env
    )


def test_sim_up_from_an_installed_package_writes_an_inventory_that_loads(tmp_path: Path) -> None:
    prefix, site = _install(tmp_path / "install")
    work = tmp_path / "work dir"  # (a user's directory, not a project: no inventory, no playbooks)
    work.mkdir()
    base = work / "sim"
    try:
        r = _cli(prefix, site, work, "sim.up", "--base", str(base), "--name", "h1")
        assert r.returncode == 0, r.stdout + r.stderr
        doc = yaml.safe_load((base / "inventory" / "hosts.yml").read_text())
        vendors = Path(doc["vendors_dir"])
        assert vendors == prefix / "share" / "gpuonboard" / "inventory" / "vendors", doc["vendors_dir"]
        assert REPO not in vendors.parents
        r = _cli(prefix, site, work, "inventory", "--inventory", str(base / "inventory"))
        assert r.returncode == 0, r.stdout + r.stderr
        row = next(line for line in r.stdout.splitlines() if " h1 " in line)
        assert "Demo IDC (simulated)" in row, r.stdout
        # the host replays the shipped captures: a read-only check passes its acceptance
        r = _cli(prefix, site, work, "check", "--host", "h1", "--inventory", str(base / "inventory"))
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        r = _cli(prefix, site, work, "sim.down", "--base", str(base))
        assert r.returncode == 0, r.stdout + r.stderr
