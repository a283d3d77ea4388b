"""Opening a host's ONE connection for the run: the run-wide ConnectOptions, the jump chain
logged in hop by hop with retries and backoff, the host key types tried in turn against a
pin, and the known_hosts check made before connecting."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.connection.base import DEFAULT_KNOWN_HOSTS, MAX_JUMP_HOPS, Runner
from gpuonboard.connection.failures import _login_error
from gpuonboard.connection.hostkeys import HostKeyPolicy, KnownHosts, fingerprint, known_hosts_name
from gpuonboard.connection.local import LocalRunner
from gpuonboard.connection.login import (
    _close_all,
    _hop_host,
    _tcp_socket,
    hop_connection,
    host_key_algorithms,
)
from gpuonboard.connection.preconnect import Preconnect
from gpuonboard.connection.session import SSHRunner
from gpuonboard.errors import ConnectError, HostKeyError
from gpuonboard.inventory import Host, Inventory


@dataclass
class ConnectOptions:
    """Run-wide connection settings."""

    known_hosts: Path = DEFAULT_KNOWN_HOSTS
    trust_new_hosts: bool = False
    retries: int = 2
    backoff: float = 0.5
    keepalive: int = 15
    # unanswered keepalives before the connection is given up (ssh's ServerAliveCountMax)
    keepalive_count: int = 4
    preconnect: Preconnect | None = None


def known_hosts_problem(
    path: Path, hosts: Sequence[Host], inventory: Inventory | None, trust_new: bool
) -> str | None:
    """Before connecting: why the host keys this run would record (a pinned or, with
    --trust-new-hosts, any key not recorded yet) cannot be written to `path`; None when they can
    or none is to be recorded. (A directory there is refused by KnownHosts itself.) A key that
    could not be written was kept in memory only: the run passed and the next found it unknown."""
    store = KnownHosts(path)
    pending: list[str] = []
    for host in hosts:
        if host.connection != "ssh":
            continue
        for hop in [*(_hop_host(j, inventory, host) for j in host.jump[:MAX_JUMP_HOPS]), host]:
            name = known_hosts_name(hop.address, hop.port)
            if (trust_new or hop.host_key) and hop.name not in pending and not store.lookup(name):
                pending.append(hop.name)
    if not pending:
        return None
    target = path if path.exists() else path.parent
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        keys = f"key of {pending[0]}" if len(pending) == 1 else f"keys of {', '.join(pending)}"
        return (
            f"the known_hosts file {path} cannot be written ({exc.strerror or exc}), so the host {keys}"
            " could not be recorded; pass --known-hosts a file you can write to."
        )
    return None


def open_runner(
    host: Host,
    options: ConnectOptions,
    store: KnownHosts,
    inventory: Inventory | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Runner:
    """Open the ONE connection this run uses for `host` (through its jump chain), with retries."""
    if host.connection == "local":
        return LocalRunner(host)
    attempt = 0
    while True:
        try:
            return _connect_once(host, options, store, inventory)
        except HostKeyError:
            raise
        except ConnectError as exc:
            if not getattr(exc, "retryable", False) or attempt >= options.retries:
                raise
            sleep(options.backoff * (2**attempt))
            attempt += 1


def _connect_once(
    host: Host, options: ConnectOptions, store: KnownHosts, inventory: Inventory | None
) -> Runner:
    if len(host.jump) > MAX_JUMP_HOPS:
        raise ConnectError(
            f"host {host.name}: its jump chain has {len(host.jump):,} hops, and gpuonboard opens at"
            f" most {MAX_JUMP_HOPS} (OpenSSH's ProxyJump chains are a few hops); shorten the host's"
            " 'jump' in the inventory."
        )
    chain = [_hop_host(h, inventory, host) for h in host.jump] + [host]
    for hop in chain:
        if hop.key_file and not os.path.isfile(hop.key_file):
            raise ConnectError(
                f"host {hop.name}: key file {hop.key_file} does not exist; fix key_file in the inventory."
            )
    gateway: Any = None  # the previous hop's fabric.Connection
    opened: list[Any] = []
    policy = None
    for i, hop in enumerate(chain):
        label = host.name if i == len(chain) - 1 else f"{hop.name} (jump host for {host.name})"
        forwards_to = chain[i + 1] if i < len(chain) - 1 else None
        try:
            conn, policy = _open_hop(hop, label, gateway, store, options, forwards_to)
        except ConnectError:
            _close_all(opened)
            raise
        conn.transport.set_keepalive(options.keepalive)
        _poll_less(conn.transport)
        opened.append(conn)
        gateway = conn
    assert policy is not None
    runner = SSHRunner(host, opened[-1], policy, opened[:-1])
    runner.watch(options.keepalive, options.keepalive_count)
    return runner


# how often paramiko's transport thread wakes while its host sends nothing (paramiko: 0.1 s, its
# socket's timeout): to see whether it was closed and to send the keepalive. Ten wake-ups a
# second per host were ~40 per host of a 50-host check, each a timed-out recv and an exception
# in Python taking the GIL from the hosts that work; a close is still seen at once (Transport.
# close marks the packetizer closed and does not wait for the thread), a keepalive within 1 s.
_TRANSPORT_POLL_S = 1.0


def _poll_less(transport: Any) -> None:
    """The transport thread's wake-ups while idle down to one a _TRANSPORT_POLL_S."""
    sock = getattr(transport, "sock", None)
    if sock is not None and hasattr(sock, "settimeout"):
        sock.settimeout(_TRANSPORT_POLL_S)


