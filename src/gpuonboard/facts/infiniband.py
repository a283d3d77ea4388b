"""Pure parsers for RDMA ports: the probe's listing of /sys/class/infiniband and `ibv_devinfo`
(several listings of one box merged: facts/rdma_merge.py).

The sysfs probe (facts/extra_probes.py RDMA_PORTS) prints one tab-separated line per port:

    DEVICE<TAB>PORT<TAB>state<TAB>phys_state<TAB>rate<TAB>sys_image_guid<TAB>function<TAB>link_layer
    mlx5_0	1	4: ACTIVE	5: LinkUp	400 Gb/sec (4X NDR)	<its sys_image_guid>	pf	InfiniBand

(each field is that port's or device's sysfs file as the kernel writes it; `function` is `vf`
where the device's PCI function has a `physfn` link (an SR-IOV virtual function of this host),
`pf` where it has none; a listing of the older six cells, without those two, is read too:
tests/fixtures/real/ib-sysfs__*).

SR-IOV: on the host, each virtual function bound to the driver is an RDMA device of its own
whose port reads ACTIVE at its parent's rate (tests/fixtures/real/ibstat__connectx6-hdr100__pf_
plus_sriov-vf-both-active__bare-metal-host.txt: the PF mlx5_0 and its VF mlx5_1, both `Active`,
`Rate: 100`, one system image GUID). Each port carries the adapter it belongs to (its system
image GUID) and whether it is a VF (the probe's `physfn`, ibstat's `CA type: MT4124`,
ibv_devinfo's `vendor_part_id: 4124`: VF_PART_IDS); `shared_ports` names the VF ports whose
adapter's physical function is listed beside them, which are not ports of their own. A VF with
no physical function listed (inside a VM or a pod: the port it was given) is one. ibstatus says
neither: its VFs cannot be told apart.
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

The tools indent each field under its device and port; a paste that lost the indentation (a
comment outside a code block: open-mpi/ompi#9087's `ibv_devinfo -v`, `port: 1` and `state:
PORT_ACTIVE (4)` at the line's start) reads the same, as the field names alone tell a device's
lines from a port's.

A listing cut short (a dropped session, a scroll-back limit, a paste) ends inside a record; each
format's own end-of-record signs say so, and the report is then not `complete` (`cut` says
where): an `hca_id:` with fewer `port:` blocks than its `phys_port_cnt`, a port block without
`link_layer:` (and, with -v, without a whole `active_speed:`); an ibstat CA with fewer `Port N:`
blocks than its `Number of ports:`, or a port block without `State` / `Rate` / `Link layer`; an
ibstatus block without `state` / `rate` / `link_layer`; a sysfs listing whose last line has fewer
cells or a link layer that is not a whole word; any listing whose last line is a record head
cut mid-line (`CA 'mlx5_`); any listing with a line that stands for lines left out (`...`,
`…`, `[...]`: gpud#752's ibstat paste); any listing whose first lines are a record's fields with no head
above them (`max_mtu: 4096 (5)` before the first `hca_id:`, `State: Active` before the first `CA
'...'`: its top cut off, deepseek-ai/DeepEP#38's paste). The ports it does not list are not
ports that are down, and a port whose `state` was cut away is not listed at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpuonboard.facts.elision import elided
from gpuonboard.once import lazy_re

__all__ = [
    "IbPort",
    "IbReport",
    "VF_PART_IDS",
    "no_rdma_device",
    "parse_ib_sysfs",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_ibv_devinfo",
    "parse_rdma",
    "rdma_format",
    "shared_ports",
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
    # the adapter it is a function of (its system image GUID, hex digits only: every function of
    # one adapter, its physical and its SR-IOV virtual ones, shares it); None: not read
    adapter: str | None = None
    vf: bool | None = None  # an SR-IOV virtual function; None: not known (ibstatus)
    # the InfiniBand port's GUID, hex digits only (ibstat's `Port GUID`, the low half of
    # ibstatus's `default gid` and ibv_devinfo -v's `GID[0]`); None: not read, or a RoCE port
    # (not compared: ibv_devinfo -v prints it after the fields a whole port record needs)
    guid: str | None = field(default=None, compare=False)
    # False where the listing ends inside this port's record: its last field read may be cut
    # short (`Rate: 2` of `Rate: 200`), the fields after it are not read
    whole: bool = field(default=True, compare=False)
    # the device's transport as ibv_devinfo prints it (`InfiniBand`, `iWARP`: an iWARP port's link
    # layer is Ethernet, and it is not RoCE); None: not said (sysfs, ibstat, ibstatus)
    transport: str | None = field(default=None, compare=False)
    # the InfiniBand speed generation its rate names where the listing prints it (sysfs `rate`
    # and ibstatus's `400 Gb/sec (4X NDR)`: "NDR"); None: not printed (ibstat, ibv_devinfo)
    generation: str | None = field(default=None, compare=False)

    @property
    def active(self) -> bool:
        """The port is up (logical state ACTIVE)."""
        return self.state == "ACTIVE"


@dataclass(frozen=True)
class IbReport:
    """Every RDMA port read, plus lines not understood."""

    ports: tuple[IbPort, ...]
    warnings: tuple[str, ...] = ()
    # False when the listing says it stopped early (ibstat's `ibpanic:` line) or ends mid-record
    # (cut short): ports may be missing, so "fewer ports than ordered" is not known
    complete: bool = True
    # where a listing cut short ends mid-record ("mlx5_2 port 1 has no link_layer line"); None
    # when it is whole or the tool itself said it stopped
    cut: str | None = None
    # the tool that printed it ("ibstat"; "" when not said), as sentences name a listing
    tool: str = field(default="", compare=False)
    # where several listings merged (rdma_merge.merge_listings) disagree about a port's state, rate or link
    # layer (taken at two times: those fields are not known), one clause per port; None where none does
    disagree: str | None = None
    # why several listings merged are not of one box at one time (an adapter or port GUID each, a
    # whole listing without ports another lists); None where nothing says so
    rivals: str | None = None
    # the ports (device, port) a sysfs listing (ibstat, ibstatus, /sys/class/infiniband) lists
    # that the whole verbs listing (ibv_devinfo) beside it does not: there, but the verbs library
    # (NCCL, every RDMA user) cannot open them from that login (ib_uverbs not loaded,
    # /dev/infiniband not passed to the container, a pod given only some uverbs devices)
    unopened: frozenset[tuple[str, int]] = frozenset()


# the part numbers (PCI device ids) of Mellanox / NVIDIA SR-IOV virtual functions, as the kernel's
# mlx5_core / mlx4_core tables flag them (MLX5_PCI_DEV_IS_VF): Connect-IB 0x1012, ConnectX-4
# 0x1014, -4 Lx 0x1016, -5 0x1018, -5 Ex 0x101a, -6 0x101c, the mlx5Gen VF 0x101e (ConnectX-6 Dx
# and later, ConnectX-7 ...), BlueField 0xa2d3; ConnectX-2 0x1002 and ConnectX-3 0x1004 (mlx4)
VF_PART_IDS = frozenset({0x1002, 0x1004, 0x1012, 0x1014, 0x1016, 0x1018, 0x101A, 0x101C, 0x101E, 0xA2D3})
_MELLANOX = frozenset({"0x02c9", "0x15b3"})  # ibv_devinfo's vendor_id of mlx4 / mlx5 devices


def _guid(text: str) -> str | None:
    """A GUID as hex digits only (`0x043f720300cfef92`, `043f:7203:00cf:ef92`); None when empty
    or all zeros (not set)."""
    digits = re.sub(r"^0x|:", "", text.strip().lower())
    return digits if re.fullmatch(r"[0-9a-f]+", digits) and digits.strip("0") else None


def shared_ports(ports: Sequence[IbPort]) -> list[IbPort]:
    """The ports of SR-IOV virtual functions whose adapter's physical function is listed too (the
    host's own view: a VF there is a share of a physical port listed beside it, not a port of
    its own; ACTIVE at its parent's rate). A VF whose physical function is not listed (a VM's, a
    pod's) is the port it was given and is not among them."""
    physical = {p.adapter for p in ports if p.vf is False and p.adapter}
    return [p for p in ports if p.vf and p.adapter in physical]


