"""The box's RAM from a saved `docker info` (text form), where it shows its daemon runs natively
on Linux on the box itself (m37b 28; revT F1).

docker info's `Total Memory` is the MemTotal of the kernel docker's daemon runs on (moby's
`meminfo.Read`, printed by go-units' BytesSize: binary units, 4 significant digits). That is the
box's RAM only where the daemon is the box's own. `Context: default` alone does not show it:
docker/cli resolves the context `default` whenever `-H`/`--host` or DOCKER_HOST is set, so a
`docker -H ssh://other info` says it too. Read only where all of these hold: the client's
`Context: default`; no `-H`, `--host`, `-c`/`--context`, `DOCKER_HOST=` or `DOCKER_CONTEXT=` on
the copied command line (api/narrowed.ran_elsewhere); `OSType: linux` and no sign of a VM that
carries the daemon for another OS (Docker Desktop: `Operating System: Docker Desktop`,
`Name: docker-desktop`, a `linuxkit` kernel; WSL2: a `microsoft-standard` kernel; boot2docker;
Rancher Desktop, OrbStack, Colima, Lima); and the daemon's `Name:` (its machine's host name) is
the box's own host name as its other outputs show it (a copied prompt's host, `uname -a`'s node
name), or its `Kernel Version:` is the release the box's `uname` shows. Anything else (a remote
context, no `Context:` line, as docker before 19.03 prints it, no host name or release to match)
stays unread, its reason said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gpuonboard.facts.memory import MemoryInfo
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

_FIELD = lazy_re(
    r"^[ \t]*(Context|Operating System|OSType|Kernel Version|Name|Total Memory):[ \t]*(.*?)[ \t]*$"
)
# (the VMs that carry a Linux daemon for macOS or Windows, by their OS name, kernel or host name)
_VM_SYSTEM = lazy_re(r"docker desktop|boot2docker|rancher desktop|orbstack", re.IGNORECASE)
_VM_KERNEL = lazy_re(r"linuxkit|microsoft|boot2docker|orbstack", re.IGNORECASE)
_VM_NAME = lazy_re(r"docker-desktop|colima|lima-.*|rancher-desktop|orbstack", re.IGNORECASE)
_SIZE = lazy_re(r"(\d+(?:\.\d+)?)([KMGT]?)iB")
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
# the fields docker info prints just before its `Name:`
_BEFORE_NAME = frozenset(
    {"Kernel Version", "Operating System", "OSType", "Architecture", "CPUs", "Total Memory"}
)


def _fields(text: str) -> dict[str, str]:
    """docker info's fields this reader needs, the first of each name."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if (m := _FIELD.match(line)) is not None:
            found.setdefault(m.group(1), m.group(2))
    return found


def _local_linux(fields: dict[str, str]) -> str | None:
    """How a `docker info`'s fields show a local context and a Linux daemon outside a VM
    (`Context: default`, `OSType: linux`, its OS), or None where they do not show it."""
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


def _short(name: str) -> str:
    """A host name's short form, lower case (an IP address whole)."""
    name = name.strip().lower()
    return name if re.fullmatch(r"[\d.]+", name) else name.split(".")[0]


def _same_box(fields: dict[str, str], raw: Mapping[str, ProbeOutput]) -> str | None:
    """How the daemon's `Name:` or `Kernel Version:` is the box's own, as its outputs show it
    (a copied prompt's host, `uname -a`'s node name; the release the box's `uname` gives), or None."""
    name = _short(fields.get("Name", ""))
    if name and any(_short(out.host_name) == name for out in raw.values() if out.host_name):
        return f"`Name: {fields['Name']}`, the box's host name"
    kernel = raw.get("kernel")
    release = kernel.stdout.strip() if kernel is not None and not kernel.exit_code else ""
    if release and fields.get("Kernel Version", "") == release:
        return f"`Kernel Version: {release}`, the box's `uname -r`"
    return None


def docker_native(raw: Mapping[str, ProbeOutput]) -> str | None:
    """How the `docker info` among `raw` shows its daemon is the box's own, running natively on
    Linux (`Context: default`, no other daemon asked, `OSType: linux`, its OS, its name or kernel
    the box's), or None where it does not show it (docker_unproven says why)."""
    out = raw.get("docker_info")
    if out is None or out.ran_elsewhere:
        return None
    fields = _fields(out.stdout)
    local, same = _local_linux(fields), _same_box(fields, raw)
    return f"{local}; {same}" if local is not None and same is not None else None


def docker_unproven(raw: Mapping[str, ProbeOutput], unit: str = "") -> str:
    """Why the `docker info` among `raw` does not show its daemon is the box's own, in a clause
    after "of the machine docker runs on," (`unit`: what of the box it is not, " cores"); "" where
    it shows it, or none is given."""
    out = raw.get("docker_info")
    if out is None or docker_native(raw) is not None:
        return ""
    if out.ran_elsewhere:
        return f"not the box's{unit}: {out.ran_elsewhere}"
    fields = _fields(out.stdout)
    if _local_linux(fields) is None:
        return f"which may be a VM's or Docker Desktop's, not the box's{unit}"
    return f"not shown to be the box's{unit}: {_unmatched(out.stdout, fields, raw)}"


def _unmatched(text: str, fields: dict[str, str], raw: Mapping[str, ProbeOutput]) -> str:
    """Why a local Linux daemon's `docker info` is not matched to the box: its `Name:` (or that it
    has none: a paste cut after `Total Memory:`, measure38d 14) and `Kernel Version:` against the
    box's other outputs, or that none was given that names a host or a release."""
    kernel = fields.get("Kernel Version")
    release = f"its `Kernel Version: {kernel}`" if kernel else "it has no `Kernel Version:` line"
    if fields.get("Name"):
        name = f"its `Name: {fields['Name']}`"
    else:
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
        label = last.partition(":")[0]
        # (docker info prints `Name:` after these: an output that ends at one of them was cut there)
        cut = f" (the output ends after `{label}:`, cut short)" if label in _BEFORE_NAME else ""
        name = f"it has no `Name:` line{cut}"
    others = [  # (a copied prompt's host above the docker info itself is one)
        o
        for kind, o in raw.items()
        if o.stderr != "not probed" and (o.host_name or (kind == "kernel" and o.stdout))
    ]
    if not others:
        return (
            f"{name}, and no other output of the box was given (a copied prompt's host, `uname -a`)"
            " to match its host name or kernel to"
        )
    if fields.get("Name"):
        name += " is no host name the box's other outputs show (a copied prompt's host, `uname -a`)"
    return f"{name}, and {release} is no `uname -r` of the box's"


def read_docker_memory(raw: Mapping[str, ProbeOutput]) -> MemoryInfo | None:
    """The RAM a native Linux daemon's `docker info` gives (its `Total Memory`, rounded to 4
    significant digits: the spread reaches half its last digit either way), or None where the
    daemon is not shown to be the box's own or no Total Memory is given."""
    out = raw.get("docker_info")
    if out is None or docker_native(raw) is None:
        return None
    size = _SIZE.fullmatch(_fields(out.stdout).get("Total Memory", ""))
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
