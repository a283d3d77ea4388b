"""Saved outputs offline judging reads and shows without a rule: `docker info`, `iperf3 -J`,
`numactl --hardware`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.facts.memory import numactl_top_cut, numactl_unwrapped

# `ibdev2netdev` (Mellanox OFED): `mlx5_0 port 1 ==> ib0 (Up)`, one line a port (also spaced by
# `column -t`, a note of the user's after a `#`)
IBDEV2NETDEV_LINE = re.compile(r"^(\S+)\s+port\s+(\d+)\s+==>\s+(\S+)\s+\((Up|Down)\)\s*(?:#.*)?$")
# `ibdev2netdev -v`: the PCI address (none for an mlx4), the device, `(MT4123 - MCX653105A-HDAT)`,
# the card's description (may be empty, or padded with blanks), its firmware, then the port's own
# state padded to six (`(ACTIVE)`, `(DOWN  )`) before the net device and its state; a Lustre
# setup's `(o2ib)` or a note after it
IBDEV2NETDEV_VERBOSE_LINE = re.compile(
    r"^(?:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+)?(\S+)\s+\([^()]*\)\s.*?\bfw\s+\S+"
    r"\s+port\s+(\d+)\s+\(([A-Z_]+)\s*\)\s+==>\s+(\S+)\s+\((Up|Down)\)(?:\s+\([^()]*\))*\s*(?:#.*)?$"
)


def ibdev2netdev_line(line: str) -> bool:
    """Whether a line is one port's of `ibdev2netdev` or `ibdev2netdev -v`."""
    return bool(IBDEV2NETDEV_LINE.match(line.strip()) or IBDEV2NETDEV_VERBOSE_LINE.match(line.strip()))


def shown(kind: str, text: str) -> str:
    """What a `docker info` or `iperf3 -J` output given says, in one line: no fact and no rule
    reads them (the container steps and prove's network step judge them on the box)."""
    if kind in ("docker_version", "docker_info"):
        return _docker_shown(kind, text)
    if kind == "podman_info":
        return _podman_info(text)
    if kind == "numactl":
        return _numactl(text)
    if kind == "ibdev2netdev":
        return _ibdev2netdev(text)
    from gpuonboard.steps.prove.network import parse_iperf3

    r = parse_iperf3(text)
    sent, got = r.get("sent_gbps"), r.get("received_gbps")
    figures = str(r["error"] or "") or (
        f"{sent:.2f} Gbit/s sent, {got:.2f} received"
        if sent is not None and got is not None
        else "no figures"
    )
    return f"iperf3 -J: {figures}: read, not judged (prove's network step judges it between the boxes)."


# `docker version` (read line by line: a pattern of indented lines repeated backtracks without
# end over a docker info's deep Swarm section, measure34b 11): `Client: ...` / ` Version: 19.03.4`
# (one blank in: a plugin's own `    Version:` is deeper), `Server: ...` / ` Engine:` /
# `  Version: 19.03.4` from docker 17.06; before it (1.12, 1.13, 17.03) `Server:` /
# ` Version: 1.12.6` straight under it. A docker info's `Server:` section lists `Containers:`.
_SECTION = re.compile(r"(Client|Server):")
_CHILD = re.compile(r"[ \t]+(\S[^:]*):[ \t]*(\S*)")


@dataclass(frozen=True)
class DockerVersion:
    """What a `docker version` says: its client's and its engine's versions (None where not
    read), and the number of its lines (a docker info may follow it in the same text)."""

    client: str | None
    engine: str | None
    lines: int
    server: bool  # (a `Server:` section given)


