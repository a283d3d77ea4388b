#!/usr/bin/env python3
"""gpuonboard on the shared peer-benchmark workload (../shared/bench-peers).

Usage (from a copy of bench-peers):
    ./run_peers.sh --tool 'gpuonboard=/path/to/.venv/bin/python /path/to/bench/peer_adapter.py {hosts_json}'

The workload (5 probes + one Jinja2 template written only if its content changed) is
expressed as one gpuonboard `template` step whose `probes` ride in the host's ONE batched
probe together with the remote file's sha256; hosts run in parallel through the normal
runner, with host keys checked against the harness's known_hosts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gpuonboard.connection import ConnectOptions, Preconnect
from gpuonboard.inventory import Host


def main() -> int:
    hosts_json = Path(sys.argv[1]).resolve()
    workload_dir = hosts_json.parents[3] / "workload"
    inv = json.loads(hosts_json.read_text())
    wl = json.loads((workload_dir / "workload.json").read_text())
    hosts = [
        Host(
            name=h["name"],
            address=h["address"],
            port=int(h["port"]),
            user=h["user"],
            key_file=h["key"],
            use_agent=False,
        )
        for h in inv
    ]
    early = Preconnect(hosts)  # TCP connects proceed while the heavy modules load
    from gpuonboard.runner import RunOptions, new_run_id, run
    from gpuonboard.runner.playbook import Playbook, StepSpec

    step = StepSpec(
        kind="template",
        label="cron",
        args={
            "src": wl["template"],
            "dest": wl["dest"].replace("{host}", "{{ host.name }}"),
            "mode": wl["mode"],
            "probes": {p["name"]: p["cmd"] for p in wl["probes"]},
        },
        line=None,
    )
    book = Playbook(path=workload_dir / "workload.json", name="bench-workload", steps=(step,))
    # our project dir (templates/ -> the workload, journals) lives in the harness's run/ dir
    project = hosts_json.parents[2] / "gpuonboard"
    project.mkdir(exist_ok=True)
    if not (project / "templates").exists():
        (project / "templates").symlink_to(workload_dir)
    options = RunOptions(
        forks=int(os.environ.get("GPUONBOARD_FORKS", len(hosts))),
        state_dir=project / "state",
        project=project,
        connect=ConnectOptions(known_hosts=Path(inv[0]["known_hosts"]), preconnect=early),
        run_id=new_run_id(),
        core_facts=False,
    )
    results = run(hosts, book, None, options)
    early.close()
    changed = sum(r.status == "changed" for r in results)
    bad = [r for r in results if r.status in ("failed", "unreachable")]
    for r in bad:
        print(f"{r.host.name}: {r.status}: {r.msg}", file=sys.stderr)
    print(
        f"gpuonboard: {len(results) - len(bad)} hosts ok, {changed} changed, "
        f"{len(results) - len(bad) - changed} unchanged"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
