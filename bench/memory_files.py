#!/usr/bin/env python3
"""Peak memory of a many-small-files upload against the number of files (issue 31).

Usage (root: loop-mounts a fresh ext4 per size): .venv/bin/python bench/memory_files.py [N ...]
[--modes plain,enc] [--keep]

For each N (default 50000 200000 1000000) it makes N tiny files (64-200 random bytes, 1,000 per
directory) on a freshly made ext4 on a sparse loop image in a temp dir under /tmp (a fresh file
system: this VM's journal-less root ext4 turns file creation quadratic after a large delete), then
runs the real CLI, `gpuonboard sync --shards --unpack` (plain) and `... --encrypt --decrypt-on-host`
(to a fresh age X25519 recipient, empty caches), against a real sshd test host on loopback
(gpuonboard.testing.TestHostPool) whose data dir is on the same file system. Printed per N and mode:
the peak RSS of the CLI process tree (os.wait4's rusage of the CLI subprocess: the largest
ru_maxrss of it and its waited-for descendants), the wall time, and the CPU seconds; then per mode
the growth of peak RSS per 100,000 files (least-squares slope over the sizes). Everything it made
(test host, mounts, images) is removed in `finally`; the link speed does not matter here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from freshdisk import fresh_disk  # noqa: E402

from gpuonboard.testing.hosts import TestHostPool  # noqa: E402

PER_DIR = 1000

# --trace: the CLI under tracemalloc; a sampler keeps the statistics (by line) of the moment the
# traced memory was highest, written to the file in $GPOB_MEM_TRACE at exit
TRACED_CLI = """
import atexit, os, sys, threading, time, tracemalloc
tracemalloc.start(int(os.environ.get("GPOB_MEM_FRAMES", "1")))
best = [0, None]
def sample():
    while True:
        now = tracemalloc.get_traced_memory()[0]
        if now > best[0] * 1.02:
            best[:] = [now, tracemalloc.take_snapshot()]
        time.sleep(0.25)
threading.Thread(target=sample, daemon=True).start()
def dump():
    size, snap = best
    if snap is None:
        return
    with open(os.environ["GPOB_MEM_TRACE"], "w") as out:
        top = tracemalloc.get_traced_memory()[1] / 2**20
        out.write(f"peak traced {size / 2**20:.1f} MiB (tracemalloc peak {top:.1f})\\n")
        for stat in snap.statistics("lineno")[:40]:
            out.write(f"{stat.size / 2**20:8.2f} MiB {stat.count:>9} {stat.traceback}\\n")
atexit.register(dump)
from gpuonboard.cli import main
main()
"""


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


def data_disk(image: Path, mount_at: Path, n_files: int) -> None:
    """A new ext4 (1 KiB blocks: tiny files; inodes for the dataset, the host's unpacked tree
    and its staging copy) on a sparse image, loop-mounted at `mount_at`."""
    fresh_disk(image, mount_at, n_files * 8 * 1024 + (2 << 30), block=1024, inodes=4 * n_files + 100_000)


def make_files(root: Path, n: int) -> None:
    """n files of 64-200 random bytes, PER_DIR to a directory."""
    rng = random.Random(n)
    for i in range(n):
        if i % PER_DIR == 0:
            d = root / f"d{i // PER_DIR:04d}"
            d.mkdir(parents=True)
        (d / f"f{i:07d}.bin").write_bytes(rng.randbytes(rng.randint(64, 200)))


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float, int, str]:
    """-> (wall s, peak RSS MiB of the process tree, CPU s, exit code, output tail)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024, cpu, os.waitstatus_to_exitcode(status), out.decode()[-800:]


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares MiB per 100,000 files."""
    if len(points) < 2:
        return float("nan")
    xs = [n / 100_000 for n, _ in points]
    ys = [r for _, r in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[50_000, 200_000, 1_000_000])
    ap.add_argument("--modes", default="plain,enc", help="plain, enc (encrypted, decrypted on the host)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (unmounted)")
    ap.add_argument(
        "--trace", metavar="DIR", help="tracemalloc the CLI: DIR/<n>-<mode>.txt by line at its peak"
    )
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # (the finally below cleans up)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=False)
    tmp = Path(tempfile.mkdtemp(prefix="gpob-mem-", dir="/tmp"))
    mounts: list[Path] = []
    results: dict[str, list[tuple[int, float]]] = {m: [] for m in modes}
    rows = []
    try:
        with TestHostPool(tmp / "hosts") as pool:
            host = pool.add("mem")
            out = sh("age-keygen").stdout
            key = tmp / "age.key"
            key.write_text(out)
            key.chmod(0o600)
            public = next(line.split(": ", 1)[1] for line in out.splitlines() if "public key:" in line)
            env = {**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null", "COLUMNS": "200"}
            cli = [
                sys.executable,
                "-c",
                TRACED_CLI if args.trace else "from gpuonboard.cli import main; main()",
            ]
            for n in args.sizes:
                disk = tmp / f"disk-{n}"
                data_disk(tmp / f"disk-{n}.img", disk, n)
                mounts.append(disk)
                t0 = time.monotonic()
                make_files(disk / "data", n)
                made = time.monotonic() - t0
                for mode in modes:
                    project = tmp / f"project-{n}-{mode}"
                    (project / "inventory").mkdir(parents=True)
                    entry = {
                        "address": host.address,
                        "port": host.port,
                        "user": "root",
                        "key_file": str(pool.client_key),
                        "host_key": host.fingerprint,
                        "data_dir": str(disk / "remote"),
                        "vars": {
                            "state_dir": str(host.home / f"state-{n}-{mode}"),
                            "age_recipients": [public],
                            "age_identity_file": str(key),
                        },
                    }
                    inv = {"hosts": {"mem": entry}}
                    (project / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inv))
                    argv = [*cli, "sync", "--host", "mem", "--dataset", str(disk / "data")]
                    argv += ["--dest", str(disk / "remote" / mode), "--shards", "--unpack"]
                    if mode == "enc":
                        argv += ["--encrypt", "--decrypt-on-host"]
                    if args.trace:
                        Path(args.trace).mkdir(parents=True, exist_ok=True)
                        env["GPOB_MEM_TRACE"] = str(Path(args.trace).resolve() / f"{n}-{mode}.txt")
                    wall, rss, cpu, rc, tail = timed(argv, project, env)
                    if rc:
                        print(f"{n} {mode}: exit {rc}\n{tail}", flush=True)
                    else:
                        results[mode].append((n, rss))
                    rows.append((n, mode, wall, cpu, rss, rc))
                    print(
                        f"{n:>9} files {mode:5} wall {wall:7.1f} s  cpu {cpu:7.1f} s  peak RSS {rss:6.1f} MiB"
                        f"  rc {rc}  (made in {made:.0f} s)",
                        flush=True,
                    )
                    shutil.rmtree(project, ignore_errors=True)
                sh("umount", str(disk), check=False)
                mounts.remove(disk)
                (tmp / f"disk-{n}.img").unlink(missing_ok=True)
        print(f"\n{'files':>9} {'mode':5} {'wall s':>7} {'cpu s':>7} {'peak RSS MiB':>13}")
        for n, mode, wall, cpu, rss, rc in rows:
            print(f"{n:>9} {mode:5} {wall:7.1f} {cpu:7.1f} {rss:13.1f}" + (f"  (exit {rc})" if rc else ""))
        for mode in modes:
            print(f"{mode}: growth {slope(results[mode]):.2f} MiB per 100,000 files")
        return 0 if all(r[-1] == 0 for r in rows) else 1
    finally:
        for m in mounts:
            sh("umount", str(m), check=False)
        if not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
