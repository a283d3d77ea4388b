"""`network` step (issue 7): SSH round-trip latency and upload throughput from the control
machine, iperf3 between hosts of the same group (intranet; the server is started and stopped by
the step), and RDMA/InfiniBand devices (`ibv_devinfo`) when `vars.expect_rdma` asks for them.

Read-only for the hosts: iperf3's server runs once (`-s -1`) under `timeout` and is killed by
PID afterwards; the client runs under `timeout` too (a port where something else takes the
connection and stays silent would keep it waiting forever); the upload probe pushes bytes into
`cat > /dev/null`.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuonboard import shell, transfer
from gpuonboard.facts.infiniband import IbPort, IbReport, parse_ibv_devinfo, shared_ports
from gpuonboard.inventory import Host, Inventory
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict, truthy
from gpuonboard.steps.checks.rdma_ports import shared_said
from gpuonboard.steps.prove.launch import _float_arg, _get, _int_arg
from gpuonboard.steps.prove.rules import _summary

IPERF_PORTS = (30000, 39999)  # random server port in this range unless vars.iperf_port is set
IPERF_LISTEN_WAIT_S = 15.0  # how long the client retries a server not listening yet
IPERF_SERVER_STARTS = 3  # a random port taken (an outgoing connection's own port): another one
# a process that ended and was not reaped yet (a zombie: kill -0 still finds it) is no server
_ALIVE = (
    "kill -0 {pid} 2>/dev/null || exit 1; s=$(cat /proc/{pid}/stat 2>/dev/null) || exit 0;"
    ' case "${{s##*) }}" in Z*|X*) exit 1;; esac'
)
IPERF_CLIENT_SLACK_S = 10  # the host stops the client this long after its test should have ended


# --------------------------------------------------------------------------- parsers (pure)


def parse_iperf3(text: str) -> dict[str, Any]:
    """`iperf3 -c ... -J` output -> {sent_gbps, received_gbps, retransmits, seconds, streams,
    version, error}; Gbit/s = 1e9 bit/s. `error` is iperf3's own message or a parse failure."""
    out: dict[str, Any] = {"sent_gbps": None, "received_gbps": None, "retransmits": None, "error": None}
    start = text.find("{")
    if start < 0:
        out["error"] = (text.strip().splitlines() or ["no output"])[-1]
        return out
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        out["error"] = f"not iperf3 JSON ({exc.msg})"
        return out
    if not isinstance(data, dict):
        out["error"] = "not iperf3 JSON"
        return out
    if data.get("error"):
        out["error"] = str(data["error"])
    end = data.get("end") or {}
    sent, recv = end.get("sum_sent") or {}, end.get("sum_received") or {}
    if sent.get("bits_per_second") is not None:
        out["sent_gbps"] = float(sent["bits_per_second"]) / 1e9
        out["retransmits"] = sent.get("retransmits")
        out["seconds"] = sent.get("seconds")
    if recv.get("bits_per_second") is not None:
        out["received_gbps"] = float(recv["bits_per_second"]) / 1e9
    st = data.get("start") or {}
    out["version"] = st.get("version")
    out["streams"] = (st.get("test_start") or {}).get("num_streams")
    connected = [c for c in st.get("connected") or [] if isinstance(c, dict)]
    out["connected"] = [
        f"{c.get('local_host')} -> {c.get('remote_host')}:{c.get('remote_port')}" for c in connected
    ]
    out["to_itself"] = any(
        c.get("local_host") and c.get("local_host") == c.get("remote_host") for c in connected
    )
    if out["error"] is None and out["received_gbps"] is None and out["sent_gbps"] is None:
        out["error"] = "iperf3 JSON without an end summary"
    return out


# --------------------------------------------------------------------------- rules (pure)


def rtt_check(samples_s: Sequence[float], warn_ms: float) -> Check:
    """Median SSH round trip (a command on the open connection) from the control machine."""
    med = statistics.median(samples_s) * 1000
    verdict: Verdict = "pass" if med <= warn_ms else "warn"
    return Check(
        "ssh_rtt",
        f"median <= {warn_ms:.0f} ms",
        f"median {med:.1f} ms over {len(samples_s)} round trips (min {min(samples_s) * 1000:.1f},"
        f" max {max(samples_s) * 1000:.1f} ms)",
        verdict,
        ""
        if verdict == "pass"
        else "every remote command and interactive session feels this delay; a"
        " closer region or a jump host near the box helps",
    )


