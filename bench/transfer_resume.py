#!/usr/bin/env python3
"""Interrupted uploads (issue 32): bytes re-sent on resume, in every mode, over a shaped link.

Run through `bench/transfer.py --resume [--interruptions N] [--files N] [--rate 100mbit]`
(root: creates network namespaces), or this file directly with the same options.

Setup (gpuonboard.testing.netns.CutLink, all removed at the end): two network namespaces joined
by a veth pair, the client side shaped with `tc ... tbf` (--rate), a real sshd test host in
the other; bytes on the wire = the host veth's receive counter (transfer.rx_bytes). The
dataset: --files x 4 KiB (default 10,000: the four modes take ~10 minutes here) plus four 5 MiB
files (random: nothing compresses).

Modes: plain (rsync --partial), shards (`--shards --unpack`), encrypted (`--encrypt`),
encrypted shards (`--encrypt --decrypt-on-host --shards --unpack`). For each, into a fresh
destination and with an empty local cache each time:
  - baseline: one uninterrupted upload: W0 bytes on the wire;
  - N trials, trial k: the upload is stopped with SIGTERM once k/(N+1) of W0 crossed the link,
    then rerun to completion; re-sent(k) = wire(cut run) + wire(rerun) - W0;
  - a chain: one upload stopped N times (at k/(N+1) of W0 on the wire, counted over all its
    runs), the last run completing: its wire bytes in all vs the dataset, and what the host
    holds afterwards (`du` of the destination) vs the dataset.
Target: re-sent <= 1 % of the dataset + 1 MiB, per interruption, in every mode.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from transfer import rx_bytes  # noqa: E402

from gpuonboard.testing.netns import HOST_IP, CutLink  # noqa: E402

MIB = 1024 * 1024
MODES = {
    "plain": [],
    "shards": ["--shards", "--unpack"],
    "encrypted": ["--encrypt"],
    "encrypted shards": ["--encrypt", "--decrypt-on-host", "--shards", "--unpack"],
}


def make_data(root: Path, n_small: int) -> int:
    """n_small x 4 KiB and four 5 MiB files; -> the dataset's bytes."""
    for i in range(n_small):
        d = root / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        (d / f"f{i:06d}.bin").write_bytes(os.urandom(4096))
    big = root / "big"
    big.mkdir(parents=True)
    for i in range(4):
        (big / f"b{i}.bin").write_bytes(os.urandom(5 * MIB))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def write_project(project: Path, link: CutLink, data: Path, key: Path, pub: str) -> None:
    (project / "inventory").mkdir(parents=True)
    for d in ("playbooks", "templates"):
        (project / d).symlink_to(REPO / d)
    assert link.host is not None
    inv = {
        "vendors_dir": str(REPO / "inventory" / "vendors"),
        "hosts": {
            "cut": {
                "address": HOST_IP,
                "port": 22,
                "user": "root",
                "key_file": str(link.client_key),
                "host_key": link.host.fingerprint,
                "data_dir": str(link.host.home / "unused"),  # each run passes --dest
                "vars": {
                    "dataset": str(data),
                    "state_dir": str(link.host.home / "state"),
                    "age_recipients": [pub],
                    "age_identity_file": str(key),
                    "shard_threshold": 10**9,  # (plain and encrypted: rsync, whatever the file count)
                },
            }
        },
    }
    (project / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inv))


