#!/usr/bin/env python3
"""Fan-out benchmark: `invoke check` across N real sshd test hosts (8xA100 profile).

Usage: .venv/bin/python bench/fanout.py 1 10 50   [--reps 3]

Prints, per N: wall seconds of the whole `gpuonboard check` command (process start to
exit, imports included), hosts/s, and per host the SSH connections, logins, sessions
(remote command executions) counted from each sshd's VERBOSE log. First run = empty
known_hosts state with pinned keys; second run = the same again (nothing changes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gpuonboard.testing import TestHostPool  # noqa: E402
from gpuonboard.testing.sim import DEMO_IMAGE, DEMO_ORDER  # noqa: E402

ORDER = DEMO_ORDER  # what the a100-8x-nvlink profile box was "ordered" as


def write_project(root: Path, pool: TestHostPool, names: list[str]) -> None:
    (root / "playbooks").symlink_to(REPO / "playbooks")
    (root / "templates").symlink_to(REPO / "templates")
    hosts = {
        n: {
            "address": pool.hosts[n].address,
            "port": pool.hosts[n].port,
            "key_file": str(pool.client_key),
            "host_key": pool.hosts[n].fingerprint,
        }
        for n in names
    }
    # the demo box's driver runs NGC 23.10 (as in `make demo`): the check passes, exit 0
    doc = {
        "defaults": {"user": "root", "order": ORDER, "vars": {"container_image": DEMO_IMAGE}},
        "hosts": hosts,
    }
    (root / "inventory").mkdir()
    (root / "inventory" / "hosts.yml").write_text(yaml.safe_dump(doc))


def counts(pool: TestHostPool, names: list[str]) -> dict[str, int]:
    total: dict[str, int] = {}
    for n in names:
        for k, v in pool.log_counts(n).items():
            total[k] = total.get(k, 0) + v
    return total


def run_check(root: Path, n: int) -> tuple[float, int]:
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "check",
        "--quiet",
        "--forks",
        str(n),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd,
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null"},
    )
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return dt, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[1, 10, 50])
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    biggest = max(a.sizes)
    failed = False
    with (
        tempfile.TemporaryDirectory(prefix="gpuonboard-fanout-") as tmp,
        TestHostPool(Path(tmp) / "hosts", subnet=9) as pool,
    ):
        t0 = time.perf_counter()
        pool.add_many([(f"h{i:02d}", "a100-8x-nvlink") for i in range(1, biggest + 1)])
        print(f"started {biggest} test hosts in {time.perf_counter() - t0:.2f}s")
        print(
            f"{'N':>3} {'run':>6} {'median s':>9} {'min s':>7} {'hosts/s':>8}"
            f" {'conn/host':>9} {'logins/host':>11} {'sessions/host':>13}"
        )
        for n in a.sizes:
            names = [f"h{i:02d}" for i in range(1, n + 1)]
            for label in ("first", "second"):
                times = []
                per = {}
                for rep in range(a.reps):
                    root = Path(tmp) / f"p{n}-{label}-{rep}"
                    root.mkdir()
                    write_project(root, pool, names)
                    if label == "second":
                        run_check(root, n)  # the no-change rerun follows a first run
                    before = counts(pool, names)
                    dt, rc = run_check(root, n)
                    after = counts(pool, names)
                    if rc != 0:
                        print(f"  N={n} {label} rep {rep}: exit {rc}", file=sys.stderr)
                        failed = True
                    times.append(dt)
                    per = {k: (after[k] - before[k]) / n for k in after}
                med = statistics.median(times)
                print(
                    f"{n:>3} {label:>6} {med:>9.2f} {min(times):>7.2f} {n / med:>8.1f}"
                    f" {per['connections']:>9.2f} {per['logins']:>11.2f} {per['sessions']:>13.2f}"
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
