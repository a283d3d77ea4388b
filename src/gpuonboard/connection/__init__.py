"""SSH connections via Fabric: one per host per run, host-key policy, jump chains, retries.

Each login is a fabric.Connection (a jump host is the next one's `gateway`); the runner
(SSHRunner) runs gpuonboard's commands on it through the exec protocol of connection.channel and
hands the open Connection to code that wants Fabric's own API (`SSHRunner.connection`).

Host keys live in the project's own known_hosts (`.gpuonboard/known_hosts` by default). A
key we have never seen is refused unless the inventory pins its fingerprint (and it
matches) or the user passed --trust-new-hosts; either way it is then recorded. A key that
differs from the recorded one is always refused: it may be a man-in-the-middle
(connection.hostkeys).

This package module only re-exports what the rest of gpuonboard uses; the modules own:
`base` (CommandResult, the Runner contract, the bounds, connect_timeout), `local`
(LocalRunner), `preconnect` (early TCP connections), `auth` (login arguments and key files),
`login` (one hop's fabric.Connection and paramiko Transport), `failures` (the sentence for a
failed login or link), `linkwatch` (keepalive that wants an answer), `session` (SSHRunner),
`connect` (ConnectOptions, open_runner: the jump chain, retries, host key types), `hostkeys`,
`channel`, `gather`, `probe_commands` (the core probes' shell commands) and `openssh`.
"""

from __future__ import annotations

from gpuonboard.connection.base import (
    DEFAULT_KNOWN_HOSTS,
    CommandResult,
    Runner,
    connect_timeout,
    import_paramiko,
)
from gpuonboard.connection.channel import _channel_request, _serve_script, _sh_c_script
from gpuonboard.connection.connect import ConnectOptions, known_hosts_problem, open_runner
from gpuonboard.connection.hostkeys import HostKeyPolicy, KnownHosts, fingerprint, known_hosts_name
from gpuonboard.connection.local import LocalRunner
from gpuonboard.connection.login import kex_order
from gpuonboard.connection.preconnect import Preconnect
from gpuonboard.connection.session import SSHRunner
from gpuonboard.errors import ConnectError

__all__ = [
    "DEFAULT_KNOWN_HOSTS",
    "CommandResult",
    "ConnectError",
    "ConnectOptions",
    "HostKeyPolicy",
    "KnownHosts",
    "LocalRunner",
    "Preconnect",
    "Runner",
    "SSHRunner",
    "_channel_request",
    "_serve_script",
    "_sh_c_script",
    "connect_timeout",
    "fingerprint",
    "import_paramiko",
    "kex_order",
    "known_hosts_name",
    "known_hosts_problem",
    "open_runner",
]