_STATE = lazy_re(r"^(?:\d+:\s*)?(?:PORT_)?([A-Za-z_]+)(?:\s*\(\d+\))?$")
_RATE = lazy_re(r"^(\d+(?:\.\d+)?)\s*Gb/sec", re.I)
_RATE_GENERATION = lazy_re(r"\(\s*\d+X\s+([A-Z]+\d*)\s*\)")  # `(4X NDR)`, `(4X FDR10)`


def _generation(rate: str | None) -> str | None:
    """The speed generation a printed rate names (`40 Gb/sec (4X QDR)`: "QDR"); None: not printed."""
    m = _RATE_GENERATION.search(rate or "")
    return m.group(1) if m else None


# ibstat's words for the logical states (the sysfs / ibv_devinfo names are INIT, ARMED ...)
_IBSTAT_STATES = {"INITIALIZING": "INIT", "INITIALIZE": "INIT"}


def _state(text: str) -> str:
    m = _STATE.match(text.strip())
    state = m.group(1).upper() if m else text.strip().upper()
    return _IBSTAT_STATES.get(state, state)


def _phys(text: str) -> str | None:
    text = re.sub(r"^\d+:\s*", "", text.strip())
    return re.sub(r"\s*\(\d+\)$", "", text) or None


# a port's link layer as the tools print it whole: the kernel's sysfs `link_layer` and
# ibv_devinfo's / ibstat's words; `IB` where the kernel has no link_layer file (libibumad's and
# the ibstatus script's default)
_LAYERS = frozenset({"InfiniBand", "Ethernet", "Unknown", "IB"})


