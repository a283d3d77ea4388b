"""The inventory's field rules: the keys each mapping may hold (hosts, orders, vendor profiles,
the file's top level), the ranges of its numbers, the paths, host names and addresses it
accepts, and the refusal of an unknown key or a value that is not a mapping. Pure: each rule
says why a value is refused, in a sentence naming the file and line where one is known.
"""

from __future__ import annotations

import ipaddress
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.rules import is_digits
from gpuonboard.termtext import control_char
from gpuonboard.yamlload import LineDict, did_you_mean, shown, where

HOST_KEYS = {
    "address": "the IP address or DNS name to connect to",
    "port": "the SSH port",
    "user": "the SSH login user",
    "key_file": "the private key file (else the SSH agent / default keys)",
    "use_agent": "whether to use the SSH agent",
    "jump": "jump host(s): an inventory host name or user@host:port, or a list (ProxyJump)",
    "proxy_command": "a local command whose stdin/stdout is the connection (OpenSSH's ProxyCommand)",
    "host_key": "pinned host-key fingerprint, SHA256:...",
    "vendor": "vendor profile name (a file in vendors/)",
    "order": "the order spec",
    "connection": "ssh or local",
    "data_dir": "remote data directory",
    "connect_timeout": "seconds to wait for the TCP connection and login",
    "vars": "free-form variables for playbooks",
}
ORDER_KEYS = {
    "gpu_model",
    "gpu_count",
    "vram",
    "cpu_cores",
    "ram",
    "data_disk",
    "interconnect",
    "min_driver",
    "rdma",
}
DATA_DISK_KEYS = {"mount", "min_size"}
VENDOR_KEYS = {
    "name",
    "licence",
    "icp",
    "ssh",
    "data_dir",
    "registry_mirror",
    "billing",
    "shutdown_command",
    "order",
    "vars",
}
BILLING_KEYS = {"unit", "rate", "currency", "monthly_rate", "after_poweroff"}
# `billing.after_poweroff`: whether the vendor stops billing a box its OS powered off
AFTER_POWEROFF = ("stops", "continues")
SSH_DEFAULT_KEYS = {"user", "port", "key_file", "jump", "connect_timeout", "use_agent"}
TOP_KEYS = {"defaults", "groups", "hosts", "vendors_dir", "ssh_config"}
GROUP_KEYS = {"vars", "hosts"}
INTERCONNECTS = ("nvlink", "pcie")
CONNECTIONS = ("ssh", "local")
BILLING_UNITS = ("second", "minute", "hour")


