"""Plan before renting: memory needed for a training job, the cards it fits on, the host, ETA, cost.

Pure functions (no I/O except reading the shipped GPU catalogue); `api.plan` prints them.

Memory model (bytes; on n GPUs the weights, gradients and optimizer states are sharded n ways,
FSDP/ZeRO-3 style, while each GPU holds the activations of its own micro-batch whole):

* full fine-tune, mixed precision (bf16/fp16) with AdamW: weights 2 + gradients 2 + optimizer
  12 (fp32 master copy 4, first and second moments 4 + 4) = 16 bytes/parameter (Rajbhandari
  et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", §3.1);
  in fp32: 4 + 4 + 8 = 16 too. SGD with momentum keeps one moment (4) instead of two;
  Adafactor keeps factored second moments (a row and a column vector per matrix: about
  8/h bytes/parameter, Shazeer & Stern 2018), plus the fp32 master copy in mixed precision.
* LoRA (Hu et al. 2021): the base is frozen in the training precision (no gradients, no
  optimizer states); rank-16 adapters on every attention (q, k, v, o) and MLP (gate, up,
  down) matrix are trained with the full 16 bytes/parameter of mixed-precision AdamW.
* QLoRA (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs", §2): the base
  is stored in 4-bit NF4 with double quantisation: 4 bits + 0.127 bits of quantisation
  constants per parameter; adapters as LoRA.
* activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", eq. (1): per layer s*b*h*(34 + 5*a*s/h) bytes with 16-bit activations,
  no tensor/sequence parallelism and no recomputation (the 5*a*s/h term is the attention
  score matrices; FlashAttention does not store them). With full activation checkpointing
  (their §4.1) only each layer's input is kept: 2*s*b*h bytes per layer. x2 in fp32.
  The frozen base of LoRA/QLoRA still needs these activations for the backward pass.
* overhead: a fixed 2 GB per GPU (CUDA context, cuBLAS/NCCL workspaces, allocator
  fragmentation).
* a card's capacity: nvidia-smi's memory.total for it (data/gpu_catalogue.yml `nvidia_smi_mib`,
  from real captures: an "80GB" HBM card has 80 GiB, 81559-81920 MiB), else its datasheet "GB"
  read as 10^9 bytes (below every captured card's memory.total).

Model shape (s = sequence length, b = micro-batch, h = hidden size, L = layers, a = heads):
from the parameter count alone, assuming a LLaMA-like decoder: L from the nearest LLaMA size
(<=1.5B: 16; <=4B: 26; <=10B: 32; <=20B: 40; <=45B: 60; else 80), h = sqrt(P / (12 L))
rounded to a multiple of 128 (a block holds ~12 h^2 parameters), a = h / 128 (head size
128), MLP width 8/3 h. For 7B that gives L = 32, h = 4224, a = 33 (LLaMA-2-7B: 32, 4096, 32).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.inventory import Vendor
from gpuonboard.resources import DATA_DIR, data_file
from gpuonboard.units import parse_size
from gpuonboard.yamlload import shown

GB = 1000**3
OVERHEAD_BYTES = 2 * GB
LORA_RANK = 16
PRECISIONS = ("bf16", "fp16", "fp32")
OPTIMIZERS = ("adamw", "sgd", "adafactor")
MODES = ("full", "lora", "qlora")
MAX_GPUS = 512
HOURS_PER_MONTH = 720  # 30 days: how vendors quote a monthly rate
MAX_HOURS = 876_000  # 100 years: a longer "rental" is a typo (and 1e308 hours overflowed)
GPUS_PER_SERVER = 8  # an HGX/DGX baseboard; more cards are several servers
CATALOGUE = DATA_DIR / "gpu_catalogue.yml"

_PARAM_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}


# ---------------------------------------------------------------- parsing user input


def parse_params(value: str) -> int:
    """`7B`, `1.5b`, `350M`, `7e9`, `7000000000` -> parameter count; nonsense -> UsageError."""
    text = str(value).strip()
    if re.fullmatch(r"-\s*\d.*", text):
        raise UsageError(f"--params {value!r} is negative; give a positive parameter count like 7B or 350M.")
    m = re.fullmatch(r"(\d+(?:\.\d+)?(?:[eE]\d+)?)\s*([A-Za-z]*)", text)
    if not m:
        raise UsageError(f"--params {value!r} is not a parameter count like 7B, 13B or 350M.")
    number, suffix = m.groups()
    if suffix.upper() not in _PARAM_SUFFIX:
        raise UsageError(f"--params {value!r} has an unknown suffix {suffix!r}; use M, B or T (e.g. 7B).")
    scaled = float(number) * _PARAM_SUFFIX[suffix.upper()]
    if not math.isfinite(scaled) or scaled > 10**13:  # (`1e400` is a float infinity)
        raise UsageError(f"--params {value!r} is above 10T parameters; give a count like 7B or 70B.")
    count = int(scaled)
    if count < 10**6:
        raise UsageError(f"--params {value!r} is below a million parameters; give a count like 7B or 350M.")
    return count


_RATE_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
# a rate's unit: a prefix (k, M, G, T; with i: binary), then the letter that decides bits or
# bytes as network gear writes it: b or bit = bits (100Mb/s, 100Mbps, 100Mbit), B or byte = bytes
# (50MB/s, 50MBps, 20MiB/s); then /s or ps (optional after bit and byte)
_RATE_RE = re.compile(
    r"\s*(\d+(?:\.\d+)?)\s*(?:([kKmMgGtT])(i?))?(?:([bB][iI][tT]|[bB][yY][tT][eE])(/s|ps)?|(b|B)(/s|ps))\s*"
)
BANDWIDTH_HELP = "b or bit means bits (100Mb/s, 100Mbps), B or byte means bytes (50MB/s, 20MiB/s)"


def parse_bandwidth(value: str) -> float:
    """`100Mbit`, `1Gbit`, `100Mb/s`, `100Mbps` (bits) or `50MB/s`, `20MiB/s` (bytes) -> bytes per
    second. The case of the b decides, as on network gear: `Mb/s` is megabits, `MB/s` megabytes
    (read case-blind, `100Mb/s` was taken for 100 MB/s: an upload ETA 8x too short)."""
    m = _RATE_RE.fullmatch(str(value))
    if not m:
        raise UsageError(
            f"--bandwidth {value!r} is not a rate like 100Mbit, 1Gbit or 50MB/s; {BANDWIDTH_HELP}."
        )
    number, prefix, binary, word, _, letter, _ = m.groups()
    prefix = (prefix or "").lower()
    scale = 1024 ** ("kmgt".index(prefix) + 1) if binary else _RATE_PREFIX[prefix]
    is_bits = (word or "").lower() == "bit" or letter == "b"
    rate = float(number) * scale / (8 if is_bits else 1)
    if not math.isfinite(rate):
        raise UsageError(
            f"--bandwidth {value!r} is not a rate like 100Mbit, 1Gbit or 50MB/s; {BANDWIDTH_HELP}."
        )
    if rate <= 0:
        raise UsageError(f"--bandwidth {value!r} must be more than zero.")
    return rate


def parse_hours(value: str | float) -> float:
    """`72`, `1.5` -> hours (> 0)."""
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"--hours {value!r} is not a number of hours like 72 or 1.5.") from None
    if not math.isfinite(hours):
        raise UsageError(f"--hours {value!r} must be a finite number of hours like 72 or 1.5.")
    if hours <= 0:
        raise UsageError(f"--hours {value!r} must be more than zero.")
    if hours > MAX_HOURS:
        raise UsageError(
            f"--hours {value!r} is more than 100 years ({MAX_HOURS:,} hours); give the rental hours."
        )
    return hours


def parse_dataset_size(value: str) -> int:
    """`120GB` -> bytes (SI), as in order sheets. A bare number is refused: `--dataset-size 120`
    read as 120 bytes planned an upload of 0 s and no disk for the data."""
    if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", str(value)):
        raise UsageError(
            f"--dataset-size {value!r} has no unit; write it with one, e.g. {str(value).strip()}GB"
            f" (10^9 bytes) or {str(value).strip()}GiB."
        )
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise UsageError(f"--dataset-size: {exc}.") from None
    return size


# the most --seq and --batch may be: a context of 10 M tokens is the longest any model offers
# (2025), and a micro-batch of 65,536 sequences holds no model on any card; past them the sizes
# the plan prints ran to 20 digits and its table cut them (`52,799,999,999,999,996,204… GB`)
MOST = {
    "seq": (10_000_000, "10 M tokens, the longest context any model offers; give one sample's length"),
    "batch": (65_536, "65,536; give the micro-batch one GPU holds"),
}


def _positive_int(name: str, value: Any) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise UsageError(f"--{name} {value!r} is not a whole number.") from None
    if number < 1:
        raise UsageError(f"--{name} {value!r} must be at least 1.")
    most, said = MOST.get(name, (None, ""))
    if most is not None and number > most:
        raise UsageError(f"--{name} {shown(value, 40)} is more than {said}.")
    return number


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    v = str(value).strip().lower()
    if v not in choices:
        raise UsageError(f"--{name} {value!r} is not one of {', '.join(choices)}.")
    return v


# ---------------------------------------------------------------- model shape and memory


@dataclass(frozen=True)
class Shape:
    """Assumed decoder shape from the parameter count (see the module docstring)."""

    layers: int
    hidden: int
    heads: int
    mlp: int


def shape_for(params: int) -> Shape:
    """LLaMA-like shape for a parameter count: L from the nearest size, h from P = 12 L h^2."""
    billions = params / 1e9
    layers = next(
        (lay for limit, lay in ((1.5, 16), (4, 26), (10, 32), (20, 40), (45, 60)) if billions <= limit), 80
    )
    hidden = max(128, round(math.sqrt(params / (12 * layers)) / 128) * 128)
    return Shape(layers, hidden, max(1, hidden // 128), round(hidden * 8 / 3))


def activation_bytes(shape: Shape, seq: int, batch: int, precision: str, checkpointing: bool) -> int:
    """Korthikanti et al. 2022 eq. (1): L * s*b*h*(34 + 5*a*s/h), or L * 2*s*b*h when checkpointed."""
    s, b, h, a = seq, batch, shape.hidden, shape.heads
    per_layer = 2 * s * b * h if checkpointing else s * b * h * (34 + 5 * a * s / h)
    factor = 2 if precision == "fp32" else 1  # the formula counts 16-bit activations
    return int(shape.layers * per_layer * factor)


def lora_params(shape: Shape, rank: int = LORA_RANK) -> int:
    """Adapter parameters: rank r on q, k, v, o (h x h) and gate, up, down (h x mlp), every layer."""
    per_layer = rank * (4 * 2 * shape.hidden + 3 * (shape.hidden + shape.mlp))
    return per_layer * shape.layers


@dataclass(frozen=True)
class Memory:
    """The estimate, in bytes, for the whole job (before sharding across GPUs)."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    overhead_per_gpu: int
    trainable_params: int
    notes: tuple[str, ...] = ()

    @property
    def states(self) -> int:
        """Weights + gradients + optimizer states."""
        return self.weights + self.gradients + self.optimizer

    @property
    def total_one_gpu(self) -> int:
        """Everything on one GPU."""
        return self.states + self.activations + self.overhead_per_gpu

    def per_gpu(self, n: int) -> int:
        """Each of n GPUs: the states sharded n ways (FSDP / ZeRO-3), its own micro-batch's
        activations whole (data parallel: every GPU runs a micro-batch of `batch` sequences,
        so sharding never divides them), and the overhead."""
        return math.ceil(self.states / n) + self.activations + self.overhead_per_gpu