def _layer(text: str | None) -> str | None:
    """A port's link layer by its name (libibumad's and ibstatus's `IB` is InfiniBand); None where
    none was read."""
    text = (text or "").strip()
    return "InfiniBand" if text == "IB" else text or None


def _cut_field(fields: Mapping[str, str], required: Sequence[str], layer: str) -> str | None:
    """Why a port record is not whole: the first field it always prints that is not there (the
    listing ends before it), or its link layer cut mid-word; None when it is whole."""
    missing = next((name for name in required if name not in fields), None)
    if missing is not None:
        return f"has no {missing} line"
    if fields[layer] not in _LAYERS:
        return f"has its {layer} cut short ({fields[layer]!r})"
    return None


def _cut_count(device: str, listed: int, declared: int | None) -> str | None:
    """A device head with fewer port blocks than it says it has (none, when it does not say)."""
    if listed == 0:
        return f"{device} has no port block"
    if declared is not None and listed < declared:
        return f"{device} lists {listed} of its {declared} ports"
    return None


# a field's line with its value (`Link layer: InfiniBand`), indented or not: a paste that lost the
# tools' indentation (a comment outside a code block: open-mpi/ompi#9087's `ibv_devinfo -v`)
_FIELD_LINE = lazy_re(r"^\s*(?!CA ')[^:'\s][^:']*:\s*\S")


# the field names each tool prints under a device head (ibv_devinfo, ibstat, ibstatus): one of them
# above the first head is the end of a record whose head was cut away
_RECORD_KEYS = {
    "ibv_devinfo": re.compile(
        r"^\s*(?:transport|fw_ver|node_guid|sys_image_guid|vendor_id|vendor_part_id|hw_ver|board_id"
        r"|phys_port_cnt|port|state|max_mtu|active_mtu|sm_lid|port_lid|port_lmc|link_layer|max_mr_size"
        r"|active_width|active_speed|phys_state|GID\[\s*\d+\]):\s*\S"
    ),
    "ibstat": re.compile(
        r"^\s*(?:CA type|Number of ports|Firmware version|Hardware version|Node GUID|System image GUID"
        r"|Port \d+|State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|Link layer):"
    ),
    "ibstatus": re.compile(r"^\s*(?:default gid|base lid|sm lid|state|phys state|rate|link_layer):\s*\S"),
}


def _cut_head(text: str, heads: Sequence[re.Pattern[str]], tool: str) -> str | None:
    """The listing's first line when it is a field of a record whose head is not above it (the
    listing's top cut off: the device and ports before it are not known); a head of any RDMA
    tool's format above it (ibstatus' records saved before an ibv_devinfo) is a head too."""
    for line in text.splitlines():
        if any(h.match(line) for h in (*heads, _HCA, _CA, _STATUS)):
            return None
        if _RECORD_KEYS[tool].match(line):
            first = " ".join(line.split())
            return f"its first line {first!r} belongs to a record whose head was cut off above it"
    return None


