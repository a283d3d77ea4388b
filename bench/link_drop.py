#!/usr/bin/env python3
"""Link-drop benchmark (issue 26): bytes re-sent by the rerun of an upload whose link dropped
mid-transfer without a FIN or RST, over a shaped 100 Mbit/s link, against the target "at most
1 % of the dataset + one file".

Usage (root: creates network namespaces):
    .venv/bin/python bench/link_drop.py [--trials 10] [--size-mb 300] [--mode plain|encrypted|both]
                                        [--mbit 100] [--give-up keepalive|kill]

Setup (gpuonboard.testing.netns.CutLink, all removed at the end): two network namespaces
joined by a veth pair, the client side shaped with `tc ... tbf rate <mbit>mbit`, a real sshd test
host in the other. The dataset: one big file (40 % of --size-mb) and 100 KiB files for the rest.

Each trial: a fresh copy on the host; `gpuonboard sync` starts; when a chosen share of the dataset
is on the host (spread over the trials from 10 % to 90 %, so the cut falls in the big file and
among the small ones) the link is cut (iptables DROP on the host's side: nothing, not even a
FIN, reaches either end); the client gives up by itself (`--give-up keepalive`: ssh's and
paramiko's keepalives, 60 s) or is killed (`kill`: quicker, the same for the host); the link is
mended (connections open at the cut stay dead: the host never hears of them, as when a NAT
forgets them); the rerun runs. Printed per trial: where the cut fell, bytes on the host at the
cut, bytes the rerun sent (rsync's literal data), bytes RE-sent (sent minus what was missing at
the cut), seconds until the client noticed, receivers of the cut run still running on the host
after the rerun, rsync temp files left in the copy. Then the worst case against the target.
"""

from __future__ import annotations

import argparse
import os
import re
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

from gpuonboard.testing.netns import HOST_IP, CutLink  # noqa: E402

SMALL = 100 * 1024
TEMP = re.compile(r"\..+\.[A-Za-z0-9]{6}")
MIB = 1024 * 1024


def make_data(root: Path, size: int) -> tuple[int, int]:
    """The dataset: (total bytes, bytes of its biggest file)."""
    big = int(size * 0.4)
    root.mkdir(parents=True)
    with (root / "big.bin").open("wb") as f:
        left = big
        while left:
            f.write(os.urandom(min(left, 4 * MIB)))
            left -= min(left, 4 * MIB)
    for i in range((size - big) // SMALL):
        d = root / f"d{i // 500:03d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i:05d}.bin").write_bytes(os.urandom(SMALL))
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return total, big


def on_host(root: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return total


def receivers(link: CutLink) -> int:
    n = 0
    for pid in link.host_pids():
        try:
            n += Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"rsync")
        except OSError:
            continue
    return n


