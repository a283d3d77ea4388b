"""Inventory: hosts, groups, vendor profiles and order specs, loaded from YAML and validated.

Native layout (`inventory/hosts.yml` + `inventory/vendors/*.yml`)::

    defaults: {user: root}
    groups:
      wuhan: {vars: {vendor: wuhan-idc}, hosts: [wuhan-a100-1]}
    hosts:
      wuhan-a100-1: {address: 203.0.113.10, order: {gpu_model: A100 80GB SXM, gpu_count: 8}}

Precedence for every setting: host > group (in file order, later wins) > vendor profile >
defaults. An Ansible inventory (YAML or INI) is accepted as it is (see `ansible_inventory`).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import math
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError, UsageError
from gpuonboard.inventory.rules import MAX_HOSTS, is_digits, name_problem
from gpuonboard.termtext import control_char
from gpuonboard.units import parse_ram_size, parse_size
from gpuonboard.yamlload import LineDict, did_you_mean, load_yaml, parse_yaml, read_text, shown, where

HOST_KEYS = {
    "address": "the IP address or DNS name to connect to",
    "port": "the SSH port",
    "user": "the SSH login user",
    "key_file": "the private key file (else the SSH agent / default keys)",
    "use_agent": "whether to use the SSH agent",
    "jump": "jump host(s): an inventory host name or user@host:port, or a list (ProxyJump)",
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
BILLING_KEYS = {"unit", "rate", "currency", "monthly_rate"}
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
    return None


def normal_remote_path(value: str) -> str:
    """Pure: one spelling of an absolute path (`//data/./x/` -> `/data/x`), for a path that
    remote_path_problem accepted."""
    return "/" + "/".join(p for p in value.split("/") if p not in ("", "."))


@dataclass(frozen=True)
class DataDiskSpec:
    """Where the data disk must be mounted and how big it must be."""

    mount: str
    min_size_bytes: int | None = None


@dataclass(frozen=True)
class OrderSpec:
    """What was ordered from the vendor; None means 'not specified, not checked'."""

    gpu_model: str | None = None
    gpu_count: int | None = None
    vram_bytes: int | None = None
    cpu_cores: int | None = None
    ram_bytes: int | None = None  # binary: `ram: 1TB` is 2^40 bytes (units.parse_ram_size)
    data_disk: DataDiskSpec | None = None
    interconnect: str | None = None
    min_driver: str | None = None
    rdma: tuple[int, float] | None = None  # `rdma: "8x400G"` -> (8, 400.0): ports x Gb/s each


@dataclass(frozen=True)
class Billing:
    """How the vendor bills: unit of billing, hourly rate, currency."""

    unit: str = "hour"
    rate: float | None = None
    currency: str = ""
    monthly_rate: float | None = None
    unit_given: bool = False  # the profile names `billing.unit` (else `unit` is an assumption)


@dataclass(frozen=True)
class Vendor:
    """A hosting vendor's profile: identity, SSH defaults, data dir, mirror, billing."""

    id: str
    name: str
    licence: str | None = None
    icp: str | None = None
    data_dir: str | None = None
    registry_mirror: str | tuple[str, ...] | None = None  # one mirror, or several tried in order
    billing: Billing = field(default_factory=Billing)
    shutdown_command: str = "shutdown -h now"
    source: str = ""
    host_defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Host:
    """One target machine with every setting resolved (host > group > vendor > defaults)."""

    name: str
    address: str
    port: int = 22
    user: str = "root"
    key_file: str | None = None
    use_agent: bool = True
    jump: tuple[str, ...] = ()
    host_key: str | None = None
    vendor: Vendor | None = None
    order: OrderSpec = field(default_factory=OrderSpec)
    connection: str = "ssh"
    data_dir: str | None = None
    connect_timeout: float = 10.0
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict)

    @property
    def vendor_name(self) -> str:
        """Vendor display name, or '-'."""
        return self.vendor.name if self.vendor else "-"


@dataclass(frozen=True)
class Inventory:
    """All hosts (in file order), groups and vendors of one inventory."""

    source: Path
    hosts: dict[str, Host]
    groups: dict[str, tuple[str, ...]]
    vendors: dict[str, Vendor]
    # host name -> where its key_file was set: (`file, line N` prefix, who set it)
    key_file_origins: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def select(
        self,
        hosts: Sequence[str] = (),
        group: str | None = None,
        limit: str | None = None,
    ) -> list[Host]:
        """Hosts picked by --host names, --group and --limit patterns (all must hold)."""
        names = list(self.hosts)
        if hosts:
            for name in hosts:
                if name not in self.hosts:
                    raise UsageError(
                        f"no host named {name!r} in {self.source}; run `invoke inventory` to list hosts"
                        f"{did_you_mean(name, self.hosts) or '.'}"
                    )
            names = [n for n in names if n in hosts]
        if group:
            if group not in self.groups:
                raise UsageError(
                    f"no group named {group!r} in {self.source}"
                    f" (known groups: {', '.join(self.groups) or 'none'})"
                    f"{did_you_mean(group, self.groups) or '.'}"
                )
            members = set(self.groups[group])
            names = [n for n in names if n in members]
        if limit:
            self._check_limit(limit)
            selects = compile_limit(limit, regex_hits(limit, [*self.hosts, *self.groups]))
            names = [n for n in names if selects(n, self.hosts[n].groups)]
        if not names:
            raise UsageError(f"no host in {self.source} matches the selection; nothing to do.")
        return [self.hosts[n] for n in names]

    def _check_limit(self, limit: str) -> None:
        """A --limit term that is a plain name (no glob, no regex) but neither a host nor a group
        of this inventory is a typo: `!node-02` meant to spare node-02 would spare nothing, and
        `teardown` would take that box too. The pattern's size is bounded (limit_problem); a
        `~regex` is compiled only in regex_hits' time-limited child (`~(?i)` and thousands of
        wide character classes took minutes to compile)."""
        if problem := limit_problem(limit):
            raise UsageError(problem)
        known = {*self.hosts, *self.groups, "all", "ungrouped"}
        for term in limit_terms(limit):
            bare = term.lstrip("!&")
            if bare.startswith("~") or any(c in bare for c in "*?[") or bare in known:
                continue
            raise UsageError(
                f"--limit pattern {term!r} names no host or group in {self.source}; fix the name"
                f" (run `invoke inventory` to list hosts and groups){did_you_mean(bare, known) or '.'}"
            )

    def check_key_files(self, hosts: Iterable[Host]) -> None:
        """Before connecting: a key_file that is not there (of these hosts or their inventory
        jump hosts) is an input error naming the file and line that set it. Not part of
        `select`, so listing hosts and judging saved outputs offline need no key."""
        for host in hosts:
            for hop in [*(self.hosts[j] for j in host.jump if j in self.hosts), host]:
                path = hop.key_file
                if hop.connection != "ssh" or not path or os.path.isfile(path):
                    continue
                problem = "which does not exist" if not os.path.exists(path) else "which is not a file"
                loc, who = self.key_file_origins.get(hop.name, (str(self.source), f"host {hop.name!r}"))
                if who == "ssh_config":
                    raise InventoryError(
                        f"{loc}: host {hop.name!r} of the inventory {self.source} takes its key from this"
                        f" SSH config's IdentityFile {path}, {problem}; fix that path, or set key_file"
                        " for the host in the inventory."
                    )
                if who != f"host {hop.name!r}":
                    who += f" (for host {hop.name!r})"
                raise InventoryError(
                    f"{loc}: {who} field 'key_file' names {path}, {problem}; fix the path, or remove"
                    " key_file to log in with the SSH agent and the default keys."
                )