def _cut_tail(text: str, heads: Sequence[re.Pattern[str]]) -> str | None:
    """The listing's last line when it is a record head cut mid-line: not indented nor a field
    with its value, not a whole head, not the tool's own stop line."""
    last = next((line for line in reversed(text.splitlines()) if line.strip()), None)
    if (
        last is None
        or last[0].isspace()
        or _FIELD_LINE.match(last)
        or any(h.match(last) for h in heads)
        or _STOPPED.search(last)
    ):
        return None
    return f"its last line {last.strip()!r} is cut short"


def _sysfs_cut(text: str) -> str | None:
    """The probe's last line cut short: fewer than its six cells, or a link layer that is not a
    whole word (an empty one is the probe's own line for a file it could not read)."""
    last = next(
        (line for line in reversed(text.splitlines()) if line.strip() and not line.startswith("#")), None
    )
    if last is None:
        return None
    cells = [c.strip() for c in last.split("\t")]
    if len(cells) < 6 or len(cells) == 7:
        return f"its last line {last.strip()!r} is cut short"
    if cells[-1] not in _LAYERS and (cells[-1] or not text.endswith("\n")):
        return f"{cells[0]} port {cells[1]} has its link_layer cut short ({cells[-1]!r})"
    return None


def parse_ib_sysfs(text: str) -> IbReport:
    """Parse the probe's `DEVICE PORT state phys_state rate [sys_image_guid function] link_layer`
    lines (tab-separated; function `vf` where the device is an SR-IOV virtual function of this
    host, `pf` where it is not); a last line cut short, or lines of which none is a port's, leave
    the report incomplete."""
    ports: list[IbPort] = []
    warnings: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) not in (6, 8) or not cells[1].isdecimal():
            warnings.append(f"infiniband sysfs: unexpected line {line.strip()!r}")
            continue
        device, port, state, phys, rate = cells[:5]
        guid, function = cells[5:7] if len(cells) == 8 else ("", "")
        m = _RATE.match(rate)
        ports.append(
            IbPort(
                device,
                int(port),
                _state(state),
                float(m.group(1)) if m else None,
                _layer(cells[-1]),
                _phys(phys),
                adapter=_guid(guid),
                vf={"vf": True, "pf": False}.get(function),
                # (sysfs names no transport: a Soft-RoCE or soft-iWARP device by its name)
                transport=SOFTWARE if _SOFTWARE_NAME.match(device) else None,
                generation=_generation(rate),
            )
        )
    # (no line read at all: not a box without a device, a text this parser cannot read)
    cut = "no line of it is a port line" if warnings and not ports else _sysfs_cut(text) or elided(text)
    if cut and ports and cut.startswith(f"{ports[-1].device} port {ports[-1].port} "):
        ports[-1] = replace(ports[-1], whole=False)  # (its link layer cut: the line read is not whole)
    return IbReport(tuple(ports), tuple(warnings), cut is None, cut, "sysfs")


# a device's head line, with the blanks a paste put before it (` CA 'mlx4_0'`: a page that
# indented the first line of the block, or the whole block, past its prompt line; m36b 04)
_HCA = re.compile(r"^[ \t]*hca_id:\s*(\S+)")
_PORT = lazy_re(r"^\s*port:\s*(\d+)\s*$")
_FIELD = lazy_re(r"^\s*(state|phys_state|link_layer|active_width|active_speed|GID\[\s*0\]):\s*(.*?)\s*$")
_PORT_COUNT = lazy_re(r"^\s*(?:phys_port_cnt|Number of ports):\s*(\d+)\s*$")
_VERBOSE = lazy_re(r"^\s*max_mr_size:")  # the first line only `ibv_devinfo -v` prints
_WHOLE_CODE = lazy_re(r"\(\d+\)$")  # `%s (%d)`: `50.0 Gbps (64)`
_TRANSPORT = lazy_re(r"^\s*transport:\s*(\S+)")  # `InfiniBand (0)`, `iWARP (1)`
_DEVICE_FIELD = lazy_re(r"^\s*(sys_image_guid|vendor_id|vendor_part_id|fw_ver|hw_ver):\s*(\S+)\s*$")
# a port of a software RDMA device, run by the kernel over an Ethernet NIC without an RDMA adapter
# (Soft-RoCE `rdma_rxe`, soft-iWARP `siw`): its transport as _Listing.port names it
SOFTWARE = "software RDMA"
# ibv_devinfo's device lines of rdma_rxe: no firmware, hardware or part number, and its vendor id
# RXE_VENDOR_ID 0xffffff (0x0000 before Linux 4.19); no adapter prints all four
_RXE_FIELDS = {
    "fw_ver": {"0.0.0"},
    "hw_ver": {"0x0"},
    "vendor_part_id": {"0"},
    "vendor_id": {"0xffffff", "0x0000"},
}
# a port that may be software RDMA, or an adapter whose driver names no firmware nor hardware
# (Azure MANA's mana_ib, Alibaba's erdma): ibstat's CA type, Firmware and Hardware version all
# empty beside an Ethernet link layer, the device not named as rxe / siw name theirs
MAYBE_SOFTWARE = "software RDMA or an adapter naming no firmware"
# the names `rdma link add NAME type rxe|siw` is given by the tools and guides (rxe0, siw0,
# siw_eth0); a device named so is taken as the software it names
_SOFTWARE_NAME = lazy_re(r"^(?:rxe|siw)(?:\d|_|$)", re.IGNORECASE)