_WEIGHT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def optimizer_bytes_per_param(optimizer: str, precision: str, hidden: int) -> float:
    """Optimizer states per trainable parameter, including the fp32 master copy in mixed precision."""
    master = 4 if precision in ("bf16", "fp16") else 0
    moments = {"adamw": 8.0, "sgd": 4.0, "adafactor": 8.0 / hidden}[optimizer]
    return master + moments


def estimate(
    params: int,
    precision: str = "bf16",
    optimizer: str = "adamw",
    mode: str = "full",
    seq: int = 2048,
    batch: int = 1,
    checkpointing: bool = False,
) -> Memory:
    """Memory for training `params` parameters (see the module docstring for every assumption)."""
    shape = shape_for(params)
    wb = _WEIGHT_BYTES[precision]
    acts = activation_bytes(shape, seq, batch, precision, checkpointing)
    opt = optimizer_bytes_per_param(optimizer, precision, shape.hidden)
    if mode == "full":
        return Memory(
            weights=params * wb,
            gradients=params * wb,
            optimizer=int(params * opt),
            activations=acts,
            overhead_per_gpu=OVERHEAD_BYTES,
            trainable_params=params,
        )
    adapters = lora_params(shape)
    base = params * wb if mode == "lora" else math.ceil(params * (4 + 0.127) / 8)
    note = (
        f"base frozen in {precision}"
        if mode == "lora"
        else "base frozen in 4-bit NF4 (double-quantised), compute in " + precision
    )
    return Memory(
        weights=base + adapters * wb,
        gradients=adapters * wb,
        optimizer=int(adapters * opt),
        activations=acts,
        overhead_per_gpu=OVERHEAD_BYTES,
        trainable_params=adapters,
        notes=(note, f"LoRA rank {LORA_RANK} on attention and MLP matrices"),
    )


