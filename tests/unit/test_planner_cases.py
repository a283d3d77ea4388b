"""Issue 8's hand-computed planner cases and the seed's rules of thumb.

Every figure below was worked out by hand from the formulas in planner.py's docstring
(16 bytes/param for mixed-precision AdamW; LoRA rank 16 on q,k,v,o + gate,up,down; NF4 at
4.127 bits/param; activations L*s*b*h*(34 + 5*a*s/h), or L*2*s*b*h checkpointed; 2 GB/GPU).
"""

from __future__ import annotations

import math

from gpuonboard.steps.prove import planner

GB = 10**9


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