def upload_check(mbit: float | str | None, shared_with: int = 0) -> Check:
    """Upload throughput from the control machine through OpenSSH (information); `shared_with`:
    how many other hosts' probes used this machine's link at the same time (--forks); a str:
    why the probe's OpenSSH config cannot be written (the dataset upload cannot run either)."""
    if isinstance(mbit, str):
        return Check(
            "upload_throughput",
            "(information)",
            f"not measured: {mbit}",
            "fail",
            "the dataset step's upload goes through the same OpenSSH config",
        )
    if mbit is None:
        return Check(
            "upload_throughput",
            "(information)",
            "not measured (the OpenSSH probe did not run)",
            "warn",
            "check that `ssh` works with the same settings (the dataset step needs it too)",
        )
    per_100g = 100e9 * 8 / (mbit * 1e6)
    shared = (
        f"; measured while {shared_with} other host(s) were measured over this machine's link, so"
        " one upload alone may be faster"
        if shared_with
        else ""
    )
    return Check(
        "upload_throughput",
        "(information)",
        f"{mbit:,.0f} Mbit/s from this machine over SSH (100 GB ≈ {transfer.format_duration(per_100g)})"
        + shared,
        "pass",
    )


class _SharedLink:
    """Counts the upload probes of one run that overlap in time (hosts run in parallel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0
        self.started = 0

    def begin(self) -> tuple[int, int]:
        with self._lock:
            mark = (self.active, self.started)
            self.active += 1
            self.started += 1
            return mark

    def end(self, mark: tuple[int, int]) -> int:
        """How many other probes ran at some time during this one."""
        with self._lock:
            self.active -= 1
            running_at_start, started_before = mark
            return running_at_start + (self.started - started_before - 1)


_UPLOAD_LINK = _SharedLink()


def iperf_check(peer: str, r: Mapping[str, Any], min_gbps: float | None) -> Check:
    """One iperf3 run from this host to a peer."""
    name = f"iperf3_{peer}"
    want = f">= {min_gbps:g} Gbit/s" if min_gbps else "(information)"
    if r.get("not_reached"):
        return Check(name, want, "not measured", "unverified", str(r["not_reached"]))
    if r.get("error") or r.get("received_gbps") is None:
        return Check(
            name,
            want,
            f"no result: {r.get('error') or 'no output'}",
            "warn",
            "iperf3 could not measure the link (firewall, iperf3 missing, wrong iperf_address?)",
        )
    gbps = float(r["received_gbps"])
    retr = r.get("retransmits")
    actual = f"{gbps:.2f} Gbit/s received ({float(r.get('sent_gbps') or 0):.2f} sent"
    actual += f", {retr} retransmits)" if retr is not None else ")"
    if r.get("to_itself"):
        where = r.get("address") or "the peer's address"
        return Check(
            name,
            want,
            f"{actual}, but the connection went from {where} to {where}: this host to itself",
            "warn",
            f"not a network figure: {where} is an address of this host, so {peer} runs on this very"
            " machine (or vars.iperf_address names this host); set iperf_address to the peer's"
            " intranet address, or ask the vendor why two ordered hosts are one",
        )
    verdict: Verdict = "pass" if not min_gbps or gbps >= min_gbps else "warn"
    return Check(
        name,
        want,
        actual,
        verdict,
        ""
        if verdict == "pass"
        else "the intranet is slower than ordered: multi-node all-reduce and data"
        " loading from shared storage will suffer; ask the vendor (MTU, bonding, a shared uplink)",
    )


def rdma_check(report: IbReport | None, why: str = "") -> Check:
    """RDMA/InfiniBand devices with at least one active port (asked by vars.expect_rdma), read
    by the acceptance rules' own `ibv_devinfo` parser: a listing cut short with no active port
    read is unverified, never a claim that the ports are down. Each physical link once, as the
    acceptance rule counts them: the SR-IOV virtual function ports of a listed physical function
    (shared_ports: shares of its link; an unassigned one is DOWN) are named apart, not counted."""
    expected = ">= 1 RDMA device with an active port"
    # no port read from a listing that ends mid-record (cut before its first port block) is no
    # claim that the box lacks RDMA: it is judged below as a cut listing (unverified)
    if report is None or (not report.ports and report.complete):
        return Check(
            "rdma_devices",
            expected,
            why or "ibv_devinfo not found",
            "fail",
            "no RDMA stack: install rdma-core/MLNX_OFED (ibv_devinfo) or ask the vendor for the RDMA NICs",
        )
    shared = shared_ports(report.ports)
    ports = [p for p in report.ports if p not in shared]
    active = [_port_text(p) for p in ports if p.active]
    down = [f"{p.device} port {p.port} {p.state}" for p in ports if not p.active]
    devices = len({p.device for p in ports})
    vfs = shared_said(shared)
    if not active and not report.complete:
        cut = report.cut or "the listing stopped early"
        return Check(
            "rdma_devices",
            expected,
            f"no active port read; incomplete probe: {cut}",
            "unverified",
            "the ibv_devinfo output was cut short: rerun the step, or run `ibv_devinfo -v` on the host",
        )
    if not active:
        return Check(
            "rdma_devices",
            expected,
            f"{devices} device(s), no active port ({', '.join(down)}){vfs}",
            "fail",
            "the RDMA ports are down: cabling, subnet manager (opensm) or switch config",
        )
    return Check(
        "rdma_devices",
        expected,
        f"{len(active)} active: {'; '.join(active)}" + (f"; down: {', '.join(down)}" if down else "") + vfs,
        "warn" if down else "pass",
        f"{len(down)} port(s) not active" if down else "",
    )


def _port_text(port: IbPort) -> str:
    rate = f"{port.rate_gbps:g} Gb/s" if port.rate_gbps is not None else None
    return " ".join(str(x) for x in (port.device, "port", port.port, port.link_layer or "?", rate) if x)


def iperf_hung(address: str, port: int, limit: int) -> str:
    """The iperf3 client got no result and was stopped on the host after `limit` s."""
    return (
        f"iperf3 to {address}:{port} gave no result within {limit} s and was stopped on the host:"
        " something that is not the iperf3 server took the connection (vars.iperf_port names a"
        " port in use? a load balancer or firewall that accepts and then drops?), or the link stalled"
    )


def iperf_unserved(peer: str, port: int, fixed: bool) -> str:
    """The peer's iperf3 server ended before it listened on `port` (`fixed`: vars.iperf_port)."""
    if fixed:
        return (
            f"the iperf3 server on {peer} could not listen on port {port} (vars.iperf_port): the port is"
            " in use there; name a free port, or leave vars.iperf_port unset for a random one"
        )
    return (
        f"the iperf3 server on {peer} could not listen on {IPERF_SERVER_STARTS} random ports (the last"
        f" {port}): each ended at once; set vars.iperf_port to a port free there"
    )


