"""Step `allreduce`: the torchrun all-reduce benchmark (remote/allreduce.py; NCCL on GPUs,
gloo on the CPU) against the reference bus bandwidth, PCIe ACS, NVIDIA DCGM's diagnostics
(prove.dcgm_diag) and, across a group's hosts, the multi-node run (prove.multinode). The rules
are pure functions over the script's result JSON. Where some GPU pair has no peer access the
script runs NCCL with P2P disabled (`allreduce_p2p` warns: the figure is for a path through
host memory, and an NVLink reference row is not compared with it); a collective that does not
complete within `collective_timeout` ends the run with the reason instead of hanging."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpuonboard import shell
from gpuonboard.errors import UsageError
from gpuonboard.facts import topo
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.probe import Probe
from gpuonboard.inventory import Host
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict
from gpuonboard.steps.prove.dcgm_diag import (
    DCGM_PROBE,
    DCGM_TIMEOUTS,
    dcgm_failure_note,
    dcgm_level,
    run_dcgm,
)
from gpuonboard.steps.prove.launch import (
    _LAUNCH_ARGS,
    Launch,
    _float_arg,
    _get,
    _int_arg,
    host_bound,
    launch_settings,
    launcher_argv,
    run_script,
    torch_where,
)
from gpuonboard.steps.prove.multinode import (
    NodePlan,
    meet_group,
    multinode_selection_problem,
    node_plan,
    torchrun_args,
)
from gpuonboard.steps.prove.references import (
    generation_note,
    link_generation,
    load_references,
    match_reference,
    names_of,
    variant_note,
)
from gpuonboard.steps.prove.rules import (
    _gpu_count,
    _pct,
    _summary,
    broken_driver_sentence,
    hidden_gpus_sentence,
    no_cuda_sentence,
    nvidia_smi_failure,
)
from gpuonboard.units import format_bytes, parse_size

GiB = 1 << 30


def parse_acs(lspci_vvv: str) -> dict[str, int] | None:
    """Count PCIe bridges whose ACS redirects peer traffic (ReqRedir+/CmpltRedir+) in
    `lspci -vvv` output; None when no ACSCtl line is readable (needs root)."""
    lines = [x for x in lspci_vvv.splitlines() if "ACSCtl:" in x]
    if not lines:
        return None
    on = [x for x in lines if re.search(r"\b(ReqRedir|CmpltRedir)\+", x)]
    return {"ports": len(lines), "redirecting": len(on)}


def correct_check(r: Mapping[str, Any], suspect: str) -> Check:
    """`allreduce_correct` over an allreduce.py result: exact sums at every size measured."""
    rows = r.get("rows") or []
    ok = bool(r.get("all_correct")) and bool(rows)
    return Check(
        "allreduce_correct",
        "sum over ranks is exact at every size",
        f"{len(rows)} sizes, " + ("all exact" if ok else "WRONG results"),
        "pass" if ok else "fail",
        "" if ok else f"a collective that returns wrong sums corrupts training; suspect {suspect}",
    )


def peak_busbw(r: Mapping[str, Any]) -> tuple[float, int]:
    """(peak bus bandwidth in GB/s, the message size in bytes where it was reached)."""
    rows = r.get("rows") or []
    at = max(rows, key=lambda x: x["busbw_gbps"])["bytes"] if rows else 0
    return float(r.get("peak_busbw_gbps") or 0.0), int(at)


def cpu_busbw_check(actual: str, gpu_count: int, where: str, gpu_failure: str | None) -> Check:
    """`allreduce_busbw` for an all-reduce that ran on the CPU: a failure on a box whose
    nvidia-smi lists GPUs or fails (a broken driver), else information (no GPU reference)."""
    if gpu_count:
        return Check(
            "allreduce_busbw",
            f"measured on the {gpu_count} GPU(s) with NCCL",
            f"{actual} on the CPU",
            "fail",
            no_cuda_sentence(gpu_count, where),
        )
    if gpu_failure:
        return Check(
            "allreduce_busbw",
            "measured on the GPUs with NCCL",
            f"{actual} on the CPU ({gpu_failure})",
            "fail",
            broken_driver_sentence(gpu_failure),
        )
    return Check(
        "allreduce_busbw",
        "(information only: CPU / gloo, no GPU reference)",
        actual,
        "pass",
        "measured on the CPU with gloo; the GPU figure needs CUDA + NCCL",
    )


def collective_timeout(timeout: float) -> float:
    """Seconds one collective may take (allreduce.py --collective-timeout): half of what the
    host's `timeout` gives the script, so that a hung collective is named before the host stops
    the run, within 30..180 s (one 1 GiB all-reduce takes about a second even through host
    memory; the first also starts NCCL)."""
    return float(int(min(180.0, max(30.0, host_bound(timeout) / 2))))


def p2p_off(r: Mapping[str, Any]) -> bool:
    """Whether the run's NCCL had its P2P transport off (the script's `p2p.nccl_p2p_disabled`)."""
    p2p = r.get("p2p")
    return isinstance(p2p, Mapping) and bool(p2p.get("nccl_p2p_disabled"))


def p2p_check(r: Mapping[str, Any]) -> Check | None:
    """`allreduce_p2p` over the script's P2P decision (None for a result without one: the CPU, a
    script before issue 29): a warning when NCCL ran without P2P (gpuonboard disabled it for the
    pairs without peer access, or the environment did) or a pair lacks peer access, naming the
    pairs; else a pass."""
    p2p = r.get("p2p")
    if not isinstance(p2p, Mapping) or len(p2p.get("gpus") or []) < 2:
        return None
    gpus = len(p2p.get("gpus") or [])
    pairs = [list(x) for x in p2p.get("pairs_without_access") or []]
    user = ", ".join(f"{k}={v}" for k, v in (p2p.get("environment") or {}).items())
    expected = f"peer access between every pair of the {gpus} GPUs"
    if not pairs and not p2p.get("nccl_p2p_disabled"):
        kept = f"; the environment's {user} kept" if user else ""
        return Check("allreduce_p2p", expected, f"all {gpus * (gpus - 1) // 2} pairs{kept}", "pass")
    missing = f"no peer access between GPUs {pair_list(pairs)}" if pairs else "every pair has peer access"
    if p2p.get("set_by") == "gpuonboard":
        how = "NCCL ran with NCCL_P2P_DISABLE=1 (set by gpuonboard: NCCL can hang using P2P there)"
    elif p2p.get("nccl_p2p_disabled"):
        how = f"NCCL ran without P2P: the environment's {user}"
    else:
        how = f"the environment's {user} kept"
    if p2p.get("nccl_p2p_disabled"):
        detail = (
            "the bus bandwidth is for a path through host memory, not GPU to GPU, and is not compared"
            " with an NVLink reference"
        )
    else:
        detail = (
            "NCCL may still use P2P between GPUs whose pair lacks peer access;"
            " set NCCL_P2P_DISABLE=1 in the host's environment if the all-reduce hangs"
        )
    if pairs:
        detail += (
            "; peer access is missing on many consumer cards (GeForce) and with the IOMMU on, PCIe ACS"
            " redirecting, or in some VMs: `nvidia-smi topo -p2p r` shows it"
        )
    return Check("allreduce_p2p", expected, f"{missing}; {how}", "warn", detail)


def pair_list(pairs: list[list[int]], most: int = 12) -> str:
    """ "0-3, 1-2" (the first `most` pairs, then how many more)."""
    shown = ", ".join(f"{a}-{b}" for a, b in pairs[:most])
    return shown + (f" and {len(pairs) - most} more" if len(pairs) > most else "")


def ran_names(gpus: Sequence[GpuInfo], nproc: int) -> list[str]:
    """The names of the GPUs an all-reduce of `nproc` ranks (0: one per GPU) runs on, for a result
    that does not name them (allreduce.py before `device_names`): every GPU's, or the first
    `nproc` where all GPUs are one model; on a mixed box with fewer ranks than GPUs which ran is
    not known (CUDA orders devices fastest first), so every model is named."""
    names = [g.name for g in gpus]
    if nproc and nproc < len(names) and len(set(names)) == 1:
        return names[:nproc]
    return names


def ran_over(ranks: int, gpu_name: str | Sequence[str]) -> str:
    """The GPUs of a run, counted per model: "8 x NVIDIA A100 80GB PCIe", "4 GPUs: 3 x NVIDIA
    A100-PCIE-40GB, 1 x NVIDIA A10" (never "4 x A + B", read as 4 + 1), "2 GPUs among 2 x A, 1 x B"
    where the names are not one per rank (which ran is not known)."""
    names = [gpu_name] if isinstance(gpu_name, str) else list(gpu_name)
    models = names_of(names)
    if len(models) == 1:
        return f"{ranks} x {models[0]}"
    counts = ", ".join(f"{names.count(n)} x {n}" for n in models)
    return f"{ranks} GPUs: {counts}" if len(names) == ranks else f"{ranks} GPUs among {counts}"


def mixed_check(gpu_name: str | Sequence[str], ranks: int, interconnect: str, actual: str) -> Check:
    """`allreduce_busbw` of a run over GPUs of several models that no reference row fits all of:
    `unverified`; the slowest GPU and link set the pace, and no one model's figure is a claim
    about the mix."""
    names = [gpu_name] if isinstance(gpu_name, str) else list(gpu_name)
    counts = ", ".join(f"{names.count(n)} x {n}" for n in names_of(names))
    return Check(
        "allreduce_busbw",
        f"a reference for {ran_over(ranks, names)} ({interconnect})",
        actual,
        "unverified",
        f"the all-reduce ran over GPUs of several models ({counts}) and no row of"
        " data/allreduce_reference.yml fits all of them: one model's figure is no claim about the"
        " mix, so the bus bandwidth was not judged; set allreduce_nproc and CUDA_VISIBLE_DEVICES to"
        " GPUs of one model for a verdict",
    )


def reference_check(
    table: Mapping[str, Any],
    gpu_name: str | Sequence[str],
    ranks: int,
    interconnect: str,
    peak: float,
    actual: str,
    without_p2p: bool = False,
    pcie_gen: int | None = None,
) -> Check:
    """`allreduce_busbw` against the reference row for `ranks` x `gpu_name` over `interconnect`
    (a warning when the table has none). ``without_p2p``: NCCL ran with its P2P transport off,
    through host memory: an NVLink row's figure is not comparable (a warning that says so, as
    gpu_benchmark does for a figure its reference cannot judge), nor is a row's with `p2p: true`
    (a PCIe peer-to-peer figure) unless the run still met it (a warning down to the fail line of
    half the row's figure, what a path through host memory moves; a failure below it).
    ``pcie_gen``: the GPUs' lowest PCIe link generation (a row with `pcie_gen` judges only a box
    whose links are that new)."""
    ref = match_reference(table, gpu_name, ranks, interconnect, pcie_gen)
    names = names_of(gpu_name)
    gen_note = "" if ref else generation_note(table, names, ranks, interconnect, pcie_gen)
    if ref is None and len(names) > 1 and not gen_note:
        return mixed_check(gpu_name, ranks, interconnect, actual)
    if ref is None:
        notes = [*(variant_note(n) for n in names), gen_note]
        return Check(
            "allreduce_busbw",
            f"a reference for {ran_over(ranks, gpu_name)} ({interconnect})",
            actual,
            "warn",
            "".join(f"{n}; " for n in notes if n)
            + "no reference row for this topology; add one to data/allreduce_reference.yml",
        )
    if without_p2p and ref.get("interconnect") == "nvlink":
        return Check(
            "allreduce_busbw",
            f"{float(ref['busbw_gbps']):.0f} GB/s over NVLink ({ref['id']})",
            f"{actual} with NCCL's P2P off: not comparable",
            "warn",
            "NCCL ran without P2P (allreduce_p2p), so its traffic went through host memory, not over"
            " NVLink; the figure says nothing against an NVLink reference: fix peer access for a"
            " verdict on the links",
        )
    want = float(ref["busbw_gbps"])
    ratio = peak / want if want else 0.0
    warn_below = float(table.get("warn_below", 0.85))
    fail_below = float(table.get("fail_below", 0.5))
    verdict: Verdict = "pass" if ratio >= warn_below else "warn" if ratio >= fail_below else "fail"
    unverified = "" if ref.get("verified") else " (reference not verified)"
    if without_p2p and ref.get("p2p") and verdict != "pass" and peak >= fail_below * want / 2:
        # a figure through host memory below a P2P figure is no fault of the links, down to the
        # fail line of half the row's figure (host memory moves about half of what peer-to-peer
        # does); below that it fails as any run does (2 GB/s against the Gen4 row's 20 GB/s)
        return Check(
            "allreduce_busbw",
            f"{want:.0f} GB/s with GPU peer-to-peer ({ref['id']})",
            f"{actual}, {_pct(ratio)} of reference, with NCCL's P2P off: not comparable",
            "warn",
            "NCCL ran without P2P (allreduce_p2p), so its traffic went through host memory, which"
            f" moves about half of what GPU peer-to-peer does; row {ref['id']}'s figure assumes"
            " peer-to-peer, so a lower figure says nothing against it: fix peer access (many"
            " GeForce cards have none) for a verdict on the links",
        )
    return Check(
        "allreduce_busbw",
        f">= {warn_below * want:.0f} GB/s ({_pct(warn_below)} of {want:.0f} GB/s, {ref['id']})",
        f"{actual}, {_pct(ratio)} of reference",
        verdict,
        ""
        if verdict == "pass"
        else "low bus bandwidth: check `nvidia-smi topo -m`, NVLink errors (`nvidia-smi nvlink -e`),"
        f" PCIe ACS, and NCCL_DEBUG=INFO for the transport used;"
        f" source {ref.get('source')}{unverified}",
    )


def acs_check(acs: dict[str, int] | None) -> Check:
    """`pcie_acs` over parse_acs's count: ACS redirecting peer traffic warns."""
    if acs is None:
        return Check("pcie_acs", "disabled on PCIe switches", "not readable (needs root)", "warn")
    if acs["redirecting"]:
        return Check(
            "pcie_acs",
            "disabled on PCIe switches",
            f"redirecting on {acs['redirecting']} of {acs['ports']} ports",
            "warn",
            "ACS redirects GPU peer traffic through the root complex (can halve peer bandwidth);"
            " ask the vendor to disable it in the BIOS on bare metal",
        )
    return Check("pcie_acs", "disabled on PCIe switches", f"off on {acs['ports']} ports", "pass")


