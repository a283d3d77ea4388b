"""The host rules of the `acceptance` step: CPU cores, RAM and the data disk.

Pure functions of the order and the facts, each returning a Check. CPUs count as usable only
when this login may use them (offline CPUs, affinity, a cgroup quota); RAM allows the share the
kernel and firmware keep; the data disk must be another physical disk than /'s.
"""

from __future__ import annotations

import dataclasses
import math
import re

from gpuonboard.connection.gather import Facts
from gpuonboard.facts import disks
from gpuonboard.facts.cpu import CPU_LIMIT_FILES, CPUSET_FILES, cgroup_cpuset_read, nproc_unread
from gpuonboard.facts.memory import MEMORY_LIMIT_FILES
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.missing_facts import _not_judged
from gpuonboard.steps.checks.ngc import gpu_class
from gpuonboard.steps.checks.slice_view import container_said
from gpuonboard.units import format_bytes

_NOT_DISKS = {"tmpfs", "overlay", "devtmpfs", "ramfs", "none", "shm"}


def _or_unknown(n: int | None) -> str:
    return "?" if n is None else str(n)


def _answered(facts: Facts, probe: str) -> str:
    """What the probe printed when it ran and exited 0; '' otherwise."""
    out = facts.raw.get(probe)
    return out.stdout if out is not None and out.exit_code == 0 else ""


def _unread(facts: Facts, probe: str) -> bool:
    """The probe's output is there (the tool ran and printed something, exit 0) but the facts
    read from it are empty: an output not understood, which says nothing about the hardware."""
    return facts.given(probe) and bool(_answered(facts, probe).strip())


# what told the usable CPU count, by _usable_cpus's reason
_SOURCE_OF = {"affinity/cgroup": "nproc", "offline": "lscpu's Off-line CPU(s) list"}


def _source(why: str, facts: Facts) -> str:
    """What told the usable CPU count (_usable_cpus's reason `why`): the CPU set's file read."""
    if why == "cgroup CPU set" and (read := cgroup_cpuset_read(_answered(facts, "cgroup_limits"))):
        return f"the cgroup's {read[1]}"
    return _SOURCE_OF.get(why, why)


# the reasons whose CPUs are a set of the host's (any of them may be a hyperthread of a core
# whose other thread is in the set too), not a quota of CPU time
_CPU_SETS = ("affinity/cgroup", "offline", "cgroup CPU set")


def _usable_cpus(facts: Facts) -> tuple[int | None, str]:
    """CPUs a process of this login may use: the online CPUs (lscpu's CPU(s) less its Off-line
    CPU(s) list), nproc (the affinity mask), the cgroup's CPU set (cpuset.cpus.effective: a
    saved listing of the cgroup files may give it where no nproc was saved) and its CPU quota,
    whichever is smallest, with what limited it; (None, "") when none is known."""
    usable, why = None, ""
    cpu = facts.cpu
    if cpu is not None and cpu.offline_cpus and cpu.logical_cpus is not None:
        usable, why = max(0, cpu.logical_cpus - cpu.offline_cpus), "offline"
    # nproc counts only online CPUs: no lower than the online count, offline is the reason
    if facts.nproc is not None and (usable is None or facts.nproc < usable):
        usable, why = facts.nproc, "affinity/cgroup"
    # (nproc's affinity lies within the CPU set: a set smaller than a read nproc is a misread)
    cpuset = facts.cgroup_cpuset if facts.nproc is None else None
    if cpuset is not None and (usable is None or cpuset < usable):
        usable, why = cpuset, "cgroup CPU set"
    if facts.cgroup_cpus is not None:
        quota = max(1, math.floor(facts.cgroup_cpus + 1e-9))
        if usable is None or quota < usable:
            usable, why = quota, "cgroup CPU quota"
    return usable, why


def _host_threads(per_core: int | None, cores: int | None, cpus: int | None) -> int:
    """Threads per core: lscpu's `Thread(s) per core`; where it says 0 or nothing (lxcfs's view
    of a container's CPU set, a box with most CPUs offline: `0`), `CPU(s)` over the cores
    (`Socket(s)` x `Core(s) per socket`), the host's; 1 where neither says more."""
    if per_core:
        return per_core
    return cpus // cores if cpus and cores and cpus % cores == 0 else 1


def _limited_detail(usable: int, why: str, logical: int, offline: int | None) -> str:
    """Why fewer CPUs than the host has may be used, and what to do."""
    if why == "offline":
        return (
            f"only {usable} of {logical} CPUs online ({offline} offline: lscpu's Off-line CPU(s) list);"
            " ask the vendor to bring them online (`chcpu -e`, or a kernel `maxcpus=`/`nr_cpus=` limit"
            " removed) or for the box that was ordered; in an LXC/LXD container, lxcfs shows the host's"
            " CPUs outside the container's share as offline: ask for the CPUs ordered"
        )
    return (
        f"only {usable} CPU{'s' if usable != 1 else ''} usable ({why}) of {logical};"
        " the host has more than this login may use"
    )