# --------------------------------------------------------------------------- peers


def iperf_peers(host: Host, inventory: Inventory | None, asked: Any) -> list[str]:
    """Peers to measure to: `vars.iperf_peers` (list or comma string; [] = none), else the next host (in
    inventory order, wrapping) of each group this host shares with >= 1 other host."""
    if asked is not None and asked != "":  # an empty list: no iperf3
        names = asked if isinstance(asked, list) else str(asked).split(",")
        return [str(n).strip() for n in names if str(n).strip() and str(n).strip() != host.name]
    if inventory is None:
        return []
    peers: list[str] = []
    for group in host.groups:
        members = [m for m in inventory.groups.get(group, ()) if m in inventory.hosts]
        if len(members) < 2 or host.name not in members:
            continue
        nxt = members[(members.index(host.name) + 1) % len(members)]
        if nxt != host.name and nxt not in peers:
            peers.append(nxt)
    return peers


def unreached_peer(peer: str, inventory: Inventory | None, asked: bool = False) -> str:
    """Pure: why iperf3 must not reach `peer` ("" when it may): a host Ansible reaches another
    way than SSH; dialled over SSH, it would be another machine. One sentence naming the peer
    once, where its connection was set, and the remedy of this check: `vars.iperf_peers` (`asked`:
    the peer was named there), not `--limit`, which leaves a group peer in its group."""
    host = inventory.hosts.get(peer) if inventory is not None else None
    if host is None or host.not_used is None:
        return ""
    if host.not_used_parts is None:
        return f"not reached: {host.not_used}"
    at, by, fix = host.not_used_parts
    if by == f"ansible_connection of host {peer!r}":
        by = "its ansible_connection"
    remedy = (
        "take it out of vars.iperf_peers"
        if asked
        else "name the peers to measure in vars.iperf_peers (`[]` measures none)"
    )
    return (
        f"{at}: {peer} was not reached, as Ansible reaches it by its {host.connection!r} connection"
        f" ({by}), which does not run over SSH; {remedy}, or, where SSH reaches it, {fix}."
    )


def outside_selection(peer: str, run_hosts: frozenset[str], asked: bool) -> str:
    """Pure: the note for a peer taken from a group (not named in `vars.iperf_peers`) that is
    not in this run's selection ("" otherwise): iperf3 reaches it over its own connection."""
    if asked or not run_hosts or peer in run_hosts:
        return ""
    return (
        f"{peer} is not in this run's selection: as the next host of a group it was reached over its"
        " own SSH connection for its iperf3 server (vars.iperf_peers: [] measures no peer)"
    )