@dataclass
class _Listing:
    """The ports read so far, and the first sign that the listing ends mid-record."""

    tool: str
    ports: list[IbPort] = field(default_factory=list)
    cut: str | None = None
    device: str | None = None
    declared: int | None = None  # the device's own port count (phys_port_cnt, Number of ports)
    listed: int = 0
    adapter: str | None = None  # the device's system image GUID
    vf: bool | None = None  # the device is an SR-IOV virtual function (its part number says)
    vendor: str | None = None  # ibv_devinfo's vendor_id (its part numbers are Mellanox's or not)
    transport: str | None = None  # ibv_devinfo's `transport:` word (`InfiniBand`, `iWARP`)
    # the device's lines that tell a software RDMA device (_software): ibv_devinfo's fw_ver,
    # hw_ver, vendor_id, vendor_part_id; ibstat's CA type, Firmware and Hardware version
    marks: dict[str, str] = field(default_factory=dict)

    def device_field(self, name: str, value: str) -> None:
        """A device-level line: its system image GUID, vendor, or part number (ibstat's `CA type:
        MT4124`, ibv_devinfo's `vendor_part_id: 4124` of vendor 0x02c9): a VF's or not."""
        name, value = name.lower(), value.strip()
        self.marks[name] = value.lower()
        if name in ("sys_image_guid", "system image guid"):
            self.adapter = _guid(value)
        elif name == "vendor_id":
            self.vendor = value.lower()
        elif name == "ca type" and (part := re.fullmatch(r"MT(\d+)", value)):
            self.vf = int(part.group(1)) in VF_PART_IDS
        elif name == "vendor_part_id" and value.isdecimal() and self.vendor in _MELLANOX:
            self.vf = int(value) in VF_PART_IDS

    def mark(self, why: str | None) -> None:
        """Keep the first sign of a cut."""
        self.cut = self.cut or why

    def head(self, device: str | None) -> None:
        """A new device head (None: the end): the one before must have listed its ports."""
        if self.device is not None:
            self.mark(_cut_count(self.device, self.listed, self.declared))
        self.device, self.declared, self.listed = device, None, 0
        self.adapter = self.vf = self.vendor = self.transport = None
        self.marks = {}

    def _software(self, layer: str | None) -> str | None:
        """SOFTWARE where the device is software RDMA over an Ethernet NIC: named so (rxe0,
        siw0), or ibv_devinfo's rdma_rxe lines (_RXE_FIELDS); MAYBE_SOFTWARE where ibstat's CA
        type, Firmware and Hardware version are all printed empty beside an Ethernet link layer
        (a real capture of rxe0, but Azure MANA's mana_ib and Alibaba's erdma name no firmware
        nor CA type either: not known to be software); else None."""
        if _SOFTWARE_NAME.match(self.device or ""):
            return SOFTWARE
        if all(self.marks.get(name) in values for name, values in _RXE_FIELDS.items()):
            return SOFTWARE
        ibstat = ("ca type", "firmware version", "hardware version")
        if _layer(layer) == "Ethernet" and all(self.marks.get(name) == "" for name in ibstat):
            return MAYBE_SOFTWARE
        return None

    def port(self, number: int, fields: Mapping[str, str], why: str | None, rate: float | None) -> None:
        """One port block: kept when its state was read, the listing cut when it is not whole."""
        assert self.device is not None
        self.listed += 1
        self.mark(f"{self.device} port {number} {why}" if why else None)
        if "state" not in fields:  # its state cut away: not a port that is down
            return
        layer = fields.get("link_layer", fields.get("link layer"))
        phys = fields.get("phys_state", fields.get("physical state", fields.get("phys state")))
        self.ports.append(
            IbPort(
                self.device,
                number,
                _state(fields["state"]),
                rate,
                _layer(layer),
                _phys(phys) if phys is not None else None,
                self.tool,
                self.adapter,
                self.vf,
                _port_guid(fields, layer),
                why is None,
                self._software(layer) or self.transport,
                _generation(fields.get("rate")),
            )
        )