# A --limit names a few hosts or groups; these bound what one may cost (a 130 kB list of 25,000
# globs over 2,000 hosts took over 30 s; a 14,000-class regex minutes to compile)
MAX_LIMIT_CHARS = 64 << 10
MAX_LIMIT_TERMS = 1_000
MAX_LIMIT_REGEX_CHARS = 1_000


def limit_problem(pattern: str) -> str | None:
    """Pure: why a --limit pattern is refused for its size (one sentence), else None."""
    if len(pattern) > MAX_LIMIT_CHARS:
        return (
            f"--limit pattern is longer than {MAX_LIMIT_CHARS >> 10} KiB ({len(pattern):,} characters);"
            " select by group (--group) or with a few globs like 'gpu-*'."
        )
    terms = limit_terms(pattern)
    if len(terms) > MAX_LIMIT_TERMS:
        return (
            f"--limit pattern has more than {MAX_LIMIT_TERMS:,} terms ({len(terms):,}); select by"
            " group (--group) or with a few globs like 'gpu-*'."
        )
    long = next((t for t in terms if t.lstrip("!&").startswith("~") and len(t) > MAX_LIMIT_REGEX_CHARS), None)
    if long is not None:
        return (
            f"--limit regular expression {shown(long)} is longer than {MAX_LIMIT_REGEX_CHARS:,}"
            " characters; shorten it, or use a glob like 'gpu-*'."
        )
    return None


def limit_terms(pattern: str) -> list[str]:
    """The terms of a --limit pattern: split at commas, or, as Ansible does, at colons
    (`gpus:!gpu-3`) where a term is not an IPv6 address (`2001:db8::7`)."""
    terms: list[str] = []
    for part in (p.strip() for p in pattern.split(",")):
        if not part:
            continue
        bare = part.lstrip("!&")
        if ":" in bare and not bare.startswith("~") and not _looks_like_ipv6(bare):
            terms += [t.strip() for t in part.split(":") if t.strip()]
        else:
            terms.append(part)
    return terms


def _looks_like_ipv6(text: str) -> bool:
    """An IPv6 address or a glob over one (`2001:db8::*`): two colons or more, hex digits."""
    return text.count(":") >= 2 and all(c in "0123456789abcdefABCDEF:.*?[]%" for c in text)


# How long the `~regex` terms of a --limit may take to match every host and group name. Python's
# regular expressions backtrack: `~(a+)+$` over a 40-character name would run for days.
REGEX_TIME_LIMIT_S = 2.0
_REGEX_CHILD = (
    "import json, re, sys\n"
    "d = json.load(sys.stdin)\n"
    "def hits(r):\n"
    "    try:\n"
    "        c = re.compile(r)\n"
    "    except (re.error, RecursionError, OverflowError) as e:\n"
    "        return str(e)\n"
    "    return [i for i, t in enumerate(d['t']) if c.match(t)]\n"
    "print(json.dumps([hits(r) for r in d['r']]))\n"
)


def regex_hits(pattern: str, targets: Sequence[str]) -> dict[str, frozenset[str]]:
    """The names among `targets` that each `~regex` term of a --limit matches, computed by a
    child Python under REGEX_TIME_LIMIT_S (a match cannot be interrupted in a thread, and a
    signal only works in the main thread); a regex past the limit is a UsageError. {} when the
    pattern has no regex."""
    regexes = list(
        dict.fromkeys(t.lstrip("!&")[1:] for t in limit_terms(pattern) if t.lstrip("!&")[:1] == "~")
    )
    if not regexes:
        return {}
    import json
    import subprocess
    import sys

    try:
        child = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _REGEX_CHILD],
            input=json.dumps({"r": regexes, "t": list(targets)}),
            capture_output=True,
            text=True,
            timeout=REGEX_TIME_LIMIT_S,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"--limit pattern {pattern!r}: its regular expression took more than {REGEX_TIME_LIMIT_S:g} s"
            " on the inventory's host and group names (it backtracks without end, like '(a+)+$');"
            " simplify it, or use a glob like 'gpu-*'."
        ) from None
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"--limit pattern {pattern!r}: its regular expression could not be matched ({last})."
        )
    found = json.loads(child.stdout)
    for regex, idx in zip(regexes, found, strict=True):
        if isinstance(idx, str):  # (re.compile's reason; '(' * 10000: too deep)
            term = next(t for t in limit_terms(pattern) if t.lstrip("!&")[1:] == regex)
            raise UsageError(
                f"--limit pattern {term!r} is not a valid regular expression ({idx});"
                " fix it, or use a glob like 'gpu-*'."
            )
    return {r: frozenset(targets[i] for i in idx) for r, idx in zip(regexes, found, strict=True)}


class _LimitTerms:
    """Terms of one role in a --limit (to include, or to exclude), compiled once for all hosts:
    the globs as one regular expression, the `~regex` terms as the names they matched."""

    def __init__(self, pats: Sequence[str], hits: Mapping[str, frozenset[str]] | None) -> None:
        self.all = "all" in pats
        self.ungrouped = "ungrouped" in pats
        globs = [p for p in pats if not p.startswith("~")]
        self.glob = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None
        self.regex_names: set[str] = set()
        self.regexes: list[re.Pattern[str]] = []
        for pat in (p[1:] for p in pats if p.startswith("~")):
            if hits is not None and pat in hits:
                self.regex_names |= hits[pat]
            else:  # (no time-bounded answer given: run it here)
                self.regexes.append(re.compile(pat))

    def hit(self, targets: Sequence[str], ungrouped: bool) -> bool:
        if self.all or (self.ungrouped and ungrouped):  # Ansible's implicit groups
            return True
        if self.glob is not None and any(self.glob.match(t) for t in targets):
            return True
        if any(t in self.regex_names for t in targets):
            return True
        return any(r.match(t) for r in self.regexes for t in targets)


def compile_limit(
    pattern: str, regex_hits: Mapping[str, frozenset[str]] | None = None
) -> Callable[[str, Iterable[str]], bool]:
    """Ansible-style --limit, split and compiled once: comma- (or colon-) separated globs over
    host or group names; `!pat` excludes, `&pat` must also match (intersection), `~regex`
    matches by regular expression, `all` is every host and `ungrouped` a host of no group.
    `regex_hits` (from regex_hits(), time-bounded) answers the `~regex` terms; without it they
    run here. Returns whether a host (its name and groups) is selected."""
    terms = limit_terms(pattern)
    include = _LimitTerms([t for t in terms if not t.startswith(("!", "&"))], regex_hits)
    any_include = any(not t.startswith(("!", "&")) for t in terms)
    require = [_LimitTerms([t[1:]], regex_hits) for t in dict.fromkeys(terms) if t.startswith("&")]
    exclude = _LimitTerms([t[1:] for t in terms if t.startswith("!")], regex_hits)

    def selects(name: str, groups: Iterable[str]) -> bool:
        targets = [name, *groups]
        ungrouped = len(targets) == 1
        if any_include and not include.hit(targets, ungrouped):
            return False
        if not all(r.hit(targets, ungrouped) for r in require):
            return False
        return not exclude.hit(targets, ungrouped)

    return selects