# ---------------------------------------------------------------- cards


@dataclass(frozen=True)
class Card:
    """One row of data/gpu_catalogue.yml."""

    card: str
    memory_gb: float
    bf16_tflops: float | None
    interconnect: tuple[str, ...]
    nvlink_gbps: float | None
    klass: str
    source: str
    nvidia_smi_mib: int | None = None

    @property
    def capacity_bytes(self) -> int:
        """What a job is fitted into: nvidia-smi's memory.total of the card (an "80GB" HBM card
        has 80 GiB: 81559-81920 MiB, 85.5-85.9 GB), else the datasheet figure read as 10^9 bytes,
        which is below every captured card's (reading them all so planned a 7B full fine-tune on
        two H200s, 145.6 GB, that one H200's 150.8 GB holds)."""
        return self.nvidia_smi_mib * 2**20 if self.nvidia_smi_mib else int(self.memory_gb * GB)


@lru_cache(maxsize=2)
def load_catalogue(path: Path = CATALOGUE) -> tuple[Card, ...]:
    """The shipped GPU catalogue."""
    rows = data_file(path) or []
    return tuple(
        Card(
            card=str(r["card"]),
            memory_gb=float(r["memory_gb"]),
            bf16_tflops=None if r.get("bf16_tflops") is None else float(r["bf16_tflops"]),
            interconnect=tuple(r.get("interconnect") or ()),
            nvlink_gbps=None if r.get("nvlink_gbps") is None else float(r["nvlink_gbps"]),
            klass=str(r["class"]),
            source=str(r["source"]),
            nvidia_smi_mib=None if r.get("nvidia_smi_mib") is None else int(r["nvidia_smi_mib"]),
        )
        for r in rows
    )


