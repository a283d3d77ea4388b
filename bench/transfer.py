#!/usr/bin/env python3
"""Dataset upload benchmark (issue 5): `gpuonboard sync` vs baseline `rsync -avP --partial`
over a 100 Mbit/s link.

Usage (root: creates a network namespace): .venv/bin/python bench/transfer.py [--small] [--keep]

Setup, all created by this script and removed in `finally`: two network namespaces,
`gpob-client-<pid>` (where rsync and the CLI run) and `gpob-bench-<pid>` (the test host), joined by a
veth pair 198.51.100.1 <-> 198.51.100.2 (TEST-NET-2; no address or route is added to the root
namespace, whose own addresses may be anything, e.g. 192.0.2.x), the client side shaped with
`tc qdisc ... tbf rate 100mbit burst 32kbit latency 400ms` (the upload direction), and an sshd
test host listening on 198.51.100.2:22 inside its namespace (config from
`gpuonboard.testing.render_sshd_config`), stopped by its PID file.

Cases: (a) one file (1 GiB; --small 100 MiB), (b) many 4 KiB files (50,000; --small 5,000),
(c) both encrypted (age to a fresh X25519 recipient, empty ciphertext cache so encryption time
counts). gpuonboard runs plain mode for (a) and `--shards --unpack` for (b) (the host ends with
the same tree as the baseline). Printed per case: wall time, throughput of dataset bytes as % of
100 Mbit/s, ratio to the baseline's wall time, peak RSS of the local process tree (os.wait4's
rusage of the CLI subprocess: ru_maxrss of it and its waited-for descendants).

The host's data disk (`--host-disk fresh`, the default): each tool, in each case, writes into a
file system of its own, a freshly made ext4 with a journal (as on a real server's data disk) on a
sparse loop image in the temp dir, mounted before sshd starts (the namespace's mount table is a
copy taken then). Why: this VM's root file system is ext4 without a journal, and such an ext4
skips every inode freed in the last 5 minutes (300 s while its inode-table block is dirty) when
it allocates a new one, scanning them one by one from the start of the block group each time
(`recently_deleted()` in fs/ext4/ialloc.c). After any large delete (the previous case's trees,
an earlier run's temp dir) creating 50,000 files became quadratic: the host's `tar -x` or
rsync receiver then burnt 15-35 s of CPU, and (b) measured 58-93 % of the link for either tool
depending on which ran second. `--host-disk shared` writes to the temp dir as before.
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

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gpuonboard.testing.hosts import (  # noqa: E402
    SSHD,
    TestHost,
    _read_public_key,
    _write_ed25519_key,
    fingerprint,
    render_sshd_config,
)

LINK_MBIT = 100
HOST_IP, NS_IP = "198.51.100.1", "198.51.100.2"  # TEST-NET-2, only inside our two namespaces


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """-> (wall s, peak RSS MiB, exit code, output tail) of one subprocess."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - start, usage.ru_maxrss / 1024, proc.returncode, out.decode()[-600:]


