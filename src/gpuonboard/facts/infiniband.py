"""Pure parsers for RDMA ports: the probe's listing of /sys/class/infiniband and `ibv_devinfo`.

The sysfs probe (facts/extra_probes.py RDMA_PORTS) prints one tab-separated line per port:

    DEVICE<TAB>PORT<TAB>state<TAB>phys_state<TAB>rate<TAB>link_layer
    mlx5_0	1	4: ACTIVE	5: LinkUp	400 Gb/sec (4X NDR)	InfiniBand

(each field is that port's sysfs file as the kernel writes it; tests/fixtures/real/ib-sysfs__*).
`ibv_devinfo` prints `hca_id:` blocks with `port:` sub-blocks (`state: PORT_ACTIVE (4)`,
`link_layer: Ethernet`); only `-v` adds `active_width: 4X (2)` and `active_speed: 50.0 Gbps (64)`
(per lane), whose product is the port's rate. Without -v the rate is unknown (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["IbPort", "IbReport", "parse_ib_sysfs", "parse_ibv_devinfo", "parse_rdma"]


@dataclass(frozen=True)
class IbPort:
    """One RDMA port (InfiniBand, or Ethernet = RoCE)."""

    device: str  # "mlx5_0"
    port: int
    state: str  # "ACTIVE", "DOWN", "INIT", "ARMED", ... (the name without number / PORT_ prefix)
    rate_gbps: float | None  # Gb/s (bits); None when the source does not say
    link_layer: str | None  # "InfiniBand" / "Ethernet"
    phys_state: str | None = None  # "LinkUp", "Polling", "Disabled", ...
    source: str = "sysfs"  # "sysfs" | "ibv_devinfo"

    @property
    def active(self) -> bool:
        """The port is up (logical state ACTIVE)."""
        return self.state == "ACTIVE"


@dataclass(frozen=True)
class IbReport:
    """Every RDMA port read, plus lines not understood."""

    ports: tuple[IbPort, ...]
    warnings: tuple[str, ...] = ()


_STATE = re.compile(r"^(?:\d+:\s*)?(?:PORT_)?([A-Za-z_]+)(?:\s*\(\d+\))?$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)\s*Gb/sec", re.I)


def _state(text: str) -> str:
    m = _STATE.match(text.strip())
    return m.group(1).upper() if m else text.strip().upper()


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
    """Parse `ibv_devinfo` / `ibv_devinfo -v`: each HCA's ports (rate only with -v)."""
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


def parse_rdma(text: str) -> IbReport:
    """Either format, recognised by content (`hca_id:` = ibv_devinfo, else the sysfs listing)."""
    if re.search(r"^hca_id:", text, re.M):
        return parse_ibv_devinfo(text)
    return parse_ib_sysfs(text)
