"""Under FSDP / ZeRO-3 sharding every GPU runs its own micro-batch: the weights, gradients and
optimizer states are split n ways, its activations are not. The plan had divided the
activations by n too, and recommended 2 x 80 GB for a 7B full fine-tune (73.8 GB each) that
needs 89.6 GB on each of 2 cards, and 9 x H200 for 70B (144 GB each) where every GPU must
hold 160 GB of activations: rented boxes that run out of memory at the first step."""

from __future__ import annotations

from gpuonboard.steps.prove import planner

GB = 10**9


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