def fresh_disk(image: Path, mount_at: Path, size: int) -> None:
    """A new ext4 (journal on, inode tables written now: no background lazy init competing for
    the CPU during the run) on a sparse image file, loop-mounted at `mount_at`."""
    with image.open("wb") as f:
        f.truncate(size)
    sh("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(image))
    mount_at.mkdir(parents=True, exist_ok=True)
    sh("mount", "-o", "loop", str(image), str(mount_at))


def make_data(base: Path, big: int, n_small: int) -> dict[str, tuple[Path, int]]:
    one = base / "one"
    one.mkdir(parents=True)
    with (one / "big.bin").open("wb") as f:
        left = big
        while left:
            chunk = os.urandom(min(left, 1 << 22))
            f.write(chunk)
            left -= len(chunk)
    many = base / "many"
    for i in range(n_small):
        d = many / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        (d / f"f{i:06d}.bin").write_bytes(os.urandom(4096))
    return {"a": (one, big), "b": (many, n_small * 4096)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--small", action="store_true", help="100 MiB and 5,000 files instead of 1 GiB and 50,000"
    )
    ap.add_argument("--big-mib", type=int, default=0, help="size of the one-file case (MiB)")
    ap.add_argument("--files", type=int, default=0, help="number of 4 KiB files")
    ap.add_argument("--cases", default="a,b,ae,be", help="which cases: a, b, ae, be (e = encrypted)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (not the namespace)")
    ap.add_argument(
        "--host-disk",
        choices=("fresh", "shared"),
        default="fresh",
        help="fresh: each tool and case writes into its own new ext4 (default); shared: the temp dir",
    )
    args = ap.parse_args()
    big = (args.big_mib or (100 if args.small else 1024)) * 1024 * 1024
    n_small = args.files or (5000 if args.small else 50000)
    tag = f"{os.getpid() % 100000}"
    ns, veth_h, veth_n = f"gpob-bench-{tag}", f"gpobh{tag}", f"gpobn{tag}"
    cns = f"gpob-client-{tag}"  # the client side lives in its own namespace too: nothing in the root one
    tmp = Path(tempfile.mkdtemp(prefix="gpob-bench-"))
    host: TestHost | None = None
    mounts: list[Path] = []
    chosen = [c.strip() for c in args.cases.split(",") if c.strip()]
    remote = tmp / "remote"  # on the host's side; per case and tool: remote/<case>/{base,ours}
    try:
        if args.host_disk == "fresh":  # before sshd starts: its mount namespace is a copy of this one
            for case in chosen:
                need = (big if case[0] == "a" else n_small * 4096) * 3 + (1 << 30)
                for who in ("base", "ours"):
                    fresh_disk(tmp / f"disk-{case}-{who}.img", remote / case / who, need)
                    mounts.append(remote / case / who)
        sh("ip", "netns", "add", ns)
        sh("ip", "netns", "add", cns)
        sh("ip", "netns", "exec", cns, "ip", "link", "add", veth_h, "type", "veth", "peer", "name", veth_n)
        sh("ip", "netns", "exec", cns, "ip", "link", "set", veth_n, "netns", ns)
        sh("ip", "netns", "exec", cns, "ip", "addr", "add", f"{HOST_IP}/30", "dev", veth_h)
        sh("ip", "netns", "exec", cns, "ip", "link", "set", veth_h, "up")
        sh("ip", "netns", "exec", cns, "ip", "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{NS_IP}/30", "dev", veth_n)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", veth_n, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        sh(
            "ip",
            "netns",
            "exec",
            cns,
            "tc",
            "qdisc",
            "add",
            "dev",
            veth_h,
            "root",
            "tbf",
            "rate",
            f"{LINK_MBIT}mbit",
            "burst",
            "32kbit",
            "latency",
            "400ms",
        )
        # sshd test host inside the namespace
        hdir = tmp / "host"
        hkey = hdir / "ssh_host_ed25519_key"
        hdir.mkdir()
        pub = _write_ed25519_key(hkey, "bench-host")
        host = TestHost("bench", NS_IP, 22, None, hdir, None, pub, fingerprint(pub), hdir / "sshd.log")
        host.home.mkdir(parents=True, exist_ok=True)
        host.bin_dir.mkdir(parents=True, exist_ok=True)
        client = tmp / "client_key"
        _write_ed25519_key(client, "bench-client")
        auth = tmp / "authorized_keys"
        auth.write_text(_read_public_key(client) + "\n")
        host.config_path.write_text(render_sshd_config(host, auth))
        sh("ip", "netns", "exec", ns, SSHD, "-f", str(host.config_path), "-E", str(host.log_path))
        time.sleep(0.5)
        ssh_cfg = tmp / "ssh_config"
        ssh_cfg.write_text(
            f"Host bench\n  HostName {NS_IP}\n  User root\n  IdentityFile {client}\n  IdentitiesOnly yes\n"
            "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        data = make_data(tmp / "data", big if "a" in args.cases else 1024, n_small)
        project = tmp / "project"
        (project / "inventory").mkdir(parents=True)
        from pyrage import x25519

        ident = x25519.Identity.generate()
        (tmp / "age.key").write_text(str(ident) + "\n")
        (tmp / "age.key").chmod(0o600)  # (a private key readable by others is refused)
        inv = {
            "hosts": {
                "bench": {
                    "address": NS_IP,
                    "port": 22,
                    "user": "root",
                    "key_file": str(client),
                    "host_key": host.fingerprint,
                    "data_dir": str(remote / "unused"),  # each case passes --dest
                    "vars": {
                        "age_recipients": [str(ident.to_public())],
                        "age_identity_file": str(tmp / "age.key"),
                        "state_dir": str(host.home / "state"),
                    },
                }
            }
        }
        (project / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inv))
        env = {**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null", "COLUMNS": "200"}
        cli = [sys.executable, "-c", "from gpuonboard.cli import main; main()"]
        rows = []
        for name in chosen:
            case, enc = name[0], name.endswith("e")
            src, nbytes = data[case]
            base_dir, ours_dir = remote / name / "base", remote / name / "ours"
            base_dir.mkdir(parents=True, exist_ok=True)
            ours_dir.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(project / ".gpuonboard" / "cache", ignore_errors=True)
            base_argv = [
                "rsync",
                "-avP",
                "--partial",
                "-e",
                f"ssh -F {ssh_cfg}",
                f"{src}/",
                f"bench:{base_dir}/",
            ]
            if enc:  # baseline for (c): `age` then rsync, in sequence
                enc_dir = tmp / f"enc-{case}"
                shutil.rmtree(enc_dir, ignore_errors=True)
                script = (
                    f"cd {src} && find . -type f | while read -r f; do mkdir -p {enc_dir}/$(dirname $f);"
                    f" age -r {ident.to_public()} -o {enc_dir}/$f.age $f; done && "
                    + " ".join(base_argv[:-2])
                    + f" {enc_dir}/ bench:{base_dir}/"
                )
                base_argv = [
                    "sh",
                    "-c",
                    script.replace("-e ssh -F", "-e 'ssh -F").replace(f"{ssh_cfg} ", f"{ssh_cfg}' "),
                ]
            bw, brss, brc, bout = timed(["ip", "netns", "exec", cns, *base_argv], tmp)
            ours_argv = [*cli, "sync", "--host", "bench", "--dataset", str(src), "--dest", str(ours_dir)]
            if case == "b":
                ours_argv += ["--shards", "--unpack"]
            if enc:
                ours_argv += ["--encrypt"] + (["--decrypt-on-host"] if case == "b" else [])
            ow, orss, orc, oout = timed(["ip", "netns", "exec", cns, *ours_argv], project, env)
            if brc or orc:
                print(f"case {case} enc={enc}: baseline rc={brc} ours rc={orc}\n{bout}\n{oout}")
            label = {"a": f"(a) 1 file {big >> 20} MiB", "b": f"(b) {n_small} x 4 KiB"}[case] + (
                " enc" if enc else ""
            )
            for who, w, rss in (("rsync -avP", bw, brss), ("gpuonboard", ow, orss)):
                pct = nbytes * 8 / w / (LINK_MBIT * 1e6) * 100
                rows.append((label, who, w, pct, bw / w, rss))
        print(f"{'case':28} {'tool':11} {'wall s':>7} {'% link':>7} {'speedup':>8} {'peak RSS MiB':>13}")
        for label, who, w, pct, ratio, rss in rows:
            print(f"{label:28} {who:11} {w:7.1f} {pct:6.1f}% {ratio:7.2f}x {rss:13.0f}")
        return 0
    finally:
        if host is not None:
            pid = host.pid_path.read_text().strip() if host.pid_path.exists() else ""
            if pid.isdigit():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGTERM)
        # any process still inside OUR namespace (sshd children)
        left = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        for p in left:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(p), signal.SIGKILL)
        for name in (ns, cns):  # deleting the namespaces removes the veth pair and its qdisc
            sh("ip", "netns", "del", name, check=False)
        for m in mounts:  # loop devices mounted with -o loop detach themselves (autoclear)
            sh("umount", str(m), check=False)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
