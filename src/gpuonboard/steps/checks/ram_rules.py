"""The `ram` rule of the `acceptance` step: the box's memory against the order, allowing the
share the kernel and firmware keep (a unified-memory box's GPU share too), a container's cgroup
limit, numactl's nodes and a `free` cut short (steps/checks/host_rules.py re-exports it)."""

from __future__ import annotations

from dataclasses import replace

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.memory import MEMORY_LIMIT_FILES, looks_like_meminfo, looks_like_vmstat_memory
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.disk_rules import rule_data_disk as rule_data_disk
from gpuonboard.steps.checks.floors import ram_floor_met
from gpuonboard.steps.checks.host_facts import answered as _answered
from gpuonboard.steps.checks.host_facts import tool_failed as _tool_failed
from gpuonboard.steps.checks.host_facts import unread as _unread
from gpuonboard.steps.checks.missing_facts import docker_info_said, not_judged
from gpuonboard.steps.checks.ngc import gpu_class
from gpuonboard.steps.checks.slice_view import container_said
from gpuonboard.units import format_bytes

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


def limit_read(facts: Facts, files: tuple[str, ...]) -> bool:
    """Whether the cgroup probe (or a saved listing) read one of `files` ("max" counts: read, no
    limit); a probe that could not run or read nothing (no /proc/self/cgroup, no cgroupfs
    mounted, files unreadable) leaves the limit unknown."""
    lines = _answered(facts, "cgroup_limits").splitlines()
    return any(line.partition("\t")[0].endswith(tuple("/" + f for f in files)) for line in lines)


def container_view(check: Check, facts: Facts, shows: str, files: tuple[str, ...]) -> Check:
    """A pass where the box is a container (slice_view.container_said) whose cgroup limit (`files`)
    was not read (offline: not given; live: the probe could not read it): `shows` the host's,
    which a container may not use (AutoDL's `free` says 1.0Ti of a share of 32 GB): unverified,
    never a pass."""
    if check.verdict != "pass" or limit_read(facts, files):
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
    source = facts.memory.source if facts.memory is not None else "free"
    shows = {
        "numactl": "numactl shows the host's NUMA nodes",
        "docker_info": "docker info shows the host's RAM",
    }.get(source, "free shows the host's RAM")
    return container_view(_judge_ram(order, facts, tolerance), facts, shows, MEMORY_LIMIT_FILES)


