"""Planner figures against hand-computed cases, billing rounding, and bad inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.inventory import Billing, Vendor
from gpuonboard.steps.prove import planner

GB = 10**9
REPO = Path(__file__).resolve().parents[2]


def test_7b_full_bf16_adamw_is_16_bytes_per_param_plus_activations() -> None:
    m = planner.estimate(7 * 10**9, "bf16", "adamw", "full", seq=2048, batch=1)
    assert m.weights == 14 * GB and m.gradients == 14 * GB and m.optimizer == 84 * GB
    assert m.states == 112 * GB  # 16 bytes/param
    # Korthikanti eq. (1) with the assumed shape L=32, h=4224, a=33
    shape = planner.shape_for(7 * 10**9)
    assert (shape.layers, shape.hidden, shape.heads) == (32, 4224, 33)
    s, b, h, a = 2048, 1, 4224, 33
    assert m.activations == int(32 * s * b * h * (34 + 5 * a * s / h))
    assert m.total_one_gpu == m.states + m.activations + 2 * GB


def test_checkpointing_keeps_only_layer_inputs() -> None:
    m = planner.estimate(7 * 10**9, seq=4096, batch=8, checkpointing=True)
    assert m.activations == 32 * 2 * 4096 * 8 * 4224


def test_fp32_and_optimizers() -> None:
    p = 10**9
    assert planner.estimate(p, "fp32", "adamw").states == 16 * p
    assert planner.estimate(p, "bf16", "sgd").states == 12 * p
    assert planner.estimate(p, "fp32", "sgd").states == 12 * p
    assert 8 * p <= planner.estimate(p, "bf16", "adafactor").states < 8.01 * p


def test_lora_and_qlora_far_smaller() -> None:
    full = planner.estimate(13 * 10**9, mode="full")
    lora = planner.estimate(13 * 10**9, mode="lora")
    qlora = planner.estimate(13 * 10**9, mode="qlora")
    assert lora.trainable_params < 0.01 * 13 * 10**9
    assert lora.states < full.states / 5
    assert lora.weights == 26 * GB + lora.trainable_params * 2
    assert qlora.weights < lora.weights / 3  # 4-bit base
    assert qlora.activations == lora.activations == full.activations


def test_70b_full_needs_several_80gb_cards_and_nvlink() -> None:
    plan = planner.make_plan("70B", checkpointing=True)
    a100 = next(f for f in plan.fits if f.card.card == "A100 SXM 80GB")
    assert a100.count is not None and a100.count >= 14  # 1120 GB of states alone: 13.04 x 85.9 GB
    assert plan.nvlink.startswith("yes")
    assert plan.host.ram_bytes >= 128 * GB


def test_7b_lora_fits_one_card() -> None:
    plan = planner.make_plan("7B", mode="lora")
    best = plan.best()
    assert best is not None and best.count == 1
    assert plan.nvlink.startswith("no")
    assert plan.host.cpu_cores == 8 and plan.host.ram_bytes == 64 * GB


def test_catalogue_rows_have_sources() -> None:
    cards = planner.load_catalogue()
    assert len(cards) >= 10
    for c in cards:
        assert c.source.startswith("https://") and c.klass in ("datacenter", "consumer")


@pytest.mark.parametrize(
    ("unit", "hours", "units", "amount"),
    [
        ("hour", 1.01, 2, 20.0),
        ("hour", 72, 72, 720.0),
        ("minute", 1.01, 61, 10.17),
        ("second", 1.0001, 3601, 10.0),
    ],
)
def test_billing_rounding(unit: str, hours: float, units: int, amount: float) -> None:
    v = Vendor("v", "V", billing=Billing(unit=unit, rate=10.0, currency="CNY"))
    cost = planner.vendor_cost(v, hours)
    assert cost.billed_units == units
    assert cost.hourly_amount == amount


def test_monthly_rate_named_cheaper() -> None:
    v = Vendor("w", "W", billing=Billing(unit="hour", rate=58.0, currency="CNY", monthly_rate=28000))
    assert planner.vendor_cost(v, 72).cheaper == "hourly"
    long = planner.vendor_cost(v, 700)  # 40,600 hourly vs one month 28,000
    assert long.cheaper == "monthly" and long.months == 1 and long.monthly_amount == 28000


def test_upload_eta() -> None:
    plan = planner.make_plan("7B", dataset_size="120GB", bandwidth="100Mbit")
    assert plan.upload_s == pytest.approx(120e9 * 8 / 100e6)
    assert planner.format_duration(plan.upload_s or 0) == "2h 40m 00s"
    assert planner.parse_bandwidth("50MB/s") == 50e6


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": "-3"}, "--params '-3' is negative; give a positive parameter count like 7B or 350M."),
        ({"params": "7Q"}, "--params '7Q' has an unknown suffix 'Q'; use M, B or T (e.g. 7B)."),
        ({"params": "seven"}, "--params 'seven' is not a parameter count like 7B, 13B or 350M."),
        (
            {"params": "7B", "bandwidth": "fast"},
            "--bandwidth 'fast' is not a rate like 100Mbit, 1Gbit or 50MB/s; b or bit means bits"
            " (100Mb/s, 100Mbps), B or byte means bytes (50MB/s, 20MiB/s).",
        ),
        ({"params": "7B", "hours": "0"}, "--hours '0' must be more than zero."),
        ({"params": "7B", "hours": "inf"}, "--hours 'inf' must be a finite number of hours like 72 or 1.5."),
        ({"params": "7B", "hours": "nan"}, "--hours 'nan' must be a finite number of hours like 72 or 1.5."),
        ({"params": "7B", "hours": "soon"}, "--hours 'soon' is not a number of hours like 72 or 1.5."),
        ({"params": "7B", "mode": "half"}, "--mode 'half' is not one of full, lora, qlora."),
        ({"params": "7B", "seq": "0"}, "--seq '0' must be at least 1."),
    ],
)
def test_bad_inputs(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        planner.make_plan(**kwargs)  # type: ignore[arg-type]
    assert exc.value.message == message


def _cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_cli_plan_json_and_errors() -> None:
    out = _cli("plan", "--params", "7B", "--hours", "72", "--inventory", str(REPO / "inventory"), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["memory_bytes"]["optimizer"] == 84 * GB
    assert {c["vendor"] for c in doc["costs"]} >= {"wuhan-idc", "shanghai-gpu"}
    bad = _cli("plan", "--params", "-3")
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        == "error: --params '-3' is negative; give a positive parameter count like 7B or 350M."
    )
    table = _cli("plan", "--params", "7B", "--mode", "lora")
    assert table.returncode == 0 and "GPUs that fit" in table.stdout