def matches_limit(
    name: str, groups: Iterable[str], pattern: str, regex_hits: Mapping[str, frozenset[str]] | None = None
) -> bool:
    """Whether one host is selected by a --limit pattern (compile_limit, for a single host)."""
    return compile_limit(pattern, regex_hits)(name, groups)


# ---------------------------------------------------------------- loading

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


def load(path: Path | str = "inventory", ssh_config: Path | None = None) -> Inventory:
    """Load an inventory directory or file (native YAML, Ansible YAML or Ansible INI)."""
    path = Path(path)
    if path.is_dir():
        hosts_file = _hosts_file_in(path)
    elif path.exists():
        hosts_file = path
    else:
        raise InventoryError(f"{path}: inventory not found; pass --inventory PATH (default ./inventory).")
    _check_no_ansible_vars_dirs(hosts_file.parent)
    from gpuonboard.inventory import ansible as ansible_inventory

    raw: dict[str, Any]
    ansible = True  # an Ansible inventory: a host without ansible_host is reached by its name
    text = read_text(hosts_file, InventoryError, "inventory")  # (bounded: `/dev/zero` is refused)
    if ansible_inventory.looks_like_ini(hosts_file, text):
        raw = ansible_inventory.load_ini(hosts_file, text)
    else:
        data = parse_yaml(text, hosts_file, InventoryError)
        if data is None:
            raise InventoryError(
                f"{hosts_file}: the inventory is empty; define at least one host under 'hosts:'."
            )
        if not isinstance(data, dict):
            raise InventoryError(
                f"{hosts_file}, line 1: the inventory must be a mapping with a 'hosts:' key."
            )
        ansible = not ansible_inventory.is_native(data)
        raw = ansible_inventory.from_yaml(data, hosts_file) if ansible else data
    assert isinstance(raw, dict)
    return build(raw, hosts_file, ssh_config, name_is_address=ansible)


HOSTS_FILE_NAMES = ("hosts.yml", "hosts.yaml", "hosts.ini", "hosts")
INVENTORY_SUFFIXES = (".yml", ".yaml", ".ini")


def _hosts_file_in(directory: Path) -> Path:
    """The one hosts file of an inventory directory. Only that file is read, so a second hosts
    file or another inventory-looking file beside it (`gpus.yml`, `hosts.ini`) is refused: its
    hosts, groups and order specs would be ignored without a word."""
    try:
        return _one_hosts_file(directory)
    except PermissionError as exc:
        raise InventoryError(
            f"{directory}: cannot read this inventory directory ({exc.strerror}); fix its permissions,"
            " or pass --inventory FILE."
        ) from None


def _one_hosts_file(directory: Path) -> Path:
    found = [directory / n for n in HOSTS_FILE_NAMES if (directory / n).is_file()]
    if not found:
        raise InventoryError(
            f"{directory}: no hosts.yml in this inventory directory; create one (see inventory/ in the"
            " repository for an example) or pass --inventory FILE."
        )
    if len(found) > 1:
        raise InventoryError(
            f"{directory}: this inventory directory holds both {found[0].name} and {found[1].name},"
            f" and gpuonboard reads only one; merge them into {found[0].name} and remove the other,"
            " or pass --inventory FILE."
        )
    extra = sorted(
        p.name
        for p in directory.iterdir()
        if p.suffix in INVENTORY_SUFFIXES and not p.name.startswith(".") and p.is_file() and p != found[0]
    )
    if extra:
        raise InventoryError(
            f"{directory / extra[0]}: gpuonboard reads only {found[0].name} of an inventory directory,"
            f" so the hosts and settings in {extra[0]} would be ignored; move them into {found[0].name},"
            f" or pass --inventory {directory / extra[0]} to use that file instead."
        )
    return found[0]


def _check_no_ansible_vars_dirs(directory: Path) -> None:
    """Ansible's group_vars/ and host_vars/ beside the inventory are not read: a user, port,
    key or order spec in them would be silently ignored, so their presence is an input error."""
    for sub in ("group_vars", "host_vars"):
        if (directory / sub).is_dir():
            raise InventoryError(
                f"{directory / sub}: gpuonboard does not read Ansible's {sub}/ directories, so the"
                f" settings in it would be ignored; move them into the inventory file (a group's or"
                " host's vars), or move the directory away."
            )


def _vendors_dir(raw: Mapping[str, Any], hosts_file: Path) -> Path:
    vd = raw.get("vendors_dir", "vendors")
    return (hosts_file.parent / str(vd)).resolve()


