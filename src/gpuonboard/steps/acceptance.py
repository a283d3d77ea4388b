"""Step `acceptance`: does the delivered box match the order? Pure rules over facts.

Each rule yields expected / actual / verdict. `warn` means it works but is below what was
ordered or expected (reported as degraded, never silently passed); any `fail` fails the host.

Tolerances (documented in README): memory sizes are compared after allowing for the usual
reporting gap, because the kernel and firmware reserve part of RAM (free shows ~1-3 % less
than installed), nvidia-smi reports VRAM minus a reserved region, and a filesystem shows
less than the raw disk. Defaults: RAM 5 %, VRAM 3 %, data disk 5 %; overridable per step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..facts import disks, topo
from ..facts.gather import NVIDIA_SMI_TIMEOUT, TIMED_OUT, Facts
from ..inventory import OrderSpec
from ..units import format_bytes
from .base import Check, Plan, Step, StepArgsError, StepContext, Verdict

DEFAULT_TOLERANCE = {"ram": 0.05, "vram": 0.03, "disk": 0.05}
_NOT_DISKS = {"tmpfs", "overlay", "devtmpfs", "ramfs", "none", "shm"}
_VENDOR_WORDS = {"NVIDIA", "TESLA", "GEFORCE", "QUADRO", "CORPORATION"}


def model_tokens(name: str) -> set[str]:
    """Normalised tokens of a GPU name: 'NVIDIA A100-SXM4-80GB' -> {A100, SXM4, SXM, 80GB}."""
    upper = name.upper().replace("GIB", "GB")
    upper = re.sub(r"(\d+)\s+GB\b", r"\1GB", upper)
    tokens = {t for t in re.split(r"[^A-Z0-9]+", upper) if t and t not in _VENDOR_WORDS}
    for t in list(tokens):
        family = re.match(r"^(SXM|PCIE|NVL|HBM)\d+[A-Z]?$", t)
        if family:
            tokens.add(family.group(1))
    return tokens


def model_matches(ordered: str, delivered: str) -> bool:
    """True when every token of the ordered model appears in the delivered GPU name."""
    want = model_tokens(ordered)
    return bool(want) and want <= model_tokens(delivered)


def version_tuple(version: str) -> tuple[int, ...]:
    """'535.54.03' -> (535, 54, 3); non-numeric parts end the tuple."""
    parts: list[int] = []
    for p in version.strip().split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


def _no_gpu_actual(facts: Facts) -> str | None:
    if not facts.nvidia_smi_present:
        return "unknown: nvidia-smi not found"
    if facts.gpu is None or not facts.gpu.gpus:
        raw = facts.raw["nvidia_smi"]
        if raw.exit_code == TIMED_OUT:
            return f"unknown: nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT} s (stopped)"
        # a driver/library mismatch prints its reason on stdout ("NVIDIA-SMI has failed ...")
        lines = [ln.strip() for ln in (raw.stderr + "\n" + raw.stdout).splitlines() if ln.strip()]
        return "unknown: nvidia-smi failed" + (f" ({lines[0][:160]})" if lines else "")
    return None


def rule_driver(facts: Facts) -> Check:
    """The NVIDIA driver answers: nvidia-smi exists and reports GPUs."""
    if not facts.nvidia_smi_present:
        return Check(
            "nvidia_driver",
            "NVIDIA driver installed (nvidia-smi)",
            "nvidia-smi not found",
            "fail",
            "install the NVIDIA driver the order promised, or ask the vendor to",
        )
    problem = _no_gpu_actual(facts)
    if problem:
        hung = facts.raw["nvidia_smi"].exit_code == TIMED_OUT
        return Check(
            "nvidia_driver",
            "nvidia-smi reports the GPUs",
            problem.removeprefix("unknown: "),
            "fail",
            "a hung driver: often a GPU that fell off the bus; ask the vendor to check `dmesg` for"
            " NVIDIA Xid errors (Xid 79) and to reseat or replace the GPU"
            if hung
            else "",
        )
    assert facts.gpu is not None
    return Check(
        "nvidia_driver",
        "nvidia-smi reports the GPUs",
        f"driver {facts.gpu.driver_version or 'unknown'}, CUDA {facts.gpu.cuda_version or 'unknown'}",
        "pass" if facts.gpu.driver_version else "warn",
    )


def rule_gpu_model(order: OrderSpec, facts: Facts) -> Check:
    """Every GPU is the ordered model (names normalised)."""
    expected = order.gpu_model or ""
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("gpu_model", expected, problem, "fail")
    assert facts.gpu is not None
    names = [g.name for g in facts.gpu.gpus]
    actual = _count_names(names) or "no GPU"
    wrong = [n for n in names if not model_matches(expected, n)]
    return Check("gpu_model", expected, actual, "fail" if wrong or not names else "pass")


def _count_names(names: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{c} x {n}" for n, c in counts.items())


def rule_gpu_count(order: OrderSpec, facts: Facts) -> Check:
    """As many GPUs as ordered (more is reported, not failed)."""
    expected = str(order.gpu_count)
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("gpu_count", expected, problem, "fail")
    assert facts.gpu is not None and order.gpu_count is not None
    n = len(facts.gpu.gpus)
    detail = ""
    if facts.gpu.attached_gpus is not None and facts.gpu.attached_gpus != n:
        detail = f"nvidia-smi says {facts.gpu.attached_gpus} attached but lists {n}"
    verdict: Verdict = "fail" if n < order.gpu_count else "pass"
    if n > order.gpu_count:
        detail = detail or "more GPUs than ordered"
    return Check("gpu_count", expected, str(n), verdict, detail)


def rule_vram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Each GPU has at least the ordered memory (minus the reserved-region gap)."""
    assert order.vram_bytes is not None
    expected = f">= {format_bytes(order.vram_bytes, binary=False)} per GPU"
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("vram", expected, problem, "fail")
    assert facts.gpu is not None
    sizes = [g.memory_total_mib for g in facts.gpu.gpus]
    if not sizes or any(s is None for s in sizes):
        return Check("vram", expected, "unknown: nvidia-smi did not report memory", "fail")
    smallest = min(s for s in sizes if s is not None) * 1024 * 1024
    actual = f"{min(s for s in sizes if s is not None)} MiB ({format_bytes(smallest, binary=False)}) smallest"
    ok = smallest >= order.vram_bytes * (1 - tolerance)
    return Check("vram", expected, actual, "pass" if ok else "fail")