def allreduce_checks(
    r: Mapping[str, Any],
    table: Mapping[str, Any],
    gpu_name: str | Sequence[str],
    gpu_count: int,
    interconnect: str,
    acs: dict[str, int] | None = None,
    acs_asked: bool = False,
    where: str = "this Python",
    gpu_failure: str | None = None,
    nproc_asked: int = 0,
    pcie_gen: int | None = None,
) -> list[Check]:
    """Rules over an allreduce.py result (pure). ``where``: the Python / image torch ran in;
    ``nproc_asked``: the process count the settings asked for (0: one per GPU); ``pcie_gen``: the
    lowest PCIe link generation of the GPUs that ran (references.link_generation).

    On a box whose nvidia-smi lists GPUs (``gpu_count``), an all-reduce that ran on the CPU over
    gloo fails ``allreduce_busbw``: it measured the CPU, not the GPUs or their links; one that
    ran over fewer GPUs than listed, because torch saw fewer, fails ``allreduce_gpus``."""
    checks = [correct_check(r, "GPU/PCIe faults")]
    peak, at = peak_busbw(r)
    n, backend = r.get("world_size"), r.get("backend")
    actual = f"peak busbw {peak:.2f} GB/s at {format_bytes(at)} ({n} x {backend})"
    if r.get("device") != "cuda":
        checks.append(cpu_busbw_check(actual, gpu_count, where, gpu_failure))
        return checks
    seen = int(r.get("cuda_device_count") or n or 0)
    if gpu_count and seen < gpu_count and not nproc_asked:
        checks.append(
            Check(
                "allreduce_gpus",
                f"all {gpu_count} GPUs nvidia-smi lists",
                f"torch saw {seen}; the all-reduce ran over {n}",
                "fail",
                hidden_gpus_sentence(seen, gpu_count),
            )
        )
    if n == 1:
        checks.append(
            Check(
                "allreduce_busbw",
                "(information only: one GPU, no inter-GPU traffic)",
                f"1 x {backend}: nothing crosses a link (bus bandwidth is 0 by definition with one rank)",
                "pass",
                "the bus-bandwidth comparison needs 2+ GPUs in the host, or a multi-node run"
                " (allreduce_nodes)",
            )
        )
        return checks
    max_bytes = int(r.get("max_bytes") or 0)
    if max_bytes < GiB:
        checks.append(
            Check(
                "allreduce_sizes",
                ">= 1 GiB messages",
                f"up to {format_bytes(max_bytes)}",
                "warn",
                "peak bus bandwidth is not reached below 1 GiB; the comparison understates the box",
            )
        )
    # a row is for an all-reduce over its `gpus`: the ranks that ran (allreduce_nproc may ask for
    # fewer than the box has), not the GPUs listed
    p2p = p2p_check(r)
    if p2p is not None:
        checks.append(p2p)
    ranks = int(n or gpu_count)
    ran = r.get("device_names")
    if isinstance(ran, list) and ran and all(isinstance(x, str) and x for x in ran):
        gpu_name = ran  # the names of the GPUs the ranks used, as CUDA gave them
    checks.append(reference_check(table, gpu_name, ranks, interconnect, peak, actual, p2p_off(r), pcie_gen))
    if acs_asked:
        checks.append(acs_check(acs))
    return checks