def _cores_unread(ordered: int, expected: str, actual: str, logical: int, threads: int | None) -> Check:
    """cpu_cores where lscpu gave enough CPUs but no core count (no `Socket(s)` or `Core(s) per
    socket` read): each core holds at most `Thread(s) per core` of the CPUs, so there are at
    least CPU(s) / threads cores; below the order that bound says nothing about hyperthreads."""
    if threads is not None and threads > 0 and math.ceil(logical / threads) >= ordered:
        at_least = math.ceil(logical / threads)
        return Check(
            "cpu_cores",
            expected,
            f"{actual}: at least {at_least} cores ({logical} CPUs, {threads} per core)",
            "pass",
        )
    per_core = "no Thread(s) per core" if threads is None else f"{threads} threads per core"
    return Check(
        "cpu_cores",
        expected,
        f"{actual}: the core count is not in this lscpu output",
        "unverified",
        f"lscpu gave {logical} CPUs and {per_core} but no Socket(s) or Core(s) per socket, so"
        f" the cores cannot be told from hyperthreads: run `lscpu` (util-linux 2.20 or newer) or"
        " read /sys/devices/system/cpu/cpu*/topology on the box",
    )


def rule_cpu(order: OrderSpec, facts: Facts) -> Check:
    """Physical cores >= ordered; only hyperthreads reaching it is a warning; fewer CPUs usable
    by this login (offline CPUs, affinity, cgroup quota: a container rental) than ordered fails,
    and a CPU set of an SMT host that may be hyperthreads of fewer cores than ordered warns.
    An nproc output that was given but not read (a number without nproc's final newline: cut
    short?) leaves the CPUs this login may use unknown: no pass or warning, only a fail that
    does not depend on them."""
    check = _container_view(
        _judge_cpu(order, facts), facts, "lscpu and nproc show the host's CPUs", CPU_LIMIT_FILES
    )
    check = _cpu_set_unknown(check, facts)
    unread = nproc_unread(_answered(facts, "nproc"))
    if unread is None or check.verdict == "fail":
        return check
    detail = (
        f"{unread}: the number of CPUs this login may use is unknown; save `nproc` of the box"
        " again (`nproc > nproc.txt`)"
    )
    return Check(
        "cpu_cores",
        check.expected,
        check.actual,
        "unverified",
        "; ".join(filter(None, [detail, check.detail])),
    )


def _cpu_set_unknown(check: Check, facts: Facts) -> Check:
    """A pass of a container whose CPU quota was read (cpu.max: `max`, no quota) but neither
    its CPU set (cpuset.cpus.effective) nor nproc: a container run with `--cpuset-cpus=12-15`
    has no quota and may use 4 of the host's CPUs, which lscpu shows all of; unverified."""
    if check.verdict != "pass" or facts.nproc is not None or _limit_read(facts, CPUSET_FILES):
        return check
    if nproc_unread(_answered(facts, "nproc")) is not None or not (container := container_said(facts)):
        return check  # (an nproc given but not read: rule_cpu says so)
    return Check(
        check.name,
        check.expected,
        f"{check.actual} (of the host: {container}, a container)",
        "unverified",
        "inside a container lscpu shows the host's CPUs, and the CPUs this container may run on"
        " (its CPU set: `docker run --cpuset-cpus`, a pod's exclusive CPUs) were not read: a CPU"
        " quota of `max` does not say it may use them all; save `nproc` of the box, or"
        " `grep . /sys/fs/cgroup/cpuset.cpus.effective` (cgroup v1:"
        " `grep . /sys/fs/cgroup/cpuset/cpuset.effective_cpus`) beside it",
    )


def _usable_only(usable: int, why: str, cores: int, expected: str, facts: Facts) -> Check:
    """cpu_cores from the CPUs this login may use alone (nproc, no lscpu read): threads, not
    cores, so at most a warning."""
    verdict: Verdict = "warn" if usable >= cores else "fail"
    out = facts.raw.get("lscpu")
    lscpu = "no lscpu"
    if facts.given("lscpu") and out is not None:
        failed = "lscpu not installed" if out.absent else "lscpu failed"
        lscpu = failed if out.exit_code else "lscpu unreadable"
    return Check(
        "cpu_cores",
        expected,
        f"{usable} logical CPUs ({lscpu})",
        verdict,
        f"only the logical CPUs this login may use are known ({_source(why, facts)}): threads,"
        " not cores; save `lscpu` of the box to count its cores",
    )


