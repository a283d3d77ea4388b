"""Planner figures against hand-computed cases, billing rounding, and bad inputs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.inventory import Billing, Vendor
from gpuonboard.steps.prove import planner

GB = 10**9
REPO = Path(__file__).resolve().parents[4]


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
        # past these the plan printed 20-digit sizes, cut in its table (`52,799,999,999,999,996,204… GB`)
        (
            {"params": "7B", "seq": "99999999999999999999"},
            "--seq '99999999999999999999' is more than 10 M tokens, the longest context any model offers;"
            " give one sample's length.",
        ),
        (
            {"params": "7B", "batch": "1" * 400},
            f"--batch '{'1' * 36}... is more than 65,536; give the micro-batch one GPU holds.",
        ),
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


# Under FSDP / ZeRO-3 sharding every GPU runs its own micro-batch: the weights, gradients and
# optimizer states are split n ways, its activations are not. The plan had divided the
# activations by n too, and recommended 2 x 80 GB for a 7B full fine-tune (73.8 GB each) that
# needs 89.6 GB on each of 2 cards, and 9 x H200 for 70B (144 GB each) where every GPU must
# hold 160 GB of activations: rented boxes that run out of memory at the first step.


def test_each_gpu_keeps_its_own_activations_whole() -> None:
    m = planner.estimate(7 * 10**9)  # states 112 GB, activations 31.56 GB
    assert m.per_gpu(2) == 56 * GB + m.activations + 2 * GB  # 89.56 GB: more than an 80 GB card
    assert m.per_gpu(4) == 28 * GB + m.activations + 2 * GB
    assert planner.min_gpus(m, 85_520_809_984) == 3  # H100 80GB (81559 MiB)


def test_activations_no_card_holds_name_the_way_out() -> None:
    plan = planner.make_plan("70B")  # 160.2 GB of activations per GPU, more than any card
    assert plan.best() is None
    assert plan.notes[0] == (
        "no card holds the activations of one micro-batch (160.2 GB: with FSDP/ZeRO-3 each GPU shards"
        " the weights, gradients and optimizer states but keeps its own micro-batch's activations"
        " whole): add --checkpointing (then 8 x H200 SXM 141GB), or use a smaller --batch or --seq"
        " (tensor/pipeline parallelism also splits them; not modelled here); the host figures assume"
        " one GPU"
    )
    h200 = next(f for f in plan.fits if f.card.card == "H200 SXM 141GB")
    assert (h200.count, h200.note) == (None, "one micro-batch's activations do not fit")
    # a job too big even checkpointed keeps the general sentence
    huge = planner.make_plan("1e13")
    assert huge.notes[0].startswith("no card in the catalogue holds this job on 512 cards or fewer")


# Issue 8's hand-computed planner cases and the seed's rules of thumb.
#
# Every figure below was worked out by hand from the formulas in planner.py's docstring
# (16 bytes/param for mixed-precision AdamW; LoRA rank 16 on q,k,v,o + gate,up,down; NF4 at
# 4.127 bits/param; activations L*s*b*h*(34 + 5*a*s/h), or L*2*s*b*h checkpointed; 2 GB/GPU).


def _count(memory: planner.Memory, mode: str, card: str) -> int | None:
    fits = planner.fits(memory, mode, planner.load_catalogue())
    return next(f.count for f in fits if f.card.card == card)


def test_7b_full_bf16_adamw_by_hand() -> None:
    # P = 7e9; shape: L = 32 (<= 10B), h = round(sqrt(7e9 / (12*32)) / 128) * 128
    #   = round(4269.6 / 128) * 128 = 33 * 128 = 4224, a = 4224/128 = 33
    # weights 2P = 14 GB (the seed's "7B in FP16 is ~14 GB of weights"), gradients 2P = 14 GB,
    # AdamW: fp32 master 4P + two moments 8P = 12P = 84 GB  -> states 16P = 112 GB
    # activations, s = 2048, b = 1: 5*a*s/h = 5*33*2048/4224 = 80 exactly, so per layer
    #   s*b*h*(34 + 80) = 2048*4224*114 = 986,185,728 B; x 32 layers = 31,557,943,296 B
    # total on one GPU = 112e9 + 31,557,943,296 + 2e9 = 145,557,943,296 B
    m = planner.estimate(7 * 10**9, "bf16", "adamw", "full", seq=2048, batch=1)
    assert (m.weights, m.gradients, m.optimizer) == (14 * GB, 14 * GB, 84 * GB)
    assert m.activations == 31_557_943_296
    assert m.total_one_gpu == 145_557_943_296
    # seed: "40 GB+ with gradients, optimizer and activations"
    assert m.total_one_gpu > 40 * GB and m.weights == 14 * GB
    # on n H100 80GB (81559 MiB = 85,520,809,984 B) the states are sharded n ways but every GPU
    # keeps its own micro-batch's activations whole: room for states = 85,520,809,984 - 2e9 -
    # 31,557,943,296 = 51,962,866,688 B per card; ceil(112e9 / 51,962,866,688) = ceil(2.16) = 3
    # (2 cards would need 56e9 + 31.56e9 + 2e9 = 89.56 GB each)
    assert _count(m, "full", "H100 SXM 80GB") == 3
    # checkpointed: 32*2*2048*4224 = 553,648,128 B of activations; ceil(112e9 / 82.97e9) = 2
    ck = planner.estimate(7 * 10**9, "bf16", "adamw", "full", seq=2048, batch=1, checkpointing=True)
    assert ck.activations == 553_648_128
    assert _count(ck, "full", "H100 SXM 80GB") == 2


def test_13b_lora_by_hand() -> None:
    # P = 13e9; L = 40 (<= 20B); h = round(sqrt(13e9/480)/128)*128 = round(5204.2/128)*128
    #   = 41*128 = 5248; a = 41; MLP width round(5248*8/3) = 13995
    # adapters per layer, r = 16: 16*(4*2*5248 + 3*(5248 + 13995)) = 16*(41,984 + 57,729)
    #   = 1,595,408; x 40 = 63,816,320 trainable (0.49% of P)
    # weights: frozen base 2P = 26e9 + adapters 2*63,816,320 = 26,127,632,640
    # gradients 2*63,816,320 = 127,632,640; AdamW 12*63,816,320 = 765,795,840
    # activations, s=2048, b=1: 5*41*2048/5248 = 80 exactly -> 40*2048*5248*114 = 49,010,442,240
    # total = 27,021,061,120 + 49,010,442,240 + 2e9 = 78,031,503,360 (fits one 80 GB card)
    m = planner.estimate(13 * 10**9, "bf16", "adamw", "lora", seq=2048, batch=1)
    assert planner.shape_for(13 * 10**9) == planner.Shape(40, 5248, 41, 13995)
    assert m.trainable_params == 63_816_320
    assert (m.weights, m.gradients, m.optimizer) == (26_127_632_640, 127_632_640, 765_795_840)
    assert m.activations == 49_010_442_240
    assert m.total_one_gpu == 78_031_503_360
    assert _count(m, "lora", "H100 SXM 80GB") == 1
    # an A100 40GB has 40960 MiB = 42,949,672,960 B (nvidia-smi's memory.total, a real capture):
    # its one micro-batch's 49.01 GB of activations alone do not fit, on any count of cards
    # (sharding divides the states, never a GPU's own activations) ...
    assert _count(m, "lora", "A100 SXM 40GB") is None
    # ... unless activations are checkpointed: 40*2*2048*5248 = 859,832,320 B,
    # total 27,021,061,120 + 859,832,320 + 2e9 = 29,880,893,440 -> one A100 40GB
    ck = planner.estimate(13 * 10**9, "bf16", "adamw", "lora", seq=2048, batch=1, checkpointing=True)
    assert ck.activations == 859_832_320 and ck.total_one_gpu == 29_880_893_440
    assert _count(ck, "lora", "A100 SXM 40GB") == 1


def test_70b_qlora_by_hand() -> None:
    # P = 70e9; L = 80 (> 45B); h = round(sqrt(70e9/960)/128)*128 = round(8539.2/128)*128
    #   = 67*128 = 8576; a = 67; MLP round(8576*8/3) = 22869
    # adapters per layer: 16*(8*8576 + 3*(8576 + 22869)) = 16*(68,608 + 94,335) = 2,607,088;
    #   x 80 = 208,567,040 trainable
    # base in NF4 + double quantisation: ceil(70e9 * 4.127 / 8) = 36,111,250,000 B
    # weights = 36,111,250,000 + 2*208,567,040 = 36,528,384,080
    # gradients 417,134,080; AdamW 12*208,567,040 = 2,502,804,480
    # checkpointed activations: 80*2*2048*8576 = 2,810,183,680
    # total = 39,448,322,640 + 2,810,183,680 + 2e9 = 44,258,506,320 -> one 48 GB card
    # (QLoRA paper: a 65B model fine-tuned on a single 48 GB GPU)
    m = planner.estimate(70 * 10**9, "bf16", "adamw", "qlora", seq=2048, batch=1, checkpointing=True)
    assert m.trainable_params == 208_567_040
    assert m.weights == math.ceil(70 * 10**9 * 4.127 / 8) + 2 * 208_567_040 == 36_528_384_080
    assert (m.gradients, m.optimizer) == (417_134_080, 2_502_804_480)
    assert m.activations == 2_810_183_680
    assert m.total_one_gpu == 44_258_506_320
    assert _count(m, "qlora", "L40S 48GB") == 1
    assert _count(m, "qlora", "RTX 4090 24GB") == 2  # 42.26e9/2 + 2e9 = 23.13 GB per card
    # without checkpointing, 5*67*2048/8576 = 80 -> 80*2048*8576*114 = 160,180,469,760 B of
    # activations on every GPU: no card holds them (an H200 has 150.8 GB)
    full_acts = planner.estimate(70 * 10**9, "bf16", "adamw", "qlora", seq=2048, batch=1)
    assert full_acts.activations == 160_180_469_760
    assert _count(full_acts, "qlora", "H100 SXM 80GB") is None
    assert _count(full_acts, "qlora", "H200 SXM 141GB") is None


def test_seed_rules_of_thumb() -> None:
    # "< 7B: RTX 4090 24 GB or L40S 48 GB" holds for adapter training: 3B LoRA checkpointed
    # is 8.7 GB. A *full* AdamW fine-tune needs 16 B/param, so one 24 GB card holds ~1B at most.
    small = planner.estimate(3 * 10**9, mode="lora", checkpointing=True)
    assert _count(small, "lora", "RTX 4090 24GB") == 1 and _count(small, "lora", "L40S 48GB") == 1
    assert _count(planner.estimate(10**9, checkpointing=True), "full", "RTX 4090 24GB") == 1
    assert _count(planner.estimate(3 * 10**9, checkpointing=True), "full", "RTX 4090 24GB") == 3
    # "7-13B: A100 40G or H100 80G": 7B and 13B LoRA fit one of those
    for p, mode, ck, card in (
        (7, "lora", True, "A100 SXM 40GB"),
        (13, "lora", True, "A100 SXM 40GB"),
        (7, "lora", False, "H100 SXM 80GB"),
        (13, "lora", False, "H100 SXM 80GB"),
    ):
        assert _count(planner.estimate(p * 10**9, mode=mode, checkpointing=ck), mode, card) == 1, (p, ck)
    # "> 13B: several cards, the interconnect matters": a 20B full fine-tune is 320 GB of
    # states alone -> 4 x 80 GB checkpointed (L = 40, h = 6400: 40*2*2048*6400 = 1.05 GB of
    # activations; ceil(320e9 / (85.52e9 - 2e9 - 1.05e9)) = 4); without checkpointing each GPU
    # keeps 59.77 GB of activations: ceil(320e9 / 23.75e9) = 14; the plan says NVLink matters
    big = planner.make_plan("20B")
    best = big.best()
    assert best is not None and best.count is not None and best.count > 1
    assert _count(big.memory, "full", "H100 SXM 80GB") == 14
    assert _count(planner.estimate(20 * 10**9, checkpointing=True), "full", "H100 SXM 80GB") == 4
    assert big.nvlink.startswith("yes") and big.host.ram_bytes >= 128 * GB and big.host.cpu_cores >= 8