def read_docker_version(text: str) -> DockerVersion | None:
    """The `docker version` at the head of a text (after any lines above its first section), or None where its
    `Server:` section is not docker version's (a docker info's), or there is none and its
    `Client:` section is not docker version's either."""
    client = engine = None
    section, first, server, end, engine_next, api = "", True, False, 0, False, False
    for number, line in enumerate(text.splitlines()[:_DOCKER_VERSION_LINES], 1):
        if not line.strip():
            continue
        if (head := _SECTION.match(line)) is not None:
            section, first, server = head.group(1), True, server or head.group(1) == "Server"
            end = number
            continue
        if not section:  # (lines above its first section: its copied command, `docker version`)
            continue
        child = _CHILD.match(line)
        if child is None:  # (a line at the margin: the docker version ends)
            break
        key, value, blanks = child.group(1), child.group(2), len(line) - len(line.lstrip())
        api = api or (section == "Client" and key == "API version")
        if section == "Client" and client is None and key == "Version" and blanks == 1:
            client = value or None
        elif section == "Server" and first and key not in ("Engine", "Version"):
            return None  # (`Server:` / ` Containers: 27`: a docker info's)
        elif section == "Server" and engine is None and key == "Version" and (first or engine_next):
            engine = value or None
        engine_next = section == "Server" and key == "Engine"
        first, end = False, number
    # (a client's section alone, its `API version:` docker info's has not: a daemon that did not
    # answer, or a docker version cut before its server's)
    return DockerVersion(client, engine, end, server) if server or api else None


# (a docker version is some 30 lines; its head is read no further)
_DOCKER_VERSION_LINES = 200


def _docker_version(text: str) -> str:
    """A `docker version` (read with docker info's kind: m32b 14, 32) in one line: its client's
    and its engine's versions, and that it lists no runtime; "" for any other text (a docker info)."""
    read = read_docker_version(text)
    if read is None:
        return ""
    said = [f"client {read.client}" if read.client else "client version not read"]
    if read.engine:
        said.append(f"engine {read.engine}")
    else:
        where = (
            "in its Server section"
            if read.server
            else "(no Server section: cut short, or the daemon did not answer)"
        )
        said.append(f"no engine version read {where}")
    return f"docker version: {', '.join(said)}"


def _docker_shown(kind: str, text: str) -> str:
    """A `docker version`, a `docker info`, or a docker version followed by a docker info in
    one text (pasted together without labels), in one line."""
    from gpuonboard.facts.container import parse_docker_info

    version = read_docker_version(text)
    rest = "\n".join(text.splitlines()[version.lines :]) if version else text
    judged = "read, not judged (the container steps judge it on the box)."
    if version is not None and (
        kind == "docker_version" or not re.search(r"^[ \t]*Server Version:", rest, re.M)
    ):
        return (
            f"{_docker_version(text)}; it lists no runtime (no NVIDIA runtime read either way,"
            f" `docker info` lists them): {judged}"
        )
    info = parse_docker_info(rest)
    said = [f"docker {info.server_version or '(version not read)'}"]
    if info.runtimes:
        default = f" (default {info.default_runtime})" if info.default_runtime else ""
        said.append(f"runtimes {', '.join(info.runtimes)}{default}")
    # (no runtime listed at all: an info cut short says none either way)
    listed = "no NVIDIA runtime" if info.runtimes else "no runtime listed (no NVIDIA runtime read either way)"
    said.append("NVIDIA runtime registered" if info.nvidia_runtime else listed)
    before = f"{_docker_version(text)}; then " if version else ""
    return f"{before}docker info: {'; '.join(said)}: {judged}"


# `podman info`'s `version:` mapping's `Version: 4.9.3`; the OCI runtime's `ociRuntime:` `name: crun`
# (each line `[ \t].*`: one blank, then anything; never `[ \t]+.*`, whose ways to split a line's
# blanks multiply over the lines repeated and backtrack without end, measure34b 11)
_PODMAN_VERSION = re.compile(r"^version:[ \t]*\n(?:[ \t].*\n)*?[ \t]+Version:[ \t]*(\S+)", re.M)
_PODMAN_RUNTIME = re.compile(r"^[ \t]+ociRuntime:[ \t]*\n(?:[ \t].*\n)*?[ \t]+name:[ \t]*(\S+)", re.M)


def _podman_info(text: str) -> str:
    """`podman info` in one line: podman's version and its OCI runtime, where given."""
    version, runtime = _PODMAN_VERSION.search(text), _PODMAN_RUNTIME.search(text)
    said = [f"podman {version.group(1) if version else '(version not read)'}"]
    if runtime:
        said.append(f"OCI runtime {runtime.group(1)}")
    return f"podman info: {'; '.join(said)}: read, not judged (the container steps judge the box's docker)."