def _port_guid(fields: Mapping[str, str], layer: str | None) -> str | None:
    """An InfiniBand port's GUID as hex digits: ibstat's `Port GUID: 0x946dae0300cde884`, or the
    interface half of ibstatus's `default gid` / ibv_devinfo -v's `GID[0]` (`fe80:0000:0000:0000:
    946d:ae03:00cd:e884`: the subnet prefix, then the port GUID); None for a RoCE port (its GID
    is its MAC address's) or where none was read."""
    if layer not in ("InfiniBand", "IB"):
        return None
    # (whole values only: a GID[0] line, the last of an ibv_devinfo -v port, may be cut short)
    guid = fields.get("port guid", "")
    if re.fullmatch(r"0x[0-9a-fA-F]{16}", guid):
        return _guid(guid)
    groups = (fields.get("default gid") or fields.get("GID[0]") or "").split(":")
    whole = len(groups) == 8 and all(re.fullmatch(r"[0-9a-fA-F]{4}", g) for g in groups)
    return _guid("".join(groups[4:])) if whole else None


def _devinfo_rate(fields: Mapping[str, str]) -> float | None:
    """ibv_devinfo -v: active_width x per-lane active_speed (None without -v)."""
    width = re.match(r"(\d+)X", fields.get("active_width", ""))
    speed = re.match(r"(\d+(?:\.\d+)?)\s*Gbps", fields.get("active_speed", ""))
    return int(width.group(1)) * float(speed.group(1)) if width and speed else None


# a port block's last line where an old ibv_devinfo prints no `link_layer:` after it (the Soft-RoCE
# rxe-dev tree's of 2016, SoftRoCE/rxe-dev#46): whole, `port_lmc: 0x00`
_LMC_LINE = lazy_re(r"^\s*port_lmc:\s*0x[0-9a-fA-F]{2}\s*$")
# why a port block ending on a whole port_lmc line without link_layer is not known whole
NO_LINK_LAYER = (
    "has no link_layer line after its port_lmc (an old ibv_devinfo prints none, as the Soft-RoCE"
    " rxe-dev tree's; a current one's output was cut there: which is not known)"
)


def _devinfo_cut(fields: Mapping[str, str], verbose: bool, ib: bool, last: str = "") -> str | None:
    """An ibv_devinfo port block not whole: without -v `link_layer:` is its last line; -v adds
    `active_width:` and `active_speed:` (the rate), then `phys_state:` on an InfiniBand-transport
    HCA, each a whole `%s (%d)` (rdma-core libibverbs/examples/devinfo.c print_hca_cap)."""
    required: tuple[str, ...] = ("state", "link_layer")
    if verbose:
        required += ("active_width", "active_speed", "phys_state") if ib else ("active_width", "active_speed")
    why = _cut_field(fields, required, "link_layer")
    if why == "has no link_layer line" and not verbose and _LMC_LINE.match(last):
        return NO_LINK_LAYER
    if why is None and verbose and not _WHOLE_CODE.search(fields[required[-1]]):
        why = f"has its {required[-1]} cut short ({fields[required[-1]]!r})"
    return why