def build(
    raw: dict[str, Any], hosts_file: Path, ssh_config: Path | None = None, name_is_address: bool = False
) -> Inventory:
    """Validate a native-shaped mapping and resolve every host.

    `name_is_address` (an Ansible inventory): a host with no address and no SSH config Host
    entry is reached at its own name, as Ansible does (`10.0.0.7`, `gpu1.example.com`); in our
    own format that host is an error, so a typo in a name never becomes a DNS lookup.
    """
    _check_keys(raw, TOP_KEYS, hosts_file, "the inventory")
    defaults = _mapping(raw.get("defaults") or LineDict(), hosts_file, raw, "defaults")
    _check_host_keys(defaults, hosts_file, "'defaults'")
    hosts_raw = raw.get("hosts")
    if not hosts_raw:
        raise InventoryError(f"{where(hosts_file, raw, 'hosts')}: no hosts defined; add a 'hosts:' mapping.")
    hosts_raw = _mapping(hosts_raw, hosts_file, raw, "hosts")
    if len(hosts_raw) > MAX_HOSTS:
        raise InventoryError(
            f"{where(hosts_file, raw, 'hosts')}: the inventory defines {len(hosts_raw):,} hosts, more"
            f" than the {MAX_HOSTS:,} hosts an inventory may hold; split it."
        )
    for hname in hosts_raw:
        if problem := name_problem("host", hname) or host_name_problem(str(hname)):
            raise InventoryError(f"{where(hosts_file, hosts_raw, hname)}: {problem}")
    groups_raw = _mapping(raw.get("groups") or LineDict(), hosts_file, raw, "groups")
    for gname in groups_raw:
        if problem := name_problem("group", gname):
            raise InventoryError(f"{where(hosts_file, groups_raw, gname)}: {problem}")
    vendors_dir = _vendors_dir(raw, hosts_file)
    vendors = load_vendors(vendors_dir)
    groups: dict[str, tuple[str, ...]] = {}
    group_vars: dict[str, Mapping[str, Any]] = {}
    for gname, gdef in groups_raw.items():
        gdef = _mapping(gdef or LineDict(), hosts_file, groups_raw, gname, f"group {gname!r}")
        _check_keys(gdef, GROUP_KEYS, hosts_file, f"group {gname!r}")
        members = gdef.get("hosts") or []
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise InventoryError(
                f"{where(hosts_file, gdef, 'hosts')}: group {gname!r} 'hosts' must be a list of host names."
            )
        for m in members:
            if m not in hosts_raw:
                raise InventoryError(
                    f"{where(hosts_file, gdef, 'hosts')}: group {gname!r} lists unknown host {m!r};"
                    f" define it under 'hosts:' or remove it from the group"
                    f"{did_you_mean(m, hosts_raw) or '.'}"
                )
        gvars = _mapping(gdef.get("vars") or LineDict(), hosts_file, gdef, "vars", f"group {gname!r} vars")
        _check_host_keys(gvars, hosts_file, f"group {gname!r} vars")
        groups[gname] = tuple(members)
        group_vars[gname] = gvars
        if gname in hosts_raw and gname not in members and members:
            raise InventoryError(
                f"{where(hosts_file, groups_raw, gname)}: group {gname!r} has the name of a host that is"
                f" not in it, so --limit {gname} would take that host and the group's hosts"
                f" ({', '.join(members)}) alike; rename the group or the host."
            )
    ssh_cfg, ssh_cfg_path = _ssh_config(ssh_config, raw, defaults, hosts_file)
    hosts: dict[str, Host] = {}
    key_file_origins: dict[str, tuple[str, str]] = {}
    for hname, hdef in hosts_raw.items():
        hdef = _mapping(hdef or LineDict(), hosts_file, hosts_raw, hname, f"host {hname!r}")
        _check_host_keys(hdef, hosts_file, f"host {hname!r}")
        member_of = tuple(g for g, ms in groups.items() if hname in ms)
        layers: list[tuple[Mapping[str, Any], str]] = [(defaults, "defaults")]
        layers += [(group_vars[g], f"group {g!r}") for g in member_of]
        layers.append((hdef, f"host {hname!r}"))
        hosts[hname] = _resolve_host(
            hname,
            layers,
            member_of,
            vendors,
            hosts_file,
            ssh_cfg,
            vendors_dir,
            where(hosts_file, hosts_raw, hname),
            name_is_address,
        )
        origin = _key_file_origin(hname, layers, hosts[hname], hosts_file, ssh_cfg, ssh_cfg_path)
        if origin is not None:
            key_file_origins[hname] = origin
    for host in hosts.values():
        if host.name in host.jump:
            raise InventoryError(
                f"{where(hosts_file, hosts_raw, host.name)}: host {host.name!r} lists itself as its"
                " own jump host; remove it from 'jump'."
            )
        for hop in host.jump:
            if problem := name_problem("jump host", hop):
                raise InventoryError(
                    f"{where(hosts_file, hosts_raw, host.name)}: host {host.name!r} {problem}"
                )
            problem = jump_problem(hop, hosts)
            if problem:
                raise InventoryError(
                    f"{where(hosts_file, hosts_raw, host.name)}: host {host.name!r} jump host {hop!r}"
                    f" {problem}"
                )
    chains = {name: _jump_chain(name, hosts, hosts_file, hosts_raw) for name in hosts}
    hosts = {name: replace(h, jump=chains[name]) for name, h in hosts.items()}
    return Inventory(
        source=hosts_file, hosts=hosts, groups=groups, vendors=vendors, key_file_origins=key_file_origins
    )


# jump hosts in front of one host: one ssh per hop; real chains are one or two bastions
MAX_JUMP_HOPS = 16


def _jump_chain(
    name: str,
    hosts: Mapping[str, Host],
    path: Path,
    hosts_raw: Mapping[str, Any],
    trail: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """Every hop in front of `name`, first hop first. A first hop that is an inventory host with
    a jump of its own is reached through that jump too, as OpenSSH's ProxyJump does (the
    connection opens the flat chain: without this, the bastion's own jump host was skipped and
    its private address dialled directly). A chain that comes back to a host is refused."""
    trail = (*trail, name)
    hops = hosts[name].jump
    if not hops:
        return ()
    if len(trail) + len(hops) > MAX_JUMP_HOPS + 1:  # (before recursing: 1,200 hops crashed it)
        raise InventoryError(
            f"{where(path, hosts_raw, trail[0])}: host {trail[0]!r} is reached through more than"
            f" {MAX_JUMP_HOPS} jump hosts (its 'jump', their own 'jump' ...); shorten the chain."
        )
    first = hops[0]
    if first in trail:
        loop = " -> ".join((*trail[trail.index(first) :], first))
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} field 'jump' makes a loop of jump hosts"
            f" ({loop}); one of them must be reachable without the others: fix its 'jump'."
        )
    before = _jump_chain(first, hosts, path, hosts_raw, trail) if first in hosts else ()
    literal = next((h for h in before if h not in hosts), None)
    if literal is not None:  # (a `user@host:port` hop takes the key of the host it is a hop of:
        # in front of `name`, that would be name's key, not the jump host's own)
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} jumps through {first!r}, whose own jump"
            f" {literal!r} is not an inventory host, so it would be reached with {name!r}'s key and user;"
            f" add {literal!r} as an inventory host (with its address, user and key_file) and name it"
            f" in {first!r}'s jump."
        )
    chain = (*before, *hops)
    if name in chain or len(set(chain)) < len(chain):
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} field 'jump' makes a loop of jump hosts"
            f" ({' -> '.join((*chain, name))}); one of them must be reachable without the others: fix"
            " its 'jump'."
        )
    return chain


def _key_file_origin(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    host: Host,
    path: Path,
    ssh_cfg: Any,
    ssh_cfg_path: Path | None,
) -> tuple[str, str] | None:
    """Where host's key_file was set, as `pick` chose it: a host or group layer, else the SSH
    config's IdentityFile of its Host entry, else the vendor profile or defaults."""
    if not host.key_file:
        return None
    found: tuple[Mapping[str, Any], str] | None = None
    for layer, label in layers:
        if "key_file" in layer:
            found = (layer, label)
    if found is not None and found[1].startswith(("host ", "group ")):
        return where(path, found[0], "key_file"), found[1]
    if _uses_ssh_config_entry(name, layers, ssh_cfg) and "identityfile" in ssh_cfg.lookup(name):
        return str(ssh_cfg_path), "ssh_config"
    vendor = host.vendor
    if vendor is not None and "key_file" in vendor.host_defaults:
        return where(Path(vendor.source), vendor.host_defaults, "key_file"), f"vendor {vendor.id!r}"
    if found is not None:
        return where(path, found[0], "key_file"), found[1]
    return None


def _mapping(value: Any, path: Path, parent: Any, key: str, label: str | None = None) -> LineDict:
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


def _check_keys(mapping: Mapping[str, Any], allowed: Iterable[str], path: Path, label: str) -> None:
    allowed = set(allowed)
    for key in mapping:
        if key not in allowed:
            raise InventoryError(
                f"{where(path, mapping, key)}: {label} has an unknown key {key!r}"
                f"{did_you_mean(key, allowed) or '; allowed keys: ' + ', '.join(sorted(allowed)) + '.'}"
            )


def _check_host_keys(mapping: Mapping[str, Any], path: Path, label: str) -> None:
    _check_keys(mapping, HOST_KEYS, path, label)


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        cur = out.get(k)
        if path == ("order",) and k == "data_disk":
            cur, v = _disk_mappings(cur, v)
        if isinstance(v, Mapping) and isinstance(cur, Mapping):
            out[k] = _deep_merge(dict(cur), v, (*path, k))
        else:
            out[k] = v
    return out