def _lscpu_unread(expected: str, facts: Facts) -> Check:
    """cpu_cores where lscpu gave nothing readable and the usable CPUs are unknown: unverified,
    saying whether lscpu is not installed (exit 127: `sh: 1: lscpu: not found`)."""
    if (said := facts.raw.get("lscpu")) is not None and said.absent:
        return Check(
            "cpu_cores",
            expected,
            f"unknown: lscpu is not installed ({said.stderr.strip() or 'exit 127'})",
            "unverified",
            "lscpu (util-linux) is not on the login user's PATH, so the CPU cores could not be read:"
            " install util-linux (or ask the vendor to), or save `lscpu` run where it is installed",
        )
    return Check(
        "cpu_cores",
        expected,
        "unknown: lscpu gave no readable output",
        "unverified",
        "the CPU cores could not be read: run `lscpu` (and `nproc`) on the box to see why",
    )


def _judge_cpu(order: OrderSpec, facts: Facts) -> Check:
    """rule_cpu from lscpu, nproc (when read) and the cgroup quota."""
    assert order.cpu_cores is not None
    expected = f">= {order.cpu_cores} cores"
    usable, why = _usable_cpus(facts)
    if facts.cpu is None or (facts.cpu.physical_cores is None and facts.cpu.logical_cpus is None):
        # (no lscpu, or one nothing was read from: a damaged `lscpu -J`, another command's text)
        if usable is None and not facts.given("lscpu"):
            return _not_judged("cpu_cores", expected, "lscpu", "lscpu")
        if usable:
            return _usable_only(usable, why, order.cpu_cores, expected, facts)
        # lscpu ran but gave nothing readable, and the usable CPU count is unknown: no evidence
        # of fewer cores than ordered (a missing tool is not missing hardware)
        return _lscpu_unread(expected, facts)
    physical, logical = facts.cpu.physical_cores, facts.cpu.logical_cpus
    model = f" ({facts.cpu.model_name})" if facts.cpu.model_name else ""
    actual = f"{_or_unknown(physical)} cores / {_or_unknown(logical)} threads{model}"
    threads = _host_threads(facts.cpu.threads_per_core, physical, logical)
    if usable is not None and logical is not None and usable < logical:
        if why == "offline":
            # (no core count: lscpu counts cores over the online CPUs, or over all, by version:
            # "2 cores / 4 threads" of 4 single-thread cores, 2 of them offline, misled)
            actual = f"{logical} CPUs{model}, {usable} online"
        else:
            actual += f", {usable} usable ({why})"
        if usable < order.cpu_cores:
            detail = _limited_detail(usable, why, logical, facts.cpu.offline_cpus)
            if physical is not None and physical < order.cpu_cores:  # (the first shortfall to say)
                short = f"lscpu counts {physical} cores, fewer than the {order.cpu_cores} ordered"
                detail = f"{short}; and {detail}"
            return Check("cpu_cores", expected, actual, "fail", detail)
        if why in _CPU_SETS and math.ceil(usable / threads) < order.cpu_cores:
            # a CPU set (cpuset, taskset; lxcfs shows a container's set as the online CPUs) or the
            # online CPUs of an SMT host may hold both threads of each core
            kind = "online" if why == "offline" else "usable"
            return Check(
                "cpu_cores",
                expected,
                actual,
                "warn",
                f"the {usable} {kind} CPUs may be hyperthreads ({threads} per core) of as few as"
                f" {math.ceil(usable / threads)} cores; the order is met for certain only by"
                f" {(order.cpu_cores - 1) * threads + 1} or more {kind} CPUs",  # (the fewest that hold them)
            )
    if physical is not None and physical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "pass")
    if logical is not None and logical >= order.cpu_cores:
        if physical is None and facts.cpu.cut:
            return Check(
                "cpu_cores",
                expected,
                f"{actual}: the lscpu output is cut short",
                "unverified",
                f"the lscpu output is cut short ({facts.cpu.cut}), so the cores of the CPU types cut"
                " off are unknown: save the whole `lscpu` of the box",
            )
        if physical is None:
            return _cores_unread(order.cpu_cores, expected, actual, logical, facts.cpu.threads_per_core)
        return Check("cpu_cores", expected, actual, "warn", "the order is met only by counting hyperthreads")
    return Check(
        "cpu_cores",
        expected,
        actual,
        "fail",
        "fewer CPUs than ordered, hyperthreads included: a smaller CPU model or fewer sockets;"
        " ask the vendor for the box that was ordered",
    )


