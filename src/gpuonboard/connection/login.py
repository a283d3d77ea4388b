"""One login of a host's jump chain as a fabric.Connection: the hop's Host, its TCP socket (or
the pipe to its SSH config's ProxyCommand), the paramiko Transport with our key-exchange and
host key algorithm order, and closing the Connections of a chain."""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import socket
from collections.abc import Sequence
from typing import Any

from gpuonboard.connection.auth import _login_kwargs
from gpuonboard.connection.base import connect_timeout, import_paramiko
from gpuonboard.connection.channel import _channel_request
from gpuonboard.connection.hostkeys import HostKeyPolicy
from gpuonboard.errors import ConnectError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.inventory.sshresolve import PROXY_COMMAND_TOKENS, expand_tokens
from gpuonboard.once import loaded_once


def _hop_host(spec: str, inventory: Inventory | None, base: Host) -> Host:
    """A jump hop: an inventory host by name, a Host of the SSH config as resolved when the
    inventory was read, or `user@addr:port` inheriting base's key."""
    if inventory is not None and spec in inventory.hosts:
        return inventory.hosts[spec]
    if inventory is not None and spec in inventory.jump_hosts:  # (a Host of the SSH config)
        return inventory.jump_hosts[spec]
    user, _, rest = spec.rpartition("@")
    addr, port = rest, 22
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") else 22
    elif rest.count(":") == 1:
        addr, p = rest.split(":")
        port = int(p)
    return Host(
        name=spec,
        address=addr,
        port=port,
        user=user or base.user,
        key_file=base.key_file,
        use_agent=base.use_agent,
        connect_timeout=base.connect_timeout,
    )


def _tcp_socket(host: Host) -> Any:
    """TCP connection with TCP_NODELAY, as OpenSSH does: without it Nagle's algorithm holds
    each small SSH packet that follows another (exec request, then stdin, then EOF) for a
    round trip, which on a 20 ms link doubles the time of every command. A host with a
    ProxyCommand (from the user's SSH config) is reached through that command instead."""
    if host.proxy_command:
        return proxy_command_socket(host)
    sock = socket.create_connection((host.address, host.port), timeout=connect_timeout(host))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def proxy_command_argv(host: Host) -> list[str]:
    """The host's ProxyCommand as OpenSSH runs it: its tokens expanded (%h the address, %p the
    port, %r the user, %n the host's name, %% a percent sign), then `exec COMMAND` through the
    user's $SHELL (else /bin/sh)."""
    command, bad = expand_tokens(
        host.proxy_command or "",
        {"%": "%", "h": host.address, "p": str(host.port), "r": host.user, "n": host.name},
        PROXY_COMMAND_TOKENS,
    )
    if bad is not None:  # (refused when the inventory was read)
        raise ConnectError(
            f"host {host.name}: its ProxyCommand holds the token {bad}, which is not expanded."
        )
    return [os.environ.get("SHELL") or "/bin/sh", "-c", f"exec {command}"]


def proxy_command_socket(host: Host) -> Any:
    """paramiko's ProxyCommand (a socket-like pipe to the command) for the host."""
    paramiko = import_paramiko()
    try:
        return paramiko.ProxyCommand(shlex.join(proxy_command_argv(host)))
    except paramiko.ProxyCommandFailure as exc:
        raise ConnectError(
            f"host {host.name}: its ProxyCommand from the SSH config could not be started ({exc});"
            " fix the ProxyCommand, or give the host its address in the inventory."
        ) from None


def _fabric() -> Any:
    """fabric, imported on first use (with Invoke, which it is built on)."""
    import fabric

    return fabric


# the names Invoke's DataProxy looks up on each config write, which a root Config and a
# Connection never hold (`hasattr(self, "_root")`, `hasattr(self, "_modify")`, `getattr(self,
# "_keypath", ())`): each miss is answered below without Invoke's message listing every key
_WRITE_LOOKUPS = frozenset({"_root", "_keypath", "_modify"})