def _or_unknown(n: int | None) -> str:
    return "?" if n is None else str(n)


def rule_cpu(order: OrderSpec, facts: Facts) -> Check:
    """Physical cores >= ordered; only hyperthreads reaching it is a warning."""
    assert order.cpu_cores is not None
    expected = f">= {order.cpu_cores} cores"
    if facts.cpu is None:
        if facts.nproc:
            verdict: Verdict = "warn" if facts.nproc >= order.cpu_cores else "fail"
            return Check("cpu_cores", expected, f"{facts.nproc} logical CPUs (lscpu unavailable)", verdict)
        return Check("cpu_cores", expected, "unknown: lscpu not available", "fail")
    physical, logical = facts.cpu.physical_cores, facts.cpu.logical_cpus
    actual = f"{_or_unknown(physical)} cores / {_or_unknown(logical)} threads"
    if facts.cpu.model_name:
        actual += f" ({facts.cpu.model_name})"
    if physical is not None and physical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "pass")
    if logical is not None and logical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "warn", "the order is met only by counting hyperthreads")
    return Check("cpu_cores", expected, actual, "fail")


def rule_ram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Installed RAM >= ordered, allowing the kernel's reserved share."""
    assert order.ram_bytes is not None
    expected = f">= {format_bytes(order.ram_bytes, binary=False)}"
    if facts.memory is None or facts.memory.total_bytes is None:
        return Check("ram", expected, "unknown: free not available", "fail")
    total = facts.memory.total_bytes
    actual = f"{format_bytes(total)} ({format_bytes(total, binary=False)})"
    ok = total >= order.ram_bytes * (1 - tolerance)
    return Check("ram", expected, actual, "pass" if ok else "fail")


def rule_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """A data disk is mounted at the ordered path, on another device than /, big enough."""
    spec = order.data_disk
    assert spec is not None
    expected = f"separate disk at {spec.mount}"
    if spec.min_size_bytes:
        expected += f", >= {format_bytes(spec.min_size_bytes, binary=False)}"
    if not facts.mounts:
        return Check("data_disk", expected, "unknown: df not available", "fail")
    root = disks.mount_for(facts.mounts, "/")
    mount = disks.mount_for(facts.mounts, spec.mount)
    if mount is None or mount.mountpoint == "/":
        return Check(
            "data_disk", expected, f"{spec.mount} is not a mount point; it lives on the system disk /", "fail"
        )
    actual = f"{mount.device} at {mount.mountpoint}, {format_bytes(mount.size_bytes, binary=False)}"
    if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS:
        return Check(
            "data_disk",
            expected,
            actual + " (memory or overlay filesystem, not a disk)",
            "fail",
            "data on tmpfs or an overlay is lost at reboot; ask the vendor for the ordered disk",
        )
    if root is not None and disks.same_device(root, mount):
        return Check("data_disk", expected, actual + f" (same disk as / on {root.device})", "fail")
    if mount.mountpoint != spec.mount:
        return Check(
            "data_disk", expected, actual, "warn", f"{spec.mount} lies inside the mount {mount.mountpoint}"
        )
    if spec.min_size_bytes and (mount.size_bytes or 0) < spec.min_size_bytes * (1 - tolerance):
        return Check("data_disk", expected, actual, "fail")
    return Check("data_disk", expected, actual, "pass")


