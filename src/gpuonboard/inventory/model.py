"""The typed inventory: hosts with every setting resolved, vendor profiles, order specs, and the
`Inventory` that holds them, picks hosts for a run (`select`: --host, --group, --limit) and
checks their key files before connecting. Data: built by `load`, never read from a file here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError, UsageError
from gpuonboard.inventory.limit import (
    check_terms,
    limit_problem,
    limit_selection,
    limit_terms,
    regex_hits,
    terms_problem,
    with_files,
)
from gpuonboard.yamlload import did_you_mean


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
    # the fabric `rdma` names ("InfiniBand", "Ethernet" for RoCE; None: either), and a NIC model
    # word it names that is not checked ("ConnectX-7"; "" where none): inventory/rdma_order.py
    rdma_layer: str | None = None
    rdma_nic: str = ""
    rdma_generation: str | None = None  # the InfiniBand generation `rdma` names ("FDR10"; None: none)


@dataclass(frozen=True)
class Billing:
    """How the vendor bills: unit of billing, hourly rate, currency."""

    unit: str = "hour"
    rate: float | None = None
    currency: str = ""
    monthly_rate: float | None = None
    unit_given: bool = False  # the profile names `billing.unit` (else `unit` is an assumption)
    # whether billing stops once the box's OS powers it off: "stops", "continues" (billed until
    # the instance is deleted or deallocated), "" where the profile does not say
    after_poweroff: str = ""


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
    # from the user's SSH config (never set by the inventory itself): the IdentityFiles after
    # the first (key_file), tried in order; CertificateFiles; a ProxyCommand the connection runs
    # instead of dialling (tokens %h %n %p %r %% not yet expanded)
    extra_key_files: tuple[str, ...] = ()
    certificate_files: tuple[str, ...] = ()
    proxy_command: str | None = None
    # what the user's own settings would have ssh do with an unknown host key that gpuonboard
    # does not do (`StrictHostKeyChecking no` in the SSH config or the Ansible ssh args, and
    # where), said when a host key is refused: never followed silently, never silently ignored
    host_key_note: str | None = None
    # a host Ansible reaches another way than SSH (`ansible_connection=winrm`): why gpuonboard
    # cannot reach it, one sentence naming the connection and where it was set; refused only
    # when a selection that connects includes it (Inventory.check_connections)
    not_used: str | None = None
    # that sentence's parts, for a sentence of another remedy (a peer that prove's iperf3 would
    # dial): where the connection was set (`file, line N`), by what (`ansible_connection of group
    # 'docker'`), and what makes SSH reach it (`set ansible_connection=ssh for it`)
    not_used_parts: tuple[str, str, str] | None = None

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
    # an Ansible inventory: each group's hosts in Ansible's order, `all` and `ungrouped` too
    # (limit.ansible_group_hosts; what a --limit subscript indexes); empty: the file's order
    ansible_order: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # jump hosts that are no inventory host but a Host of the SSH config (`ProxyJump bastion`,
    # `-J bastion`): each resolved through that config as OpenSSH does (its HostName, User,
    # Port, IdentityFile), by the hop as the chain names it
    jump_hosts: Mapping[str, Host] = field(default_factory=dict)

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
            chosen = self._limit(limit)
            names = [n for n in names if n in chosen]
        if not names:
            raise UsageError(f"no host in {self.source} matches the selection; nothing to do.")
        return [self.hosts[n] for n in names]

    def _limit(self, limit: str) -> set[str]:
        """The hosts a --limit selects, as `ansible PATTERN --list-hosts` selects them
        (limit.py). The pattern's size is bounded (limit_problem, with its @FILE lines); a plain
        name that is neither a host nor a group is a typo (check_terms); a `~regex` is compiled
        only in regex_hits' time-limited child (`~(?i)` and thousands of wide character classes
        took minutes to compile)."""
        if problem := limit_problem(limit):
            raise UsageError(problem)
        terms = limit_terms(limit)
        if any(t.startswith("@") for t in terms):
            terms = with_files(terms)
            if problem := terms_problem(terms):
                raise UsageError(problem)
        check_terms(terms, list(self.hosts), list(self.groups), self.source)
        groups = dict(self.ansible_order) or {
            "all": tuple(self.hosts),
            "ungrouped": tuple(n for n, h in self.hosts.items() if not h.groups),
            **self.groups,
        }
        hits = regex_hits(terms, [*self.hosts, *groups])
        return limit_selection(terms, list(self.hosts), groups, hits)

    def check_connections(self, hosts: Iterable[Host]) -> None:
        """Before connecting: a selected host (or an inventory host it jumps through) that
        Ansible reaches another way than SSH is an input error, its `not_used` sentence; the
        other hosts of the inventory are not read for it, as Ansible runs only those selected."""
        for host in hosts:
            for hop in [*(self.hosts.get(j) for j in host.jump), host]:
                if hop is not None and hop.not_used is not None:
                    raise InventoryError(hop.not_used)

    def check_key_files(self, hosts: Iterable[Host]) -> None:
        """Before connecting: a key_file that is not there (of these hosts or their inventory
        jump hosts) is an input error naming the file and line that set it. Not part of
        `select`, so listing hosts and judging saved outputs offline need no key."""
        for host in hosts:
            hops = [self.hosts.get(j) or self.jump_hosts.get(j) for j in host.jump]
            for hop in [*(h for h in hops if h is not None), host]:
                path = hop.key_file
                if hop.connection != "ssh" or not path or os.path.isfile(path):
                    continue
                problem = "which does not exist" if not os.path.exists(path) else "which is not a file"
                loc, who = self.key_file_origins.get(hop.name, (str(self.source), f"host {hop.name!r}"))
                if who == "ssh_config" and hop.name not in self.hosts:  # (a jump host of the config)
                    raise InventoryError(
                        f"{loc}: jump host {hop.name!r} (in front of host {host.name!r} of the inventory"
                        f" {self.source}) takes its key from this SSH config's IdentityFile {path},"
                        f" {problem}; fix that path in its Host block."
                    )
                if who == "ssh_config":
                    raise InventoryError(
                        f"{loc}: host {hop.name!r} of the inventory {self.source} takes its key from this"
                        f" SSH config's IdentityFile {path}, {problem}; fix that path, or set key_file"
                        " for the host in the inventory."
                    )
                if who.startswith("`"):  # (`-i KEY` from its ansible_ssh_common_args: loader)
                    raise InventoryError(
                        f"{loc}: host {hop.name!r} gets {who} (read as {path}), {problem} (ssh would skip"
                        " it and try the agent and default keys); fix the path, or remove it."
                    )
                if who != f"host {hop.name!r}":
                    who += f" (for host {hop.name!r})"
                raise InventoryError(
                    f"{loc}: {who} field 'key_file' names {path}, {problem}; fix the path, or remove"
                    " key_file to log in with the SSH agent and the default keys."
                )