@loaded_once
def fabric_classes() -> tuple[Any, Any]:
    """(Connection, Config): fabric's, made once, with Invoke's attribute lookups done without
    their costly part (hop_connection: 0.43 -> 0.17 ms of CPU a login); what each lookup decides is
    Invoke's.

    Invoke's DataProxy (the base of both) tells a real attribute from a config key, on each
    attribute set, by `key in dir(self)`: a sorted list of ~200 names built for each of the
    ~14 sets a Connection makes. `dir(self)` is the names of the instance's `__dict__` and of
    the `__dict__` of each class of its type's MRO, so the test here is the same test without
    the list. On each config write Invoke asks for the names of _WRITE_LOOKUPS, which its
    `__getattr__` answers, when missing, with an AttributeError whose message lists every key
    and attribute (a `dir()`, the keys sorted and formatted): here the same AttributeError, the
    name its message. Every other lookup and every write is Invoke's own code."""
    fabric = _fabric()

    def write_lookup(proxy: Any, key: str) -> Any:
        try:
            return proxy._get(key)
        except KeyError:
            raise AttributeError(key) from None

    class Connection(fabric.Connection):  # type: ignore[name-defined]
        def __setattr__(self, key: str, value: Any) -> None:
            if key in self.__dict__ or any(key in vars(c) for c in type(self).__mro__):
                object.__setattr__(self, key, value)  # (DataProxy's, its base's)
            else:
                self[key] = value  # (a config key, as Invoke writes it)

        def __getattr__(self, key: str) -> Any:
            return write_lookup(self, key) if key in _WRITE_LOOKUPS else super().__getattr__(key)

    class Config(fabric.Config):  # type: ignore[name-defined]
        def __getattr__(self, key: str) -> Any:
            return write_lookup(self, key) if key in _WRITE_LOOKUPS else super().__getattr__(key)

    return Connection, Config


def hop_connection(
    host: Host,
    gateway: Any,
    policy: HostKeyPolicy,
    prefer: Sequence[str] = (),
    avoid: frozenset[str] = frozenset(),
    forwards_to: Host | None = None,
    offered: list[str] | None = None,
) -> tuple[Any, str | None]:
    """One login of a host's chain as a fabric.Connection, not opened yet, and why its key_file
    cannot be used (a failed login says so).

    Through `gateway` (the previous hop's open Connection: a direct-tcpip channel on it) when
    given. Every host key goes to `policy` (our known_hosts and pins), never to Fabric's
    default AutoAddPolicy, and the client's own key lists stay empty. Fabric reads no config
    file and no ssh_config here: the inventory has resolved those already. `prefer`, `avoid`:
    the host key types to ask for first and not at all (see _transport); `forwards_to`: the
    next hop, whose forward must not wait paramiko's default hour; `offered` receives the
    host key algorithms paramiko offers."""
    kwargs, key_problem = _login_kwargs(host)
    kwargs["transport_factory"] = functools.partial(
        _transport, prefer=tuple(prefer), avoid=avoid, offered=offered
    )
    if forwards_to is not None:
        kwargs["channel_timeout"] = connect_timeout(forwards_to)
    connection, config = fabric_classes()
    conn = connection(
        host.address,
        user=host.user,
        port=host.port,
        # one Config per connection: Connection() writes to its config, and an Invoke config
        # rebuilds its dict on every write, which a thread reading a shared one saw empty
        config=config(lazy=True, overrides={"load_ssh_configs": False}),
        gateway=gateway,
        connect_timeout=max(1, round(connect_timeout(host))),
        connect_kwargs=kwargs,
    )
    conn.client.set_missing_host_key_policy(policy)
    return conn, key_problem


def kex_order(available: Sequence[str]) -> tuple[str, ...]:
    """paramiko's key exchanges with ecdh-sha2-nistp256 moved before curve25519 (the
    post-quantum hybrid mlkem768x25519 stays first where paramiko offers it).

    Both classical choices give 128-bit security; OpenSSH computes curve25519 with its own
    portable reference code but P-256 in OpenSSL's optimised constant-time code, which costs
    the host about 3 ms less CPU per login (measured on OpenSSH 9.2: 18.3 -> 15.3 ms per
    connection, host and client together) and answers the key exchange sooner."""
    order = list(available)
    if "ecdh-sha2-nistp256" in order:
        order.remove("ecdh-sha2-nistp256")
        first_classic = next((i for i, k in enumerate(order) if not k.startswith(("mlkem", "sntrup"))), 0)
        order.insert(first_classic, "ecdh-sha2-nistp256")
    return tuple(order)


