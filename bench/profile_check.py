#!/usr/bin/env python3
"""Profile `gpuonboard check` on N simulated 8xA100 hosts: where the engine's CPU goes.

Usage: .venv/bin/python bench/profile_check.py 10 [--forks 1] [--out /tmp/check.prof] [--reps 1]
       [--disk fresh|shared] [--profile h100-8x-throttled]

Starts N real sshd test hosts (as bench/fanout.py does), writes the same project, and runs
the check in a child process under cProfile (cProfile sees only the thread it runs in, so
--forks 1, the default, runs every host in the main thread and the profile holds all of the
per-host work; with --forks N only the main thread's part is profiled, the rusage figures
still count every thread). Prints the child's CPU (os.wait4) per host and the top functions.
"""

from __future__ import annotations

import argparse
import compileall
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from fanout import PROFILES, _projects_disk, write_project  # noqa: E402

from gpuonboard.testing import TestHostPool  # noqa: E402

CHILD = """
import atexit, cProfile, pstats, sys, threading, time
out = sys.argv[1]
profs = []
def profiled(run):
    def wrapped(self):
        p = cProfile.Profile(time.thread_time)  # CPU time of this thread, not wall time
        profs.append(p)
        p.enable()
        try:
            run(self)
        finally:
            p.disable()
    return wrapped
# every thread, paramiko's Transport too (a Thread subclass with its own run)
threading.Thread._bootstrap_inner = profiled(threading.Thread._bootstrap_inner)
main_prof = cProfile.Profile(time.thread_time)
profs.append(main_prof)
def dump():
    main_prof.disable()
    for p in profs:
        p.create_stats()
    st = pstats.Stats(*[p for p in profs if p.stats])
    st.dump_stats(out)
atexit.register(dump)
sys.argv = ["gpuonboard", *sys.argv[2:]]
from gpuonboard.cli import main
main_prof.enable()
main()
"""


THREADS = """
import atexit, collections, re, sys, threading, time
cpu = collections.Counter()
def counted(inner):
    def wrapped(self):
        try:
            inner(self)
        finally:
            kind = re.sub(r"[-_ ]?[0-9]+.*$|-h[0-9]+.*$", "", self.name) or self.name
            cpu[type(self).__name__ + ":" + kind] += time.thread_time()
    return wrapped
threading.Thread._bootstrap_inner = counted(threading.Thread._bootstrap_inner)
calls = collections.Counter()
def timed(name, fn):
    def wrapper(*args, **kwargs):
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            cpu["fn:" + name] += time.thread_time() - t
            calls[name] += 1
    return wrapper
def patch():  # PROFILE_FUNCS="pkg.mod:func,pkg.mod:Class.method": each call's CPU (its thread's)
    import importlib, os
    for spec in filter(None, os.environ.get("PROFILE_FUNCS", "").split(",")):
        mod, _, attr = spec.partition(":")
        owner = importlib.import_module(mod)
        *path, last = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, last, timed(spec, getattr(owner, last)))
def dump():
    cpu["main"] += time.thread_time()
    for t in threading.enumerate():  # still alive at exit (paramiko's, polling once a second)
        if t is not threading.main_thread() and t.ident is not None:
            kind = re.sub(r"[-_ ]?[0-9]+.*$|-h[0-9]+.*$", "", t.name) or t.name
            try:
                cpu[type(t).__name__ + ":" + kind] += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except OSError:  # (ended meanwhile: counted by its own wrapper)
                pass
    for k, v in cpu.most_common():
        print(f"thread CPU {v:8.3f}s {k}", file=sys.stderr)
atexit.register(dump)
sys.argv = ["gpuonboard", *sys.argv[1:]]
from gpuonboard.cli import main
patch()
main()
"""


def run_once(root: Path, n: int, forks: int, out: str | None, expected_code: int = 0) -> float:
    if out:
        cmd = [sys.executable, "-c", CHILD, out]
    elif os.environ.get("PROFILE_THREADS"):  # CPU seconds per kind of thread, on stderr
        cmd = [sys.executable, "-c", THREADS]
    else:
        cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()"]
    cmd += ["check", "--quiet", "--forks", str(forks)]
    # e.g. PROFILE_WRAP="py-spy record --format raw -r 1000 -o /tmp/x.txt --" (a sampling
    # profiler of every thread, idle excluded: less distortion than cProfile's)
    cmd = [*os.environ.get("PROFILE_WRAP", "").split(), *cmd]
    env = {**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != expected_code:
        print(f"exit {code}", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--forks", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument(
        "--disk",
        choices=("fresh", "shared"),
        default="fresh",
        help="fresh: the projects on a new ext4 with a journal, as bench/fanout.py (root)",
    )
    ap.add_argument("--profile", choices=sorted(PROFILES), default="a100-8x-nvlink", help="the hosts' kind")
    a = ap.parse_args()
    order, expected_code = PROFILES[a.profile]
    compileall.compile_dir(REPO / "src" / "gpuonboard", quiet=1)
    with (
        tempfile.TemporaryDirectory(prefix="gpuonboard-prof-") as tmp,
        TestHostPool(Path(tmp) / "hosts", subnet=11) as pool,
        _projects_disk(Path(tmp), a.disk == "fresh") as work,
    ):
        names = [f"h{i:02d}" for i in range(1, a.n + 1)]
        pool.add_many([(n, a.profile) for n in names])
        for rep in range(a.reps):
            root = work / f"p{rep}"
            root.mkdir()
            write_project(root, pool, names, order)
            cpu = run_once(root, a.n, a.forks, a.out or None, expected_code)
            print(f"rep {rep}: CPU {cpu:.3f}s = {cpu / a.n * 1000:.1f} ms/host (forks {a.forks})")
        if a.out:
            st = pstats.Stats(a.out)
            st.sort_stats("tottime").print_stats(a.top)
            st.sort_stats("cumtime").print_stats(a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