def _judge_ram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Installed RAM >= ordered (the inventory reads GB/TB as GiB/TiB), allowing the kernel's
    reserved share (and, where the GPU shares the system's memory, the firmware's share for it);
    a cgroup memory limit below it (a container rental) is what counts."""
    assert order.ram_bytes is not None
    wanted = order.ram_bytes
    unified_share = UNIFIED_RESERVE if facts.memory is not None and _unified(facts) else 0.0
    need = wanted * (1 - tolerance - unified_share) - RAM_RESERVE_BYTES
    if (least := ram_floor_met(facts, wanted, need, _telling_decimals)) is not None:
        return least
    if (unread := _ram_not_read(facts, f">= {format_bytes(wanted)}")) is not None:
        return _limit_without_free(unread, facts, need)
    assert facts.memory is not None and facts.memory.total_bytes is not None
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
    if (
        (said := facts.raw.get("free")) is not None
        and facts.memory.source == "free"
        and looks_like_meminfo(said.stdout)
    ):
        actual += f", /proc/meminfo's MemTotal ({total >> 10} kB)"  # (what the box is: m35b 15)
    elif said is not None and facts.memory.source == "free" and looks_like_vmstat_memory(said.stdout):
        actual += f", vmstat -s's total memory (/proc/meminfo's MemTotal: {total >> 10} kB)"  # (m39d 14)
    if facts.memory.source == "numactl":
        actual += _numactl_summed(facts.memory.uncounted) + "".join(f"; {w}" for w in facts.memory.warnings)
    if facts.memory.source == "docker_info":
        actual += _docker_said(facts)
    if facts.memory.source == "top":  # (m37e 06: `MiB Mem : 126426.1 total` of a `top -b`)
        actual += ", top's Mem total (its memory summary; no free given)"
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
    if facts.memory.unit_unsure:  # (a free.txt that may be `free -m`: its KiB and MiB readings)
        actual += (
            f" as plain free (KiB), {format_bytes(total + more, True, decimals)} as free -m: which of"
            " the two is not known (neither the file's name nor a command line saved with it gives"
            " free's flag)"
        )
    if total - less >= floor:
        either = "; the order is met either way" if facts.memory.unit_unsure else ""
        return Check("ram", expected, actual + either, "pass")
    if facts.memory.unit_unsure and total + more >= floor:
        return Check(
            "ram",
            expected,
            actual,
            "unverified",
            "the free output's unit is not told by its file's name or content (KiB of plain free, or"
            " MiB of free -m), and the order is met in MiB only: save it as free-k.txt or free-m.txt"
            " after the flag it was run with, or save `free -k` of the box",
        )
    nodes, apart = facts.memory.uncounted if facts.memory.source == "numactl" else (0, 0)
    if nodes and total + more + apart >= floor:
        return _cpuless_may_count(expected, actual, nodes, apart)
    if total + more >= floor:
        return _rounded_ram(total, less, more, floor, expected, actual, facts.memory.si, facts.memory.source)
    # (one arithmetic, whatever the output's rounding: the order less the most the total may be,
    # said "at least" where that is more than the total shown: `free -m`'s 512 may be 512.9 MiB)
    short = format_bytes(wanted - total - more) + " less than ordered"
    if more:
        rounded = (
            f"the {format_bytes(total)} read may be up to {format_bytes(more)} more: the output rounds it"
        )
        short = f"at least {short} ({rounded})"
    source = "free" if facts.memory.source == "top" else facts.memory.source  # (top is read as free's kind)
    if (out := facts.raw.get(source)) is not None and out.in_container:
        return Check(
            "ram",
            expected,
            f"{actual}; {out.in_container}",
            "unverified",
            f"{short}, but read inside a container, where lxcfs shows the"
            " container's memory limit as the total (`free`, /proc/meminfo), so it is not known"
            " of the box: save `free -k` of the box, run in its own shell",
        )
    why = _ram_short_why(facts, unified, allowed)
    return Check("ram", expected, actual, "fail", f"{short}, {why}")


def _ram_not_read(facts: Facts, expected: str) -> Check | None:
    """ram where no RAM total was read (no free given, a numactl or free output cut short or
    unreadable, the tool failed); None where a total was read."""
    if facts.memory is None and not facts.given("free"):
        check = not_judged("ram", expected, "free", "free -k")
        return replace(check, actual=f"{check.actual}{docker_info_said(facts, 'Total Memory')}")
    if facts.memory is not None and facts.memory.source == "numactl" and facts.memory.total_bytes is None:
        return _numactl_cut(expected, facts.memory.warnings)
    if facts.memory is None or facts.memory.total_bytes is None:
        if _unread(facts, "free"):
            said = facts.memory.warnings if facts.memory is not None else ()
            cut = next((warning for warning in said if warning.startswith("free's output cut")), None)
            return Check(
                "ram",
                expected,
                f"unknown: {cut}" if cut else "unknown: no Mem total could be read from the free output",
                "unverified",
                "the free output was given but its Mem row could not be read: save `free -k` of the"
                " box (in the C locale: `LC_ALL=C free -k`) to judge the RAM",
            )
        return _tool_failed("ram", expected, facts, "free", "free -k")
    return None


def _limit_without_free(check: Check, facts: Facts, need: float) -> Check:
    """ram where no free was given but the cgroup's memory limit was read (measure34b 25): a
    limit below the order is all this login may use, whatever the box holds (fail, as beside a
    free); one at or above it says nothing of the box's RAM (unverified, the limit named)."""
    limit = facts.memory_limit_bytes
    if limit is None or facts.memory is not None or facts.given("free"):
        return check
    if limit < need:
        return Check(
            "ram",
            check.expected,
            f"{format_bytes(limit)} usable (cgroup memory limit; no free output was given)",
            "fail",
            f"only {format_bytes(limit)} usable (cgroup memory limit): the container's limit, not a"
            " missing DIMM; ask the vendor for the memory ordered",
        )
    said = f"; the cgroup memory limit read is {format_bytes(limit)}, which does not tell the box's RAM"
    return replace(check, actual=check.actual + said)


def _docker_said(facts: Facts) -> str:
    """How ram's total was read from a native Linux daemon's docker info (m37b 28)."""
    from gpuonboard.facts.docker_memory import docker_native

    native = docker_native(facts.raw)
    return f", docker info's Total Memory (a native Linux daemon: {native}; no free given)"