def parse_ibv_devinfo(text: str) -> IbReport:
    """Parse `ibv_devinfo` / `ibv_devinfo -v`: each HCA's ports (rate only with -v); its `No IB
    devices found` is no port, not an unreadable output; a listing that ends mid-record (see the
    module docstring) is incomplete."""
    if no_rdma_device(text):
        return IbReport((), tool="ibv_devinfo")
    listing = _Listing("ibv_devinfo")
    current: dict[str, str] | None = None
    number = 0
    verbose = ib = False
    last = ""  # (the current port block's last line)

    def flush() -> None:
        if listing.device is not None and current is not None:
            listing.port(number, current, _devinfo_cut(current, verbose, ib, last), _devinfo_rate(current))

    for line in text.splitlines():
        if current is not None and line.strip():
            last = line
        if m := _HCA.match(line):
            flush()
            listing.head(m.group(1))
            current, verbose, ib = None, False, False
        elif listing.device and (m := _PORT.match(line)):
            flush()
            number, current = int(m.group(1)), {}
        elif current is not None and (m := _FIELD.match(line)):
            current.setdefault(re.sub(r"\s+", "", m.group(1)), m.group(2))
        elif listing.device and current is None and (m := _PORT_COUNT.match(line)):
            listing.declared = int(m.group(1))
        elif listing.device and current is None and (m := _DEVICE_FIELD.match(line)):
            listing.device_field(m.group(1), m.group(2))
        elif listing.device and current is None and _VERBOSE.match(line):
            verbose = True
        elif listing.device and current is None and (m := _TRANSPORT.match(line)):
            ib = m.group(1) == "InfiniBand"
            listing.transport = m.group(1)
    flush()
    listing.head(None)
    listing.mark(_cut_head(text, (_HCA,), "ibv_devinfo"))
    listing.mark(elided(text))
    listing.mark(_cut_tail(text, (_HCA,)))
    warnings: tuple[str, ...] = ()
    if not listing.ports and text.strip():
        warnings = ("ibv_devinfo: no hca_id/port blocks found",)
        listing.mark("no port block in it")
    return IbReport(tuple(listing.ports), warnings, listing.cut is None, listing.cut, "ibv_devinfo")


# a line of its own saying the tool stopped (ibstat's `ibpanic: [PID] main: stat of IB device
# 'mlx5_8' failed: ...`, an `ibwarn: ...` naming a failure); libibumad's debug lines
# (`ibwarn: [168988] umad_get_ca: opened mlx4_0`, with umad debugging on) are chatter
_STOPPED = lazy_re(
    r"^\s*(?:ibpanic|ibstat(?:us)?):|^\s*ibwarn:.*\b(?:can'?t|cannot|fail\w*|error|no such)\b"
    r"|\bfailed\b.*\b(?:IB device|umad)\b",
    re.I,
)
_CA = re.compile(r"^[ \t]*CA\s+'([^']+)'\s*$")
_CA_PORT = re.compile(r"^\s*Port\s+(\d+):\s*$")
_CA_FIELD = re.compile(r"^\s*(State|Physical state|Rate|Link layer|Port GUID):\s*(.*?)\s*$")
_CA_DEVICE = lazy_re(r"^\s*(CA type|System image GUID|Firmware version|Hardware version):\s*(.*?)\s*$")
_STATUS = re.compile(r"^[ \t]*Infiniband device\s+'([^']+)'\s+port\s+(\d+)\s+status:\s*$")
_STATUS_FIELD = re.compile(r"^\s*(state|phys state|rate|link_layer|default gid):\s*(.*?)\s*$")
# the lines every port block of the tool prints, its link layer last (infiniband-diags ibstat.c
# port_dump, scripts/ibstatus port_status)
_REQUIRED = {"ibstat": ("state", "rate", "link layer"), "ibstatus": ("state", "rate", "link_layer")}