def _numactl(text: str) -> str:
    """What `numactl --hardware` says: its nodes, their CPUs and memory (numactl's `MB` are MiB);
    the `ram` rule reads the node sizes where no free is given (memory.read_numactl_memory), the
    `cpu_cores` rule reads lscpu, not this. An output listing fewer nodes
    than its `available:` line, or ending on a `node N cpus:` line (cut inside it, or before the
    node's size that numactl prints after it), is cut short: each sum of it is a floor, and how
    many nodes were read is said once. CPU lists wrapped over several lines (a mail client's)
    are read joined and said so; where a CPU is then listed twice (a wrap that cut a number in
    two), the CPUs are not counted."""
    text, wrapped = numactl_unwrapped(text)
    nodes = re.findall(r"^available: (\d+) nodes?", text, re.M)
    read = [_numa_cpus(cells) for cells in re.findall(r"^node \d+ cpus:(.*)$", text, re.M)]
    if wrapped and _cpu_listed_twice(text):
        read = [None]  # (`22 2` / `3 24`: no count is certain)
    counts = [count for count in read if count is not None]
    sizes = [int(size) for size in re.findall(r"^node \d+ size: (\d+) MB\s*$", text, re.M)]
    available = int(nodes[0]) if nodes else None
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    cpus_cut = bool(re.match(r"node \d+ cpus:", last))
    top = numactl_top_cut(text)  # (its `available:` and first CPU lines lost: nodes from its matrix)
    matrix = re.search(r"^node distances:[ \t]*\n[ \t]*node((?:[ \t]+\d+)+)", text, re.M)
    if top and matrix:
        nodes = [str(len(matrix.group(1).split()))]
    cpus_short = cpus_cut or top or (available is not None and len(read) < available)
    memory_short = cpus_cut or (available is not None and len(sizes) < available)
    floor = {True: "at least ", False: ""}
    said = [
        f"{nodes[0]} NUMA node{'' if nodes[0] == '1' else 's'}" if nodes else "nodes not read",
        f"{floor[cpus_short]}{sum(counts)} CPUs" if read and len(counts) == len(read) else "CPUs not read",
    ]
    if sizes:
        said.append(_numa_memory(text, sizes, floor[memory_short]))
    note = ""
    if top:
        lost = int(nodes[0]) - len(read)
        whose = f"{lost} nodes' CPU lists" if lost > 1 else "a node's CPU list"
        lists = f" and {whose}" if lost > 0 else ""
        note = (
            f" (the output lost its top, its `available:` line{lists}: the nodes counted from its"
            " distance matrix)"
        )
    elif cpus_short or memory_short:
        whole = f"{len(sizes)} of {available} nodes read: " if available is not None else ""
        note = f" ({whole}the output is cut short)"
    if wrapped:
        twice = " (a CPU listed twice: a wrap cut a number, no count is read)" if read == [None] else ""
        lines = f"{wrapped} line{'s' if wrapped > 1 else ''}"
        note += (
            f" (its CPU lists wrapped over several lines: {lines} of CPU numbers read as their node's{twice})"
        )
    judged = (
        "ram reads these node sizes where no free or /proc/meminfo is given; cpu_cores reads lscpu"
        " (numactl lists CPU threads, not cores)"
    )
    return f"numactl --hardware: {', '.join(said)}{note}: {judged}."


def _cpu_listed_twice(text: str) -> bool:
    """Whether a CPU number is listed twice over the nodes' plain CPU lists (`0 1 2 ...`)."""
    cpus = [cell for cells in re.findall(r"^node \d+ cpus:(.*)$", text, re.M) for cell in cells.split()]
    return len(set(cpus)) < len(cpus)