# Settings whose explicit null would silently drop what a group, the vendor or the defaults
# give: `order:` left empty on a host dropped its group's order, so nothing was checked. (A
# null `jump`, `key_file`, `host_key` or `vendor` says "none" on purpose and stays allowed; a
# null port, user or timeout is refused by its own check.) Inside an order, every field.
NULL_DROPS = ("order", "data_dir", "vars")


def _refuse_dropping_null(
    layer: Mapping[str, Any], label: str, set_by: dict[tuple[str, ...], str], file: Path
) -> None:
    """A null in `layer` for a value an earlier layer set (`set_by`: key path -> that layer's
    label) is refused, naming both; then `set_by` records what `layer` sets."""

    def walk(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> None:
        for key, value in mapping.items():
            if not keys and key not in NULL_DROPS:
                continue
            here = (*keys, key)
            if value is None and here in set_by:
                who = set_by[here]
                field = f"field {key!r}" if not keys else f"{' '.join(keys)} field {key!r}"
                raise InventoryError(
                    f"{where(file, mapping, key)}: {label} {field} is empty (null), which would drop"
                    f" the {key!r} of {who}; remove the key to inherit {_possessive(who)} {key}."
                )
            if value is not None:
                set_by[here] = label
            if isinstance(value, Mapping) and here[0] == "order":
                walk(value, here)

    walk(layer, ())


def _possessive(label: str) -> str:
    """`group 'g'` -> `the group's`, `defaults` -> `the defaults'`."""
    kind = label.split()[0]
    return f"the {kind}'" if kind.endswith("s") else f"the {kind}'s"


def _disk_mappings(base: Any, over: Any) -> tuple[Any, Any]:
    """Pure: an order's `data_disk: /data` is short for `{mount: /data}`, and merges key by key
    with a mapping in another layer like one (a vendor's `data_disk: /data` under a host's
    `data_disk: {min_size: 7TB}` was replaced whole: "'mount' must be an absolute path")."""
    if isinstance(base, str) and isinstance(over, Mapping):
        return {"mount": base}, over
    if isinstance(over, str) and isinstance(base, Mapping):
        return base, {"mount": over}
    return base, over


def _vendor_suggestion(word: str, vendors: Iterable[str]) -> str:
    """`; did you mean 'x'?` for an unknown vendor, also across case (`Wuhan-IDC`)."""
    vendors = list(vendors)
    same = [v for v in vendors if v.casefold() == word.casefold()]
    return f"; did you mean {same[0]!r}?" if same else did_you_mean(word, vendors)


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


# `$HOME/.ssh/id` or `${KEYS}/id` in a key_file
_ENV_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def _expand_path(value: str) -> tuple[str, str | None]:
    """`~` and `$VAR`/`${VAR}` expanded, as Ansible does for a key file; and the name of a
    variable that is not set (then the path is not used), else None."""
    for match in _ENV_VAR.finditer(value):
        name = match.group(1).strip("{}")
        if name not in os.environ:
            return value, name
    return os.path.expanduser(os.path.expandvars(value)), None


def _resolve_host(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    groups: tuple[str, ...],
    vendors: dict[str, Vendor],
    path: Path,
    ssh_cfg: Any,
    vendors_dir: Path,
    host_where: str,
    name_is_address: bool = False,
) -> Host:
    vendor_id: str | None = None
    vendor_src: tuple[Mapping[str, Any], str] | None = None
    for layer, label in layers:
        if "vendor" in layer:
            vendor_id, vendor_src = layer["vendor"], (layer, label)
    vendor = None
    vendor_layer: Mapping[str, Any] = {}
    if vendor_id is not None:
        assert vendor_src is not None
        if not isinstance(vendor_id, str) or vendor_id not in vendors:
            raise InventoryError(
                f"{where(path, vendor_src[0], 'vendor')}: {vendor_src[1]} names unknown vendor"
                f" {vendor_id!r}; vendor profiles are the files <name>.yml in {vendors_dir}"
                f"{_vendor_suggestion(str(vendor_id), vendors) or '.'}"
            )
        vendor = vendors[vendor_id]
        vendor_layer = vendor.host_defaults
    merged: dict[str, Any] = {}
    origin: dict[str, tuple[Mapping[str, Any], str]] = {}
    ordered = [layers[0], (vendor_layer, f"vendor {vendor_id!r}"), *layers[1:]]

    def file_of(label: str) -> Path:
        return Path(vendor.source) if vendor is not None and label.startswith("vendor ") else path

    set_by: dict[tuple[str, ...], str] = {}  # which layer set each value a null could drop
    for layer, label in ordered:
        _refuse_dropping_null(layer, label, set_by, file_of(label))
        merged = _deep_merge(merged, layer)
        for k in layer:
            origin[k] = (layer, label)

    def err(key: str, problem: str) -> InventoryError:
        src, label = origin.get(key, (LineDict(), f"host {name!r}"))
        return InventoryError(f"{where(file_of(label), src, key)}: {label} field {key!r} {problem}")

    # only an explicit `Host <name>` entry applies: a `Host *` block would otherwise override
    # the vendor profile and defaults for every host
    sshc = ssh_cfg.lookup(name) if _uses_ssh_config_entry(name, layers, ssh_cfg) else {}
    if sshc:
        sshc = _followable(name, sshc, ssh_cfg)

    def pick(key: str, ssh_key: str, default: Any) -> Any:
        """An SSH config Host entry is host-specific: it beats defaults and vendor, not host/group."""
        label = origin.get(key, (None, ""))[1]
        if key in merged and label.startswith(("host ", "group ")):
            return merged[key]
        if ssh_key in sshc:
            value = sshc[ssh_key]
            return value[0] if ssh_key == "identityfile" else value
        return merged.get(key, default)

    connection = merged.get("connection", "ssh")
    if connection not in CONNECTIONS:
        raise err("connection", f"must be one of {', '.join(CONNECTIONS)}, not {connection!r}.")
    address = merged.get("address")
    if address is None:
        hostname = sshc.get("hostname")
        if connection == "local":
            address = "localhost"
        elif hostname and hostname != name or name in _ssh_config_aliases(ssh_cfg):
            address = hostname or name
        elif name_is_address:  # Ansible: inventory_hostname is the address without ansible_host
            address = name
        else:
            raise InventoryError(
                f"{host_where}: host {name!r} has no 'address' and no Host entry in the SSH"
                " config; add address: <IP or DNS name>."
            )
    if not isinstance(address, str) or not address.strip():
        raise err("address", "must be a host name or IP address string.")
    if (bad := bad_host_char(address.strip())) is not None:
        raise err(
            "address",
            f"{address!r} is not a host name or IP address (it holds {bad!r}); write only the host"
            " name or IP address.",
        )
    address, problem = split_address(address.strip())
    if problem:
        raise err("address", problem)
    port = pick("port", "port", 22)
    if isinstance(port, str) and is_digits(port):
        port = int(port)
    if problem := PORT_RANGE.problem(port):
        raise err("port", problem)
    user = pick("user", "user", "root")
    if not isinstance(user, str) or not user:
        raise err("user", "must be a user name string.")
    key_file = pick("key_file", "identityfile", None)
    if key_file is not None and not isinstance(key_file, str):
        raise err("key_file", "must be a path string.")
    if key_file:
        key_file, unset = _expand_path(key_file)
        if unset is not None:
            raise err(
                "key_file",
                f"{key_file!r} uses the environment variable {unset!r}, which is not set; set it,"
                " or write the path out.",
            )
        if not os.path.isabs(key_file):
            key_file = str((path.parent / key_file).resolve())
    use_agent = merged.get("use_agent", True)
    if not isinstance(use_agent, bool):
        raise err("use_agent", "must be true or false.")
    jump_raw = pick("jump", "proxyjump", None)
    jump = _parse_jump(jump_raw, err)
    host_key = merged.get("host_key")
    if host_key is not None and (not isinstance(host_key, str) or not host_key.startswith("SHA256:")):
        raise err("host_key", "must be an OpenSSH fingerprint like SHA256:abc... (ssh-keygen -lf KEY).")
    timeout = merged.get("connect_timeout", 10)
    if problem := CONNECT_TIMEOUT_RANGE.problem(timeout):
        raise err("connect_timeout", problem)
    data_dir = merged.get("data_dir", vendor.data_dir if vendor else None)
    if data_dir is not None and not isinstance(data_dir, str):
        raise err("data_dir", "must be a path string.")
    if data_dir is not None:
        if problem := data_dir_problem(data_dir):
            raise err("data_dir", problem)
        data_dir = normal_remote_path(data_dir)
    hvars = merged.get("vars", {})
    if not isinstance(hvars, Mapping):
        raise err("vars", "must be a mapping of name: value.")
    order_src = origin.get("order", (LineDict(), f"host {name!r}"))
    order_origins: dict[str, tuple[Path, Mapping[str, Any], str]] = {}
    for layer, label in ordered:
        if isinstance(layer.get("order"), Mapping):
            order_origins.update({k: (file_of(label), layer["order"], label) for k in layer["order"]})
    order = parse_order(
        merged.get("order") or {}, file_of(order_src[1]), order_src[0], order_src[1], order_origins
    )
    return Host(
        name=name,
        address=address,
        port=port,
        user=user,
        key_file=key_file,
        use_agent=use_agent,
        jump=jump,
        host_key=host_key,
        vendor=vendor,
        order=order,
        connection=connection,
        data_dir=data_dir,
        connect_timeout=float(timeout),
        groups=groups,
        vars=dict(hvars),
    )


def jump_problem(hop: str, hosts: Mapping[str, Host]) -> str | None:
    """Why a jump spec cannot work (None when fine): an inventory host, or [user@]host[:port]."""
    if hop in hosts:
        return None
    _, _, rest = hop.rpartition("@")
    addr, port = rest, "22"
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else "22"
    elif rest.count(":") == 1:
        addr, port = rest.split(":")
    if not is_digits(port) or not 1 <= int(port) <= 65535:
        return f"has a bad port {port!r}; write user@host:port with a number from 1 to 65535."
    if not addr:
        return "has no host name."
    user = hop.rpartition("@")[0]
    if addr.startswith("-") or user.startswith("-"):  # (an ssh option, not a host)
        return "starts with '-'; write user@host:port, a host never starts with '-'."
    if (bad := bad_host_char(addr) or (bad_host_char(user) if user else None)) is not None or "@" in addr:
        return f"holds {bad or '@'!r}, which no user or host name holds; write user@host:port."
    if "@" not in hop and ":" not in hop and "." not in addr:
        return (
            f"is neither an inventory host nor an address{did_you_mean(addr, hosts) or ''};"
            " name an inventory host or write user@host:port."
        )
    return None


def _parse_jump(value: Any, err: Any) -> tuple[str, ...]:
    if value is None or value == "" or value == "none":
        return ()
    if isinstance(value, str):
        hops = [h.strip() for h in value.split(",") if h.strip()]
    elif isinstance(value, list) and all(isinstance(h, str) and h.strip() for h in value):
        hops = [h.strip() for h in value]
    else:
        raise err("jump", "must be a host name, user@host:port, or a list of them.")
    return tuple(hops)


_RDMA = re.compile(r"(\d+)\s*[x×*]\s*(\d+(?:\.\d+)?)\s*(G|Gb|Gbit|Gbps|Gb/s)", re.I | re.ASCII)


def parse_rdma(value: object) -> tuple[int, float]:
    """An order's `rdma` field, COUNTxRATE with the rate in Gb/s (`8x400G`, `8 x 400Gbps`,
    `2x200Gb/s`) -> (8, 400.0); ValueError with the reason otherwise."""
    if not isinstance(value, str) or not (m := _RDMA.fullmatch(value.strip())):
        raise ValueError(f'must be ports x rate like "8x400G" (8 ports of 400 Gb/s each), not {shown(value)}')
    count, rate = int(m.group(1)), float(m.group(2))
    if count < 1 or rate <= 0:
        raise ValueError(f"is {value!r}, which checks nothing; give at least 1 port and a rate above 0")
    for rule, number in ((RDMA_PORTS_RANGE, count), (RDMA_GBITS_RANGE, rate)):
        if problem := rule.problem(number):
            raise ValueError(
                f"is {shown(value)}: the {'ports' if number is count else 'rate'} {problem[:-1]}"
            )
    return count, rate


def parse_order(
    raw: Any,
    path: Path,
    parent: Mapping[str, Any],
    label: str,
    origins: Mapping[str, tuple[Path, Mapping[str, Any], str]] | None = None,
) -> OrderSpec:
    """Validate an order mapping into an OrderSpec; errors name file, line and field.

    `origins` maps each key of a merged order (group + host ...) to the file, mapping and
    label it came from, so an error points where the bad value was written.
    """
    if not isinstance(raw, Mapping):
        raise InventoryError(f"{where(path, parent, 'order')}: {label} 'order' must be a mapping.")
    src = raw if isinstance(raw, LineDict) else parent

    def origin(key: str) -> tuple[Path, Mapping[str, Any], str]:
        return (origins or {}).get(key) or (path, src, label)

    def at(key: str) -> tuple[str, str]:
        file, mapping, who = origin(key)
        return where(file, mapping, key), who

    for key in raw:
        if key not in ORDER_KEYS:
            loc, who = at(key)
            raise InventoryError(
                f"{loc}: {who} order has an unknown key {key!r}"
                f"{did_you_mean(key, ORDER_KEYS) or '; allowed: ' + ', '.join(sorted(ORDER_KEYS)) + '.'}"
            )

    def fail(key: str, problem: str) -> InventoryError:
        loc, who = at(key)
        return InventoryError(f"{loc}: {who} order field {key!r} {problem}")

    def size(key: str, parse: Callable[[object], int] = parse_size) -> int | None:
        if raw.get(key) is None:
            return None
        if isinstance(raw[key], int | float) and not isinstance(raw[key], bool):
            raise fail(
                key, f"needs a unit, like {raw[key]}GB or {raw[key]}GiB (a bare number would mean bytes)."
            )
        try:
            value = parse(raw[key])
        except (ValueError, OverflowError) as exc:  # (400 digits: a float of inf, no int)
            raise fail(key, f"is not a valid size: {exc}.") from None
        if value <= 0:  # (a minimum of nothing: the box would pass whatever it holds)
            raise fail(
                key, f"is {raw[key]!r}, which checks nothing; give the size ordered, or remove the line."
            )
        if value > SIZE_MAX_BYTES:
            raise fail(key, f"is {raw[key]!r}, more than any box holds (at most 1 EiB); fix the size.")
        return value

    def count(key: str, rule: NumberRange) -> int | None:
        v = raw.get(key)
        if v is None:
            return None
        if problem := rule.problem(v):
            raise fail(key, problem)
        assert isinstance(v, int)
        return v

    gpu_model = raw.get("gpu_model")
    if gpu_model is not None and not isinstance(gpu_model, str):
        raise fail("gpu_model", "must be a text like 'A100 80GB SXM'.")
    if gpu_model is not None and not gpu_model.strip():
        # (an empty model would not be checked at all: the box would pass whatever GPU it holds)
        raise fail("gpu_model", "is empty; give the model ordered, like 'A100 80GB SXM', or remove the line.")
    interconnect = raw.get("interconnect")
    if interconnect is not None and interconnect not in INTERCONNECTS:
        raise fail("interconnect", f"must be one of {', '.join(INTERCONNECTS)}, not {interconnect!r}.")
    min_driver = raw.get("min_driver")
    if isinstance(min_driver, float):
        raise fail(
            "min_driver",
            f'must be quoted text like "550.90"; unquoted, YAML reads it as the number {min_driver!r}.',
        )
    if min_driver is not None:
        if isinstance(min_driver, bool) or not isinstance(min_driver, str | int):
            raise fail("min_driver", 'must be a driver version like "535.54".')
        min_driver = str(min_driver)
        if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)*", min_driver):
            raise fail("min_driver", f'must be a driver version like "535.54", not {min_driver!r}.')
    rdma = None
    if raw.get("rdma") is not None:
        try:
            rdma = parse_rdma(raw["rdma"])
        except ValueError as exc:
            raise fail("rdma", f"{exc}.") from None
    disk = raw.get("data_disk")
    data_disk = None
    if disk is not None:
        if isinstance(disk, str):
            disk = {"mount": disk}
        if not isinstance(disk, Mapping):
            raise fail("data_disk", "must be a mapping with 'mount' and 'min_size'.")
        dfile, dparent, dlabel = origin("data_disk")

        def disk_at(key: str) -> str:
            if isinstance(disk, LineDict) and key in disk:
                return where(dfile, disk, key)
            return where(dfile, dparent, "data_disk")

        for key in disk:
            if key not in DATA_DISK_KEYS:
                raise InventoryError(
                    f"{disk_at(key)}: {dlabel} order data_disk has an unknown key {key!r}"
                    f"{did_you_mean(key, DATA_DISK_KEYS) or '; allowed: mount, min_size.'}"
                )
        mount = disk.get("mount")
        if problem := remote_path_problem(mount):
            raise InventoryError(f"{disk_at('mount')}: {dlabel} order data_disk 'mount' {problem}")
        assert isinstance(mount, str)
        mount = normal_remote_path(mount)
        if mount == "/":
            raise InventoryError(
                f"{disk_at('mount')}: {dlabel} order data_disk 'mount' must not be '/' (the system disk);"
                " give the data disk's own mount point, like /data."
            )
        min_size = None
        if isinstance(disk.get("min_size"), int | float) and not isinstance(disk.get("min_size"), bool):
            raise InventoryError(
                f"{disk_at('min_size')}: {dlabel} order data_disk field 'min_size' needs a unit,"
                f" like {disk['min_size']}TB (a bare number would mean bytes)."
            )
        if disk.get("min_size") is not None:
            try:
                min_size = parse_size(disk["min_size"])
                if min_size > SIZE_MAX_BYTES:
                    raise ValueError(f"{disk['min_size']!r} is more than any disk holds (at most 1 EiB)")
            except (ValueError, OverflowError) as exc:
                raise InventoryError(
                    f"{disk_at('min_size')}: {dlabel} order data_disk field 'min_size'"
                    f" is not a valid size: {exc}."
                ) from None
            if min_size <= 0:
                raise InventoryError(
                    f"{disk_at('min_size')}: {dlabel} order data_disk field 'min_size' is"
                    f" {disk['min_size']!r}, which checks nothing; give the size ordered, or remove the line."
                )
        data_disk = DataDiskSpec(mount=mount, min_size_bytes=min_size)
    return OrderSpec(
        gpu_model=gpu_model,
        gpu_count=count("gpu_count", GPU_COUNT_RANGE),
        vram_bytes=size("vram"),
        cpu_cores=count("cpu_cores", CPU_CORES_RANGE),
        ram_bytes=size("ram", parse_ram_size),  # RAM is sold in binary sizes: 0.5TB = 512 GiB
        data_disk=data_disk,
        interconnect=interconnect,
        min_driver=min_driver,
        rdma=rdma,
    )