def rule_interconnect(order: OrderSpec, facts: Facts) -> Check:
    """NVLink between every GPU pair when NVLink was ordered (from nvidia-smi topo -m)."""
    expected = order.interconnect or ""
    if facts.topology is None:
        problem = _no_gpu_actual(facts) or "unknown: nvidia-smi topo -m failed"
        return Check("interconnect", expected, problem, "fail")
    kind = topo.interconnect(facts.topology)
    weakest = topo.weakest_link(facts.topology)
    actual = kind + (f" (weakest GPU link {weakest})" if weakest else "")
    verdict: Verdict
    if order.interconnect == "pcie" or kind == "nvlink" or kind == "single":
        verdict = "pass"
    elif kind == "mixed":
        verdict = "warn"
    else:
        verdict = "fail"
    detail = "only some GPU pairs are on NVLink" if kind == "mixed" else ""
    return Check("interconnect", expected, actual, verdict, detail)


def rule_min_driver(order: OrderSpec, facts: Facts) -> Check:
    """The driver is at least the ordered minimum version."""
    assert order.min_driver is not None
    expected = f">= {order.min_driver}"
    problem = _no_gpu_actual(facts)
    if problem or facts.gpu is None or not facts.gpu.driver_version:
        return Check("min_driver", expected, problem or "unknown", "fail")
    ok = version_tuple(facts.gpu.driver_version) >= version_tuple(order.min_driver)
    return Check("min_driver", expected, facts.gpu.driver_version, "pass" if ok else "fail")


def evaluate(order: OrderSpec, facts: Facts, tolerance: dict[str, float] | None = None) -> list[Check]:
    """Every rule that the order specifies, in a stable order."""
    tol = {**DEFAULT_TOLERANCE, **(tolerance or {})}
    checks = [rule_driver(facts)]
    if order.gpu_model:
        checks.append(rule_gpu_model(order, facts))
    if order.gpu_count is not None:
        checks.append(rule_gpu_count(order, facts))
    if order.vram_bytes is not None:
        checks.append(rule_vram(order, facts, tol["vram"]))
    if order.cpu_cores is not None:
        checks.append(rule_cpu(order, facts))
    if order.ram_bytes is not None:
        checks.append(rule_ram(order, facts, tol["ram"]))
    if order.data_disk is not None:
        checks.append(rule_data_disk(order, facts, tol["disk"]))
    if order.interconnect is not None:
        checks.append(rule_interconnect(order, facts))
    if order.min_driver is not None:
        checks.append(rule_min_driver(order, facts))
    return checks


class AcceptanceStep(Step):
    """Compare facts with the host's order spec; read-only."""

    name = "acceptance"
    read_only = True
    ARGS = {
        "ram_tolerance": "fraction of ordered RAM that may be missing (default 0.05)",
        "vram_tolerance": "fraction of ordered VRAM that may be missing (default 0.03)",
        "disk_tolerance": "fraction of the data disk size that may be missing (default 0.05)",
    }

    def __init__(self, args: dict[str, object], label: str | None = None) -> None:
        super().__init__(args, label)
        self.tolerance: dict[str, float] = {}
        for key, value in self.args.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
                raise StepArgsError(f"argument {key!r} must be a fraction from 0 to 1, like 0.05")
            self.tolerance[key.removesuffix("_tolerance")] = float(value)

    def plan(self, ctx: StepContext) -> Plan:
        """Evaluate every rule; failed when any rule fails."""
        checks = evaluate(ctx.host.order, ctx.facts, self.tolerance)
        fails = [c for c in checks if c.verdict == "fail"]
        warns = [c for c in checks if c.verdict == "warn"]
        if fails:
            msg = f"{len(fails)} of {len(checks)} acceptance rules failed: " + ", ".join(
                c.name for c in fails
            )
        elif warns:
            msg = f"accepted with {len(warns)} warning(s) (degraded): " + ", ".join(c.name for c in warns)
        else:
            msg = f"all {len(checks)} acceptance rules passed"
        return Plan(changes=False, msg=msg, checks=checks, failed=bool(fails))