# The kernel and firmware keep part of RAM out of `free`'s total: about 1.7 % on the real
# 1 x H200 VM capture (125.9 GiB of 128 GiB), plus a fixed share that weighs on small boxes
# (the real 2 GiB Ubuntu VM shows 1.92 GiB, 3.8 % less). Allowed gap: RAM_TOLERANCE of the
# order plus RAM_RESERVE_BYTES.
RAM_RESERVE_BYTES = 256 << 20
# Where the GPU has no memory of its own and shares the system's (nvidia-smi: its memory size
# is not supported), the firmware keeps a further share out of the kernel's sight: 6.5 % on the
# real DGX Spark (GB10) capture, 119.7 GiB of 128 GiB. Allowed on top of the tolerance.
UNIFIED_RESERVE = 0.10


# what to save where a container's limits are not known offline (cgroup v2, v1)
CGROUP_LIMITS_ADVICE = (
    "save `grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max` of the box (cgroup v1:"
    " `grep . /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_*_us`) beside it"
)


def _limit_read(facts: Facts, files: tuple[str, ...]) -> bool:
    """Whether the cgroup probe (or a saved listing) read one of `files` ("max" counts: read, no
    limit); a probe that could not run or read nothing (no /proc/self/cgroup, no cgroupfs
    mounted, files unreadable) leaves the limit unknown."""
    lines = _answered(facts, "cgroup_limits").splitlines()
    return any(line.partition("\t")[0].endswith(tuple("/" + f for f in files)) for line in lines)


def _container_view(check: Check, facts: Facts, shows: str, files: tuple[str, ...]) -> Check:
    """A pass where the box is a container (slice_view.container_said) whose cgroup limit (`files`)
    was not read (offline: not given; live: the probe could not read it): `shows` the host's,
    which a container may not use (AutoDL's `free` says 1.0Ti of a share of 32 GB): unverified,
    never a pass."""
    if check.verdict != "pass" or _limit_read(facts, files):
        return check
    container = container_said(facts)
    if not container:
        return check
    advice = CGROUP_LIMITS_ADVICE
    if facts.given("cgroup_limits"):
        out = facts.raw["cgroup_limits"]
        said = "no /proc/self/cgroup" if out.absent else out.failure() if out.exit_code else "it read none"
        advice = (
            f"the container's cgroup limits read there hold no {' or '.join(files)} ({said}):"
            f" read them by hand (`grep . /sys/fs/cgroup/{files[0]}`) or ask the vendor for the"
            " container's limits"
        )
    return Check(
        check.name,
        check.expected,
        f"{check.actual} (of the host: {container}, a container)",
        "unverified",
        f"inside a container {shows} unless lxcfs shows its own, and a cgroup limit may give this"
        f" container less; {advice}",
    )


def rule_ram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """RAM as ordered (`_judge_ram`); a pass of a container whose limits were not given is not one."""
    return _container_view(
        _judge_ram(order, facts, tolerance), facts, "free shows the host's RAM", MEMORY_LIMIT_FILES
    )