def _numactl_summed(uncounted: tuple[int, int]) -> str:
    """How ram's total was read from numactl's node sizes, and the CPU-less nodes left out."""
    nodes, size = uncounted
    if not nodes:
        return ", the sum of numactl's node sizes (no free given)"
    return (
        f", the sum of numactl's node sizes with CPUs (no free given); {nodes} CPU-less"
        f" node{'s' if nodes > 1 else ''} of {format_bytes(size, True)} not counted (CPU-less nodes: device"
        " memory (GPU HBM, CXL) or DRAM whose CPUs are offline)"
    )


def _cpuless_may_count(expected: str, actual: str, nodes: int, apart: int) -> Check:
    """ram where numactl's nodes with CPUs miss the order but all its nodes meet it: the CPU-less
    nodes' memory may be DRAM whose CPUs are offline (a VM's vCPUs all on node 0, `nr_cpus=`,
    offlined CPUs) or device memory (GPU HBM, CXL); numactl does not tell which: unverified."""
    plural = "s" if nodes > 1 else ""
    return Check(
        "ram",
        expected,
        actual,
        "unverified",
        f"the nodes with CPUs hold less than ordered; with the {nodes} CPU-less node{plural}"
        f" ({format_bytes(apart, True)}) all nodes hold enough, but numactl does not tell whether that"
        " memory is DRAM whose CPUs are offline or not listed, or device memory (GPU HBM, CXL): save"
        " `free -k` of the box to judge the RAM",
    )


def _numactl_cut(expected: str, warnings: tuple[str, ...]) -> Check:
    """ram where the saved `numactl --hardware` judged without free gives no total (cut short,
    two outputs in one file, no node with CPUs): its first warning says which."""
    return Check(
        "ram",
        expected,
        f"unknown: {warnings[0]}",
        "unverified",
        "no free output was given, and the numactl --hardware output given gives no RAM total: save"
        " `free -k` of the box (or one whole `numactl --hardware`) to judge the RAM",
    )


def _ram_short_why(facts: Facts, unified: bool, allowed: float) -> str:
    """Why a box holds less RAM than ordered, and what to ask (ram's fail)."""
    if unified:
        return (
            f"more than the firmware of a box whose GPU shares its memory keeps for the GPU (up to"
            f" {allowed:.0%} + 256 MiB); a model with less memory: ask the vendor for the box that"
            " was ordered"
        )
    why = (
        f"more than the {allowed:.0%} + 256 MiB the kernel and firmware keep; a missing or failed"
        " DIMM, or a smaller box"
    )
    if (
        not limit_read(facts, MEMORY_LIMIT_FILES)
        and facts.memory is not None
        and facts.memory.source in ("free", "top")
    ):
        # (numactl's node sizes (sysfs) and docker's daemon's MemTotal are no view lxcfs changes: m37b 26;
        # lxcfs, in an LXC or Kubernetes container, shows the container's memory limit as
        # free's total: 3.7Gi of a 4000 MB LXD limit; no limit file read says otherwise)
        why += ", or a container's memory limit, which lxcfs shows as free's total"
    return why + ": ask the vendor"


def _rounded_ram(
    total: int,
    less: int,
    more: int,
    floor: float,
    expected: str,
    actual: str,
    si: bool = False,
    source: str = "free",
) -> Check:
    """ram unverified where free printed the total in rounded units (`free -h`'s `125Gi` is
    125-126 GiB), or under `--si` (powers of 1000, or 1024 by procps version), and the least RAM
    the order allows lies within that range."""
    d = _telling_decimals(total - less, total + more, int(floor))
    low, high, need = (format_bytes(n, True, d) for n in (total - less, total + more, int(floor)))
    how = "under `--si`, in powers of 1000 (or of 1024, by procps version)" if si else "in rounded units"
    printed = {
        "docker_info": "docker info prints Total Memory to 4 significant digits",
        "top": "top prints its Mem total rounded to its last decimal",
    }
    if source in printed:
        return Check(
            "ram",
            expected,
            f"{actual}; between {low} and {high} (rounded as printed)",
            "unverified",
            f"{printed[source]}, and the {need} the order needs (less the tolerance) lies within that"
            " rounding: save `free -k` of the box to judge it",
        )
    if source == "numactl":
        return Check(
            "ram",
            expected,
            f"{actual}; between {low} and {high} (each node's size rounded down to a MiB)",
            "unverified",
            f"numactl prints each node's size rounded down to a MiB, and the {need} the order needs"
            " (less the tolerance) lies within that rounding: save `free -k` of the box to judge it",
        )
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