# ---------------------------------------------------------------- vendors


def load_vendors(directory: Path) -> dict[str, Vendor]:
    """Load every vendor profile `vendors/<id>.yml`; the file stem is the vendor id."""
    vendors: dict[str, Vendor] = {}
    if not directory.is_dir():
        return vendors
    seen: dict[str, Path] = {}
    for f in sorted(directory.glob("*.y*ml")):
        if f.name.startswith("."):  # an editor's lock or swap file (`.#wuhan-idc.yml`), not a profile
            continue
        if problem := name_problem("vendor", f.stem):  # (the file name is the vendor id)
            raise InventoryError(f"{directory}: vendor profile file {f.name!r}: {problem}")
        if f.stem in seen:
            raise InventoryError(
                f"{f}: vendor {f.stem!r} has two profiles, {seen[f.stem].name} and {f.name}, and only one"
                " would be used; merge them into one file and remove the other."
            )
        seen[f.stem] = f
        vendors[f.stem] = load_vendor(f)
    return vendors


def load_vendor(path: Path) -> Vendor:
    """Validate one vendor profile file."""
    data = load_yaml(path, InventoryError, "vendor profile")
    if data is None:
        data = LineDict()
    if not isinstance(data, dict):
        raise InventoryError(
            f"{path}, line 1: a vendor profile must be a mapping (name:, ssh:, billing: ...)."
        )
    _check_keys(data, VENDOR_KEYS, path, f"vendor {path.stem!r}")

    def text(key: str) -> str | None:
        v = data.get(key)
        if v is None:
            return None
        if not isinstance(v, str | int):
            raise InventoryError(
                f"{where(path, data, key)}: vendor {path.stem!r} field {key!r} must be a text."
            )
        return str(v)

    def mirrors(key: str) -> str | tuple[str, ...] | None:
        v = data.get(key)
        if isinstance(v, list):
            if not v or not all(isinstance(m, str) and m.strip() for m in v):
                raise InventoryError(
                    f"{where(path, data, key)}: vendor {path.stem!r} field {key!r} must be a mirror or a"
                    " list of mirrors (texts), tried in order."
                )
            return tuple(v)
        return text(key)

    # The host-settings layer this profile contributes; it keeps line numbers so a bad value
    # is reported at its line in this file.
    layer = LineDict()
    layer.line = data.line if isinstance(data, LineDict) else None
    layer.key_lines = {}
    ssh = data.get("ssh") or {}
    if not isinstance(ssh, dict):
        raise InventoryError(f"{where(path, data, 'ssh')}: vendor {path.stem!r} 'ssh' must be a mapping.")
    _check_keys(ssh, SSH_DEFAULT_KEYS, path, f"vendor {path.stem!r} ssh")
    for key, value in ssh.items():
        layer[key] = value
        _copy_line(layer, key, ssh)
    # data_dir belongs in the layer too, so the profile's value beats `defaults:` (vendor > defaults).
    for key in ("order", "vars", "data_dir"):
        if data.get(key) is not None:
            layer[key] = data[key]
            _copy_line(layer, key, data)
    billing_raw = data.get("billing") or {}
    if not isinstance(billing_raw, dict):
        raise InventoryError(
            f"{where(path, data, 'billing')}: vendor {path.stem!r} 'billing' must be a mapping."
        )
    _check_keys(billing_raw, BILLING_KEYS, path, f"vendor {path.stem!r} billing")
    unit = billing_raw.get("unit", "hour")
    if unit not in BILLING_UNITS:
        raise InventoryError(
            f"{where(path, billing_raw, 'unit')}: vendor {path.stem!r} billing 'unit' must be one of"
            f" {', '.join(BILLING_UNITS)}, not {unit!r}."
        )
    rates: dict[str, float | None] = {}
    for key in ("rate", "monthly_rate"):
        v = billing_raw.get(key)
        if v is not None and (problem := RATE_RANGE.problem(v)):
            raise InventoryError(
                f"{where(path, billing_raw, key)}: vendor {path.stem!r} billing {key!r} {problem}"
            )
        rates[key] = float(v) if v is not None else None
    data_dir = text("data_dir")
    if data_dir is not None:
        if problem := data_dir_problem(data_dir):
            raise InventoryError(
                f"{where(path, data, 'data_dir')}: vendor {path.stem!r} 'data_dir' {problem}"
            )
        data_dir = normal_remote_path(data_dir)
    vendor = Vendor(
        id=path.stem,
        name=text("name") or path.stem,
        licence=text("licence"),
        icp=text("icp"),
        data_dir=data_dir,
        registry_mirror=mirrors("registry_mirror"),
        billing=Billing(
            unit=unit,
            unit_given="unit" in billing_raw,
            rate=rates["rate"],
            currency=str(billing_raw.get("currency", "")),
            monthly_rate=rates["monthly_rate"],
        ),
        shutdown_command=_shutdown_command(text("shutdown_command"), path, data),
        source=str(path),
        host_defaults=layer,
    )
    return vendor


