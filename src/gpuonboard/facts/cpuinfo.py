"""The reader of /proc/cpuinfo, which the live probe reads where lscpu is not installed: one block
per online CPU, in the layouts of each architecture."""

from __future__ import annotations

import dataclasses
import re

from gpuonboard.facts.arm_parts import no_smt_part
from gpuonboard.facts.cpu_shape import CPUINFO, CpuInfo
from gpuonboard.facts.cpu_shape import cpu_list_numbers as _cpu_list_numbers
from gpuonboard.facts.cpu_shape import empty as _empty
from gpuonboard.facts.elision import elided
from gpuonboard.once import lazy_re

__all__ = ["ONLINE_FILE", "PRESENT_FILE", "looks_like_cpuinfo", "parse_cpuinfo"]


# /proc/cpuinfo's first line: `processor\t: 0` (x86, arm64, POWER alike; 32-bit ARM's
# `Processor\t: ARMv7 ...` names the model, not a CPU, and is not read)
_CPUINFO_FIRST = re.compile(r"processor\s*:\s*\d+")


def looks_like_cpuinfo(text: str) -> bool:
    """A /proc/cpuinfo (the live probe reads it where lscpu is not installed): its first line
    is its first CPU's `processor : 0`, which lscpu never prints, or below the lines a MIPS or
    LoongArch kernel prints above the CPU blocks (`system type : generic-loongson-machine`,
    `machine : ...`)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    preamble = 0
    while preamble < min(2, len(lines)) and _PREAMBLE.match(lines[preamble]):
        preamble += 1
    return preamble < len(lines) and _CPUINFO_FIRST.fullmatch(lines[preamble]) is not None


# the lines a MIPS or LoongArch /proc/cpuinfo prints once, above its CPU blocks
_PREAMBLE = re.compile(r"(?:system type|machine)\s*:", re.IGNORECASE)


# the kernel's list of online CPUs, which the live probe prints after /proc/cpuinfo (a CPU 0
# taken offline leaves /proc/cpuinfo starting at `processor : 1`, whole all the same)
ONLINE_FILE = "/sys/devices/system/cpu/online"
_ONLINE_LINE = lazy_re(rf"^{ONLINE_FILE}:[ \t]*([0-9][0-9,-]*)[ \t]*$", re.MULTILINE)
# and of the present CPUs, which it prints after it: those not online are offline
PRESENT_FILE = "/sys/devices/system/cpu/present"
_PRESENT_LINE = lazy_re(rf"^{PRESENT_FILE}:[ \t]*([0-9][0-9,-]*)[ \t]*$", re.MULTILINE)
# a CPU block's first line (x86, arm64, POWER, RISC-V alike)
_CPUINFO_BLOCK = lazy_re(r"processor\s*:\s*(\d+)\s*")
# the lines of a CPU block that give the topology only: a block of nothing else is a filter's
# (`grep -E 'processor|physical id|core id' /proc/cpuinfo`), never the kernel's whole block,
# which also names the CPU (x86's vendor_id, arm64's CPU implementer, POWER's cpu, RISC-V's isa)
_CPUINFO_TOPOLOGY = frozenset({"processor", "physical id", "core id", "siblings", "cpu cores", "apicid"})


def _cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    """One `key: value` mapping per CPU block of /proc/cpuinfo, a block begun by each
    `processor : N` line (not by a blank line: a paste that lost the blank lines between blocks,
    or a grep of the file, has none); the lines after the last block (arm64's model lines) join
    it."""
    blocks: list[dict[str, str]] = []
    for line in text.splitlines():
        if _CPUINFO_BLOCK.fullmatch(line.strip()):
            blocks.append({})
        key, colon, value = line.partition(":")
        if colon and blocks:
            blocks[-1].setdefault(key.strip(), value.strip())
    for block in blocks:
        for own, name in _OTHER_KEYS:
            if own in block and name not in block:
                block[name] = block[own]
    return blocks


# the keys some architectures print for x86's (LoongArch's and Loongson MIPS' `package` and
# `core`, the kernel's cpu_data package and core; LoongArch's `Model Name`, MIPS' `cpu model`)
_OTHER_KEYS = (
    ("package", "physical id"),
    ("core", "core id"),
    ("Model Name", "model name"),
    ("cpu model", "model name"),
)


def _lxcfs_view(numbers: list[int], listed: list[int], usable: int | None) -> bool:
    """The blocks are CPUs 0 to k-1, k the CPUs this login may use (nproc), and the online list
    holds more above them: a container's view of /proc/cpuinfo (lxcfs before 4.0 shows the
    container's CPUs, renumbered from 0, while /sys/devices/system/cpu/online lists the
    host's), whole; a CPU missing inside the blocks' range is a cut."""
    whole = numbers == list(range(len(numbers))) and usable == len(numbers)
    return whole and all(n > numbers[-1] for n in set(listed) - set(numbers))


def _cpuinfo_cut(text: str, blocks: list[dict[str, str]], usable: int | None = None) -> str | None:
    """Why a /proc/cpuinfo is not known whole, or None: the kernel ends each line with a newline,
    holds no line standing for lines left out by hand (`...`), lists its online CPUs from
    `processor : 0` (the top of the text scrolled off otherwise),
    each once in rising order (a block pasted twice counts a CPU twice), prints the same lines
    in every CPU's block (a block without one of the first block's lines is cut), and, where
    each block gives its `physical id` and `siblings`, as many blocks of a physical id as its
    siblings count (blocks left off by a paste or a `head`). An online CPU without its block is
    a cut, unless the view is a container's (_lxcfs_view, `usable`: nproc's count), whose blocks
    may also hold fewer CPUs of a package than its siblings line (the host's) says."""
    if not text.endswith("\n"):
        return f"it ends inside the block of CPU {blocks[-1]['processor']}"
    if left_out := elided(text):  # (`processor : 0`, `...`, `processor : 63`: a paste's)
        return left_out
    numbers = [int(b["processor"]) for b in blocks]
    online = _ONLINE_LINE.search(text)
    listed = _cpu_list_numbers(online.group(1)) if online else None
    view = False
    if listed is not None and online is not None:  # (the live probe's: which CPUs are online)
        missing = sorted(set(listed) - set(numbers))
        view = bool(missing) and _lxcfs_view(numbers, listed, usable)
        if missing and not view:
            return (
                f"it lacks the block of CPU {missing[0]}, one of the online CPUs"
                f" ({ONLINE_FILE}: {online.group(1)})"
            )
    elif blocks[0]["processor"] != "0":
        return f"it starts at CPU {blocks[0]['processor']}: its top, from CPU 0, is missing"
    if again := next((b for b, n in zip(numbers[1:], numbers, strict=False) if b <= n), None):
        return f"CPU {again} follows a CPU numbered as high or higher (a block pasted twice?)"
    first = set(blocks[0])
    if short := next((b for b in blocks if not first <= set(b)), None):
        return f"the block of CPU {short['processor']} lacks lines of CPU 0's block"
    return _siblings_short(blocks, view)


# the words of _siblings_short's reason: a cut that proves no floor (the blocks of a package
# fewer than its siblings line: its `cpu cores` is the host's, of CPUs not read)
_SIBLINGS_SAY = "whose siblings line says"


def _siblings_short(blocks: list[dict[str, str]], view: bool) -> str | None:
    """Where each block gives its `physical id` and `siblings`: a package whose blocks are not
    as many as its siblings line says (fewer allowed in a container's view: `view`), or None."""
    if not all("physical id" in b and b.get("siblings", "").isdecimal() for b in blocks):
        return None
    held: dict[str, int] = {}
    for b in blocks:
        held[b["physical id"]] = held.get(b["physical id"], 0) + 1
    for b in blocks:
        count, said = held[b["physical id"]], int(b["siblings"])
        if count != said and not (view and count < said):
            return f"it holds {count} CPUs of physical id {b['physical id']}, {_SIBLINGS_SAY} {said}"
    return None


def _package_cores(blocks: list[dict[str, str]], package: str) -> int:
    """The cores of one physical id: its distinct `core id`s, or its `cpu cores` where that is
    more and every CPU of the package is listed (as many blocks as its `siblings`). A package of
    two dies (AMD's Magny-Cours Opteron 6100, 2 x 4 or 2 x 6 cores, no SMT) numbers its core ids
    per die, 0-3 twice, while its `cpu cores` (8), counted from the kernel's thread-sibling
    masks as lscpu's Thread(s) per core is, says each CPU is a core of its own."""
    own = [b for b in blocks if b["physical id"] == package]
    distinct = len({b["core id"] for b in own})
    said, siblings = own[0].get("cpu cores", ""), own[0].get("siblings", "")
    if said.isdecimal() and siblings.isdecimal() and int(siblings) == len(own):
        return max(distinct, min(int(said), len(own)))
    return distinct


def _cpuinfo_cores(blocks: list[dict[str, str]]) -> tuple[int | None, int | None]:
    """(physical cores, sockets) of /proc/cpuinfo's blocks: the distinct (`physical id`, `core
    id`) pairs (or a whole package's `cpu cores` where that is more: _package_cores) and the
    distinct physical ids, the topology the kernel gives lscpu too; where `core id` is missing,
    x86's `cpu cores` of each physical id (the cores of its package); (None, None) where
    neither is in every block (arm64 and many VMs print neither)."""
    if not all("physical id" in b for b in blocks):
        return None, None
    sockets = {b["physical id"] for b in blocks}
    if all("core id" in b for b in blocks):
        return sum(_package_cores(blocks, package) for package in sockets), len(sockets)
    per_socket = {b["physical id"]: b.get("cpu cores", "") for b in blocks}
    if all(cores.isdecimal() for cores in per_socket.values()):
        return sum(int(cores) for cores in per_socket.values()), len(sockets)
    return None, None


def _cpuinfo_floor(text: str) -> int | None:
    """The fewest cores a /proc/cpuinfo cut short proves, or None: the distinct (`physical id`,
    `core id`) pairs read, and a package's `cpu cores` only where its blocks read reach its
    `siblings` count (_package_cores: a container's lxcfs view keeps the host's `siblings : 8`
    and `cpu cores : 8` in the 4 blocks of the CPUs it was given); the blocks from the first CPU
    numbered no higher than the one before (a second paste, maybe another box's) and a last line
    cut inside (`cpu cores : 2` of `24`) are left out."""
    whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    blocks = _cpuinfo_blocks(whole)
    numbers = [int(b["processor"]) for b in blocks]
    again = next((i for i in range(1, len(numbers)) if numbers[i] <= numbers[i - 1]), len(numbers))
    read = [b for b in blocks[:again] if "physical id" in b and "core id" in b]
    # (a package's own `cpu cores` only of a listing cut at both ends, or whose CPUs reach its
    # `siblings`: an lxcfs view of CPUs 0-3 keeps the host's `cpu cores : 96`, and its tail from
    # CPU 2, whole at its end, shows no more CPUs exist: review revM)
    top_cut = bool(read) and read[0]["processor"] != "0" and (_end_cut(text) or _reach_siblings(read))
    least = sum(
        max(_package_cores(read, package), _package_said(read, package) if top_cut else 0)
        for package in {b["physical id"] for b in read}
    )
    return least or None


def _end_cut(text: str) -> bool:
    """Whether an x86 /proc/cpuinfo's last block is cut short: its last line without its newline,
    or a block past its `flags` without the `power management` line x86 prints last in each (a
    grep of the file's topology lines, which holds neither, is no cut)."""
    blocks = _cpuinfo_blocks(text)
    last = blocks[-1] if blocks else {}
    return bool(blocks) and (not text.endswith("\n") or ("flags" in last and "power management" not in last))


def _reach_siblings(read: list[dict[str, str]]) -> bool:
    """Whether the CPUs read are numbered up to every package's `siblings` count (the CPUs the
    kernel numbers beyond the listing's end exist)."""
    last = int(read[-1]["processor"])
    counts = {b.get("siblings", "") for b in read}
    return all(n.isdecimal() and last + 1 >= int(n) for n in counts)


def _package_said(read: list[dict[str, str]], package: str) -> int:
    """A package's own `cpu cores` (the kernel's count of its cores booted, never more than it
    has: x86's booted_cores) where every block read of it gives the same `cpu cores` and
    `siblings`, no more cores than siblings; 0 otherwise. Read only of a listing whose top was
    cut (its first CPU numbered above 0, as the kernel numbers them): a container's lxcfs view,
    whose `cpu cores` is the host's, renumbers its CPUs from 0 (m34b 21: an EPYC 9654P's blocks
    from CPU 4, `cpu cores : 96`, `siblings : 191` with one CPU offline)."""
    own = {(b.get("cpu cores", ""), b.get("siblings", "")) for b in read if b["physical id"] == package}
    if len(own) != 1:
        return 0
    ((said, siblings),) = own
    return int(said) if said.isdecimal() and siblings.isdecimal() and 0 < int(said) <= int(siblings) else 0


def parse_cpuinfo(text: str, usable: int | None = None) -> CpuInfo:
    """The CPU shape of a /proc/cpuinfo (source "/proc/cpuinfo"): one block per online logical
    CPU (logical_cpus counts the offline ones too where the live probe's lists say them, as
    lscpu's CPU(s) does: _offline_cpus), the cores and sockets by _cpuinfo_cores. A text not
    known whole (_cpuinfo_cut; `usable`: the CPUs this login may use, nproc's count) counts
    nothing: the CPUs outside it are unknown. Blocks holding only topology lines (a grep of the
    file) are read, and said `filtered`."""
    blocks = _cpuinfo_blocks(text)
    if not blocks:
        return _empty("output not recognised as /proc/cpuinfo")
    if cut := _cpuinfo_cut(text, blocks, usable):
        least = None if _SIBLINGS_SAY in cut else _cpuinfo_floor(text)
        said = _empty(f"/proc/cpuinfo cut short: {cut}")
        return dataclasses.replace(said, cut=cut, source=CPUINFO, cores_floor=least)
    online = len(blocks)
    physical, sockets = _cpuinfo_cores(blocks)
    names = list(dict.fromkeys(b["model name"] for b in blocks if b.get("model name")))
    if physical is None and (part := no_smt_part(blocks)) is not None:
        # (arm64 prints no core id: an Arm core of one thread a core, each CPU is a core)
        physical = online
        names = [f"{part}: one thread a core"]
    threads = online // physical if physical and online % physical == 0 else None
    cores = physical // sockets if physical and sockets and physical % sockets == 0 else None
    filtered = None
    if set(blocks[0]) <= _CPUINFO_TOPOLOGY:
        filtered = "it holds only the topology lines of each CPU's block (a grep of /proc/cpuinfo)"
    return CpuInfo(
        architecture=None,
        model_name=" + ".join(names) or None,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        logical_cpus=online + (offline := _offline_cpus(text) or 0),
        physical_cores=physical,
        offline_cpus=offline or None,
        source=CPUINFO,
        filtered=filtered,
    )


def _offline_cpus(text: str) -> int | None:
    """The present CPUs not online, of the lists the live probe prints after /proc/cpuinfo
    (lscpu's Off-line CPU(s) list alike: a CPU 0 taken offline, a kernel's `maxcpus=`), or None
    where either list is not read."""
    online, present = _ONLINE_LINE.search(text), _PRESENT_LINE.search(text)
    up = _cpu_list_numbers(online.group(1)) if online else None
    there = _cpu_list_numbers(present.group(1)) if present else None
    return len(set(there) - set(up)) if up is not None and there is not None else None
