"""The box's RAM from a saved `docker info` (text form), where it shows its daemon runs natively
on Linux on the machine it was run on (m37b 28).

docker info's `Total Memory` is the MemTotal of the kernel docker's daemon runs on (moby's
`meminfo.Read`, printed by go-units' BytesSize: binary units, 4 significant digits). That is the
box's RAM only where the daemon is the box's own: the client's `Context: default` (no remote
context), `OSType: linux`, and no sign of a VM that carries the daemon for another OS (Docker
Desktop: `Operating System: Docker Desktop`, `Name: docker-desktop`, a `linuxkit` kernel; WSL2:
a `microsoft-standard` kernel; boot2docker; Rancher Desktop, OrbStack, Colima, Lima). Anything
else (a remote context, no `Context:` line, as docker before 19.03 prints it) stays unread.
"""

from __future__ import annotations

import re

from gpuonboard.facts.memory import MemoryInfo
from gpuonboard.once import lazy_re

_FIELD = lazy_re(
    r"^[ \t]*(Context|Operating System|OSType|Kernel Version|Name|Total Memory):[ \t]*(.*?)[ \t]*$"
)
# (the VMs that carry a Linux daemon for macOS or Windows, by their OS name, kernel or host name)
_VM_SYSTEM = re.compile(r"docker desktop|boot2docker|rancher desktop|orbstack", re.IGNORECASE)
_VM_KERNEL = re.compile(r"linuxkit|microsoft|boot2docker|orbstack", re.IGNORECASE)
_VM_NAME = re.compile(r"docker-desktop|colima|lima-.*|rancher-desktop|orbstack", re.IGNORECASE)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)iB")
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def _fields(text: str) -> dict[str, str]:
    """docker info's fields this reader needs, the first of each name."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if (m := _FIELD.match(line)) is not None:
            found.setdefault(m.group(1), m.group(2))
    return found


def docker_native(text: str) -> str | None:
    """How a `docker info` shows its daemon runs natively on Linux with the local context
    (`Context: default`, `OSType: linux`, its OS), or None where it does not show it."""
    fields = _fields(text)
    if fields.get("Context") != "default" or fields.get("OSType") != "linux":
        return None
    system = fields.get("Operating System", "")
    if (
        not system
        or _VM_SYSTEM.search(system)
        or _VM_KERNEL.search(fields.get("Kernel Version", ""))
        or _VM_NAME.fullmatch(fields.get("Name", ""))
    ):
        return None
    return f"`Context: default`, `Operating System: {system}`, `OSType: linux`"


def read_docker_memory(text: str) -> MemoryInfo | None:
    """The RAM a native Linux daemon's `docker info` gives (its `Total Memory`, rounded to 4
    significant digits: the spread reaches half its last digit either way), or None where the
    daemon is not shown to be the box's own or no Total Memory is given."""
    if docker_native(text) is None:
        return None
    size = _SIZE.fullmatch(_fields(text).get("Total Memory", ""))
    if size is None:
        return None
    figure, unit = size.group(1), 1024 ** _POWERS[size.group(2)]
    # (`%.4g`: 4 significant digits whatever the decimals printed, `31.3GiB` being 31.30)
    half = unit * 10 ** (len(figure.partition(".")[0].lstrip("0") or "0") - 4) / 2
    return MemoryInfo(
        round(float(figure) * unit),
        None,
        None,
        total_spread=(int(half), int(half)),
        source="docker_info",
    )
