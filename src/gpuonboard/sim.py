"""`invoke sim.up/sim.down`: a simulated rented GPU server for the demo (a real sshd test host).

sim.up starts one test host with a hardware profile that replays real captured outputs,
and writes an inventory for it (address, port, client key, pinned host-key fingerprint,
and the order that profile should satisfy) under the sim base directory.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import UsageError

# What each profile's box was "ordered" as, so the demo shows pass and fail honestly.
DEMO_ORDER = {
    "gpu_model": "A100 80GB SXM",
    "gpu_count": 8,
    "vram": "80GB",
    "cpu_cores": 64,
    "ram": "1TB",
    "data_disk": {"mount": "/mnt/nvme0n1p1", "min_size": "12TB"},
    "interconnect": "nvlink",
    "min_driver": "535",
}


DEMO_IMAGE = "nvcr.io/nvidia/pytorch:23.10-py3"


def inventory_text(hosts: list[dict[str, object]], vendors_dir: Path) -> str:
    """A native inventory for simulated hosts."""
    doc = {
        "vendors_dir": str(vendors_dir),
        # the demo box's driver (535.54.03) runs NGC PyTorch 23.10 natively; 24.08 would need
        # 560+, or 535.86+ through forward compatibility (see `invoke check` on it)
        "defaults": {"vendor": "demo-idc", "order": DEMO_ORDER, "vars": {"container_image": DEMO_IMAGE}},
        "hosts": {str(h.pop("name")): h for h in hosts},
    }
    return "# written by `invoke sim.up`; simulated rented servers on loopback\n" + yaml.safe_dump(
        doc, sort_keys=False
    )


def up(base: Path, name: str, profile: str) -> int:
    """Start the simulated host and write its inventory; prints how to use it."""
    from .testhosts import ProfileError, TestHostPool

    base = base.resolve()
    try:
        pool = (
            TestHostPool.load_state(base) if (base / "testhosts-state.json").exists() else TestHostPool(base)
        )
    except Exception:  # a stale state file from a crashed run: start afresh
        pool = TestHostPool(base)
    if name in pool.hosts:
        pool.hosts[name].start()
    else:
        try:
            pool.add(name, profile)
        except ProfileError as exc:
            raise UsageError(f"unknown or broken hardware profile {profile!r}: {exc}") from None
    entries = [
        {
            "name": h.name,
            "address": h.address,
            "port": h.port,
            "user": "root",
            "key_file": str(pool.client_key),
            "host_key": h.fingerprint,
            # test hosts share this machine's filesystem: keep what provision writes in the sim dir
            "vars": {"state_dir": str(h.dir / "home" / "gpuonboard-state")},
        }
        for h in pool.hosts.values()
    ]
    inv_dir = base / "inventory"
    inv_dir.mkdir(parents=True, exist_ok=True)
    vendors = Path(__file__).resolve().parents[2] / "inventory" / "vendors"
    (inv_dir / "hosts.yml").write_text(inventory_text(entries, vendors))
    pool.write_state()
    print(
        f"simulated server {name!r} ({profile}) up at {pool.hosts[name].address}:{pool.hosts[name].port};"
        f" inventory: {inv_dir}"
    )
    return 0


def down(base: Path) -> int:
    """Stop every simulated host recorded under base."""
    from .testhosts import TestHostPool

    base = base.resolve()
    if not (base / "testhosts-state.json").exists():
        print("no simulated server is running")
        return 0
    pool = TestHostPool.load_state(base)
    n = len(pool.hosts)
    pool.stop_all()
    (base / "testhosts-state.json").unlink(missing_ok=True)
    print(f"stopped {n} simulated server(s)")
    return 0