@dataclass(frozen=True)
class Fit:
    """How many of a card a job needs."""

    card: Card
    count: int | None  # None: more than MAX_GPUS
    per_gpu_bytes: int | None
    note: str

    def to_json(self) -> dict[str, Any]:
        """For --json."""
        return {
            "card": self.card.card,
            "memory_gb": self.card.memory_gb,
            "capacity_gb": round(self.card.capacity_bytes / GB, 1),
            "capacity_from": "nvidia-smi memory.total"
            if self.card.nvidia_smi_mib
            else "datasheet, as 10^9 bytes",
            "bf16_tflops": self.card.bf16_tflops,
            "interconnect": list(self.card.interconnect),
            "class": self.card.klass,
            "min_count": self.count,
            "per_gpu_gb": None if self.per_gpu_bytes is None else round(self.per_gpu_bytes / GB, 1),
            "note": self.note,
            "source": self.card.source,
        }


def min_gpus(memory: Memory, card_bytes: int) -> int | None:
    """The smallest n whose per-GPU share fits the card (None above MAX_GPUS)."""
    room = card_bytes - memory.overhead_per_gpu - memory.activations  # what the states' share may take
    if room <= 0:  # (one micro-batch's activations alone fill the card: no count of cards helps)
        return None
    n = max(1, math.ceil(memory.states / room))
    while n <= MAX_GPUS and memory.per_gpu(n) > card_bytes:
        n += 1
    return n if n <= MAX_GPUS else None