def _judge_ram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Installed RAM >= ordered (the inventory reads GB/TB as GiB/TiB), allowing the kernel's
    reserved share (and, where the GPU shares the system's memory, the firmware's share for it);
    a cgroup memory limit below it (a container rental) is what counts."""
    assert order.ram_bytes is not None
    wanted = order.ram_bytes
    expected = f">= {format_bytes(wanted)}"
    if facts.memory is None and not facts.given("free"):
        return _not_judged("ram", expected, "free", "free -k")
    if facts.memory is None or facts.memory.total_bytes is None:
        if _unread(facts, "free"):
            return Check(
                "ram",
                expected,
                "unknown: no Mem total could be read from the free output",
                "unverified",
                "the free output was given but its Mem row could not be read: save `free -k` of the"
                " box (in the C locale: `LC_ALL=C free -k`) to judge the RAM",
            )
        return _tool_failed("ram", expected, facts, "free", "free -k")
    total = facts.memory.total_bytes
    # as many decimals as tell the two apart (an order of 1.05 TiB beside 1.03 TiB read)
    decimals = _telling_decimals(total, wanted)
    expected = f">= {format_bytes(wanted, True, decimals)}"
    actual = f"{format_bytes(total, True, decimals)} ({format_bytes(total, binary=False)})"
    unified = _unified(facts)  # (soldered, shared with the GPU: no DIMM to be missing)
    allowed = tolerance + (UNIFIED_RESERVE if unified else 0.0)
    floor = wanted * (1 - allowed) - RAM_RESERVE_BYTES
    if unified:
        actual += ", shared with the GPU (nvidia-smi: its memory size is not supported)"
    limit = facts.memory_limit_bytes
    if limit is not None and limit <= total:  # (lxcfs shows the limit as free's total)
        actual += f", {format_bytes(limit)} usable (cgroup memory limit)" if limit < total else ""
        if limit < floor:
            return Check(
                "ram",
                expected,
                actual,
                "fail",
                f"only {format_bytes(limit)} usable (cgroup memory limit)"
                + (f" of {format_bytes(total)}" if limit < total else ", free's total (lxcfs shows it)")
                + ": the container's limit, not a missing DIMM; ask the vendor for the memory ordered",
            )
    less, more = facts.memory.total_spread
    if total - less >= floor:
        return Check("ram", expected, actual, "pass")
    if total + more >= floor:
        return _rounded_ram(total, less, more, floor, expected, actual, facts.memory.si)
    short = format_bytes(wanted - total - more)
    if unified:
        why = (
            f"more than the firmware of a box whose GPU shares its memory keeps for the GPU (up to"
            f" {allowed:.0%} + 256 MiB); a model with less memory: ask the vendor for the box that"
            " was ordered"
        )
    else:
        why = (
            f"more than the {allowed:.0%} + 256 MiB the kernel and firmware keep; a missing or failed"
            " DIMM, or a smaller box"
        )
        if not _limit_read(facts, MEMORY_LIMIT_FILES):
            # (lxcfs, in an LXC or Kubernetes container, shows the container's memory limit as
            # free's total: 3.7Gi of a 4000 MB LXD limit; no limit file read says otherwise)
            why += ", or a container's memory limit, which lxcfs shows as free's total"
        why += ": ask the vendor"
    return Check("ram", expected, actual, "fail", f"{short} less than ordered, {why}")


def _rounded_ram(
    total: int, less: int, more: int, floor: float, expected: str, actual: str, si: bool = False
) -> Check:
    """ram unverified where free printed the total in rounded units (`free -h`'s `125Gi` is
    125-126 GiB), or under `--si` (powers of 1000, or 1024 by procps version), and the least RAM
    the order allows lies within that range."""
    d = _telling_decimals(total - less, total + more, int(floor))
    low, high, need = (format_bytes(n, True, d) for n in (total - less, total + more, int(floor)))
    how = "under `--si`, in powers of 1000 (or of 1024, by procps version)" if si else "in rounded units"
    return Check(
        "ram",
        expected,
        f"{actual}; free prints it {'under --si' if si else 'rounded'}: between {low} and {high}",
        "unverified",
        f"free prints the Mem total {how}, and the {need} the order needs (less the"
        f" tolerance) lies within that {'range' if si else 'rounding'}: save `free -k` of the box to"
        " judge it",
    )


def _telling_decimals(*sizes: int) -> int:
    """As many decimals (1 to 3) as print the binary sizes given apart from each other (an order
    of 1.05 TiB beside 1.03 TiB read; `2.0Ti`'s 1.95-2.05 TiB beside the 2.04 TiB needed)."""
    distinct = len(set(sizes))
    return next((d for d in (1, 2, 3) if len({format_bytes(n, True, d) for n in sizes}) == distinct), 3)


def _unified(facts: Facts) -> bool:
    """Whether nvidia-smi says a GPU of the box has no memory of its own (GpuInfo.memory_unified:
    the GB10's memory is the system's), read from a GPU that answered and gave no size (a size
    from another format says otherwise). Not where another GPU of the box gives a size, nor of
    a data-centre GPU (an H100's or A100's memory is its own HBM): one GPU's `[N/A]` memory cell
    there is a size not read, never memory shared with the system."""
    gpus = [g for g in (facts.gpu.gpus if facts.gpu is not None else ()) if not g.faults]
    said = [g for g in gpus if g.memory_unified and g.memory_total_mib is None]
    return (
        bool(said)
        and all(g.memory_total_mib is None for g in gpus)
        and not any(gpu_class(g.name, g.product_brand) == "datacenter" for g in said)
    )


def _separate_mounts(root: disks.Mount, facts: Facts) -> list[disks.Mount]:
    """Mounts df lists on a known other physical disk than /'s (not tmpfs/overlay, not under
    /boot), largest first: where a vendor may have mounted the data disk instead."""
    found: list[disks.Mount] = []
    for mount in facts.mounts:
        if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS or mount is root:
            continue
        if mount.mountpoint == "/boot" or mount.mountpoint.startswith("/boot/"):
            continue
        shared = disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if shared is False and all(m.device != mount.device for m in found):
            found.append(mount)
    return sorted(found, key=lambda m: -(m.size_bytes or 0))


def _no_mount_detail(path: str, root: disks.Mount | None, facts: Facts) -> str:
    """What to do when nothing is mounted at the ordered path: name the disks lsblk shows with
    nothing mounted (a data disk delivered but not formatted/mounted), when lsblk sees this
    system's mounts (it resolves /; in a container it may not)."""
    # only an lsblk that shows / mounted sees this system's mounts (one run in a container
    # shows the host's system disk with nothing mounted); a disk under any mount df lists
    # (/ included) is never offered
    sees_root = any("/" in d.mountpoints for d in facts.block_devices)
    in_use: set[str] = set()
    for mount in facts.mounts:
        in_use |= disks.physical_disks(mount, facts.block_devices, facts.mounts, facts.loop_backing) or set()
    idle = [
        d
        for d in (disks.unmounted_disks(facts.block_devices) if sees_root and root is not None else [])
        if disks.short_name(d.name) not in in_use
    ]
    elsewhere = _separate_mounts(root, facts) if root is not None else []
    if elsewhere:
        shown = ", ".join(
            f"{m.mountpoint} ({m.device}, {format_bytes(m.size_bytes, binary=False)})" for m in elsewhere[:3]
        )
        more = f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else ""
        return (
            f"another disk than / is mounted elsewhere: {shown}{more}; if one is the ordered data"
            f" disk, set the order's data_disk mount to its path, or mount it at {path}"
        )
    if idle:
        names = ", ".join(f"{d.name} ({format_bytes(d.size_bytes, binary=False)})" for d in idle)
        one = len(idle) == 1
        return (
            f"lsblk shows {'a disk' if one else 'disks'} with nothing mounted: {names}; if"
            f" {'it is' if one else 'one is'} the ordered data disk, format it and mount it at {path}"
            " (or ask the vendor to)"
        )
    return f"no disk is mounted there: ask the vendor to attach the ordered data disk and mount it at {path}"


def _no_mounts(expected: str, facts: Facts) -> Check:
    """data_disk when no mount was read: df not given (not judged), given but not understood, or
    df did not run or failed on the host (unverified: nothing is known of the disks)."""
    if not facts.given("df"):
        return _not_judged("data_disk", expected, "df", "df -P -k")
    if _unread(facts, "df"):
        return Check(
            "data_disk",
            expected,
            "unknown: no filesystem could be read from the df output",
            "unverified",
            "the df output was given but no mount and size could be read from it: save"
            " `df -P -k` of the box (in the C locale: `LC_ALL=C df -P -k`) to judge the data disk",
        )
    return _tool_failed("data_disk", expected, facts, "df", "df -P -k")


def _tool_failed(rule: str, expected: str, facts: Facts, probe: str, command: str) -> Check:
    """A rule whose tool did not answer on the host (missing: exit 127; failed: its exit code and
    first line of stderr): nothing is known of the hardware, so unverified, saying why."""
    out = facts.raw.get(probe)
    if out is not None and out.absent:
        said = f"{probe} is not installed on the host"
    elif out is not None and out.exit_code != 0:
        said = f"{probe} failed ({out.failure()})"
    else:
        said = f"{probe} printed nothing"
    return Check(
        rule,
        expected,
        f"unknown: {said}",
        "unverified",
        f"the {probe} output gives what this rule judges: run `{command}` on the box, or ask the vendor"
        " why it does not answer",
    )


def _df_unread_mounts(stderr: str) -> list[str]:
    """The mount points a df that exited 1 names as not read."""
    return disks.DF_UNREAD.findall(stderr)


def _cut_short(
    path: str, mount: disks.Mount | None, root: disks.Mount | None, expected: str, facts: Facts
) -> Check | None:
    """data_disk unverified where the df output is cut short and the verdict depends on the
    part that may be missing: a row cut (df_cut) and no mount at exactly `path` read, or an
    output that ends without df's final newline (df_open_row) where the verdict depends on its
    last row, whose mount point may be cut short (`/mnt` of `/mnt/nvme0n1p1`): that mount point
    starts `path` (the whole one may be `path`, a mount holding it or another path) and no
    other row is mounted at exactly `path`, or the row is read as / (the system disk)."""
    text = _answered(facts, "df")
    cut = disks.df_cut(text)
    partial = facts.raw["df"].partial if text else ""
    unread = _df_unread_mounts(facts.raw["df"].stderr)
    if partial and unread and not any(path == u or path.startswith(u.rstrip("/") + "/") for u in unread):
        partial = ""  # (df names each mount it could not read: the ordered path is none of them)
    if (cut or partial) and (mount is None or mount.mountpoint != path):
        which, why = "lists only some filesystems", partial
        if cut:
            which, why = "is cut short", f"the df output is cut short ({cut})"
        return Check(
            "data_disk",
            expected,
            f"unknown: {path} is not in the df output, which {which}",
            "unverified",
            f"{why}, so a mount at {path} may be in the part that is missing: save the whole"
            " `df -P -k` of the box",
        )
    last = disks.df_open_row(text)
    if last is None:
        return None
    elsewhere = mount is not None and mount != last and mount.mountpoint == path
    if not (path.startswith(last.mountpoint) and not elsewhere) and last != root:
        return None
    return Check(
        "data_disk",
        expected,
        f"unknown: the df output may be cut short inside its last row ({last.device} at {last.mountpoint})",
        "unverified",
        f"the df output ends without the newline df prints after each row, so the mount point of"
        f" its last row ({last.mountpoint}) may be cut short, and the verdict for {path} depends"
        " on that row: save the whole `df -P -k` of the box",
    )


def _rounded_size(mount: disks.Mount, need: float, expected: str, actual: str) -> Check:
    """data_disk unverified where df printed the size rounded up (`df -h`) and the size needed
    lies within that rounding: `3.5T` may be 3.75 TB or 3.85 TB, around 3.80 TB needed."""
    size = mount.size_bytes or 0
    low, high = (format_bytes(n, binary=False) for n in (size - mount.size_step, size))
    return Check(
        "data_disk",
        expected,
        f"{actual} (rounded up by df: between {low} and {high})",
        "unverified",
        f"df prints {mount.mountpoint}'s size rounded up, and the {format_bytes(int(need), binary=False)}"
        " the order needs (less the tolerance) lies within that rounding: save `df -P -k` of the box"
        " to judge it",
    )


# network and cluster filesystems df names by type (`df -T`), and the `host:/export` /
# `//host/share` form of a network share's device. IBM Spectrum Scale (`gpfs`), WekaFS
# (`wekafs`), BeeGFS under its old name (`fhgfs`), PanFS and OrangeFS (`pvfs2`) print the
# cluster's whole size as df's, never the quota rented on it (ibm-spectrum-scale-csi#80: a
# 1 GB volume shown as `gpfs 15T`)
_NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "glusterfs", "ceph", "lustre", "beegfs", "fhgfs", "9p",
     "gpfs", "wekafs", "panfs", "pvfs2", "orangefs", "afs", "ncpfs"}
)  # fmt: skip
# FUSE network filesystems by their `fuse.<name>` type (not lxcfs, gvfs, overlayfs: local)
_NETWORK_FUSE = frozenset(
    {"mfs", "moosefs", "s3fs", "juicefs", "gcsfuse", "goofys", "rclone", "sshfs", "glusterfs", "ceph",
     "cephfs", "ceph-fuse", "alluxio-fuse", "geesefs", "mountpoint-s3", "blobfuse", "blobfuse2",
     "quobyte", "weka"}
)  # fmt: skip
# a network share's device: `host:/export`, `user@host:/path` (sshfs), CephFS's kernel client
# `mon:6789:/path` or `mon1:6789,mon2:6789:/path` (a monitor list with ports) and its newer
# `user@fsid.fsname=/path`, `//host/share`, MooseFS's `mfs#host:port` (a RunPod network
# volume), and the FUSE clients' own names (s3fs, JuiceFS:vol, ceph-fuse, BeeGFS's beegfs_nodev)
_NETWORK_DEVICE = re.compile(
    r"^(?:[\w.@-]+:/|[\w.\[\]-]+:\d+(?:,[\w.\[\]-]+:\d+)*:/|[\w.-]+@[\w-]+\.[\w-]+=/|//[\w.-]+/"
    r"|[\w.-]+#[\w.-]+:\d+|s3fs$|JuiceFS:|gcsfuse$|rclone$|ceph-fuse$|beegfs_nodev$)"
)