def multinode_checks(r: Mapping[str, Any], plan: NodePlan, nproc: int, backend: str) -> list[Check]:
    """Rules for one node of a multi-node all-reduce (pure): rank 0's host judges the sums and
    reports the cross-node bus bandwidth (information: no reference for a network), the others
    report that they took part."""
    n = len(plan.members)
    if not r.get("result", True):
        return [
            Check(
                "allreduce_multinode",
                f"took part in the {n}-node all-reduce of group {plan.group}",
                f"node rank {plan.rank} of {n} ({nproc} x {backend});"
                f" the figures are in {plan.master}'s report",
                "pass",
            )
        ]
    peak, at = peak_busbw(r)
    p2p = p2p_check(r)
    return [
        correct_check(r, "the NICs or GPUs"),
        *([p2p] if p2p is not None else []),
        Check(
            "allreduce_multinode",
            f"(information) cross-node busbw over group {plan.group}",
            f"peak busbw {peak:.2f} GB/s at {format_bytes(at)} ({n} nodes, world size {r.get('world_size')}"
            f" x {r.get('backend')})",
            "pass",
            "compare with the interconnect ordered (e.g. 400 Gbit/s InfiniBand ~ 40-48 GB/s busbw per node);"
            " NCCL_DEBUG=INFO shows the transport used",
        ),
    ]