def fits(memory: Memory, mode: str, catalogue: tuple[Card, ...]) -> list[Fit]:
    """Every card with its minimum count: fewest cards first; then, for a multi-GPU full fine-tune,
    NVLink cards (the plan tells the user to order NVLink); then the SMALLEST card that holds the job
    (the cheapest class: "most memory first" recommended an H200 for a 350M model, 12.9 GB, and
    contradicted the README's "70B QLoRA: one 48 GB L40S"); then NVLink, then the fastest."""
    out = []
    for card in catalogue:
        n = min_gpus(memory, card.capacity_bytes)
        notes = []
        if n is None and memory.activations + memory.overhead_per_gpu >= card.capacity_bytes:
            notes.append("one micro-batch's activations do not fit")
        elif n is None:
            notes.append(f"more than {MAX_GPUS} cards")
        elif n > 1 and mode == "full" and "nvlink" not in card.interconnect:
            notes.append(
                "NVLink bridge: pairs only" if "nvlink-bridge" in card.interconnect else "PCIe only: slower"
            )
        if n is not None and n > 8:
            notes.append("> 8 cards: several servers")
        note = "; ".join(notes)
        out.append(Fit(card, n, None if n is None else memory.per_gpu(n), note))
    return sorted(
        out,
        key=lambda f: (
            f.count or MAX_GPUS + 1,
            (f.count or 0) > 1 and mode == "full" and "nvlink" not in f.card.interconnect,
            f.card.memory_gb,  # the datasheet class: an H100 before an A100 of 0.4 GB more
            "nvlink" not in f.card.interconnect,
            -(f.card.bf16_tflops or 0),
            f.card.card,
        ),
    )


def nvlink_advice(mode: str, count: int) -> str:
    """Whether the interconnect matters for this job."""
    if count <= 1:
        return "no: one GPU, nothing to link"
    if mode == "full":
        return (
            "yes: a multi-GPU full fine-tune exchanges gradients and parameter shards every step;"
            " order NVLink (SXM/HGX) and check it with the acceptance rule `interconnect`"
        )
    return "helpful, not essential: only the small adapters' gradients are exchanged"


@dataclass(frozen=True)
class HostAdvice:
    """What the server around the GPUs should have."""

    cpu_cores: int
    ram_bytes: int
    disk_bytes: int
    disk_detail: str
    servers: int = 1  # the figures above are for each of them


def servers_for(gpus: int) -> int:
    """Servers that n cards take: an HGX/DGX server holds 8."""
    return max(1, math.ceil(gpus / GPUS_PER_SERVER))


def host_advice(params: int, memory: Memory, mode: str, gpus: int, dataset_bytes: int | None) -> HostAdvice:
    """Seed rules, per server: CPU >= 8 cores (4 per GPU above that), RAM >= 64 GB (128 GB
    multi-GPU, and at least the 16-bit checkpoint so it can be loaded), disk >= 2x dataset + base
    model + 2 checkpoints + 50 GB for the OS, container images and caches. More than 8 cards are
    several servers, each with its share of the cards (4 x 10 cards of CPU is no server's)."""
    servers = servers_for(gpus)
    cores = max(8, 4 * math.ceil(gpus / servers))
    ram_floor = 128 * GB if gpus > 1 else 64 * GB
    base16 = params * 2
    ram = max(ram_floor, math.ceil(base16 * 1.2 / (16 * GB)) * 16 * GB)
    checkpoint = memory.states if mode == "full" else memory.trainable_params * 2 + memory.optimizer
    data = 2 * (dataset_bytes or 0)
    disk = data + base16 + 2 * checkpoint + 50 * GB
    detail = (
        f"2 x dataset ({_gb(data)}) + base model in 16-bit ({_gb(base16)}) + 2 checkpoints"
        f" ({_gb(2 * checkpoint)}) + 50 GB OS/images/caches"
    )
    if dataset_bytes is None:
        detail += "; no --dataset-size given, so no dataset counted"
    return HostAdvice(cores, ram, disk, detail, servers)


def _gb(n: float) -> str:
    return f"{n / GB:,.1f} GB"


# ---------------------------------------------------------------- upload and cost


def upload_seconds(size_bytes: int, bytes_per_second: float) -> float:
    """Time to send size_bytes at the nominal rate (protocol overhead not counted)."""
    return size_bytes / bytes_per_second


def format_duration(seconds: float) -> str:
    """`1d 02h 40m`, `2h 13m 20s`, `45s`."""
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d {h:02d}h {m:02d}m"
    if h:
        return f"{h}h {m:02d}m {s:02d}s"
    if m:
        return f"{m}m {s:02d}s"
    return f"{s}s"