@dataclass(frozen=True)
class NumberRange:
    """The valid values of a numeric field: a finite number (a whole one when `whole`) from `lo`
    (excluded when `lo_open`) to `hi`. `text` says what the field takes, for the sentence that
    refuses a value of the wrong type, below the range, inf or nan; above the range the sentence
    adds the upper bound. One rule for every number of the schema: `connect_timeout: 1.0e+300`
    was accepted and crashed a connection thread, a vendor `rate: .inf` printed `inf USD`."""

    lo: float
    hi: float
    text: str
    lo_open: bool = False
    whole: bool = False
    names_range: bool = False  # `text` already says the range ("a number from 1 to 65535")

    def problem(self, value: object) -> str | None:
        """Pure: None when `value` is valid, else `must be ..., not X.` (the end of a sentence)."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (self.whole and not isinstance(value, int)):
            return f"must be {self.text}, not {shown(value)}."
        assert isinstance(value, int | float)
        if not math.isfinite(value) or value < self.lo or (self.lo_open and value == self.lo):
            return f"must be {self.text}, not {shown(value)}."
        if value > self.hi:
            upper = "" if self.names_range else f" up to {self.hi:g}"
            return f"must be {self.text}{upper}, not {shown(value)}."
        return None


PORT_RANGE = NumberRange(1, 65535, "a number from 1 to 65535", whole=True, names_range=True)
# an hour: far beyond any login; 1e300 overflowed the socket's timeout in a connection thread
CONNECT_TIMEOUT_RANGE = NumberRange(0, 3600, "a positive number of seconds", lo_open=True)
# per box: a DGX/HGX holds 8 GPUs and the largest single systems a few hundred cores; far above
# that an order is a typo that no box would ever pass
GPU_COUNT_RANGE = NumberRange(1, 1024, "a whole number of at least 1", whole=True)
CPU_CORES_RANGE = NumberRange(1, 65536, "a whole number of at least 1", whole=True)
RDMA_PORTS_RANGE = NumberRange(1, 1024, "a whole number of at least 1", whole=True)
RDMA_GBITS_RANGE = NumberRange(0, 1e6, "a number of Gb/s above 0", lo_open=True)
# a price per hour or month in any currency (IDR or KRW too); finite, so costs stay numbers
RATE_RANGE = NumberRange(0, 1e12, "a non-negative number")
# 1 EiB: no disk, RAM or GPU memory order comes near it
SIZE_MAX_BYTES = 1 << 60


def remote_path_problem(value: object) -> str | None:
    """Pure: why a path on the host (a data dir, a mount point) is refused, else None: it must
    be absolute and spelt without `..` (`/data/..` is `/`, which the mount check refused)."""
    if not isinstance(value, str) or not value.startswith("/"):
        return f"must be an absolute path like /data, not {shown(value)}."
    if ".." in value.split("/"):
        return f"must be spelt without '..' (it names another directory), not {shown(value)}."
    if control_char(value) is not None:
        return f"must be one line without control characters, not {shown(value)}."
    return None


def data_dir_problem(value: object) -> str | None:
    """Pure: why a data_dir is refused, else None: remote_path_problem's rules, and not `/`
    however spelt (`//`, `/./`): the data dir is filled and cleaned up, like a data_disk mount,
    which may not be / either."""
    if problem := remote_path_problem(value):
        return problem
    if normal_remote_path(str(value)) == "/":
        return f"must be a directory below /, like /data, not {shown(value)}."
    # judged where the uploads land, below the dir: /dev/shm itself is a system tree's
    # directory, its entries are users' (a data_dir of /dev/shm is a tmpfs for data)
    if (tree := system_tree(normal_remote_path(str(value)) + "/x")) is not None:
        return (
            f"must be a data directory like /data, not one in the host's system directory {tree}"
            f" (uploads would merge into what is there, and teardown never cleans it): {shown(value)}."
        )
    return None


# the operating system's trees on a host: an upload never writes into one, teardown never
# deletes in one, at any depth below them; /dev/shm's entries are users' files (`sync
# --decrypt-to /dev/shm`'s plaintext), never /dev/shm itself
SYSTEM_TREES = (
    *("/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/usr"),
    *("/lib", "/lib32", "/lib64", "/libx32", "/snap"),
)
USER_TMPFS = "/dev/shm"


def system_tree(path: str) -> str | None:
    """Pure: the system tree (SYSTEM_TREES) that `path` (absolute, normalised) is or lies in,
    else None; a path in /dev/shm is none."""
    if path.startswith(USER_TMPFS + "/"):
        return None
    return next((t for t in SYSTEM_TREES if path == t or path.startswith(t + "/")), None)


def normal_remote_path(value: str) -> str:
    """Pure: one spelling of an absolute path (`//data/./x/` -> `/data/x`), for a path that
    remote_path_problem accepted."""
    return "/" + "/".join(p for p in value.split("/") if p not in ("", "."))


# A host name is the folder of its pulled results (`results/<host>`), its reports and journal:
# one path component, so `../../../../tmp/x` cannot send a teardown's pull outside the project;
# not starting with `~` either (a results_dest of `{host}/...` is expanded like a home dir);
# at most a DNS name's 253 bytes (a path component holds 255).
HOST_NAME_MAX_BYTES = 253


def host_name_problem(name: str) -> str | None:
    """Pure: why a host name cannot be a folder name, else None (checked at load for names
    from every inventory format: our YAML, Ansible YAML and INI)."""
    why = None
    invisible = next((c for c in name if unicodedata.category(c) == "Cf"), None)
    if not name:
        why = "is empty"
    elif invisible is not None:  # (U+202E turns the text after it around on a terminal)
        why = f"holds the invisible formatting character U+{ord(invisible):04X}"
    elif "/" in name or "\\" in name:
        why = f"holds {'/' if '/' in name else chr(92)!r}"
    elif name.startswith((".", "~")):
        why = f"starts with {name[0]!r}"
    elif len(name.encode("utf-8", "surrogatepass")) > HOST_NAME_MAX_BYTES:
        why = f"is longer than {HOST_NAME_MAX_BYTES} bytes"
    if why is None:
        return None
    return (
        f"host name {name[:60]!r}{'...' if len(name) > 60 else ''} {why}; a host name is the name of"
        " its results folder, so it must be one path component (no '/' or '\\', not starting with"
        " '.' or '~'): rename the host and put where it is reached in 'address:'."
    )


def as_mapping(value: Any, path: Path, parent: Any, key: str, label: str | None = None) -> LineDict:
    """`value` (`parent[key]`) as a LineDict; anything but a mapping is an InventoryError."""
    if not isinstance(value, dict):
        raise InventoryError(
            f"{where(path, parent, key)}: {label or repr(key)} must be a mapping of name: value,"
            f" not {_typename(value)}."
        )
    if not isinstance(value, LineDict):
        ld = LineDict(value)
        ld.key_lines = {}
        return ld
    return value


def _typename(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def check_keys(mapping: Mapping[str, Any], allowed: Iterable[str], path: Path, label: str) -> None:
    """An unknown key of `mapping` is an InventoryError at its line, with a suggestion."""
    allowed = set(allowed)
    for key in mapping:
        if key not in allowed:
            raise InventoryError(
                f"{where(path, mapping, key)}: {label} has an unknown key {key!r}"
                f"{did_you_mean(key, allowed) or '; allowed keys: ' + ', '.join(sorted(allowed)) + '.'}"
            )


def check_host_keys(mapping: Mapping[str, Any], path: Path, label: str) -> None:
    """check_keys for a host-settings layer (defaults, group vars, a host)."""
    check_keys(mapping, HOST_KEYS, path, label)


# what a host name, an IPv4/IPv6 address and an IPv6 zone (`fe80::1%eth0`) are made of: checked
# when the inventory is loaded (the run stops before connecting), and by openssh for each hop of
# rsync's config (ProxyJump passes the address to a shell)
HOST_CHARS = re.compile(r"[\w.:%@+\[\]-]+")


def bad_host_char(address: str) -> str | None:
    """Pure: the first character of `address` that no host name or IP address holds, or None."""
    return next((c for c in address if not HOST_CHARS.fullmatch(c)), None)


def split_address(address: str) -> tuple[str, str | None]:
    """Pure: (the address to dial, None), or (address, why it is refused). An address with a
    port (`10.0.0.1:2222`, `[2001:db8::1]:2222`) is refused: the port went nowhere and the host
    was shown as `root@10.0.0.1:2222:22`. An IPv6 address (`::1`, `fe80::1%eth0`) has colons of
    its own; in brackets (`[::1]`) it is taken without them."""
    port_hint = "; put the port in 'port:' and write only the host name or IP address in 'address:'."
    if address.startswith("-"):  # (ssh and rsync would read `-oProxyCommand=...` as an option)
        return (
            address,
            f"{address!r} starts with '-'; an address never does: write the host name or IP address.",
        )
    if "@" in address:  # (shown as root@a@b:22; the user would be dropped or doubled)
        return address, f"{address!r} holds '@'; put the user in 'user:' and only the host in 'address:'."
    if address.startswith("["):
        m = re.fullmatch(r"\[([^\]]+)\](?::([0-9]+))?", address)
        if m is None or not _is_ipv6(m.group(1)):
            return address, f"{address!r} is not a host name or IP address; write an IPv6 address like [::1]."
        if m.group(2):
            return address, f"{address!r} holds a port (:{m.group(2)}){port_hint}"
        return m.group(1), None
    if address.count(":") == 1:
        port = address.partition(":")[2]
        if is_digits(port):
            return address, f"{address!r} holds a port (:{port}){port_hint}"
        return (
            address,
            f"{address!r} is not a host name or IP address; write only the host name or IP address.",
        )
    if ":" in address and not _is_ipv6(address):
        return address, f"{address!r} is neither a host name nor an IPv6 address; fix the address."
    return address, None


def _is_ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False