def iperf_port(peer: Host) -> int | None:
    """The peer's `vars.iperf_port` (its iperf3 server's port), None when unset."""
    value = peer.vars.get("iperf_port")
    if value is None or value == "":
        return None
    try:
        port = int(value) if not isinstance(value, bool | float) else 0
    except (TypeError, ValueError):
        port = 0
    if not 0 < port < 65536:
        raise StepArgsError(
            f"host {peer.name}: vars.iperf_port must be a port number from 1 to 65535, not {value!r}"
        )
    return port


class NetworkStep(Step):
    """RTT and upload from the control machine, iperf3 inside a group, RDMA devices."""

    name = "network"
    read_only = True
    ARGS = {
        "rtt_count": "SSH round trips for the median (default 7)",
        "rtt_warn_ms": "warn above this median round trip (default 250)",
        "upload": "measure upload throughput from this machine (default true)",
        "iperf_peers": "hosts to run iperf3 to (default: vars.iperf_peers, else the next host of each group)",
        "iperf_seconds": "iperf3 test length (default: vars.iperf_seconds, else 5)",
        "iperf_min_gbps": "warn below this many Gbit/s (default: vars.iperf_min_gbps; unset = information)",
        "iperf_slack_s": "the host stops the iperf3 client this many seconds after its test should have"
        " ended (default: vars.iperf_slack_s, else 10)",
        "expect_rdma": "require RDMA devices with an active port (default: vars.expect_rdma)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Measure (not in check mode) and judge."""
        v = ctx.host.vars
        try:
            count = max(1, _int_arg(self, v, "rtt_count", "rtt_count", 7))
            warn_ms = _float_arg(self, v, "rtt_warn_ms", "rtt_warn_ms", 250)
            seconds = max(1, _int_arg(self, v, "iperf_seconds", "iperf_seconds", 5))
            slack = max(1, _int_arg(self, v, "iperf_slack_s", "iperf_slack_s", IPERF_CLIENT_SLACK_S))
            raw_min = _get(self.args, v, "iperf_min_gbps", "iperf_min_gbps", None)
            min_gbps = float(raw_min) if raw_min is not None else None
            asked = _get(self.args, v, "iperf_peers", "iperf_peers", None)
            peers = iperf_peers(ctx.host, ctx.inventory, asked)
            explicit = asked is not None and asked != ""
            for name in peers:  # a bad port is the inventory's mistake: say so before measuring
                inv = ctx.inventory  # (a peer never dialled, unreached_peer: its port is unread)
                if inv is not None and name in inv.hosts and not unreached_peer(name, inv):
                    iperf_port(inv.hosts[name])
            rdma = truthy(_get(self.args, v, "expect_rdma", "expect_rdma", False), "expect_rdma")
            upload = truthy(_get(self.args, v, "upload", "network_upload", True), "upload")
        except (StepArgsError, ValueError, TypeError) as exc:
            return Plan(False, f"bad network setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, "check mode: the network was not measured")
        checks: list[Check] = []
        result: dict[str, Any] = {}
        rtts = []
        for _ in range(count):
            t0 = time.monotonic()
            ctx.runner.run("true", timeout=30)
            rtts.append(time.monotonic() - t0)
        result["rtt_s"] = rtts
        checks.append(rtt_check(rtts, warn_ms))
        if upload and ctx.host.connection != "local":
            mark = _UPLOAD_LINK.begin()
            try:
                mbit = self._upload(ctx)
            finally:
                shared_with = _UPLOAD_LINK.end(mark)
            result["upload_mbit"] = None if isinstance(mbit, str) else mbit
            result["upload_shared_with"] = shared_with
            checks.append(upload_check(mbit, shared_with))
        for peer in peers:
            why = unreached_peer(peer, ctx.inventory, explicit)
            r = {"not_reached": why} if why else self._iperf(ctx, peer, seconds, slack)
            result.setdefault("iperf3", {})[peer] = r
            check = iperf_check(peer, r, min_gbps)
            if not why and (note := outside_selection(peer, ctx.run_hosts, explicit)):
                check = dataclasses.replace(check, detail="; ".join(filter(None, (check.detail, note))))
            checks.append(check)
        if rdma:
            out = ctx.runner.run(
                shell.sh_c("command -v ibv_devinfo >/dev/null || exit 127; ibv_devinfo -v"), timeout=60
            )
            if out.exit_code == 127:
                checks.append(rdma_check(None))
            else:
                report = parse_ibv_devinfo(out.stdout)
                result["rdma"] = [dataclasses.asdict(p) for p in report.ports]
                why = (out.stderr.strip().splitlines() or ["no devices"])[-1] if not report.ports else ""
                checks.append(rdma_check(report, f"ibv_devinfo: {why}" if why else ""))
        msg, failed = _summary("network", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": result})

    def _upload(self, ctx: StepContext) -> float | str | None:
        """Mbit/s of the probe (None: it did not run), or why its OpenSSH config cannot be written."""
        from gpuonboard.connection import openssh

        config = openssh.write_for(
            ctx.host, ctx.inventory, ctx.known_hosts or Path(".gpuonboard/known_hosts"), ctx.project
        )
        if isinstance(config, str):
            return config
        cfg, alias = config
        return transfer.probe_throughput(cfg, alias)

    def _iperf(
        self, ctx: StepContext, peer_name: str, seconds: int, slack: int = IPERF_CLIENT_SLACK_S
    ) -> dict[str, Any]:
        """Start `iperf3 -s -1` on the peer (bounded by timeout), run the client here, parse."""
        from gpuonboard.connection import (
            DEFAULT_KNOWN_HOSTS,
            ConnectError,
            ConnectOptions,
            KnownHosts,
            open_runner,
        )

        inv = ctx.inventory
        if inv is None or peer_name not in inv.hosts:
            return {"error": f"no host named {peer_name!r} in the inventory"}
        peer = inv.hosts[peer_name]
        address = str(peer.vars.get("iperf_address") or peer.address)
        have = ctx.runner.run(shell.sh_c("command -v iperf3"), timeout=30)
        if not have.ok:
            return {"error": f"iperf3 is not installed on {ctx.host.name} (apt-get install iperf3)"}
        known = ctx.known_hosts or DEFAULT_KNOWN_HOSTS
        try:
            other = open_runner(peer, ConnectOptions(known_hosts=known, retries=1), KnownHosts(known), inv)
        except ConnectError as exc:
            return {"error": f"cannot connect to {peer_name}: {exc}"}
        try:
            if not other.run(shell.sh_c("command -v iperf3"), timeout=30).ok:
                return {"error": f"iperf3 is not installed on {peer_name} (apt-get install iperf3)"}
            fixed = iperf_port(peer)
            r: dict[str, Any] = {"error": "not run"}
            for _start in range(IPERF_SERVER_STARTS if fixed is None else 1):
                port = fixed or IPERF_PORTS[0] + secrets.randbelow(IPERF_PORTS[1] - IPERF_PORTS[0])
                server = shell.join(["timeout", str(seconds + 30), "iperf3", "-s", "-1", "-p", str(port)])
                started = other.run(shell.background(server, "/dev/null"), timeout=30)
                pid = started.stdout.strip().splitlines()[-1] if started.ok and started.stdout.strip() else ""
                try:
                    r = self._iperf_client(ctx, other, pid, address, port, seconds, seconds + slack)
                finally:
                    if pid.isdecimal():
                        other.run(shell.sh_c(f"kill {int(pid)} 2>/dev/null; true"), timeout=30)
                if not r.get("server_gone"):
                    break
            if r.pop("server_gone", False):
                r["error"] = iperf_unserved(peer_name, port, fixed is not None)
            r.update(peer=peer_name, address=address, port=port)
            return r
        finally:
            other.close()

    @staticmethod
    def _iperf_client(
        ctx: StepContext, other: Any, pid: str, address: str, port: int, seconds: int, limit: int
    ) -> dict[str, Any]:
        """Run the client here (under `timeout limit` on the host: never left waiting there),
        retrying while the server is not listening yet; `server_gone` when the peer's server
        ended without listening (its port taken: iperf3 exits at once)."""
        argv = ["iperf3", "-c", address, "-p", str(port), "-J", "-t", str(seconds)]
        client = shell.join(["timeout", str(limit), *argv])
        alive = shell.sh_c(_ALIVE.format(pid=int(pid))) if pid.isdecimal() else ""
        r: dict[str, Any] = {"error": "not run"}
        deadline = time.monotonic() + IPERF_LISTEN_WAIT_S
        for attempt in range(100):  # the server needs a moment to listen (a busy host: seconds)
            out = ctx.runner.run(client, timeout=limit + 10)
            if out.exit_code == 124:  # the host's `timeout` stopped a client that hung
                return {"error": iperf_hung(address, port, limit)}
            r = parse_iperf3(out.stdout or out.stderr)
            if "refused" not in str(r["error"]).lower():
                return r
            if alive and not other.run(alive, timeout=30).ok:
                return {**r, "server_gone": True}
            if time.monotonic() > deadline:
                return r
            time.sleep(min(1.0, 0.2 * (attempt + 1)))
        return r