# AEAD ciphers, which OpenSSH offers by default (sshd_config(5) Ciphers): their tag is checked in
# OpenSSL's C code, where any other cipher's MAC is compared in pure Python, byte by byte
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# MACs that authenticate the encrypted packet (OpenSSH's own first choices)
ETM_MACS = ("hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com")


def cipher_order(available: Sequence[str]) -> tuple[str, ...]:
    """paramiko's ciphers with AES-GCM first (the others after, in paramiko's order).

    With aes128-ctr (paramiko's first choice) each packet's HMAC is compared by paramiko's
    pure-Python constant-time loop; AES-GCM (in OpenSSH's default list, as strong: 128-bit
    security, authenticated encryption) is decrypted and verified in one OpenSSL call: about
    1 ms less CPU per host for a check (measured: the transport thread's 7.3 -> 6.3 ms)."""
    aead = [c for c in AEAD_CIPHERS if c in available]
    return tuple(aead + [c for c in available if c not in AEAD_CIPHERS])


def mac_order(available: Sequence[str]) -> tuple[str, ...]:
    """paramiko's MACs with the encrypt-then-MAC ones first, as OpenSSH orders them (used
    only where the server offers no AES-GCM)."""
    return tuple([m for m in ETM_MACS if m in available] + [m for m in available if m not in ETM_MACS])


def host_key_algorithms(key_type: str) -> tuple[str, ...]:
    """The host key algorithms that present a key of `key_type` (an RSA key, "ssh-rsa", is
    presented under its SHA-2 signature names)."""
    if key_type == "ssh-rsa":
        return ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")
    return (key_type,)


def key_types_order(
    available: Sequence[str], prefer: Sequence[str], avoid: frozenset[str]
) -> tuple[str, ...]:
    """paramiko's host key algorithms without `avoid`'s, those presenting a key type of `prefer`
    (the recorded keys) first."""
    wanted = {a for t in prefer for a in host_key_algorithms(t)}
    left = [a for a in available if a not in avoid]
    return tuple([a for a in left if a in wanted] + [a for a in left if a not in wanted])


def _transport(
    sock: Any,
    prefer: Sequence[str] = (),
    avoid: frozenset[str] = frozenset(),
    offered: list[str] | None = None,
    **kwargs: Any,
) -> Any:
    """The Transport SSHClient.connect uses, with our key-exchange order (`kex_order`) and host
    key algorithm order (`key_types_order`); `offered` receives paramiko's host key algorithms.
    Plus the exit-signal handler (`_channel_request`): paramiko has no public hook for a
    channel request it ignores, so this transport gets its own copy of the handler table."""
    paramiko = import_paramiko()
    transport = paramiko.Transport(sock, **kwargs)
    options = transport.get_security_options()
    options.kex = kex_order(options.kex)
    options.ciphers = cipher_order(options.ciphers)
    options.digests = mac_order(options.digests)
    if offered is not None:
        offered[:] = options.key_types
    if prefer or avoid:
        options.key_types = key_types_order(options.key_types, prefer, avoid)
    table = dict(transport._channel_handler_table)
    table[paramiko.common.MSG_CHANNEL_REQUEST] = _channel_request(table[paramiko.common.MSG_CHANNEL_REQUEST])
    transport._channel_handler_table = table  # this transport's own copy, not the class's
    return transport


def _close_all(conns: list[Any]) -> None:
    """Close fabric Connections, last hop first: each SSHClient itself too, since Connection.close
    skips a client whose login failed (its socket and transport thread stay open otherwise)."""
    for c in reversed(conns):
        with contextlib.suppress(Exception):  # closing a dead transport may raise anything
            c.close()
        with contextlib.suppress(Exception):
            c.client.close()
