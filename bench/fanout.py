#!/usr/bin/env python3
"""Fan-out benchmark: `invoke check` across N real sshd test hosts (8xA100 profile).

Usage: .venv/bin/python bench/fanout.py 1 10 50   [--reps 3] [--profile h100-8x-throttled|h200-1gpu]

Which nvidia-smi formats a simulated host answers is its profile's (testing/profiles): the live
probe asks every host for all of them (`-q -x`, `-q`, the CSV query, the table, `-L`, ...), and
a real host answers them all. The repository holds no 8-GPU box captured in every format: the
8xA100 profile (the default) answers `-q -x` (derived from a real A100's record) and no `-q`
text, CSV, table or `-L`; `--profile h100-8x-throttled` is a real 8xH100 box's `-q` text and no
`-q -x` (ordered as an 8xH100; NO-GO, its GPUs slowed down, so its check exits 1);
`--profile h200-1gpu` is the one box whose every answer is real (`-q -x`, `-q`, the table,
topo -m; one GPU). docs/benchmarks.md (round 26) has the three figures.

The projects (reports, raw outputs, ledger, logs: about 25 new files a host) are written to a
freshly made ext4 with a journal (`--disk fresh`, the default; root: loop mount), as on a
laptop's disk: on this VM's journal-less root ext4, after large deletes, each new file cost
0.4-0.7 ms of kernel CPU (bench/freshdisk.py), a third of the CPU a host measured.
`--disk shared` writes to the temp dir as before.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from freshdisk import fresh_disk, unmount  # noqa: E402

from gpuonboard.testing import TestHostPool  # noqa: E402
from gpuonboard.testing.sim import DEMO_IMAGE, DEMO_ORDER  # noqa: E402

# each benchmark profile: what its box was "ordered" as, and the exit code its check ends with
PROFILES: dict[str, tuple[dict[str, object], int]] = {
    "a100-8x-nvlink": (DEMO_ORDER, 0),
    # the real 8xH100 `-q` text (gpud's capture): HW Slowdown active on its GPUs, so NO-GO (1)
    "h100-8x-throttled": ({**DEMO_ORDER, "gpu_model": "H100 80GB HBM3"}, 1),
    # the one box captured in every format it answered (-q -x, -q, the table, topo -m: all real)
    "h200-1gpu": ({"gpu_model": "H200", "gpu_count": 1}, 0),
}


def write_project(root: Path, pool: TestHostPool, names: list[str], order: dict[str, object]) -> None:
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
        "defaults": {"user": "root", "order": order, "vars": {"container_image": DEMO_IMAGE}},
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


@dataclass
class Run:
    """One `gpuonboard check`: wall and CPU seconds of the process, its phases, exit code."""

    wall: float
    cpu: float
    phases: dict[str, tuple[float, float]]  # phase -> (wall s, cpu s)
    code: int

    @property
    def engine(self) -> float:
        return self.phases.get("runner", (float("nan"), 0.0))[0]


def run_check(root: Path, n: int, expected_code: int = 0) -> Run:
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "check",
        "--quiet",
        "--forks",
        str(n),
    ]
    timings = root / f"timings-{time.monotonic_ns()}.json"
    env = {
        **os.environ,
        "GPUONBOARD_SSH_CONFIG": "/dev/null",
        "GPUONBOARD_TIMINGS": str(timings),
        # this checkout's package (not whichever one the interpreter has installed)
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT, env=env)
        # wait4, not wait: the child's own rusage (CPU of the gpuonboard process and what it reaped)
        _pid, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != expected_code:
            out.seek(0)
            print(out.read()[-4000:].decode(errors="replace"), file=sys.stderr)
    phases: dict[str, tuple[float, float]] = {}
    if timings.is_file():
        doc = json.loads(timings.read_text())
        for p in doc["phases"]:
            phases[p["phase"]] = (p["wall"], p["cpu"])
    cpu = usage.ru_utime + usage.ru_stime
    if phases:  # after the last mark: the reports' atexit write, interpreter shutdown (wait4's CPU)
        exit_wall = t0 + dt - time.perf_counter() + time.time() - doc["phases"][-1]["at"]
        phases["exit"] = (exit_wall, max(0.0, cpu - doc["cpu_total"]))
    return Run(dt, cpu, phases, code)


@contextlib.contextmanager
def _projects_disk(tmp: Path, fresh: bool) -> Iterator[Path]:
    """Where the projects go: a fresh ext4 mounted in the temp dir (unmounted at the end), or
    the temp dir itself."""
    if not fresh:
        yield tmp
        return
    disk = tmp / "disk"
    fresh_disk(tmp / "disk.img", disk, 4 << 30)
    try:
        yield disk
    finally:
        unmount(disk)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[1, 10, 50])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--phases", action="store_true", help="print each phase's median wall/CPU too")
    ap.add_argument("--only-first", action="store_true", help="skip the no-change (second) runs")
    ap.add_argument(
        "--disk",
        choices=("fresh", "shared"),
        default="fresh",
        help="fresh: the projects on a new ext4 with a journal (default, root); shared: the temp dir",
    )
    ap.add_argument("--profile", choices=sorted(PROFILES), default="a100-8x-nvlink", help="the hosts' kind")
    a = ap.parse_args()
    order, expected_code = PROFILES[a.profile]
    # as an installed package is: its bytecode compiled (pip does it at install); a shell with
    # PYTHONDONTWRITEBYTECODE=1 would otherwise have every run compile what changed since
    compileall.compile_dir(REPO / "src" / "gpuonboard", quiet=1)
    biggest = max(a.sizes)
    failed = False
    phase_lines: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="gpuonboard-fanout-") as tmp,
        TestHostPool(Path(tmp) / "hosts", subnet=9) as pool,
        _projects_disk(Path(tmp), a.disk == "fresh") as work,
    ):
        t0 = time.perf_counter()
        pool.add_many([(f"h{i:02d}", a.profile) for i in range(1, biggest + 1)])
        print(f"started {biggest} test hosts in {time.perf_counter() - t0:.2f}s")
        print(
            f"{'N':>3} {'run':>6} {'median s':>9} {'min s':>7} {'engine s':>8} {'rest s':>7}"
            f" {'hosts/s':>8} {'CPU ms/host':>11} {'conn/host':>9} {'logins/host':>11} {'sessions/host':>13}"
        )
        for n in a.sizes:
            names = [f"h{i:02d}" for i in range(1, n + 1)]
            for label in ("first",) if a.only_first else ("first", "second"):
                runs: list[Run] = []
                per = {}
                for rep in range(a.reps):
                    root = work / f"p{n}-{label}-{rep}"
                    root.mkdir()
                    write_project(root, pool, names, order)
                    if label == "second":
                        run_check(root, n, expected_code)  # the no-change rerun follows a first run
                    before = counts(pool, names)
                    r = run_check(root, n, expected_code)
                    after = counts(pool, names)
                    if r.code != expected_code:
                        print(f"  N={n} {label} rep {rep}: exit {r.code}", file=sys.stderr)
                        failed = True
                    runs.append(r)
                    per = {k: (after[k] - before[k]) / n for k in after}
                med = statistics.median(r.wall for r in runs)
                engine = statistics.median(r.engine for r in runs)
                rest = statistics.median(r.wall - r.engine for r in runs)
                cpu_ms = statistics.median(r.cpu for r in runs) / n * 1000
                print(
                    f"{n:>3} {label:>6} {med:>9.2f} {min(r.wall for r in runs):>7.2f} {engine:>8.2f}"
                    f" {rest:>7.2f} {n / med:>8.1f} {cpu_ms:>11.1f} {per['connections']:>9.2f}"
                    f" {per['logins']:>11.2f} {per['sessions']:>13.2f}"
                )
                if a.phases:
                    names_seen = list(dict.fromkeys(p for r in runs for p in r.phases))
                    cells = [
                        f"{p} {statistics.median(r.phases.get(p, (0, 0))[0] for r in runs):.3f}s"
                        f"/{statistics.median(r.phases.get(p, (0, 0))[1] for r in runs):.3f}cpu"
                        for p in names_seen
                    ]
                    phase_lines.append(f"{n:>3} {label:>6} " + "  ".join(cells))
    if phase_lines:
        print("phases (median wall s / CPU s of the gpuonboard process):")
        print("\n".join(phase_lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
