"""Pure parsers for RDMA ports: the probe's listing of /sys/class/infiniband and `ibv_devinfo`.

The sysfs probe (facts/extra_probes.py RDMA_PORTS) prints one tab-separated line per port:

    DEVICE<TAB>PORT<TAB>state<TAB>phys_state<TAB>rate<TAB>link_layer
    mlx5_0	1	4: ACTIVE	5: LinkUp	400 Gb/sec (4X NDR)	InfiniBand

(each field is that port's sysfs file as the kernel writes it; tests/fixtures/real/ib-sysfs__*).
`ibv_devinfo` prints `hca_id:` blocks with `port:` sub-blocks (`state: PORT_ACTIVE (4)`,
`link_layer: Ethernet`); only `-v` adds `active_width: 4X (2)` and `active_speed: 50.0 Gbps (64)`
(per lane), whose product is the port's rate. Without -v the rate is unknown (None).

`ibstat` prints `CA 'mlx5_0'` blocks with `Port 1:` sub-blocks (`State: Active`, `Physical
state: LinkUp`, `Rate: 400` in Gb/s, `Link layer: InfiniBand`); `ibstatus` prints one
`Infiniband device 'mlx5_0' port 1 status:` block per port (`state: 4: ACTIVE`, `rate: 200
Gb/sec (4X HDR)`). ibstat stops at the first device it cannot open and says so on its own line
(`ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory`,
tests/fixtures/real/ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt): the ports after it are
not listed, so the report is not `complete`.

Where there is no RDMA device at all, the tools say so instead of listing one (`no_rdma_device`):
ibv_devinfo prints `No IB devices found` (on stderr, exit 255: rdma-core
libibverbs/examples/devinfo.c), and an ibstat of libibumad's older device listing, which falls
back to the default name `mthca0` when /sys/class/infiniband does not exist (libibumad/umad.c
umad_get_cas_names), stops at once on `ibpanic: [PID] main: stat of IB device 'mthca0' failed:
No such file or directory`. Either alone reads as the probe's empty sysfs listing: zero ports, a
complete report (tests/fixtures/real/ibv_devinfo__no-ib-devices.txt,
ibstat__no-ib-device__ibpanic-mthca0.txt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "IbPort",
    "IbReport",
    "no_rdma_device",
    "parse_ib_sysfs",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_ibv_devinfo",
    "parse_rdma",
]


@dataclass(frozen=True)
class IbPort:
    """One RDMA port (InfiniBand, or Ethernet = RoCE)."""

    device: str  # "mlx5_0"
    port: int
    state: str  # "ACTIVE", "DOWN", "INIT", "ARMED", ... (the name without number / PORT_ prefix)
    rate_gbps: float | None  # Gb/s (bits); None when the source does not say
    link_layer: str | None  # "InfiniBand" / "Ethernet"
    phys_state: str | None = None  # "LinkUp", "Polling", "Disabled", ...
    source: str = "sysfs"  # "sysfs" | "ibv_devinfo" | "ibstat" | "ibstatus"

    @property
    def active(self) -> bool:
        """The port is up (logical state ACTIVE)."""
        return self.state == "ACTIVE"


@dataclass(frozen=True)
class IbReport:
    """Every RDMA port read, plus lines not understood."""

    ports: tuple[IbPort, ...]
    warnings: tuple[str, ...] = ()
    # False when the listing says it stopped early (ibstat's `ibpanic:` line): ports may be
    # missing, so "fewer ports than ordered" is not known
    complete: bool = True


_STATE = re.compile(r"^(?:\d+:\s*)?(?:PORT_)?([A-Za-z_]+)(?:\s*\(\d+\))?$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)\s*Gb/sec", re.I)


# ibstat's words for the logical states (the sysfs / ibv_devinfo names are INIT, ARMED ...)
_IBSTAT_STATES = {"INITIALIZING": "INIT", "INITIALIZE": "INIT"}


def _state(text: str) -> str:
    m = _STATE.match(text.strip())
    state = m.group(1).upper() if m else text.strip().upper()
    return _IBSTAT_STATES.get(state, state)


def _phys(text: str) -> str | None:
    text = re.sub(r"^\d+:\s*", "", text.strip())
    return re.sub(r"\s*\(\d+\)$", "", text) or None


def parse_ib_sysfs(text: str) -> IbReport:
    """Parse the probe's `DEVICE PORT state phys_state rate link_layer` lines (tab-separated)."""
    ports: list[IbPort] = []
    warnings: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 6 or not cells[1].strip().isdecimal():
            warnings.append(f"infiniband sysfs: unexpected line {line.strip()!r}")
            continue
        device, port, state, phys, rate, layer = (c.strip() for c in cells)
        m = _RATE.match(rate)
        ports.append(
            IbPort(
                device, int(port), _state(state), float(m.group(1)) if m else None, layer or None, _phys(phys)
            )
        )
    return IbReport(tuple(ports), tuple(warnings))


_HCA = re.compile(r"^hca_id:\s*(\S+)")
_PORT = re.compile(r"^\s+port:\s*(\d+)\s*$")
_FIELD = re.compile(r"^\s+(state|phys_state|link_layer|active_width|active_speed):\s*(.*?)\s*$")


