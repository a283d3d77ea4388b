"""`invoke sim.up/sim.down`: a simulated rented GPU server for the demo (a real sshd test host).

sim.up starts one test host with a hardware profile that replays real captured outputs,
and writes an inventory for it (address, port, client key, pinned host-key fingerprint,
and the order that profile should satisfy) under the sim base directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpuonboard.errors import UsageError
from gpuonboard.shell import join, quote
from gpuonboard.testing import cronrunner
from gpuonboard.testing.hosts import sshd_of  # (sim.sshd_of: a host dir's own sshd, by its exact `-f CONFIG`)

if TYPE_CHECKING:
    from gpuonboard.testing import TestHostPool

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


def sim_entry(
    name: str, address: str, port: int, key_file: str, fingerprint: str, home: Path, mirror: str | None = None
) -> dict[str, Any]:
    """A simulated host's inventory entry. A test host shares this machine's file system and runs
    as root, so everything that would write outside the sim dir points into it: provision's
    state, the data dir (the demo vendor's is this machine's /mnt/nvme0n1p1), autostop's dir and
    cron dir, disk tests; and autostop's shutdown command only touches a file. `mirror`: the
    sim's local registry, when the host has the simulated container runtime (see
    testing.simcontainers): the container step pulls its image from there."""
    entry: dict[str, Any] = {
        "name": name,
        "address": address,
        "port": port,
        "user": "root",
        "key_file": key_file,
        "host_key": fingerprint,
        "data_dir": str(home / "data"),
        "vars": {
            "state_dir": str(home / "home" / "gpuonboard-state"),
            "autostop_dir": str(home / "autostop"),
            "cron_dir": str(home / "cron.d"),
            "autostop_shutdown_command": f"touch {quote(home / 'shutdown-ran')}",
            "disk_test_dir": str(home / "disk"),
        },
    }
    if mirror:
        entry["vars"]["registry_mirror"] = mirror
    return entry


# what sim.up owns in a host's entry: rewritten each time (the host's address and key change)
CONNECTION_KEYS = ("address", "port", "user", "key_file", "host_key")
# the vars sim.up owns likewise: the local registry's address changes with it (or it is gone)
SIM_VARS = ("registry_mirror",)


def merged(entry: dict[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """`entry` over what the inventory already says of that host: its connection is sim.up's,
    every other key and var the user set (an order, `train_python`) is kept."""
    before = (old or {}).get("hosts", {}).get(entry["name"]) if old else None
    if not isinstance(before, dict):
        return entry
    out = {**entry, **{k: v for k, v in before.items() if k not in CONNECTION_KEYS and k != "vars"}}
    vars_before = before.get("vars")
    user_vars = vars_before if isinstance(vars_before, dict) else {}
    kept = {k: v for k, v in user_vars.items() if k not in SIM_VARS}
    out["vars"] = {**entry["vars"], **kept}
    return out


def _existing(path: Path) -> dict[str, Any] | None:
    """The inventory sim.up wrote before (and the user may have edited), or None."""
    if not path.exists():
        return None
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(
            f"{path}: cannot read it to keep your edits ({exc}); fix or delete it, then rerun"
        ) from None
    return doc if isinstance(doc, dict) else None


def inventory_text(
    hosts: list[dict[str, Any]], vendors_dir: Path, old: Mapping[str, Any] | None = None
) -> str:
    """A native inventory for simulated hosts (`old`'s top-level keys, e.g. an edited order in
    `defaults`, are kept)."""
    doc: dict[str, Any] = {
        "vendors_dir": str(vendors_dir),
        # the demo box's driver (535.54.03) runs NGC PyTorch 23.10 natively; 24.08 would need
        # 560+, or 535.86+ through forward compatibility (see `invoke check` on it)
        "defaults": {"vendor": "demo-idc", "order": DEMO_ORDER, "vars": {"container_image": DEMO_IMAGE}},
    }
    doc.update({k: v for k, v in (old or {}).items() if k != "hosts"})
    doc["hosts"] = {str(h.pop("name")): h for h in hosts}
    return "# written by `invoke sim.up`; simulated rented servers on loopback\n" + yaml.safe_dump(
        doc, sort_keys=False
    )


def shipped(installed: str, checkout: str) -> Path:
    """A directory sim.up needs from the package (installed, or the source checkout's)."""
    from gpuonboard.resources import checkout_root, installed_roots, shipped_dir

    found = shipped_dir(installed, checkout)
    if found is None:
        places = [str(root / installed) for root in installed_roots()] + [str(checkout_root() / checkout)]
        raise UsageError(
            f"gpuonboard's shipped {installed} directory is missing (not in {', '.join(places[:-1])}"
            f" nor {places[-1]}); reinstall gpuonboard"
        )
    return found


STATE_FILE = "testhosts-state.json"
DEFAULT_BASE = ".gpuonboard/sim"


def _host_dirs(base: Path) -> list[Path]:
    """The host dirs sim.up makes under base: `base/hosts/<name>`."""
    return sorted(d for d in (base / "hosts").glob("*") if d.is_dir())


def stop_unrecorded(base: Path) -> int:
    """Stop the daemons a state file that cannot be read no longer lists: each host dir's under
    base/hosts (its pid file, and the pid the state file still names for that dir; a dir it
    names elsewhere is not sim.up's under this base), only a process that is that host's own
    sshd (see sshd_of); how many were running."""
    import json

    from gpuonboard.testing import TestHost

    pids: dict[Path, set[int]] = {}
    for d in _host_dirs(base):
        try:
            pids[d] = {int((d / "sshd.pid").read_text().split()[0])}
        except (OSError, ValueError, IndexError):
            pids[d] = set()
    try:
        listed = json.loads((base / STATE_FILE).read_text()).get("hosts", [])
        for h in listed:
            if Path(h["dir"]) in pids and h.get("pid"):
                pids[Path(h["dir"])].add(int(h["pid"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    stopped = 0
    for host_dir, candidates in pids.items():
        for pid in sorted(candidates):
            if pid <= 1 or not sshd_of(pid, host_dir / "sshd_config"):
                continue
            host = TestHost(
                name=host_dir.name,
                address="",
                port=0,
                profile=None,
                dir=host_dir,
                pid=pid,
                host_key_pub="",
                fingerprint="",
                log_path=host_dir / "sshd.log",
            )
            if host.is_running():
                host.stop()
                stopped += 1
    return stopped


def outside_hosts(base: Path, pool: TestHostPool) -> str | None:
    """Pure but for paths: the first recorded host whose dir is not `base/hosts/<its name>`
    (a state file edited, or copied from another base), as a phrase; None when all are."""
    for host in pool.hosts.values():
        if host.dir != base / "hosts" / host.name:
            return f"host {host.name!r} has its dir at {host.dir}, not under {base / 'hosts'}"
    return None


def recorded_pool(base: Path) -> TestHostPool | None:
    """The pool sim.up recorded under base, or None. A state file that cannot be read (edited,
    a host dir deleted, another version's) is dropped, after stopping the daemons it listed:
    starting afresh over it left them running, and sim.down failed on it (exit 70)."""
    from gpuonboard.testing import TestHostPool

    state = base / STATE_FILE
    if not state.exists():
        return None
    try:
        pool = TestHostPool.load_state(base)
        # (its daemons are stopped by pid: only this base's own hosts, never another's)
        elsewhere = outside_hosts(base, pool)
        if elsewhere is not None:
            raise ValueError(elsewhere)
        return pool
    except Exception as exc:
        n = stop_unrecorded(base)
        state.unlink(missing_ok=True)
        print(f"{state}: cannot read it ({exc}); stopped the {n} simulated server(s) still running there")
        return None


def _started(pool: TestHostPool, name: str, profile: str) -> str:
    """Start `name` (restart it, when recorded); the profile it replays."""
    from gpuonboard.testing import ProfileError, TestHostError

    try:
        if name not in pool.hosts:
            pool.add(name, profile)
            return profile
        pool.hosts[name].start()
    except ProfileError as exc:
        raise UsageError(f"unknown or broken hardware profile {profile!r}: {exc}") from None
    except TestHostError as exc:
        raise UsageError(f"simulated server {name!r} could not start: {exc}") from None
    was = str(pool.hosts[name].profile)
    if was != profile:
        print(
            f"note: {name!r} already replays {was}; --profile {profile} is not applied"
            f" (sim.down, then sim.up, to change it)"
        )
    return was


def up(base: Path, name: str, profile: str, hint: bool = True, container: bool = True) -> int:
    """Start the simulated host and write its inventory; prints how to use it (`hint`: the
    `next:` line; the demo, which stops the host again, prints its own). `container`: give it
    the simulated container runtime where this machine can (else one line says why not)."""
    from gpuonboard.testing import TestHostPool
    from gpuonboard.testing.hosts import SSHD

    base = base.resolve()
    # an installed package has no repository: the vendor files and captures are its data files
    vendors = shipped("inventory/vendors", "inventory/vendors")
    fixtures = shipped("fixtures", "tests/fixtures")
    if not os.access(SSHD, os.X_OK):
        raise UsageError(
            f"a simulated server is OpenSSH's sshd, and {SSHD} is missing; install it"
            " (apt-get install openssh-server), then rerun"
        )
    if base.exists() and not base.is_dir():
        raise UsageError(f"--base {base} is not a directory; give a directory for the simulated servers")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--base {base}: cannot create it ({exc.strerror}); give a directory you can write"
        ) from None
    pool = recorded_pool(base) or TestHostPool(base, fixtures_root=fixtures)
    pool.fixtures_root = fixtures  # (the state's may be another install's)
    profile = _started(pool, name, profile)
    inv_dir = base / "inventory"
    inv_dir.mkdir(parents=True, exist_ok=True)
    path = inv_dir / "hosts.yml"
    old = _existing(path)
    from gpuonboard.testing import simcontainers

    dirs = [h.dir for h in pool.hosts.values()]
    skipped = container_runtime(base, pool.hosts[name].dir, container, images_of(old), dirs)
    mirror = simcontainers.mirror_url(base)
    entries = [
        merged(
            sim_entry(
                h.name,
                h.address,
                h.port,
                str(pool.client_key),
                h.fingerprint,
                h.dir,
                mirror if simcontainers.has_runtime(h.dir) else None,
            ),
            old,
        )
        for h in pool.hosts.values()
    ]
    (inv_dir / "hosts.yml").write_text(inventory_text(entries, vendors, old))
    pool.write_state()
    for h in pool.hosts.values():
        forget_old_key(Path.cwd() / ".gpuonboard" / "known_hosts", h.address, h.port, h.fingerprint)
    host_dir = pool.hosts[name].dir
    entry = _entry_of(path, name)
    make_box_dirs(entry, host_dir)
    real_df_inside(host_dir)
    cron_dir = entry.get("vars", {}).get("cron_dir")
    cronrunner.start(host_dir, Path(cron_dir if isinstance(cron_dir, str) else host_dir / "cron.d"))
    print(
        f"simulated server {name!r} ({profile}) up at {pool.hosts[name].address}:{pool.hosts[name].port};"
        f" inventory: {inv_dir}"
    )
    if skipped:
        print(skipped)
    elif simcontainers.has_runtime(host_dir):
        print(
            f"container runtime: podman as docker, the NVIDIA toolkit simulated; images from the"
            f" simulator's registry {mirror} (a mirror of {', '.join(sorted(mirror_origins(old)))})"
        )
    if hint:
        print(f"next: {next_command(name, inv_dir, Path.cwd(), prog_name())}")
    return 0


def images_of(doc: Mapping[str, Any] | None) -> list[str]:
    """Pure: the container images an inventory names (defaults and hosts' `container_image`),
    the demo's when it names none."""
    found: list[str] = []
    sections = [(doc or {}).get("defaults")] + list(((doc or {}).get("hosts") or {}).values())
    for section in sections:
        host_vars = section.get("vars") if isinstance(section, dict) else None
        image = host_vars.get("container_image") if isinstance(host_vars, dict) else None
        if isinstance(image, str) and image:
            found.append(image)
    return list(dict.fromkeys(found or [DEMO_IMAGE]))


def mirror_origins(doc: Mapping[str, Any] | None) -> set[str]:
    """Pure: the registries of the images an inventory names (what the sim's registry mirrors)."""
    return {image.split("/", 1)[0] if "/" in image else "Docker Hub" for image in images_of(doc)}


def container_runtime(base: Path, host_dir: Path, wanted: bool, images: list[str], dirs: list[Path]) -> str:
    """Give the simulated host its container runtime (podman as `docker`, the NVIDIA toolkit
    stand-in, the sim's registry holding `images`; see testing.simcontainers); the other
    hosts' (`dirs`) that have one pull from the registry as it runs now. "" when done or not
    wanted; else the one line saying why the container step cannot run on it."""
    from gpuonboard.steps.container import _GPU_CHECK_OK
    from gpuonboard.testing import simcontainers

    if not wanted:
        simcontainers.take_from_host(host_dir)
        return ""
    why = simcontainers.unavailable()
    if why is None:
        try:
            reg = simcontainers.registry(base)
            simcontainers.push_images(reg, images, _GPU_CHECK_OK)
            for d in dirs:
                if d == host_dir or simcontainers.has_runtime(d):
                    simcontainers.give_host(d, reg)
            return ""
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
            last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
            why = f"its container runtime could not be set up ({last})"
    simcontainers.take_from_host(host_dir)
    return f"container step skipped on {host_dir.name!r}: {why}; pass --skip container to provision"


def prog_name() -> str:
    """How the user runs the tasks: the gpuonboard console script, or invoke."""
    return "gpuonboard" if Path(sys.argv[0]).name == "gpuonboard" else "invoke"


def _entry_of(path: Path, name: str) -> dict[str, Any]:
    """A host's entry in the inventory sim.up just wrote (with the user's edits)."""
    doc = _existing(path) or {}
    entry = doc.get("hosts", {}).get(name)
    return entry if isinstance(entry, dict) else {}


DF_MARKER = "# gpuonboard sim: df wrapper"


def df_wrapper_text(host_dir: Path) -> str:
    """Pure: the simulated host's `df`: the profile's replayed capture, except for a path in
    the host's dir, which is on THIS machine's disk (disk_speed writes its test file there):
    the real df answers for it, so the free-space check sees the real free space."""
    return (
        f"#!/bin/sh\n{DF_MARKER} (sim.up)\n"
        'last=; for a in "$@"; do last=$a; done\n'
        f'case $last in\n  {quote(str(host_dir))}/*) exec /bin/df "$@" ;;\nesac\n'
        f'exec /bin/sh {quote(str(host_dir / "df-replay"))} "$@"\n'
    )


def real_df_inside(host_dir: Path) -> None:
    """Put the df wrapper (df_wrapper_text) in front of the host's replayed df, once."""
    from gpuonboard.testing.toolbox import add_executable

    df = host_dir / "bin" / "df"
    if not df.is_file() or DF_MARKER in df.read_text():
        return
    os.replace(df, host_dir / "df-replay")
    add_executable(df.parent, "df", df_wrapper_text(host_dir))


def make_box_dirs(entry: Mapping[str, Any], host_dir: Path) -> None:
    """Create the simulated box's data dir and disk test dir (a rented box comes with its data
    disk mounted: `prove`'s disk_speed said "no such directory" without them), and the cron dir
    its cron reads (a box's /etc/cron.d: autostop puts root's watcher there only where it exists).
    Only paths in the host's dir (an entry the user pointed elsewhere is left alone)."""
    host_vars = entry.get("vars")
    more = host_vars if isinstance(host_vars, dict) else {}
    wanted = [entry.get("data_dir"), more.get("disk_test_dir"), more.get("cron_dir")]
    for value in wanted:
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).is_relative_to(host_dir):
            Path(value).mkdir(parents=True, exist_ok=True)


def next_command(name: str, inv_dir: Path, cwd: Path, prog: str = "invoke") -> str:
    """Pure: the command that checks the simulated server (`prog`: invoke, or the gpuonboard
    console script; its inventory relative to `cwd` when under it, quoted for a shell)."""
    shown = inv_dir.relative_to(cwd) if inv_dir.is_relative_to(cwd) else inv_dir
    return join([prog, "check", "--host", name, "--inventory", str(shown)])


def forget_old_key(known_hosts: Path, address: str, port: int, fingerprint: str) -> bool:
    """Drop the project's recorded keys of a loopback address a simulated server now answers on
    with a new key (an earlier one, stopped by sim.down, had it): its own inventory pins the new
    key, and the old line made every command refuse it as a changed key (exit 4). Only plain
    lines naming just that address; True when one went."""
    from gpuonboard.connection import known_hosts_name
    from gpuonboard.testing.hosts import fingerprint as key_fingerprint

    if not address.startswith("127.") or not known_hosts.is_file():
        return False
    name = known_hosts_name(address, port)
    lines = known_hosts.read_text().splitlines(keepends=True)

    def stale(line: str) -> bool:
        fields = line.split()
        if len(fields) < 3 or fields[0] != name:
            return False
        try:
            return key_fingerprint(f"{fields[1]} {fields[2]}") != fingerprint
        except ValueError:
            return True

    keep = [ln for ln in lines if not stale(ln)]
    if len(keep) == len(lines):
        return False
    tmp = known_hosts.with_name(known_hosts.name + ".sim")
    tmp.write_text("".join(keep))
    os.chmod(tmp, 0o600)
    os.replace(tmp, known_hosts)
    print(f"forgot the recorded host key of {name} (an earlier simulated server there); now {fingerprint}")
    return True


def down(base: Path, name: str | None = None) -> int:
    """Stop every simulated host under base: those its state file records, then any other
    host dir's daemon still running (a state file deleted, or one that cannot be read); with
    `name`, only that one (the others keep running and keep their inventory entries)."""
    from gpuonboard.testing import simcontainers

    base = base.resolve()
    if name is not None:
        return down_one(base, name)
    state = base / STATE_FILE
    had_state = state.exists()
    pool = recorded_pool(base) if had_state else None
    if pool is not None:
        n = len(pool.hosts)
        pool.stop_all()
        state.unlink(missing_ok=True)
        print(f"stopped {n} simulated server(s)")
    stray = stop_unrecorded(base) if base.is_dir() else 0
    for host_dir in _host_dirs(base) if base.is_dir() else []:
        cronrunner.stop(host_dir)
        simcontainers.release(host_dir)
    simcontainers.stop_registry(base)
    if stray:
        print(f"stopped {stray} simulated server(s) under {base} that no state file recorded")
    elif not had_state:
        print("no simulated server is running")
    return 0


def down_one(base: Path, name: str) -> int:
    """Stop one simulated host (its sshd and its cron, by PID), drop it from the state file and
    from the inventory; every other host and entry stays as it was."""
    pool = recorded_pool(base) if (base / STATE_FILE).exists() else None
    host = pool.hosts.get(name) if pool is not None else None
    if pool is None or host is None:
        others = ", ".join(sorted(pool.hosts)) if pool is not None and pool.hosts else "none"
        print(f"no simulated server named {name!r} under {base} (running there: {others})")
        return 0
    from gpuonboard.testing import simcontainers

    host.stop()
    cronrunner.stop(host.dir)
    simcontainers.release(host.dir)
    del pool.hosts[name]
    if pool.hosts:
        pool.write_state()
    else:
        pool.state_path.unlink(missing_ok=True)
        simcontainers.stop_registry(base)
    drop_inventory_entry(base / "inventory" / "hosts.yml", name)
    rest = f"; still running: {', '.join(sorted(pool.hosts))}" if pool.hosts else ""
    print(f"stopped simulated server {name!r}{rest}")
    print(f"to start it again: {again_command(name, str(host.profile), base, Path.cwd(), prog_name())}")
    return 0


def drop_inventory_entry(path: Path, name: str) -> None:
    """Remove one host from the inventory sim.up wrote (every other key kept as it is)."""
    doc = _existing(path)
    if not doc or not isinstance(doc.get("hosts"), dict) or name not in doc["hosts"]:
        return
    del doc["hosts"][name]
    tmp = path.with_name(path.name + ".sim")
    tmp.write_text(
        "# written by `invoke sim.up`; simulated rented servers on loopback\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )
    os.replace(tmp, path)


def again_command(name: str, profile: str, base: Path, cwd: Path, prog: str = "invoke") -> str:
    """Pure: the sim.up that starts `name` again, then the check of it (`--base` only when it
    is not the default)."""
    argv = [prog, "sim.up", "--name", name, "--profile", profile]
    inv_dir = base / "inventory"
    if base != (cwd / DEFAULT_BASE).resolve():
        argv += ["--base", str(base.relative_to(cwd) if base.is_relative_to(cwd) else base)]
    return f"{join(argv)}, then {next_command(name, inv_dir, cwd, prog)}"


def cron(base: Path, name: str) -> int:
    """Run the cron entries installed on a simulated host once, now, as its cron would (the
    same commands, environment and user; see testing.cronrunner): to see autostop's watcher
    tick without waiting for the minute."""
    base = base.resolve()
    pool = recorded_pool(base) if (base / STATE_FILE).exists() else None
    if pool is None or name not in pool.hosts:
        raise UsageError(
            f"no simulated server named {name!r} under {base}; start it with `sim.up --name {name}`"
        )
    host_dir = pool.hosts[name].dir
    cron_dir = _entry_of(base / "inventory" / "hosts.yml", name).get("vars", {}).get("cron_dir")
    lines = cronrunner.run_due(host_dir, Path(cron_dir if isinstance(cron_dir, str) else host_dir / "cron.d"))
    cronrunner.log(host_dir, lines or ["sim.cron: no cron entry"])
    for line in lines or [f"no cron entry on {name!r} (nothing installed in its cron dir)"]:
        print(line)
    return 0