@dataclass(frozen=True)
class VendorCost:
    """A vendor's price for the planned hours, hourly billing vs monthly rate."""

    vendor: str
    name: str
    unit: str
    rate: float | None
    currency: str
    billed_units: int
    hourly_amount: float | None
    monthly_rate: float | None
    months: int
    monthly_amount: float | None
    cheaper: str

    def to_json(self) -> dict[str, Any]:
        """For --json."""
        return asdict(self)


UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


def billed(hours: float, unit: str) -> int:
    """Started billing units in `hours`: a started hour (minute, second) is a paid one."""
    return math.ceil(hours * 3600 / UNIT_SECONDS[unit] - 1e-9)


def vendor_cost(vendor: Vendor, hours: float) -> VendorCost:
    """Cost of `hours` at the vendor's hourly rate (rounded up by its unit) and at its monthly rate."""
    b = vendor.billing
    units = billed(hours, b.unit)
    hourly = None if b.rate is None else round(units * UNIT_SECONDS[b.unit] / 3600 * b.rate, 2)
    months = math.ceil(hours / HOURS_PER_MONTH - 1e-9)
    monthly = None if b.monthly_rate is None else round(months * b.monthly_rate, 2)
    if hourly is None and monthly is None:
        cheaper = "no rate in the profile"
    elif monthly is None:
        cheaper = "hourly (no monthly rate)"
    elif hourly is None:
        cheaper = "monthly (no hourly rate)"
    elif monthly < hourly:
        cheaper = "monthly"
    elif hourly < monthly:
        cheaper = "hourly"
    else:
        cheaper = "either (same price)"
    return VendorCost(
        vendor.id,
        vendor.name,
        b.unit,
        b.rate,
        b.currency,
        units,
        hourly,
        b.monthly_rate,
        months,
        monthly,
        cheaper,
    )


# ---------------------------------------------------------------- the whole plan