def trial(
    link: CutLink, project: Path, cli: list[str], target: Path, share: float, args: Any
) -> dict[str, Any]:
    """One upload cut at `share` of the dataset, then its rerun."""
    shutil.rmtree(target.parent, ignore_errors=True)
    link.rate(args.mbit)
    env = {**os.environ, "COLUMNS": "200", "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    first = subprocess.Popen(
        link.client_argv(cli), cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 3600
    while on_host(target) < share * args.total:
        if first.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the upload ended before the cut: {first.communicate()[0][-2000:]}")
        time.sleep(0.01)
    link.cut()
    cut_at = time.monotonic()
    time.sleep(0.5)
    arrived = on_host(target)
    if args.give_up == "kill":
        os.killpg(first.pid, signal.SIGKILL)
    out = first.communicate(timeout=600)[0]
    noticed = time.monotonic() - cut_at
    first_line = next((x for x in out.splitlines() if "failed" in x and "rsync" in x), "")
    stale_at_rerun = receivers(link)
    link.mend()
    t0 = time.monotonic()
    again = subprocess.run(link.client_argv(cli), cwd=project, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    summary = yaml.safe_load((project / "reports" / "latest" / "summary.json").read_text())
    step = summary["hosts"][0]["steps"][0]
    deadline = time.monotonic() + 3
    while receivers(link) and time.monotonic() < deadline:
        time.sleep(0.05)
    sent = int((step.get("diff") or {}).get("literal_bytes", 0))
    return {
        "share": share,
        "arrived": arrived,
        "sent": sent,
        "resent": max(0, sent - (args.total - arrived)),
        "noticed": noticed,
        "client_said": first_line.strip()[:120],
        "rc": again.returncode,
        "msg": step["msg"],
        "rerun_s": took,
        "stale_at_rerun": stale_at_rerun,
        "stale_after": receivers(link),
        "temps_left": sum(1 for p in target.rglob("*") if TEMP.fullmatch(p.name)),
    }


def setup_project(tmp: Path, link: CutLink, data: Path, encrypted: bool) -> Path:
    project = tmp / ("project-enc" if encrypted else "project")
    (project / "inventory").mkdir(parents=True)
    for d in ("playbooks", "templates"):
        (project / d).symlink_to(REPO / d)
    assert link.host is not None
    extra: dict[str, Any] = {}
    if encrypted:
        from pyrage import x25519

        ident = x25519.Identity.generate()
        key = tmp / "age.key"
        key.write_text(str(ident) + "\n")
        key.chmod(0o600)
        extra = {"age_recipients": [str(ident.to_public())], "age_identity_file": str(key)}
    inv = {
        "vendors_dir": str(REPO / "inventory" / "vendors"),
        "hosts": {
            "cut": {
                "address": HOST_IP,
                "port": 22,
                "user": "root",
                "key_file": str(link.client_key),
                "host_key": link.host.fingerprint,
                "data_dir": str(link.host.home / "data"),
                "vars": {"dataset": str(data), "state_dir": str(link.host.home / "state"), **extra},
            }
        },
    }
    (project / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inv))
    return project


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10, help="link drops per mode (default 10)")
    ap.add_argument("--size-mb", type=int, default=300, help="dataset size in MiB (default 300)")
    ap.add_argument("--mode", choices=("plain", "encrypted", "both"), default="both")
    ap.add_argument("--mbit", type=float, default=100.0, help="link rate (default 100 Mbit/s)")
    ap.add_argument(
        "--give-up",
        choices=("keepalive", "kill"),
        default="keepalive",
        help="keepalive: wait for the client to notice by itself (60 s); kill: kill it at the cut",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpob-linkdrop-"))
    data = tmp / "data" / "ds"
    args.total, biggest = make_data(data, args.size_mb * MIB)
    bound = args.total // 100 + SMALL  # 1 % of the dataset + one (small) file
    modes = ["plain", "encrypted"] if args.mode == "both" else [args.mode]
    cli = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "sync", "--host", "cut"]
    worst: list[tuple[str, dict[str, Any]]] = []
    failed = False
    try:
        with CutLink(tmp / "link", mbit=args.mbit) as link:
            assert link.host is not None
            for mode in modes:
                project = setup_project(tmp, link, data, mode == "encrypted")
                argv = cli + (["--encrypt"] if mode == "encrypted" else [])
                target = link.host.home / "data" / ("ds.encrypted" if mode == "encrypted" else "ds")
                print(
                    f"\n{mode}: dataset {args.total / MIB:.1f} MiB (biggest file {biggest / MIB:.1f} MiB),"
                    f" link {args.mbit:g} Mbit/s, client gives up by {args.give_up}"
                )
                print(
                    f"{'trial':>5} {'cut at':>7} {'on host':>9} {'sent':>9} {'re-sent':>9} {'noticed':>8}"
                    f" {'rerun':>6} {'stale':>6} {'temps':>6}  rc"
                )
                rows = []
                for i in range(args.trials):
                    share = 0.1 + 0.8 * (i + 0.5) / args.trials
                    row = trial(link, project, argv, target, share, args)
                    rows.append(row)
                    print(
                        f"{i + 1:>5} {share:>6.0%} {row['arrived'] / MIB:>8.1f}M {row['sent'] / MIB:>8.1f}M"
                        f" {row['resent'] / MIB:>8.2f}M {row['noticed']:>7.1f}s {row['rerun_s']:>5.1f}s"
                        f" {row['stale_at_rerun']:>2}>{row['stale_after']:<3}"
                        f" {row['temps_left']:>6}  {row['rc']}",
                        flush=True,
                    )
                    if row["rc"] != 0:
                        print(f"      rerun failed: {row['msg']}")
                top = max(rows, key=lambda r: r["resent"])
                worst.append((mode, top))
                failed |= any(
                    r["resent"] > bound or r["stale_after"] or r["temps_left"] or r["rc"] for r in rows
                )
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntarget: re-sent <= 1 % of the dataset + one file = {bound / MIB:.2f} MiB")
    for mode, top in worst:
        share = top["resent"] / args.total * 100
        print(f"{mode}: worst re-sent {top['resent'] / MIB:.2f} MiB ({share:.2f} % of the dataset)")
    print("PASS" if not failed else "FAIL (see the rows above)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