def _shutdown_command(value: str | None, path: Path, data: Mapping[str, Any]) -> str:
    """The profile's shutdown command; a blank one is refused, not replaced by the default:
    `shutdown_command: ""` may mean "never power off" and must not become `shutdown -h now`."""
    if value is None:
        return "shutdown -h now"
    if not value.strip():
        raise InventoryError(
            f"{where(path, data, 'shutdown_command')}: vendor {path.stem!r} field 'shutdown_command'"
            " is empty; give the command that powers the box off, or remove the line for"
            " `shutdown -h now`."
        )
    return value


def _copy_line(target: LineDict, key: str, source: Mapping[str, Any]) -> None:
    line = source.line_of(key) if isinstance(source, LineDict) else None
    if line is not None:
        target.key_lines[key] = line


# ---------------------------------------------------------------- ssh config


def _ssh_config(
    explicit: Path | None, raw: Mapping[str, Any], defaults: Mapping[str, Any], hosts_file: Path
) -> tuple[Any, Path | None]:
    """paramiko.SSHConfig (and its path) from --ssh-config, the inventory's ssh_config key, or
    ~/.ssh/config; (None, None) when there is none."""
    candidate = explicit
    if candidate is None and raw.get("ssh_config"):
        candidate = (hosts_file.parent / os.path.expanduser(str(raw["ssh_config"]))).resolve()
        if not candidate.is_file():
            raise InventoryError(f"{where(hosts_file, raw, 'ssh_config')}: SSH config {candidate} not found.")
    if candidate is None:
        env = os.environ.get("GPUONBOARD_SSH_CONFIG")
        candidate = Path(env) if env else Path.home() / ".ssh" / "config"
    if not candidate.is_file():
        return None, None
    from gpuonboard.inventory.sshconfig import (  # paramiko's, made to run nothing
        MAX_CONFIG_BYTES,
        UserSSHConfig,
    )

    text = read_text(candidate, InventoryError, "SSH config", MAX_CONFIG_BYTES)  # (bounded)
    try:
        return UserSSHConfig.from_text_at(text, candidate), candidate
    except Exception as exc:  # paramiko raises plain exceptions on bad lines
        raise InventoryError(f"{candidate}: cannot parse this SSH config ({exc}).") from None