@dataclass
class Plan:
    """Everything `invoke plan` prints."""

    params: int
    precision: str
    optimizer: str
    mode: str
    seq: int
    batch: int
    checkpointing: bool
    shape: Shape
    memory: Memory
    fits: list[Fit]
    nvlink: str
    host: HostAdvice
    dataset_bytes: int | None = None
    bandwidth: float | None = None
    upload_s: float | None = None
    hours: float | None = None
    costs: list[VendorCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def best(self) -> Fit | None:
        """The first card that fits (fewest cards, then the smallest that holds the job; see fits)."""
        return next((f for f in self.fits if f.count is not None), None)

    def to_json(self) -> dict[str, Any]:
        """The --json document (sizes in bytes and GB)."""
        m = self.memory
        best = self.best()
        return {
            "input": {
                "params": self.params,
                "precision": self.precision,
                "optimizer": self.optimizer,
                "mode": self.mode,
                "seq": self.seq,
                "batch": self.batch,
                "checkpointing": self.checkpointing,
            },
            "assumed_shape": asdict(self.shape),
            "memory_bytes": {
                "weights": m.weights,
                "gradients": m.gradients,
                "optimizer": m.optimizer,
                "activations": m.activations,
                "overhead_per_gpu": m.overhead_per_gpu,
                "total_one_gpu": m.total_one_gpu,
            },
            "trainable_params": m.trainable_params,
            "gpus": [f.to_json() for f in self.fits],
            "recommended": best.to_json() if best else None,
            "nvlink": self.nvlink,
            "host": {
                "cpu_cores": self.host.cpu_cores,
                "ram_bytes": self.host.ram_bytes,
                "disk_bytes": self.host.disk_bytes,
                "disk_detail": self.host.disk_detail,
                "servers": self.host.servers,
            },
            "upload": None
            if self.upload_s is None
            else {
                "dataset_bytes": self.dataset_bytes,
                "bytes_per_second": self.bandwidth,
                "seconds": round(self.upload_s, 1),
                "text": format_duration(self.upload_s),
            },
            "hours": self.hours,
            "costs": [c.to_json() for c in self.costs],
            "notes": self.notes + list(m.notes),
        }


def make_plan(
    params: str,
    precision: str = "bf16",
    optimizer: str = "adamw",
    mode: str = "full",
    seq: Any = 2048,
    batch: Any = 1,
    checkpointing: bool = False,
    dataset_size: str = "",
    bandwidth: str = "",
    hours: str = "",
    vendors: tuple[Vendor, ...] = (),
    catalogue: tuple[Card, ...] | None = None,
) -> Plan:
    """Validate every input (UsageError, one sentence), then compute the plan."""
    count = parse_params(params)
    precision = _choice("precision", precision, PRECISIONS)
    optimizer = _choice("optimizer", optimizer, OPTIMIZERS)
    mode = _choice("mode", mode, MODES)
    s = _positive_int("seq", seq)
    b = _positive_int("batch", batch)
    data = parse_dataset_size(dataset_size) if dataset_size else None
    rate = parse_bandwidth(bandwidth) if bandwidth else None
    h = parse_hours(hours) if hours not in ("", None) else None
    if optimizer != "adamw" and mode != "full":
        optimizer_note = [f"{optimizer} applies to the adapters only"]
    else:
        optimizer_note = []
    memory = estimate(count, precision, optimizer, mode, s, b, checkpointing)
    card_fits = fits(memory, mode, catalogue if catalogue is not None else load_catalogue())
    best = next((f for f in card_fits if f.count is not None), None)
    gpus = best.count if best and best.count else 1
    plan = Plan(
        params=count,
        precision=precision,
        optimizer=optimizer,
        mode=mode,
        seq=s,
        batch=b,
        checkpointing=checkpointing,
        shape=shape_for(count),
        memory=memory,
        fits=card_fits,
        nvlink=nvlink_advice(mode, gpus),
        host=host_advice(count, memory, mode, gpus, data),
        dataset_bytes=data,
        bandwidth=rate,
        hours=h,
        notes=optimizer_note,
    )
    if data is not None and rate is not None:
        plan.upload_s = upload_seconds(data, rate)
    elif data is not None or rate is not None:
        plan.notes.append("give both --dataset-size and --bandwidth for an upload ETA")
    if h is not None:
        plan.costs = [vendor_cost(v, h) for v in vendors]
    alt = None
    if best is None and not checkpointing and any(f.note.startswith("one micro-batch") for f in card_fits):
        ck = estimate(count, precision, optimizer, mode, s, b, True)
        alt = next((f for f in fits(ck, mode, catalogue or load_catalogue()) if f.count is not None), None)
    lead = _lead_note(plan, best, alt, gpus, h)
    if lead is not None:
        plan.notes.insert(0, lead)
    if not checkpointing and memory.activations > memory.states:
        plan.notes.append(
            "activations dominate: activation checkpointing (--checkpointing) stores only each layer's"
            " input, and FlashAttention avoids the 5as/h attention-score term"
        )
    return plan


def _lead_note(plan: Plan, best: Fit | None, alt: Fit | None, gpus: int, h: float | None) -> str | None:
    """The note shown first: what checkpointing would fit (`alt`), that no card fits, or that
    the job takes more than one server; None when it fits one server."""
    if alt is not None:  # (checkpointing would make it fit: say so, with what it would take)
        then = f" (then {alt.count} x {alt.card.card})"
        return (
            f"no card holds the activations of one micro-batch ({plan.memory.activations / GB:.1f} GB: with"
            " FSDP/ZeRO-3 each GPU shards the weights, gradients and optimizer states but keeps its own"
            f" micro-batch's activations whole): add --checkpointing{then}, or use a smaller --batch or"
            " --seq (tensor/pipeline parallelism also splits them; not modelled here); the host figures"
            " assume one GPU"
        )
    if best is None:
        return (
            f"no card in the catalogue holds this job on {MAX_GPUS} cards or fewer: the host figures"
            " assume one GPU; use a smaller model, --mode lora/qlora, --checkpointing or a smaller --batch"
        )
    if plan.host.servers > 1:
        servers = plan.host.servers
        return (
            f"{gpus} x {best.card.card} is more than one {GPUS_PER_SERVER}-GPU server: {servers} servers,"
            " linked by a fast network (InfiniBand/RoCE); the host figures are per server"
            + (
                f" and each vendor cost is for one box, so {servers} boxes cost {servers} times that"
                if h
                else ""
            )
        )
    return None
