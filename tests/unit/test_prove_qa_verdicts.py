"""False verdicts of the prove rules: a loss that did not really fall (inf, NaN, negative, blown
up and only partly back), a loss_margin that lets a flat loss pass, a ResNet-50 figure at another
image size judged against the 224 px reference, an all-reduce over fewer ranks judged against
the whole box's row, and a result marker that follows a C library's partial line on stdout."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpuonboard.steps.prove import (
    SmokeTrainStep,
    allreduce_checks,
    load_references,
    parse_result,
    smoke_checks,
)
from gpuonboard.steps.prove.gpu_benchmark import benchmark_checks, load_gpu_references

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "prove"


def _recorded(name: str) -> dict[str, Any]:
    r = parse_result((FIX / name).read_text())
    assert r is not None
    return r


def _loss(r: dict[str, Any]) -> Any:
    return {c.name: c for c in smoke_checks(r, gpu_count=1)}["loss_falls"]


def test_recorded_runs_still_pass() -> None:
    for name in ("smoke_cpu.out", "smoke_cuda_h200.out"):
        assert _loss(_recorded(name)).verdict == "pass", name


@pytest.mark.parametrize(
    ("first", "last"),
    [(math.inf, math.inf), (math.inf, 0.1), (2.0, -1.0), (math.nan, 0.1), (2.0, math.nan)],
)
def test_a_loss_that_is_not_a_finite_cross_entropy_fails(first: float, last: float) -> None:
    r = {**_recorded("smoke_cuda_h200.out"), "loss_first": first, "loss_last": last}
    check = _loss(r)
    assert check.verdict == "fail", check
    assert f"the mean loss of the first / last steps was {first} / {last}" in check.actual
    assert "suspect numerics" in check.detail


def test_a_nan_step_in_between_fails() -> None:
    r = _recorded("smoke_cuda_h200.out")
    losses = list(r["losses"])
    losses[30] = math.nan
    check = _loss({**r, "losses": losses})
    assert check.verdict == "fail" and "the loss was nan at step 31" in check.actual


def test_a_loss_that_blew_up_and_came_only_part_of_the_way_back_fails() -> None:
    # the shape of the real script's run at --lr 1e9 (see tests/integration/test_prove_qa_real_scripts.py)
    r = {
        **_recorded("smoke_cuda_h200.out"),
        "loss_first": 1.87e31,
        "loss_last": 1.16e28,
        "loss_window": 5,
        "losses": [2.07, 1e31, 2e31, 3e31, 3e31, *[1e28] * 55],
    }
    check = _loss(r)
    assert check.verdict == "fail"
    assert check.actual == "1.87e+31 -> 1.16e+28 (-100 %); but the first steps reached 2.0700 already"
    assert "blew up" in check.detail


def _smoke_plan(**vars: Any) -> Any:
    host = SimpleNamespace(name="h1", vars=vars)
    ctx = SimpleNamespace(host=host, check=True)
    return SmokeTrainStep({}).plan(ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize("margin", [0, -0.5, 1, 1.5, "nan"])
def test_a_loss_margin_that_would_pass_a_flat_loss_is_refused(margin: Any) -> None:
    plan = _smoke_plan(train_loss_margin=margin)
    assert plan.failed
    assert plan.msg.startswith("bad smoke_train setting: loss_margin (vars.train_loss_margin) must be")


def test_a_sensible_loss_margin_is_taken() -> None:
    plan = _smoke_plan(train_loss_margin=0.5)
    assert not plan.failed and plan.msg == "check mode: the smoke training was not run"


def test_resnet50_at_another_image_size_is_not_judged_against_the_224_px_row() -> None:
    r = _recorded("gpu_benchmark_cuda_h200.out")
    w = r["workers"][0]
    # a half-speed H200 at 112 px: four times fewer pixels per image, about 1.9x the reference
    small = {**r, "image_size": 112, "workers": [{**w, "images_per_s": 11500.0}]}
    c = {x.name: x for x in benchmark_checks(small, load_gpu_references(), [])}
    assert c["resnet50_gpu0"].verdict == "warn"
    assert c["resnet50_gpu0"].actual.endswith("at 112 px (reference: 224 px): not comparable")
    assert "unset benchmark_image_size" in c["resnet50_gpu0"].detail
    assert c["sustained_gpu0"].verdict == "pass"  # the drop over time is still judged
    # the default size is still judged against the row
    same = {x.name: x for x in benchmark_checks(r, load_gpu_references(), [])}
    assert same["resnet50_gpu0"].verdict == "pass"


def test_an_allreduce_over_fewer_ranks_is_matched_by_the_ranks_that_ran() -> None:
    r = _recorded("allreduce_8xa100_nccl.out")
    table = load_references()
    name = "NVIDIA A100-SXM4-80GB"
    four = {**r, "world_size": 4}
    c = {x.name: x for x in allreduce_checks(four, table, name, 8, "nvlink", nproc_asked=4)}
    assert "a100-sxm-4x-nvlink" in c["allreduce_busbw"].expected
    two = {**r, "world_size": 2}
    c = {x.name: x for x in allreduce_checks(two, table, name, 8, "nvlink", nproc_asked=2)}
    assert c["allreduce_busbw"].verdict == "warn"
    assert c["allreduce_busbw"].expected == f"a reference for 2 x {name} (nvlink)"
    # all eight: the 8-GPU row as before
    c = {x.name: x for x in allreduce_checks(r, table, name, 8, "nvlink")}
    assert "a100-sxm-8x-nvswitch" in c["allreduce_busbw"].expected


def test_the_marker_after_a_partial_nccl_line_is_found() -> None:
    out = (
        "box:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        'box:4242:4301 [0] NCCL INFO Channel 00/02 :    0   1GPUONBOARD_RESULT {"ok": true, "n": 1}\n'
        "box:4242:4301 [0] NCCL INFO Connected all rings\n"
    )
    assert parse_result(out) == {"ok": True, "n": 1}
    # an error result quoting an inner result line is read as the outer one
    inner = '"GPUONBOARD_RESULT {\\"ok\\": true}"'
    assert parse_result(f'GPUONBOARD_RESULT {{"ok": false, "stderr_tail": [{inner}]}}\n') == {
        "ok": False,
        "stderr_tail": ['GPUONBOARD_RESULT {"ok": true}'],
    }