def _followable(name: str, sshc: Mapping[str, Any], cfg: Any) -> dict[str, Any]:
    """The SSH config settings of a host that takes them from there, with a ProxyCommand of the
    form `ssh -W %h:%p [user@]bastion` as the ProxyJump it means; an Include (paramiko does not
    follow it: its Host blocks would be silently missed) or any other ProxyCommand (dropped, it
    connected directly, skipping the bastion) is an InventoryError naming the file and line."""
    cfg_path = getattr(cfg, "path", None) or "the SSH config"
    out = dict(sshc)
    if "include" in out:
        line = getattr(cfg, "include_lines", {}).get(str(out["include"]).strip())
        raise InventoryError(
            f"{cfg_path}{f', line {line}' if line else ''}: host {name!r} takes its settings from this"
            f" SSH config, and gpuonboard does not follow Include: copy the Host block into"
            f" {cfg_path} or give the host an address in the inventory."
        )
    command = out.pop("proxycommand", None)
    if command is not None and "proxyjump" not in out:
        from gpuonboard.inventory.ansible import _jump_of_proxy_command

        raw = cfg.unexpanded(name, "proxycommand") if hasattr(cfg, "unexpanded") else command
        try:
            out["proxyjump"] = _jump_of_proxy_command(str(raw))
        except ValueError as exc:
            raise InventoryError(f"{cfg_path}: Host {name!r} {exc}.") from None
    return out


def _uses_ssh_config_entry(name: str, layers: Iterable[tuple[Mapping[str, Any], str]], cfg: Any) -> bool:
    """Whether the SSH config's `Host <name>` entry supplies this host's settings: only for a
    host whose address the inventory does not give. With an address (`ansible_host`), that entry
    may describe another machine (an old rental of the same name); as in Ansible, which then
    looks the address up, its Port and User must not be mixed into the inventory's host."""
    if any("address" in layer for layer, _ in layers):
        return False
    return name in _ssh_config_aliases(cfg)


def _ssh_config_aliases(cfg: Any) -> frozenset[str]:
    """The plain host names (no pattern) of the SSH config's Host lines, worked out once per
    config (per host, 1,000 hosts x 8,000 Host lines took over 30 s)."""
    if cfg is None:
        return frozenset()
    aliases: frozenset[str] | None = getattr(cfg, "_gpuonboard_aliases", None)
    if aliases is None:
        aliases = frozenset(h for h in cfg.get_hostnames() if not any(c in h for c in "*?!"))
        cfg._gpuonboard_aliases = aliases
    return aliases
