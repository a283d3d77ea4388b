"""A dropped link mid-upload (issue 26): a real sshd in a network namespace, real rsync, the link
cut with iptables DROP on the host's side (no FIN, no RST ever reaches the host), the client
killed while the link is down (as its keepalive would end it, minutes sooner), the link mended.

The host's rsync receiver of the cut run lives on (its sshd never hears the connection end) and
holds its temp file `.big.bin.XXXXXX`. The rerun must stop it through the upload's lease (so it
keeps what arrived as a partial file) and resume from that: bytes re-sent at most 1 % of the
dataset beyond what had not arrived at the cut, no receiver of the cut run left running, no
temp file left in the destination.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key

from gpuonboard.testing.netns import HOST_IP, CutLink

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed"),
    pytest.mark.skipif(shutil.which("iptables") is None, reason="iptables not installed"),
]

BIG = 24 * 1024 * 1024
TEMP = re.compile(r"\..+\.[A-Za-z0-9]{6}")


@pytest.fixture
def link(tmp_path: Path) -> Any:
    try:
        with CutLink(tmp_path / "link", mbit=40) as made:
            yield made
    except subprocess.CalledProcessError as exc:  # (no netns or iptables in this sandbox)
        pytest.skip(f"cannot make a network namespace here: {exc.stderr}")


def _setup(project: Project, link: CutLink, tmp_path: Path, encrypted: bool) -> tuple[Path, Path]:
    src = tmp_path / "local" / "ds"
    (src / "small").mkdir(parents=True)
    (src / "big.bin").write_bytes(os.urandom(BIG))
    for i in range(20):
        (src / "small" / f"f{i:02d}.bin").write_bytes(os.urandom(50_000))
    assert link.host is not None
    data_dir = link.host.home / "data"
    extra: dict[str, Any] = {}
    if encrypted:
        key, pub = age_key(tmp_path)
        extra = {"age_recipients": [pub], "age_identity_file": str(key)}
    entry = {
        "address": HOST_IP,
        "port": 22,
        "user": "root",
        "key_file": str(link.client_key),
        "host_key": link.host.fingerprint,
        "data_dir": str(data_dir),
        "vars": {"dataset": str(src), "state_dir": str(link.host.home / "state"), **extra},
    }
    project.write_inventory({"cut": entry})
    return src, data_dir


def _sync(project: Project, link: CutLink, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        link.client_argv([*project.cli_argv(), "sync", "--host", "cut", *flags]),
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _on_host(target: Path) -> int:
    """Bytes of the dataset now on the host's disk under target (temp and partial files too)."""
    total = 0
    for dirpath, _, names in os.walk(target):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return total


def _temp_of_big(target: Path) -> int:
    for p in target.glob(".big.bin*"):
        if TEMP.fullmatch(p.name):
            try:
                return p.stat().st_size
            except FileNotFoundError:
                continue
    return 0


def _receivers(link: CutLink) -> list[str]:
    """Command lines of the rsync processes running on the host."""
    out = []
    for pid in link.host_pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmd.startswith("rsync"):
            out.append(f"{pid}: {cmd}")
    return out


def _digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".gpuonboard-rsync-partial" not in p.parts:
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.mark.parametrize("mode", ["plain", "encrypted"])
def test_a_rerun_after_a_dropped_link_stops_the_stale_receiver_and_resends_little(
    project: Project, link: CutLink, tmp_path: Path, mode: str
) -> None:
    encrypted = mode == "encrypted"
    if encrypted and shutil.which("age-keygen") is None:
        pytest.skip("Debian `age` not installed")
    src, data_dir = _setup(project, link, tmp_path, encrypted)
    flags = ["--encrypt"] if encrypted else []
    target = data_dir / ("ds.encrypted" if encrypted else "ds")
    total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    first = _sync(project, link, *flags)
    deadline = time.monotonic() + 30
    while _temp_of_big(target) < BIG // 3:
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.02)
    link.cut()
    time.sleep(0.3)  # (what was in flight lands, or is dropped)
    arrived = _on_host(target)
    os.killpg(first.pid, signal.SIGKILL)  # the client gives up (its keepalive would, in 60 s)
    first.communicate()
    assert _receivers(link), "the cut run's receiver should live on on the host (its sshd never heard)"
    link.mend()
    link.rate(None)
    again = _sync(project, link, *flags)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    s = project.summary()["hosts"][0]["steps"][0]
    resent = s["diff"]["literal_bytes"] - (total - arrived)
    assert resent <= total // 100, (s["msg"], resent, total, arrived)
    deadline = time.monotonic() + 20  # (the rerun's own receiver ends moments after its client)
    while _receivers(link) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _receivers(link) == [], "a receiver of the cut run is still running on the host"
    assert "; stopped 1 transfer an earlier upload of this copy left running on the host" in s["msg"]
    left = [p.name for p in target.rglob("*") if TEMP.fullmatch(p.name)]
    assert left == [], left
    want = _digest(src)
    if encrypted:
        assert set(_digest(target)) == {k + ".age" for k in want}
    else:
        assert _digest(target) == want
    # and the next run is up to date, saying nothing is left behind
    r = subprocess.run(
        link.client_argv([*project.cli_argv(), "sync", "--host", "cut", *flags]),
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "up to date" in project.summary()["hosts"][0]["steps"][0]["msg"]