def _open_hop(
    hop: Host,
    label: str,
    gateway: Any,
    store: KnownHosts,
    options: ConnectOptions,
    forwards_to: Host | None,
) -> tuple[Any, HostKeyPolicy]:
    """Log in to one hop of the chain (its failure as one ConnectError sentence): its open
    fabric.Connection, through `gateway`'s when given; `forwards_to`: the next hop, if any.

    A server holds several host keys (ed25519, ECDSA, RSA) and presents one per login: the
    type of a recorded key first; when the key presented does not match the inventory's pin,
    the login is tried again without that type, since the vendor may have sent the fingerprint
    of another of its keys. Every key is still judged by HostKeyPolicy; when none matches,
    the first refusal is the answer."""
    recorded = store.lookup(known_hosts_name(hop.address, hop.port))
    # (the type of a recorded key the pin names first: one handshake, not one per type)
    prefer = sorted(recorded, key=lambda t: fingerprint(recorded[t]) != hop.host_key)
    avoid: frozenset[str] = frozenset()
    first_refusal: HostKeyError | None = None
    while True:
        policy = HostKeyPolicy(label, hop.host_key, store, options.trust_new_hosts, hop.host_key_note)
        offered: list[str] = []
        conn, key_problem = hop_connection(hop, gateway, policy, prefer, avoid, forwards_to, offered)
        try:
            if gateway is None:
                # (the pre-opened socket is the target's: a first hop that forwards opens its own)
                early = options.preconnect.take(hop) if options.preconnect and forwards_to is None else None
                conn.connect_kwargs["sock"] = early or _tcp_socket(hop)
            conn.open()
            return conn, policy
        except Exception as exc:
            _close_all([conn])
            if isinstance(exc, HostKeyError) and policy.pin_missed is not None:
                first_refusal = first_refusal or exc
                avoid |= _tried(policy)
                if any(a not in avoid for a in offered):  # another key type to ask for
                    continue
                raise first_refusal from None
            if first_refusal is not None and policy.seen is None:
                raise first_refusal from None  # no other key type to present (or no answer)
            if isinstance(exc, HostKeyError):
                raise
            err = _login_error(exc, key_problem, policy, hop, label)
            if err is None:
                raise
            raise err from None


def _tried(policy: HostKeyPolicy) -> frozenset[str]:
    """The host key algorithms of the key type a login was refused for."""
    return frozenset(host_key_algorithms(policy.pin_missed)) if policy.pin_missed else frozenset()
