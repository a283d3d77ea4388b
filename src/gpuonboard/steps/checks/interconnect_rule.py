"""The interconnect rule of the `acceptance` step: the GPU links `nvidia-smi topo -m` shows
(NVLink between every GPU pair, PCIe paths only, a mix) against the interconnect ordered, and a
matrix that is missing, cut short, of fewer GPUs than ordered or not of the GPUs listed. The
other GPU rules: steps/checks/gpu_rules.py.
"""

from __future__ import annotations

from gpuonboard.connection.gather import Facts
from gpuonboard.facts import topo
from gpuonboard.facts.gpu_merge import refusal_line
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check, Verdict, last_line
from gpuonboard.steps.checks.missing_facts import no_gpu_actual, not_judged


def _link_verdict(order: OrderSpec, topology: topo.Topology, kind: str, expected: str) -> Check:
    """rule_interconnect of a whole matrix of the GPUs ordered: what links it shows, against the
    interconnect ordered."""
    weakest = topo.weakest_link(topology)
    actual = kind + (f" (weakest GPU link {weakest})" if weakest else "")
    orphans = topo.nvlink_orphans(topology) if kind == "mixed" else []
    verdict: Verdict
    if order.interconnect == "pcie" or kind == "nvlink" or kind == "single":
        verdict = "pass"
    elif kind == "mixed" and not orphans:
        verdict = "warn"
    else:
        verdict = "fail"
    detail = "only some GPU pairs are on NVLink" if kind == "mixed" else ""
    if verdict == "fail" and not orphans:
        detail = (
            "NVLink was ordered, but the GPUs reach each other only over PCIe"
            + (f" (the weakest pair through {weakest})" if weakest else "")
            + ": GPU-to-GPU traffic (all-reduce) is many times slower than over NVLink;"
            " ask the vendor for the NVLink (SXM/NVSwitch or bridged) box that was ordered"
        )
    if orphans and verdict == "fail":
        detail = (
            f"{', '.join(orphans)} {'has' if len(orphans) == 1 else 'have'} NVLink to no other GPU while"
            " the others have it: a dead NVLink or a missing bridge; ask the vendor to fix or swap the board"
        )
    return Check("interconnect", expected, actual, verdict, detail)


def rule_interconnect(order: OrderSpec, facts: Facts) -> Check:
    """NVLink between every GPU pair when NVLink was ordered (from nvidia-smi topo -m)."""
    expected = order.interconnect or ""
    if facts.topology is None:
        if not facts.given("nvidia_topo"):
            return not_judged("interconnect", expected, "nvidia-smi topo -m", "nvidia-smi topo -m")
        problem = no_gpu_actual(facts) or "unknown: " + _topo_failure(facts)
        # no matrix is no evidence: neither NVLink's absence (a fail) nor PCIe's presence (a pass)
        return Check(
            "interconnect",
            expected,
            problem,
            "unverified",
            "the GPU topology could not be read: run `nvidia-smi topo -m` on the host and save its"
            " output; `invoke facts FILE` judges it",
        )
    kind = topo.interconnect(facts.topology)
    listed = len(facts.gpu.gpus) if facts.gpu else 0
    incomplete = len(facts.topology.gpus) < listed or not facts.topology.complete
    mp = (out := facts.raw.get("nvidia_topo")) is not None and out.pcie_paths_only  # (a copied `-mp`)
    if kind == "unknown" and facts.topology.pcie_only and (mp or not incomplete):
        return _pcie_paths_only(order, facts.topology, incomplete)  # (a `-mp` cut short is one still)
    unlinked = topo.whole_rows_without_nvlink(facts.topology) if order.interconnect == "nvlink" else []
    if (kind == "unknown" or incomplete) and unlinked:
        return _no_nvlink_rows(expected, facts.topology, unlinked)
    if kind == "unknown" or incomplete:
        seen = len(facts.topology.gpus)
        if not seen:  # (no GPU row, or a header row whose columns cannot be told apart)
            shown = "unknown: no GPU row of the nvidia-smi topo -m matrix could be read"
        elif cut_after := _cut_after(facts.topology):
            shown = f"unknown: the nvidia-smi topo -m matrix is cut after {cut_after}"
        elif listed > seen:
            shown = f"unknown: nvidia-smi topo -m shows {seen} of the {listed} GPUs"
        else:  # (its own header names more GPUs or links)
            shown = f"unknown: the nvidia-smi topo -m matrix was cut short ({seen} GPU rows read)"
        return Check(
            "interconnect",
            expected,
            shown,
            "unverified",
            "the GPU matrix of `nvidia-smi topo -m` is missing or cut short: rerun `invoke check`",
        )
    if facts.gpu is not None and facts.gpu.complete and 0 < listed < len(facts.topology.gpus):
        # a whole listing of fewer GPUs than the matrix: two boxes' outputs, or one that changed
        return Check(
            "interconnect",
            expected,
            f"unknown: nvidia-smi topo -m shows {len(facts.topology.gpus)} GPUs, nvidia-smi lists"
            f" {listed} (two boxes' outputs, or a box that changed between them)",
            "unverified",
            "the matrix is not of the GPUs listed: rerun `invoke check` (offline: save `nvidia-smi"
            " topo -m` and `nvidia-smi -q` of one box at one time)",
        )
    if order.interconnect == "nvlink" and (few := _fewer_than_ordered(order, facts.topology, listed)):
        return Check(
            "interconnect",
            expected,
            few,
            "unverified",
            "NVLink joins GPU pairs: a matrix of fewer GPUs than ordered (a container's or a job's"
            " view of some GPUs) cannot show the others' links; save `nvidia-smi topo -m` run where"
            " every GPU is visible",
        )
    return _link_verdict(order, facts.topology, kind, expected)


