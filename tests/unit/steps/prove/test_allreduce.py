"""`allreduce_busbw` is judged by the GPUs the all-reduce ran on, all of them: a reference row
judges a box of mixed models only when it fits every model (as the `*` PCIe row does), never by
the first GPU's name alone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.prove import allreduce_checks, load_references, parse_result
from gpuonboard.steps.prove.allreduce import ran_names, ran_over

FIX = Path(__file__).resolve().parents[3] / "fixtures"
A100_PCIE = "NVIDIA A100 80GB PCIe"
A10 = "NVIDIA A10"
# a row of the user's own measurement (data/allreduce_reference.yml invites one): 8 x A100 PCIe
OWN_ROW = {
    "id": "own-a100-pcie-8x",
    "gpu": "A100",
    "form": "PCIe",
    "gpus": 8,
    "interconnect": "pcie",
    "busbw_gbps": 100,
    "source": "own measurement",
    "verified": True,
}


def _recorded() -> dict[str, Any]:
    """The recorded real 8 x A100 NCCL all-reduce (tests/fixtures/prove/), unedited."""
    r = parse_result((FIX / "prove" / "allreduce_8xa100_nccl.out").read_text())
    assert r is not None and r["world_size"] == 8
    return r


def _table(*rows: dict[str, Any]) -> dict[str, Any]:
    table = copy.deepcopy(load_references())
    table["references"] = [*rows, *table["references"]]
    return table


def test_a_mixed_box_is_not_judged_by_its_first_gpus_row() -> None:
    """The real 8-rank result judged on a box nvidia-smi lists as 4 x A100 PCIe + 4 x A10 (the
    names are the edit): the user's own 8 x A100 PCIe row used to judge all eight by GPU 0's
    name; now it fits only the A100s, so the `*` Gen4 PCIe row (any model) judges the mix, and
    with no row fitting every model the figure is `unverified`, never an A100 claim."""
    names = [A100_PCIE] * 4 + [A10] * 4
    r = _recorded()
    busbw = {c.name: c for c in allreduce_checks(r, _table(OWN_ROW), names, 8, "pcie", pcie_gen=4)}[
        "allreduce_busbw"
    ]
    assert "own-a100-pcie-8x" not in busbw.expected and "pcie-gen4-no-nvlink" in busbw.expected
    only_own = {"references": [OWN_ROW], "warn_below": 0.85, "fail_below": 0.5}
    mixed = {c.name: c for c in allreduce_checks(r, only_own, names, 8, "pcie", pcie_gen=4)}[
        "allreduce_busbw"
    ]
    assert mixed.verdict == "unverified"
    assert mixed.expected == f"a reference for 8 GPUs: 4 x {A100_PCIE}, 4 x {A10} (pcie)"
    assert f"(4 x {A100_PCIE}, 4 x {A10}) and no row of data/allreduce_reference.yml fits all" in mixed.detail
    # the names the ranks' CUDA devices gave (allreduce.py's device_names) decide over the listing
    ran = {**r, "device_names": [A100_PCIE] * 8}
    own = {c.name: c for c in allreduce_checks(ran, only_own, names, 8, "pcie", pcie_gen=4)}[
        "allreduce_busbw"
    ]
    assert "own-a100-pcie-8x" in own.expected


def test_the_gpus_that_ran_by_name() -> None:
    one_model = [GpuInfo(index=i, name=A100_PCIE) for i in range(4)]
    mixed = [GpuInfo(index=i, name=n) for i, n in enumerate((A100_PCIE, A10, A100_PCIE))]
    assert ran_names(one_model, 2) == [A100_PCIE] * 2
    assert ran_names(one_model, 0) == [A100_PCIE] * 4
    # fewer ranks than GPUs on a mixed box: which ran is not known (CUDA orders fastest first)
    assert ran_names(mixed, 2) == [A100_PCIE, A10, A100_PCIE]


def test_a_mixed_box_without_a_row_counts_each_model() -> None:
    """The real 8-rank A100 result judged on a box of 7 x A100 PCIe + 1 x A10 (the names are the
    edit) linked at Gen3, where the `*` row is a Gen4 figure: the warning said "a reference for
    8 x NVIDIA A100 80GB PCIe + NVIDIA A10", read as 8 + 1 GPUs; it now counts each model."""
    names = [A100_PCIE] * 7 + [A10]
    busbw = {c.name: c for c in allreduce_checks(_recorded(), _table(), names, 8, "pcie", pcie_gen=3)}[
        "allreduce_busbw"
    ]
    assert busbw.verdict == "warn", busbw
    assert busbw.expected == f"a reference for 8 GPUs: 7 x {A100_PCIE}, 1 x {A10} (pcie)"
    assert ran_over(2, [A100_PCIE, A10, A100_PCIE]) == f"2 GPUs among 2 x {A100_PCIE}, 1 x {A10}"
    assert ran_over(4, A10) == f"4 x {A10}"