class AllreduceStep(Step):
    """torchrun all-reduce benchmark (NCCL on GPUs, gloo on CPU) against reference busbw; NVIDIA
    DCGM's `dcgmi diag` folded into the rules when installed; optionally across a group's hosts."""

    name = "allreduce"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "nproc": "processes (default: one per GPU, 2 on a CPU-only box; 1 per CPU node multi-node)",
        "max_size": "largest message (default 1GiB on GPU, 64MiB on CPU)",
        "min_size": "smallest message (default 1MiB on GPU, 64KiB on CPU)",
        "iters": "timed iterations per size (default 20 GPU / 3 CPU)",
        "dcgm_level": "dcgmi diag level 1-4, 0 = off (default: vars.dcgm_level, else by dcgm_budget, else 1)",
        "dcgm_budget": "seconds dcgmi diag may take: picks the deepest level that fits (vars.dcgm_budget)",
        "dcgm_timeout": "seconds before dcgmi diag is given up (default 300 / 900 / 3600 / 10800 by level)",
        "nodes": "'group' (this host's group) or a group name: all-reduce across its hosts"
        " (default: vars.allreduce_nodes; unset = this host only)",
        "join_timeout": "seconds the group's hosts wait for each other"
        " (default: vars.allreduce_join_timeout, else 300)",
    }

    def probes(self) -> list[Probe]:
        """Whether dcgmi is on the PATH rides in the batched fact probe."""
        return [DCGM_PROBE]

    def check_host(self, host: Host) -> None:
        """Bad DCGM settings are reported before connecting."""
        dcgm_level(_get(self.args, host.vars, "dcgm_level", "dcgm_level", None), None)

    def plan(self, ctx: StepContext) -> Plan:
        """Run dcgmi diag and the benchmark (not in check mode), compare with the reference."""
        v = ctx.host.vars
        try:
            launch = launch_settings(self, v, 900)
            nproc = _int_arg(self, v, "nproc", "allreduce_nproc", 0)
            iters = _int_arg(self, v, "iters", "allreduce_iters", 0)
            sizes = {}
            for key in ("max_size", "min_size"):
                raw = _get(self.args, v, key, f"allreduce_{key}", "")
                sizes[key] = parse_size(raw) if raw != "" else 0
            table = load_references()
            level = dcgm_level(
                _get(self.args, v, "dcgm_level", "dcgm_level", None),
                _get(self.args, v, "dcgm_budget", "dcgm_budget", None),
            )
            dcgm_timeout = _float_arg(self, v, "dcgm_timeout", "dcgm_timeout", DCGM_TIMEOUTS.get(level, 300))
            join_timeout = _float_arg(self, v, "join_timeout", "allreduce_join_timeout", 300)
            nodes = node_plan(
                ctx.host, ctx.inventory, str(_get(self.args, v, "nodes", "allreduce_nodes", ""))
            )
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad allreduce setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, "check mode: the all-reduce benchmark was not run")
        argv = []
        if iters:
            argv += ["--iters", str(iters)]
        if sizes["max_size"]:
            argv += ["--max-bytes", str(sizes["max_size"])]
        if sizes["min_size"]:
            argv += ["--min-bytes", str(sizes["min_size"])]
        argv += ["--collective-timeout", f"{collective_timeout(launch.timeout):.0f}"]
        checks, dcgm_result = run_dcgm(ctx, level, dcgm_timeout) if level else ([], None)
        diff: dict[str, Any] = {"dcgm": dcgm_result} if dcgm_result else {}
        if nodes is not None:
            return self._multinode(ctx, launch, nodes, nproc, argv, join_timeout, checks, diff)
        argv += launcher_argv(launch, nproc)
        data, why = run_script(ctx, launch, "allreduce.py", argv)
        if data is None:
            return Plan(False, why + dcgm_failure_note(checks), checks=checks, failed=True, diff=diff or None)
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        link = topo.interconnect(ctx.facts.topology) if ctx.facts.topology else "unknown"
        acs, asked = None, False
        if data.get("device") == "cuda" and link in ("pcie", "mixed"):
            asked = True
            out = ctx.runner.run(shell.sh_c("lspci -vvv 2>/dev/null | grep ACSCtl"), timeout=60)
            acs = parse_acs(out.stdout)
        checks += allreduce_checks(
            data,
            table,
            ran_names(gpus, nproc),
            len(gpus),
            link,
            acs,
            asked,
            torch_where(launch),
            nvidia_smi_failure(ctx.facts),
            nproc,
            link_generation(gpus[: nproc or len(gpus)]),
        )
        msg, failed = _summary(f"all-reduce over {data.get('world_size')} x {data.get('backend')}", checks)
        return Plan(
            False,
            msg + dcgm_failure_note(checks),
            checks=checks,
            failed=failed,
            diff={**diff, "result": data},
        )

    def _multinode(
        self,
        ctx: StepContext,
        launch: Launch,
        nodes: NodePlan,
        nproc: int,
        argv: list[str],
        join_timeout: float,
        checks: list[Check],
        diff: dict[str, Any],
    ) -> Plan:
        """Meet the group's other hosts, then run this node's torchrun (static rendezvous on the
        group's first host); every host starts together because the runner runs them in parallel."""
        n = len(nodes.members)
        key = (id(ctx.inventory), nodes.group, self.label)
        early = multinode_selection_problem(nodes, ctx.run_hosts, ctx.forks)
        if early:
            return Plan(False, early, checks=checks, failed=True, diff=diff or None)
        if ctx.progress:
            ctx.progress(f"step {self.label}: waiting for the {n} hosts of group {nodes.group}")
        seen, missing = meet_group(
            key, nodes.members, ctx.host.name, {"gpus": _gpu_count(ctx.facts)}, join_timeout
        )
        if missing:
            msg = (
                f"multi-node all-reduce over group {nodes.group}: {', '.join(missing)} did not reach this"
                f" step within {join_timeout:.0f} s; run all {n} hosts of the group together"
                f" (--group {nodes.group} --forks {n} or more) and check that they are reachable"
            )
            return Plan(False, msg, checks=checks, failed=True, diff=diff or None)
        # one backend for every node: NCCL only when each host has GPUs, else gloo on the CPU
        backend = "nccl" if all(int(i.get("gpus") or 0) > 0 for i in seen.values()) else "gloo"
        per_node = nproc or (_gpu_count(ctx.facts) if backend == "nccl" else 1)
        launcher = torchrun_args(nodes, per_node, join_timeout)
        data, why = run_script(
            ctx,
            launch,
            "allreduce.py",
            [*argv, "--backend", backend],
            launcher=launcher,
            env={"OMP_NUM_THREADS": "1"},
            expect_result=nodes.rank == 0,
            remote_timeout=max(1.0, launch.timeout - 10),  # ends before the SSH wait
        )
        where = f"node {nodes.rank} of {n} (master {nodes.master} {nodes.master_addr}:{nodes.master_port})"
        if data is None:
            msg = f"multi-node all-reduce over group {nodes.group}, {where}: {why}"
            return Plan(False, msg + dcgm_failure_note(checks), checks=checks, failed=True, diff=diff or None)
        checks += multinode_checks(data, nodes, per_node, backend)
        msg, failed = _summary(f"{n}-node all-reduce over group {nodes.group}, {where}", checks)
        result = {**data, "node_rank": nodes.rank, "nodes": list(nodes.members), "group": nodes.group}
        return Plan(
            False,
            msg + dcgm_failure_note(checks),
            checks=checks,
            failed=failed,
            diff={**diff, "result": result},
        )