def parse_ibv_devinfo(text: str) -> IbReport:
    """Parse `ibv_devinfo` / `ibv_devinfo -v`: each HCA's ports (rate only with -v); its `No IB
    devices found` is no port, not an unreadable output."""
    if no_rdma_device(text):
        return IbReport(())
    ports: list[IbPort] = []
    device: str | None = None
    current: dict[str, str] | None = None
    number = 0

    def flush() -> None:
        if device is None or current is None:
            return
        width = re.match(r"(\d+)X", current.get("active_width", ""))
        speed = re.match(r"(\d+(?:\.\d+)?)\s*Gbps", current.get("active_speed", ""))
        rate = int(width.group(1)) * float(speed.group(1)) if width and speed else None
        ports.append(
            IbPort(
                device,
                number,
                _state(current.get("state", "UNKNOWN")),
                rate,
                current.get("link_layer") or None,
                _phys(current["phys_state"]) if "phys_state" in current else None,
                "ibv_devinfo",
            )
        )

    for line in text.splitlines():
        if m := _HCA.match(line):
            flush()
            device, current = m.group(1), None
        elif device and (m := _PORT.match(line)):
            flush()
            number, current = int(m.group(1)), {}
        elif current is not None and (m := _FIELD.match(line)):
            current.setdefault(m.group(1), m.group(2))
    flush()
    warnings = () if ports or not text.strip() else ("ibv_devinfo: no hca_id/port blocks found",)
    return IbReport(tuple(ports), warnings)


# a line of its own saying the tool stopped (ibstat's `ibpanic: [PID] main: stat of IB device
# 'mlx5_8' failed: ...`, `ibwarn: ...`)
_STOPPED = re.compile(r"^\s*(?:ibpanic|ibwarn|ibstat(?:us)?):|\bfailed\b.*\b(?:IB device|umad)\b", re.I)
_CA = re.compile(r"^CA\s+'([^']+)'\s*$")
_CA_PORT = re.compile(r"^\s+Port\s+(\d+):\s*$")
_CA_FIELD = re.compile(r"^\s+(State|Physical state|Rate|Link layer):\s*(.*?)\s*$")
_STATUS = re.compile(r"^Infiniband device\s+'([^']+)'\s+port\s+(\d+)\s+status:\s*$")
_STATUS_FIELD = re.compile(r"^\s+(state|phys state|rate|link_layer):\s*(.*?)\s*$")


def _blocks(
    text: str, head: re.Pattern[str], port: re.Pattern[str] | None, field: re.Pattern[str], tool: str
) -> IbReport:
    """Per-port blocks of ibstat (`CA` + `Port N:`) or ibstatus (`device ... port N status:`)."""
    ports: list[IbPort] = []
    warnings: list[str] = []
    complete = True
    device: str | None = None
    number = 0
    current: dict[str, str] | None = None

    def flush() -> None:
        if device is None or current is None:
            return
        rate = re.match(r"(\d+(?:\.\d+)?)", current.get("rate", ""))
        phys = current.get("physical state", current.get("phys state"))  # ibstat / ibstatus
        layer = current.get("link layer", current.get("link_layer"))
        ports.append(
            IbPort(
                device,
                number,
                _state(current.get("state", "UNKNOWN")),
                float(rate.group(1)) if rate else None,
                layer or None,
                _phys(phys) if phys is not None else None,
                tool,
            )
        )

    for line in text.splitlines():
        if _STOPPED.search(line):
            complete = False
            warnings.append(f"{tool}: stopped early: {line.strip()}")
        elif m := head.match(line):
            flush()
            device, current = m.group(1), None
            if port is None:  # ibstatus: the device line names the port
                number, current = int(m.group(2)), {}
        elif port is not None and device and (m := port.match(line)):
            flush()
            number, current = int(m.group(1)), {}
        elif current is not None and (m := field.match(line)):
            current.setdefault(m.group(1).lower(), m.group(2))
    flush()
    if not ports and text.strip() and complete:
        warnings.append(f"{tool}: no port blocks found")
    return IbReport(tuple(ports), tuple(warnings), complete)


# the whole output of a tool that found no RDMA device (see the module docstring)
_NO_DEVICE = re.compile(
    r"\s*(?:No IB devices found"
    r"|ibpanic: \[\d+\] main: stat of IB device 'mthca0' failed: No such file or directory)\s*"
)


def no_rdma_device(text: str) -> bool:
    """The text is only a tool's own words that there is no RDMA device: ibv_devinfo's `No IB
    devices found`, or ibstat's panic on libibumad's fallback name `mthca0` (no
    /sys/class/infiniband); a panic after listed devices, or on another name, is not."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_NO_DEVICE.fullmatch(line) for line in lines)


def parse_ibstat(text: str) -> IbReport:
    """Parse `ibstat`: each CA's ports (state, physical state, rate in Gb/s, link layer); an
    `ibpanic:` line (a device it could not open) leaves the report incomplete, except the panic
    alone on libibumad's fallback name `mthca0`: no RDMA device (no port, complete)."""
    if no_rdma_device(text):
        return IbReport(())
    return _blocks(text, _CA, _CA_PORT, _CA_FIELD, "ibstat")


def parse_ibstatus(text: str) -> IbReport:
    """Parse `ibstatus`: one block per device port (`state: 4: ACTIVE`, `rate: 200 Gb/sec ...`)."""
    return _blocks(text, _STATUS, None, _STATUS_FIELD, "ibstatus")


def parse_rdma(text: str) -> IbReport:
    """Any of the formats, recognised by content: `hca_id:` = ibv_devinfo, `CA '...'` = ibstat,
    `Infiniband device '...' port N status:` = ibstatus, else the probe's sysfs listing; a tool's
    own "no RDMA device" output reads as the sysfs listing of a box without one (no port)."""
    if no_rdma_device(text):
        return IbReport(())
    if re.search(r"^hca_id:", text, re.M):
        return parse_ibv_devinfo(text)
    if re.search(r"^CA\s+'[^']+'\s*$", text, re.M):
        return parse_ibstat(text)
    if re.search(r"^Infiniband device\s+'[^']+'\s+port\s+\d+\s+status:", text, re.M):
        return parse_ibstatus(text)
    return parse_ib_sysfs(text)