class Runner:
    """Runs the CLI in the client namespace and counts its bytes on the wire."""

    def __init__(self, link: CutLink, project: Path, flags: list[str]) -> None:
        assert link.host is not None and link.host.pid is not None
        self.link, self.project, self.flags = link, project, flags
        self.wire = (link.host.pid, link.host_if)
        self.verbose = False
        self.env = {**os.environ, "COLUMNS": "200", "GPUONBOARD_SSH_CONFIG": "/dev/null"}

    def argv(self, dest: Path) -> list[str]:
        cli = [sys.executable, "-c", "from gpuonboard.cli import main; main()"]
        return self.link.client_argv([*cli, "sync", "--host", "cut", "--dest", str(dest), *self.flags])

    def run(self, dest: Path, stop_at: int | None = None) -> tuple[int, int, str]:
        """One run; with `stop_at`, SIGTERM once that many bytes crossed the link (if it has not
        finished first). -> (bytes on the wire, exit code, the step's message)."""
        base = rx_bytes(*self.wire)
        proc = subprocess.Popen(
            self.argv(dest), cwd=self.project, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        if stop_at is not None:
            while proc.poll() is None and rx_bytes(*self.wire) - base < stop_at:
                time.sleep(0.005)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # (`ip netns exec` execs: this is the CLI)
        out = proc.communicate(timeout=900)[0].decode(errors="replace")
        time.sleep(0.3)  # (the host's side of a cut stream settles; its last bytes counted)
        summary = self.project / "reports" / "latest" / "summary.json"
        msg = out[-1500:]
        if proc.returncode in (0, 1):  # (a run cut short, or failing early, may write none)
            with contextlib.suppress(OSError, KeyError, IndexError, TypeError):
                msg = yaml.safe_load(summary.read_text())["hosts"][0]["steps"][0]["msg"]
        return rx_bytes(*self.wire) - base, proc.returncode, msg

    def fresh(self, dest: Path) -> None:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(self.project / ".gpuonboard" / "cache", ignore_errors=True)
        dest.mkdir(parents=True)


def du(path: Path) -> tuple[int, int]:
    """(apparent bytes, disk bytes) under path, as `du -sb` and `du -sB1` count them."""
    b = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    k = subprocess.run(["du", "-sB1", str(path)], capture_output=True, text=True, check=True).stdout
    return int(b.split()[0]), int(k.split()[0])


def complete(r: Runner, dest: Path, why: str) -> tuple[int, str]:
    wire, rc, msg = r.run(dest)
    if rc != 0:
        raise SystemExit(f"{why}: the completing run failed (rc {rc}): {msg}")
    return wire, msg


def one_mode(r: Runner, base: Path, dataset: int, n: int, bound: int) -> dict[str, Any]:
    """The baseline, N trials and the chain of one mode; prints its rows."""
    dest = base / "dest"
    r.fresh(dest)
    w0, _ = complete(r, dest, "baseline")
    print(f"  baseline: {w0 / MIB:.2f} MiB on the wire for {dataset / MIB:.2f} MiB ({w0 / dataset:.4f}x)")
    resent = []
    for k in range(1, n + 1):
        r.fresh(dest)
        cut, rc, cut_msg = r.run(dest, stop_at=w0 * k // (n + 1))
        if rc == 0:
            raise SystemExit(f"trial {k}: the upload finished before it could be interrupted")
        again, msg = complete(r, dest, f"trial {k}")
        waste = cut + again - w0
        resent.append(waste)
        mark = "" if waste <= bound else "  MISSED"
        print(
            f"  trial {k}: cut at {cut / MIB:7.2f} MiB, rerun {again / MIB:7.2f} MiB,"
            f" re-sent {waste / MIB:+7.3f} MiB ({waste / dataset * 100:+.3f} %){mark}",
            flush=True,
        )
        if waste > bound:
            print(f"    cut run said: {cut_msg[:300]}\n    rerun said: {msg[:400]}")
    r.fresh(dest)
    total, cuts = 0, 0
    for k in range(1, n + 1):
        wire, rc, msg = r.run(dest, stop_at=max(1, w0 * k // (n + 1) - total))
        total += wire
        if r.verbose:
            print(f"    chain run {k}: {wire / MIB:.3f} MiB, rc {rc}: {msg[:300]}")
        if rc == 0:
            break
        cuts += 1
    else:
        wire, _ = complete(r, dest, "chain")
        total += wire
    apparent, disk = du(dest)
    print(
        f"  chain: {cuts} interruptions, {total / MIB:.2f} MiB on the wire in all"
        f" ({total / dataset:.4f}x the dataset, {(total - w0) / MIB:+.3f} MiB vs the baseline);"
        f" host holds {apparent / MIB:.2f} MiB ({apparent / dataset:.4f}x; du {disk / MIB:.2f} MiB on disk)",
        flush=True,
    )
    if apparent > dataset * 1.02:  # what else is there, biggest first
        extra = sorted(
            ((p.stat().st_size, p.relative_to(dest).as_posix()) for p in dest.rglob("*") if p.is_file()),
            reverse=True,
        )
        top = ", ".join(f"{rel} ({size / MIB:.2f} MiB)" for size, rel in extra[:6])
        print(f"    biggest files there: {top}")
    return {"max": max(resent), "sum": sum(resent), "chain": total - w0, "host": apparent / dataset}


def run(args: Any) -> int:
    """Entry point (bench/transfer.py --resume calls it with its parsed options)."""
    from pyrage import x25519

    n = max(5, int(getattr(args, "interruptions", 5) or 5))
    n_small = int(getattr(args, "files", 0) or 10000)
    rate = str(getattr(args, "rate", "100mbit") or "100mbit").lower()
    mbit = float(rate.removesuffix("mbit")) if rate.endswith("mbit") else 1000.0
    modes = [m.strip() for m in str(getattr(args, "modes", "") or ",".join(MODES)).split(",") if m.strip()]
    # (SIGTERM, e.g. `timeout`: unwound, so the namespaces and the sshd in them go too)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = Path(tempfile.mkdtemp(prefix="gpob-resume-"))
    failed = False
    try:
        data = tmp / "data" / "ds"
        dataset = make_data(data, n_small)
        bound = dataset // 100 + MIB
        ident = x25519.Identity.generate()
        key = tmp / "age.key"
        key.write_text(str(ident) + "\n")
        key.chmod(0o600)
        print(
            f"dataset {dataset / MIB:.2f} MiB ({n_small} x 4 KiB + 4 x 5 MiB), link {mbit:g} Mbit/s,"
            f" {n} interruptions per mode; target re-sent <= 1 % + 1 MiB = {bound / MIB:.3f} MiB"
        )
        with CutLink(tmp / "link", mbit=mbit) as link:
            assert link.host is not None
            project = tmp / "project"
            write_project(project, link, data, key, str(ident.to_public()))
            results = {}
            for mode in modes:
                print(f"\n{mode}: sync {' '.join(MODES[mode])}", flush=True)
                r = Runner(link, project, MODES[mode])
                r.verbose = bool(getattr(args, "verbose", False))
                results[mode] = one_mode(
                    r, link.host.home / "data" / mode.replace(" ", "-"), dataset, n, bound
                )
        print("\nmode               max re-sent   sum re-sent  chain extra  host/dataset  verdict")
        for mode, got in results.items():
            ok = got["max"] <= bound
            failed |= not ok
            print(
                f"{mode:17} {got['max'] / MIB:9.3f} MiB {got['sum'] / MIB:9.3f} MiB"
                f" {got['chain'] / MIB:+8.3f} MiB {got['host']:12.4f}x  {'ok' if ok else 'MISSED'}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interruptions", type=int, default=5, help="interruptions per mode (>= 5)")
    ap.add_argument("--files", type=int, default=10000, help="number of 4 KiB files (default 10,000)")
    ap.add_argument("--rate", default="100mbit", help="the link's tc tbf rate (default 100mbit)")
    ap.add_argument("--verbose", action="store_true", help="print each chain run's bytes and message")
    ap.add_argument("--modes", default="", help="comma-separated: plain, shards, encrypted, encrypted shards")
    return run(ap.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