def _network_share(mount: disks.Mount) -> bool:
    """Whether a mount is a network share (NFS, SMB, Lustre, a FUSE network filesystem ...), by
    df's type or device form."""
    fstype = mount.fstype or ""
    return (
        fstype in _NETWORK_FS
        or fstype.removeprefix("fuse.") in _NETWORK_FUSE
        or bool(_NETWORK_DEVICE.match(mount.device))
    )


def _network_check(mount: disks.Mount, expected: str, actual: str, sized: bool = True) -> Check:
    """data_disk on a network share: a warning saying it is one (lsblk never lists one); where a
    size was ordered, unverified: df shows the share's whole size, not the quota rented on it."""
    said = (
        f"{mount.mountpoint} is a network share, not a disk in the box: its speed is the network's"
        " and it is shared; ask the vendor whether the ordered data disk is meant to be network storage"
    )
    if not sized:
        said += (
            "; df shows the share's whole size, not the quota rented on it, so the ordered size"
            " cannot be read here: ask the vendor for the volume's quota"
        )
    return Check(
        "data_disk",
        expected,
        actual + f" (a network share{f', {mount.fstype}' if mount.fstype else ''})",
        "warn" if sized else "unverified",
        said,
    )


def rule_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """A data disk is mounted at the ordered path, on another physical disk than /, big enough.
    An lsblk output given but not read (a JSON cut short) is judged as no lsblk, and said so."""
    check = _judge_data_disk(order, facts, tolerance)
    unread = disks.lsblk_unread(_answered(facts, "lsblk"))
    if unread is None:
        return check
    note = (
        f"the lsblk output could not be read ({unread}), so the disks were judged without it:"
        " save `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL` of the box again"
    )
    return dataclasses.replace(check, detail="; ".join(filter(None, [check.detail, note])))


