"""Fixtures for end-to-end tests: real sshd test hosts and a project dir driving the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuonboard.connection import ConnectOptions, KnownHosts, Runner, open_runner
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.hosts import SSHD, read_pid
from gpuonboard.testing.sim import DEMO_IMAGE, DEMO_ORDER
from gpuonboard.testing.turns import machine_turn

# A test run started in the background of a non-interactive shell (`./.ci/run &`, nohup) has
# SIGINT ignored, and an ignored signal stays ignored across exec: every CLI a test starts
# would ignore the Ctrl-C the interrupt tests send it. A handler here is reset to the default
# in each child at exec, so the children get Ctrl-C as a terminal would give it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[2]

A100_ORDER: dict[str, Any] = DEMO_ORDER

PROFILES = {
    "good": "a100-8x-nvlink",
    "misdelivered": "a100-misdelivered",
    "nodriver": "no-driver",
    "rtx": "rtx4090-1x",
    "bastion1": None,
    "bastion2": None,
    "behind": "a100-8x-nvlink",
    "keyed": "a100-8x-nvlink",
    "throttled": "h100-8x-throttled",
    "busy": "t4-busy",
    "remap": "a10-remap-pending",
    "autostop": None,
    # container step (test_container.py): `docker` = a podman wrapper; a GPU box; no runtime
    "ctr": None,
    "ctrgpu": "rtx4090-1x",
    "noctr": None,
    # dataset step (test_dataset.py): plain box, real rsync and age
    "dataset": None,
    "teardown": None,  # test_teardown.py: results pulled back, host cleaned
    "prove": None,  # test_prove.py: smoke_train / allreduce / disk_speed on the CPU
    "provegpu": "rtx4090-1x",  # nvidia-smi lists a GPU, torch has none: CPU warning
    "net1": None,  # test_prove_network.py: gpu_benchmark on the CPU, network (RTT, upload, iperf3)
    "net2": None,
    "slow": None,  # test_provision.py: a probe that hangs, for Ctrl-C
    "blocked": "h200-policy-blocked",  # test_provision.py: -q -x and -q refused by policy
    "cutprobe": "h100-8x-cut-probe",  # test_provision.py: -q cut off mid-record
}


ALONE_DOC = (
    "alone: no other test runs on this machine meanwhile (another xdist worker's waits): for a"
    " test that reads machine-wide state, such as every process's command line or name"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", ALONE_DOC)


@pytest.fixture(autouse=True)
def _machine_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test holds this machine's turn, shared; one marked `alone` holds it alone (its
    function-scoped fixtures, a fake cron daemon among them, run inside the turn)."""
    with machine_turn(alone=request.node.get_closest_marker("alone") is not None):
        yield


@pytest.fixture(scope="session")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestHostPool]:
    """One pool of test hosts for the whole session (started in one batch: ~1 s)."""
    base = tmp_path_factory.mktemp("testhosts")
    subnet = 20 + (os.getpid() % 200)
    with TestHostPool(base, subnet=subnet) as p:
        p.add_many(list(PROFILES.items()))
        yield p


def host_entry(h: TestHost, pool: TestHostPool, pin: bool = True, **extra: Any) -> dict[str, Any]:
    """Inventory entry for a test host (host key pinned unless pin=False)."""
    entry: dict[str, Any] = {
        "address": h.address,
        "port": h.port,
        "user": "root",
        "key_file": str(pool.client_key),
        "vars": {"state_dir": str(h.home / "gpuonboard-state")},
    }
    if pin:
        entry["host_key"] = h.fingerprint
    entry.update(extra)
    return entry


@dataclass
class Project:
    """A temp project dir (playbooks/templates from the repo) where the real CLI runs."""

    root: Path
    pool: TestHostPool

    def write_inventory(self, hosts: dict[str, dict[str, Any]], **top: Any) -> Path:
        """inventory/hosts.yml with the A100 order as default and the repo's vendors."""
        doc: dict[str, Any] = {
            "vendors_dir": str(REPO / "inventory" / "vendors"),
            "defaults": {"vendor": "demo-idc", "order": A100_ORDER, "vars": {"container_image": DEMO_IMAGE}},
            **top,
            "hosts": hosts,
        }
        path = self.root / "inventory" / "hosts.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    @staticmethod
    def cli_argv() -> list[str]:
        """The console script `gpuonboard` (same entry point), run by this interpreter."""
        return [sys.executable, "-c", "from gpuonboard.cli import main; main()"]

    @staticmethod
    def env() -> dict[str, str]:
        """Environment for CLI runs: wide terminal, no user SSH config."""
        return {**os.environ, "COLUMNS": "200", "GPUONBOARD_SSH_CONFIG": "/dev/null"}

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run the CLI with this project as cwd."""
        return subprocess.run(
            [*self.cli_argv(), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Start the CLI with this project as cwd, in the background (output captured as text)."""
        return subprocess.Popen(
            [*self.cli_argv(), *args],
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(),
        )

    def summary(self) -> dict[str, Any]:
        """reports/latest/summary.json of the last run."""
        return json.loads((self.root / "reports" / "latest" / "summary.json").read_text())

    def rules(self, host: str) -> dict[str, dict[str, str]]:
        """Rules of one host in the last summary, by name."""
        h = next(x for x in self.summary()["hosts"] if x["name"] == host)
        return {r["name"]: r for r in h["rules"]}


@contextlib.contextmanager
def argv_watch(*needles: str, every: float = 0.005) -> Iterator[list[str]]:
    """While the block runs, the command line of every process of this machine (the test hosts'
    among them) that holds one of `needles`, read from /proc over and over: what `ps` shows
    any user of a host. Yields the list it fills."""
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if any(n in text for n in needles):
                    seen.append(text)
            time.sleep(every)

    t = threading.Thread(target=watch)
    t.start()
    try:
        yield seen
    finally:
        done.set()
        t.join()