def _blocks(
    text: str, head: re.Pattern[str], port: re.Pattern[str] | None, field: re.Pattern[str], tool: str
) -> IbReport:
    """Per-port blocks of ibstat (`CA` + `Port N:`) or ibstatus (`device ... port N status:`)."""
    listing = _Listing(tool)
    warnings: list[str] = []
    stopped = False
    number = 0
    current: dict[str, str] | None = None
    required = _REQUIRED[tool]

    def flush() -> None:
        if listing.device is not None and current is not None:
            rate = re.match(r"(\d+(?:\.\d+)?)", current.get("rate", ""))
            why = _cut_field(current, required, required[-1])
            listing.port(number, current, why, float(rate.group(1)) if rate else None)

    for line in text.splitlines():
        if _STOPPED.search(line):
            stopped = True
            warnings.append(f"{tool}: stopped early: {line.strip()}")
        elif m := head.match(line):
            flush()
            listing.head(m.group(1))
            current = None
            if port is None:  # ibstatus: the device line names the port
                number, current = int(m.group(2)), {}
        elif port is not None and listing.device and (m := port.match(line)):
            flush()
            number, current = int(m.group(1)), {}
        elif current is not None and (m := field.match(line)):
            current.setdefault(m.group(1).lower(), m.group(2))
        elif port is not None and listing.device and current is None and (m := _PORT_COUNT.match(line)):
            listing.declared = int(m.group(1))
        elif port is not None and listing.device and current is None and (m := _CA_DEVICE.match(line)):
            listing.device_field(m.group(1), m.group(2))
    flush()
    listing.head(None)
    listing.mark(_cut_head(text, (head,), tool))
    listing.mark(elided(text))
    listing.mark(_cut_tail(text, (head,)))
    if not listing.ports and text.strip() and not stopped:
        if listing.cut is None:
            warnings.append(f"{tool}: no port blocks found")
        listing.mark("no port block in it")
    complete = not stopped and listing.cut is None
    return IbReport(tuple(listing.ports), tuple(warnings), complete, listing.cut, tool)


# the whole output of a tool that found no RDMA device (see the module docstring)
_NO_DEVICE = lazy_re(
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
        return IbReport((), tool="ibstat")
    return _blocks(text, _CA, _CA_PORT, _CA_FIELD, "ibstat")


def parse_ibstatus(text: str) -> IbReport:
    """Parse `ibstatus`: one block per device port (`state: 4: ACTIVE`, `rate: 200 Gb/sec ...`)."""
    return _blocks(text, _STATUS, None, _STATUS_FIELD, "ibstatus")


def rdma_format(text: str) -> str:
    """Which tool printed an RDMA port listing, by content: `hca_id:` = ibv_devinfo, `CA '...'` =
    ibstat, `Infiniband device '...' port N status:` = ibstatus, else the probe's sysfs listing."""
    if re.search(r"^[ \t]*hca_id:", text, re.M):
        return "ibv_devinfo"
    if re.search(r"^[ \t]*CA\s+'[^']+'\s*$", text, re.M):
        return "ibstat"
    if re.search(r"^[ \t]*Infiniband device\s+'[^']+'\s+port\s+\d+\s+status:", text, re.M):
        return "ibstatus"
    return "sysfs"


_PARSERS = {
    "ibv_devinfo": parse_ibv_devinfo,
    "ibstat": parse_ibstat,
    "ibstatus": parse_ibstatus,
    "sysfs": parse_ib_sysfs,
}


def parse_rdma(text: str) -> IbReport:
    """Any of the formats, recognised by content (rdma_format); a tool's own "no RDMA device"
    output reads as the sysfs listing of a box without one (no port)."""
    if no_rdma_device(text):
        return IbReport((), tool="ibv_devinfo" if "No IB devices" in text else "ibstat")
    return _each_port_once(_PARSERS[rdma_format(text)](text))


def _each_port_once(report: IbReport) -> IbReport:
    """A port listed twice (a paste that repeated the listing or a line of it) is one port: its
    copies that say the same are read once; copies that disagree (two captures in one file) make
    the listing not whole (its ports are not known)."""
    seen: dict[tuple[str, int], IbPort] = {}
    twice: list[str] = []
    clash: list[str] = []
    for p in report.ports:
        key = (p.device, p.port)
        if key in seen:
            (clash if seen[key] != p else twice).append(f"{p.device} port {p.port}")
            continue
        seen[key] = p
    if not twice and not clash:
        return report
    warnings = list(report.warnings)
    if twice:
        warnings.append(f"{', '.join(dict.fromkeys(twice))} listed twice (a repeated paste): read once")
    if clash:
        said = f"{', '.join(dict.fromkeys(clash))} listed twice with different states (two outputs in one?)"
        ports = tuple(seen.values())
        return replace(report, ports=ports, warnings=(*warnings, said), complete=False, cut=said)
    return replace(report, ports=tuple(seen.values()), warnings=tuple(warnings))