def _size_check(
    ordered: int, mount: disks.Mount, tolerance: float, expected: str, actual: str
) -> Check | None:
    """data_disk's size verdict when the size is not enough or not known to be (None: it is).
    A size df did not give (`-`: `df -a`'s row of an autofs mount point not mounted yet,
    `systemd-1  -  -  -  -  /path`) is no size: unverified, never a warning a GO passes over."""
    if mount.size_bytes is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "unverified",
            f"the size of {mount.mountpoint} could not be read from the df output (df prints `-`"
            " for a file system it did not read, such as an automount point not mounted yet);"
            f" save `df -P -k {mount.mountpoint}` (or `df -P -B1`) to judge it",
        )
    need = ordered * (1 - tolerance)
    if mount.size_bytes < need:
        short = format_bytes(ordered - mount.size_bytes, binary=False)
        return Check(
            "data_disk",
            expected,
            actual,
            "fail",
            f"{short} smaller than ordered, more than the {tolerance:.0%} a filesystem keeps: a smaller"
            " disk than the order; ask the vendor for the ordered size",
        )
    if mount.size_bytes - mount.size_step < need:
        return _rounded_size(mount, need, expected, actual)
    return None


def _judge_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """rule_data_disk from df and lsblk (when read)."""
    spec = order.data_disk
    assert spec is not None
    expected = f"separate disk at {spec.mount}"
    if spec.min_size_bytes:
        expected += f", >= {format_bytes(spec.min_size_bytes, binary=False)}"
    if not facts.mounts:
        return _no_mounts(expected, facts)
    root = disks.mount_for(facts.mounts, "/")
    mount = disks.mount_for(facts.mounts, spec.mount)
    if (cut := _cut_short(spec.mount, mount, root, expected, facts)) is not None:
        return cut
    if mount is None and root is None:  # a df of given paths (`df -h /opt/x`): / not among them
        listed = ", ".join(dict.fromkeys(m.mountpoint for m in facts.mounts))
        return Check(
            "data_disk",
            expected,
            f"unknown: {spec.mount} is not in the df output, which lists only {listed}",
            "unverified",
            f"the df output lists no / row (a df of given paths), so where {spec.mount} lives could"
            " not be told: save the whole `df -P -k` of the box",
        )
    if mount is None or mount.mountpoint == "/":
        return Check(
            "data_disk",
            expected,
            f"{spec.mount} is not a mount point; it lives on the system disk /",
            "fail",
            _no_mount_detail(spec.mount, root, facts),
        )
    actual = f"{mount.device} at {mount.mountpoint}, {format_bytes(mount.size_bytes, binary=False)}"
    if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS:
        return Check(
            "data_disk",
            expected,
            actual + " (memory or overlay filesystem, not a disk)",
            "fail",
            "data on tmpfs or an overlay is lost at reboot; ask the vendor for the ordered disk",
        )
    shared = (
        disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if root is not None
        else None
    )
    cache_only = ""
    if shared:
        assert root is not None
        under = disks.physical_disks(root, facts.block_devices, facts.mounts, facts.loop_backing)
        on = f" {', '.join(sorted(under))}" if under else f" {root.device}"
        backing = disks.shares_disk(
            root, mount, facts.block_devices, facts.mounts, facts.loop_backing, cache=False
        )
        if backing is not False:
            return Check(
                "data_disk",
                expected,
                actual + f" (same disk as / on{on})",
                "fail",
                f"{mount.mountpoint} is on the system disk: a full dataset or checkpoint fills / and"
                " stops the box; ask the vendor for the separate data disk that was ordered",
            )
        # bcache: the data lives on its backing device; only the cache shares /'s disk
        cache_only = f"its cache device shares the system disk ({on.strip()}) with /"
    if spec.min_size_bytes and (
        sized := _size_check(spec.min_size_bytes, mount, tolerance, expected, actual)
    ):
        return sized
    if spec.min_size_bytes and _network_share(mount):
        # (df shows a share's whole size, a cluster's 448T, never the quota rented on it)
        return _network_check(mount, expected, actual, sized=False)
    if cache_only:
        return Check("data_disk", expected, actual, "warn", cache_only)
    if _network_share(mount):
        return _network_check(mount, expected, actual)
    if shared is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "warn",
            f"could not tell whether {mount.device} is on another physical disk than /"
            f" ({root.device if root else 'no / in df'}): lsblk does not show both",
        )
    if mount.mountpoint != spec.mount:
        return Check(
            "data_disk", expected, actual, "warn", f"{spec.mount} lies inside the mount {mount.mountpoint}"
        )
    return Check("data_disk", expected, actual, "pass")