def _cut_after(matrix: topo.Topology) -> str:
    """ "GPU0's row (1 of its 8 GPU rows read)" of a matrix cut short after a row it read (a
    row's cells or its CPU affinity read: a bare `GPU1` label below it is no row read); "" of a
    whole matrix or one that read no row."""
    if matrix.complete:
        return ""
    rows = topo.rows_read(matrix)
    if not rows:
        return ""
    of = len(matrix.gpu_columns) or len(matrix.gpus)
    return f"{rows[-1]}'s row ({len(rows)} of its {of} GPU rows read)"


def _no_nvlink_rows(expected: str, matrix: topo.Topology, unlinked: list[str]) -> Check:
    """A cut `nvidia-smi topo -m` (its command copied: no `-mp`) whose whole rows show GPUs with
    NVLink to no other GPU: a fail for an NVLink order, whatever the rows cut away show."""
    gpus = ", ".join(unlinked)
    return Check(
        "interconnect",
        expected,
        f"{gpus} {'has' if len(unlinked) == 1 else 'have'} NVLink to no other GPU (whole rows of a"
        f" `nvidia-smi topo -m` cut after {len(matrix.gpus)} of {len(matrix.gpu_columns)} GPU rows)",
        "fail",
        "NVLink was ordered, but these GPUs reach every other GPU only over PCIe: GPU-to-GPU traffic"
        " (all-reduce) is many times slower than over NVLink; ask the vendor for the NVLink"
        " (SXM/NVSwitch or bridged) box that was ordered",
    )


def _pcie_paths_only(order: OrderSpec, matrix: topo.Topology, cut: bool = False) -> Check:
    """A matrix of PCIe paths only (`nvidia-smi topo -mp`), which shows no NVLink: whole, it meets
    a PCIe order (every GPU pair has the PCIe path it shows); it tells nothing of an NVLink one,
    whole or `cut` short (m31c 4: "the topo -m matrix was cut short ... rerun")."""
    paths = f"{matrix.pcie_only} (weakest GPU path {topo.weakest_link(matrix)})"
    if cut:
        paths = f"{matrix.pcie_only}, and is cut short ({len(matrix.gpus)} GPU rows read)"
    if order.interconnect == "pcie" and not cut:
        return Check("interconnect", "pcie", f"pcie: {paths}", "pass")
    return Check(
        "interconnect",
        order.interconnect or "",
        f"unknown: {paths}",
        "unverified",
        "whether NVLink joins the GPUs cannot be read from this matrix: save the whole output of"
        " `nvidia-smi topo -m` (without -p), whose matrix shows NV# where NVLink joins two GPUs",
    )


def _fewer_than_ordered(order: OrderSpec, matrix: topo.Topology, listed: int) -> str:
    """'unknown: nvidia-smi topo -m shows 1 GPU of the 4 ordered' where the matrix holds one GPU
    (no pair to judge) or, with no nvidia-smi listing beside it, fewer than ordered; "" else."""
    seen, ordered = len(matrix.gpus), order.gpu_count or 0
    if seen == 1 or (not listed and seen < ordered):
        if ordered > seen:
            gpus = f"{seen} GPU{'s' if seen != 1 else ''}"
            return f"unknown: nvidia-smi topo -m shows {gpus} of the {ordered} ordered"
        return "unknown: nvidia-smi topo -m shows 1 GPU, no GPU pair"
    return ""


def _topo_failure(facts: Facts) -> str:
    """Why `nvidia-smi topo -m` gave no matrix, in a few words."""
    out = facts.raw.get("nvidia_topo")
    if out is None or out.absent:
        return "nvidia-smi topo -m was not run"
    line = refusal_line(out)
    if line:
        return f"the host refuses nvidia-smi topo -m ({line[:160]})"
    if out.exit_code != 0:
        line = last_line(out.stderr or out.stdout, out.exit_code)[:160]
        return f"nvidia-smi topo -m failed (exit {out.exit_code}: {line})"
    return "nvidia-smi topo -m printed no GPU matrix that could be read"