def ssh_runner(th: TestHost, pool: TestHostPool, tmp_path: Path) -> Runner:
    """An SSH runner to the test host `th`, its host key pinned (a known_hosts of its own)."""
    host = Host(
        name=th.name, address=th.address, port=th.port, key_file=str(pool.client_key), host_key=th.fingerprint
    )
    known = tmp_path / "known_hosts"
    return open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))


def interrupt_when(proc: subprocess.Popen[Any], ready: Callable[[], bool], seconds: float) -> None:
    """SIGTERM to `proc` once `ready()` holds (asserting it was still running then), waited
    for; killed if anything fails on the way. Its exit status must be a failure."""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if ready():
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the upload ended before it could be interrupted"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=seconds)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0


def age_key(where: Path) -> tuple[Path, str]:
    """A fresh age identity (Debian's `age-keygen`) at `where`/id.txt, mode 0600 (a private key
    readable by others is refused), and its public key."""
    out = subprocess.run(["age-keygen"], capture_output=True, text=True, check=True).stdout
    key = where / "id.txt"
    where.mkdir(parents=True, exist_ok=True)
    key.write_text(out)
    key.chmod(0o600)
    pub = re.search(r"public key: (age1\w+)", out)
    assert pub
    return key, pub.group(1)


def wait_for(path: Path, seconds: float = 20) -> None:
    """Until path exists (a marker a remote command touched), at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@dataclass(frozen=True)
class LongJob:
    """A three-step playbook (first, long-job, last; each appends its word to `ran`) whose
    middle step touches `started` and sleeps 30 s, unless `go_on` exists: a run to cut in that
    step (a signal, a dropped link), then resume."""

    playbook: Path
    started: Path
    go_on: Path
    ran: Path

    @classmethod
    def write(cls, project: Project, tmp_path: Path) -> LongJob:
        started, go_on, ran = tmp_path / "started", tmp_path / "go-on", tmp_path / "ran.log"
        long_job = f"if [ -e {go_on} ]; then echo long >> {ran}; else touch {started}; sleep 30; fi"
        book = {
            "name": "long-job",
            "steps": [
                {"step": "command", "name": "first", "args": {"argv": ["sh", "-c", f"echo first >> {ran}"]}},
                {"step": "command", "name": "long-job", "args": {"argv": ["sh", "-c", long_job]}},
                {"step": "command", "name": "last", "args": {"argv": ["sh", "-c", f"echo last >> {ran}"]}},
            ],
        }
        path = project.root / "long-job.yml"
        path.write_text(yaml.safe_dump(book))
        return cls(path, started, go_on, ran)

    def assert_resumes(self, project: Project) -> None:
        """`--resume` (the long step now quick) skips `first`, runs the rest once."""
        self.go_on.touch()
        r = project.cli("provision", "--playbook", str(self.playbook), "--resume")
        assert r.returncode == 0, r.stdout + r.stderr
        steps = project.summary()["hosts"][0]["steps"]
        assert [(s["step"], s["status"]) for s in steps] == [
            ("first", "skipped"),
            ("long-job", "changed"),
            ("last", "changed"),
        ]
        assert self.ran.read_text() == "first\nlong\nlast\n"  # `first` did not run again


@pytest.fixture
def project(tmp_path: Path, pool: TestHostPool) -> Project:
    """A fresh project dir linking the repo's playbooks and templates."""
    for d in ("playbooks", "templates"):
        (tmp_path / d).symlink_to(REPO / d)
    return Project(tmp_path, pool)


@contextlib.contextmanager
def sshd_on_ipv6(h: TestHost, port: int) -> Iterator[None]:
    """A second sshd of test host `h` (its key, users, PATH) listening on [::1]:port while the
    block runs; stopped by the pid it wrote (read once sshd has written it whole)."""
    config, pid_file = h.dir / "sshd_config_v6", h.dir / "sshd_v6.pid"
    lines = []
    for line in h.config_path.read_text().splitlines():
        if line.startswith("ListenAddress "):
            line = f"ListenAddress [::1]:{port}"
        elif line.startswith("PidFile "):
            line = f'PidFile "{pid_file}"'
        lines.append(line)
    config.write_text("\n".join(lines) + "\n")
    subprocess.run([SSHD, "-f", str(config), "-E", str(h.dir / "sshd_v6.log")], check=True, timeout=15)
    deadline = time.monotonic() + 15
    # (sshd makes the file, then writes it: an empty one is not yet its pid)
    while (pid := read_pid(pid_file)) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pid is not None, f"the IPv6 sshd of {h.name} wrote no pid to {pid_file}"
    try:
        yield
    finally:
        os.kill(pid, signal.SIGTERM)  # the daemon this helper started, by its pid file


@pytest.fixture(autouse=True)
def _no_user_ansible_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Never read the developer's ansible.cfg (./, ~/.ansible.cfg, /etc/ansible) nor ANSIBLE_*
    connection settings, in the test or the CLI it runs: an Ansible inventory's hosts take them
    (inventory.ansible_cfg). A test that wants a config sets ANSIBLE_CONFIG itself."""
    from gpuonboard.inventory.ansible_cfg import OPTIONS

    empty = tmp_path_factory.getbasetemp() / "empty-ansible.cfg"
    empty.touch()
    monkeypatch.setenv("ANSIBLE_CONFIG", str(empty))
    for _, _, names in OPTIONS:
        for name in names:
            monkeypatch.delenv(name, raising=False)