def _numa_memory(text: str, sizes: list[int], floor: str) -> str:
    """numactl's memory: of its nodes with CPUs, and apart, of those listing none (GPU memory or
    CXL memory, which the ram rule leaves out)."""
    cpuless = {node for node, cpus in re.findall(r"^node (\d+) cpus:(.*)$", text, re.M) if not cpus.strip()}
    left = [
        int(size)
        for node, size in re.findall(r"^node (\d+) size: (\d+) MB\s*$", text, re.M)
        if node in cpuless
    ]
    said = f"{floor}{sum(sizes)} MiB ({sum(sizes) / 1024:.1f} GiB) of memory"
    if not left:
        return said
    counted, apart, plural = sum(sizes) - sum(left), sum(left), "s" if len(left) > 1 else ""
    return (
        f"{floor}{counted} MiB ({counted / 1024:.1f} GiB) of memory on the nodes with CPUs, and"
        f" {floor}{apart} MiB ({apart / 1024:.1f} GiB) on {len(left)} CPU-less node{plural}"
        " (CPU-less nodes: device memory (GPU HBM, CXL) or DRAM whose CPUs are offline; ram leaves it"
        " out of its sum)"
    )


def _numa_cpus(cells: str) -> int | None:
    """The CPUs of one `node N cpus:` line: numbers (`0 1 2`) or, with `--cpu-compress`, ranges
    with their count after them (`0-15 (16)`, `0-3,8-11 (8)`), a range being all its CPUs; None
    where a cell is neither (a line cut or garbled)."""
    count = 0
    for cell in re.sub(r"\(\d+\)", " ", cells).replace(",", " ").split():
        if m := re.fullmatch(r"(\d+)(?:-(\d+))?", cell):
            first, last = int(m[1]), int(m[2] or m[1])
            if last < first:
                return None
            count += last - first + 1
        else:
            return None
    return count


def _ibdev2netdev(text: str) -> str:
    """What `ibdev2netdev` says: each RDMA port's net device and that net device's state, which
    is not the port's (an InfiniBand port ACTIVE at its rate shows `(Down)` where its IPoIB
    interface is not configured); `-v` adds the port's own state (ACTIVE, DOWN, ...), without
    its rate or link layer; `rdma_ports` reads ibstat, ibv_devinfo or sysfs."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    plain = [m.groups() for line in lines if (m := IBDEV2NETDEV_LINE.match(line))]
    verbose = [m.groups() for line in lines if (m := IBDEV2NETDEV_VERBOSE_LINE.match(line))]
    ports = len(plain) + len(verbose)
    up = sum(1 for *_, state in plain if state == "Up") + sum(1 for *_, state in verbose if state == "Up")
    said = f"ibdev2netdev: {ports} RDMA port{'' if ports == 1 else 's'}"
    if above := _sorted_above([p[0] for p in plain] or [v[0] for v in verbose]):
        said = (
            f"ibdev2netdev: at least {ports} RDMA port{'' if ports == 1 else 's'} (the listing starts at"
            f" {above[0]}, while ibdev2netdev lists its devices sorted by name and {above[1]} would come"
            " above it: cut at its top)"
        )
    if verbose:
        active = sum(1 for _, _, state, _, _ in verbose if state == "ACTIVE")
        said += f", {active} of {len(verbose)} ACTIVE by `-v` (the port's own state; no rate or link layer)"
    return (
        f"{said}, {up} of them with their net device up (the net device's state, not the port's): read, not"
        " judged (rdma_ports reads ibstat, ibv_devinfo or /sys/class/infiniband)."
    )


_NUMBERED = re.compile(r"^(\D\w*?_)(\d+)$")


def _sorted_above(devices: list[str]) -> tuple[str, str] | None:
    """(the first device listed, those missing that sort above it) where ibdev2netdev's listing,
    sorted by name (`ls /sys/class/infiniband`), starts below devices the driver numbers before
    those it lists (`mlx5_19` first beside `mlx5_2` ... `mlx5_26`: mlx5_0, mlx5_1 and
    mlx5_10-mlx5_18 sort above it; m34b 30); None where none is missing above its first line."""
    first = _NUMBERED.match(devices[0]) if devices else None
    if first is None:
        return None
    prefix = first.group(1)
    numbers = {int(m.group(2)) for d in devices if (m := _NUMBERED.match(d)) and m.group(1) == prefix}
    above = [f"{prefix}{n}" for n in range(max(numbers)) if n not in numbers and f"{prefix}{n}" < devices[0]]
    if not above:
        return None
    named = ", ".join(above) if len(above) <= 3 else f"{above[0]}, {above[1]} ... {above[-1]}"
    return devices[0], f"{named} ({len(above)} device{'s' if len(above) > 1 else ''})"
