"""The mode rules of gpu_health: persistence mode, MIG mode (now and pending a reset),
virtualisation (bare metal, pass-through or vGPU) and the vGPU software licence."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.once import lazy_re
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.gpu_health.common import gpu_label, gpu_list
from gpuonboard.steps.checks.model_match import is_vgpu
from gpuonboard.steps.checks.once import loaded_once
from gpuonboard.steps.checks.vgpu_name import says_vgpu

# integrated (Jetson) GPUs, whose nvidia-smi prints N/A for the persistence mode by design:
# "Orin (nvgpu)" (tests/fixtures/real/nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt)
_INTEGRATED = lazy_re(r"\(nvgpu\)|\b(?:Orin|Xavier|Thor)\b", re.IGNORECASE)


# the driver models of Windows (nvidia-smi -q `Driver Model`, the table's Driver-Model column)
_WINDOWS_DRIVER_MODELS = frozenset({"WDDM", "TCC", "MCDM"})


def _no_persistence(g: GpuInfo) -> str:
    """Why `g` has no persistence mode ('integrated GPU', 'Windows WDDM driver model'), or ''."""
    if _INTEGRATED.search(g.name):
        return "integrated GPU"
    model = (g.driver_model or "").strip().upper()
    return f"Windows {model} driver model" if model in _WINDOWS_DRIVER_MODELS else ""


def rule_persistence(gpus: list[GpuInfo]) -> Check:
    """Persistence mode on (else every CUDA start pays driver initialisation).

    WARN: Disabled on a GPU. PASS: Enabled on every GPU, or N/A on an integrated (Jetson) GPU
    or one under a Windows driver model (WDDM / TCC / MCDM), which have none (the actual says
    N/A). UNVERIFIED: a GPU's mode not reported (a format without it, or N/A): absence is no
    evidence that it is on; or read as a value that is no mode (named): never a pass.
    """
    off = [gpu_label(g) for g in gpus if g.persistence_mode == "Disabled"]
    if off:
        return Check(
            "persistence_mode",
            "Enabled",
            f"Disabled on {', '.join(off)}",
            "warn",
            "enable it with `sudo nvidia-smi -pm 1` (or the nvidia-persistenced service)",
        )
    # (a value neither Enabled nor Disabled, a cell no reader knew, is no mode read)
    odd = [g for g in gpus if g.persistence_mode not in (None, "Enabled", "Disabled")]
    if odd:
        return Check(
            "persistence_mode",
            "Enabled",
            "; ".join(f"{gpu_label(g)} reads {g.persistence_mode!r}" for g in odd),
            "unverified",
            "that is no persistence mode nvidia-smi prints (Enabled / Disabled; On / Off in its"
            " table): rerun `nvidia-smi -q` and read its Persistence Mode",
        )
    unknown = [g for g in gpus if g.persistence_mode is None]
    if unknown and all(_no_persistence(g) for g in unknown):
        # N/A by design: an integrated (Jetson) GPU has no persistence mode, and its table says
        # N/A; nor has a GPU under a Windows driver model (nvidia-smi: `-pm` is Linux only; its
        # -q says N/A and its table's Persistence-M column is Driver-Model: WDDM / TCC)
        why = "; ".join(dict.fromkeys(_no_persistence(g) for g in unknown))
        return Check(
            "persistence_mode",
            "Enabled",
            f"N/A on {gpu_list(unknown, gpus)} ({why}: no persistence mode)",
            "pass",
            "the output says N/A: an integrated GPU, or one under a Windows driver model, has no"
            " persistence mode to enable",
        )
    if unknown or not gpus:
        return Check(
            "persistence_mode",
            "Enabled",
            f"not reported for {gpu_list(unknown, gpus)}" if gpus else "not reported",
            "unverified",
            "this nvidia-smi output does not give the persistence mode;"
            " the whole `nvidia-smi -q` (Persistence Mode) or the plain `nvidia-smi` table (Persistence-M)"
            " shows it",
        )
    return Check("persistence_mode", "Enabled", "Enabled", "pass")


MIG_CAPABLE_FILE = DATA_DIR / "mig_capable.yml"


@loaded_once
def load_mig_capable(path: Path = MIG_CAPABLE_FILE) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(match, names) per row of data/mig_capable.yml (the GPUs that have MIG; NVIDIA's MIG
    user guide, "Supported GPUs"); ValueError on a bad row."""
    out = []
    for row in table_rows(path, "mig_capable"):
        match, names = row.get("match"), row.get("names")
        if not isinstance(match, str) or not isinstance(names, list) or not names:
            raise ValueError(f"{path}: row {row!r} needs a 'match' text and a list of 'names'")
        out.append((match, tuple(str(n) for n in names)))
    return tuple(out)


@functools.cache
def _mig_capable_pattern() -> re.Pattern[str]:
    words = "|".join(f"(?:{m})" for m, _ in load_mig_capable())
    return re.compile(rf"\b(?:{words})\b", re.IGNORECASE)


def mig_capable(name: str) -> bool:
    """True when the GPU name is a MIG-capable model per data/mig_capable.yml."""
    return bool(_mig_capable_pattern().search(name))


def rule_mig(gpus: list[GpuInfo]) -> Check:
    """MIG splits a GPU into instances: CUDA then sees only MIG instances (one per process, or
    none until instances are created), so a whole-GPU order is not usable for training.

    WARN when MIG is enabled now, or pending (enabled after the next GPU reset / reboot): some
    rentals are MIG slices on purpose, and the order has no field saying which; the report's
    headline names the warning ("GO with 1 warning: mig_mode"), and the message says what to ask.
    """
    on = [g for g in gpus if g.mig_mode == "Enabled"]
    pending_on = [g for g in gpus if g.mig_mode != "Enabled" and g.mig_mode_pending == "Enabled"]
    pending_off = [g for g in on if g.mig_mode_pending == "Disabled"]
    # a GPU whose model the output did not name (a `-q -d ECC` view) may be MIG-capable too
    unknown = [
        g
        for g in gpus
        if g.mig_mode is None
        and not g.mig_na
        and not g.faults
        and (mig_capable(g.name) or not g.name.strip())
    ]
    # a mode the driver printed as neither (not 'N/A'): not known to be whole GPUs
    unknown += [g for g in gpus if g.mig_mode not in (None, "Enabled", "Disabled")]
    if not on and not pending_on and unknown:
        # a MIG-capable GPU whose mode no format reported: whole GPUs are not shown
        return Check(
            "mig_mode",
            "Disabled (whole GPUs)",
            f"not reported for {gpu_list(unknown, gpus)}",
            "unverified",
            "`nvidia-smi -L` lists MIG devices under a GPU in MIG mode; `nvidia-smi -q` shows the mode",
        )
    if not on and not pending_on:
        # a non-MIG model's mode is N/A (None): it has whole GPUs by construction
        # (N/A printed for a MIG-capable model: MIG is not available in its configuration)
        said_na = [g for g in gpus if g.mig_mode is None and g.mig_na and mig_capable(g.name)]
        # (a GPU nvidia-smi cannot read, gpu_health fails it: its mode unread, never its model's)
        unread = [g for g in gpus if g.mig_mode is None and g.faults and g not in said_na]
        no_mig = [g for g in gpus if g.mig_mode is None and g not in said_na and g not in unread]
        parts = [f"{gpu_list(no_mig, gpus)}: no MIG on this model"] if no_mig else []
        parts += [f"{gpu_list(said_na, gpus)}: N/A (MIG not available as configured)"] if said_na else []
        parts += [f"{gpu_list(unread, gpus)} unreadable"] if unread else []
        actual = "; ".join(["Disabled", *parts])
        return Check("mig_mode", "Disabled (whole GPUs)", actual, "pass")
    parts = []
    if on:
        text = f"Enabled on {gpu_list(on, gpus)}"
        if pending_off:
            text += f" (Disabled pending a GPU reset on {gpu_list(pending_off, gpus)})"
        parts.append(text)
    if pending_on:
        parts.append(f"Enabled pending a GPU reset on {gpu_list(pending_on, gpus)}")
    todo = [g for g in on + pending_on if g not in pending_off]
    if todo:
        fix = (
            "ask the vendor to disable MIG with `sudo nvidia-smi -i N -mig 0` for N in"
            f" {', '.join(str(g.index) for g in todo)}, then reset those GPUs"
            " (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    else:
        fix = (
            "MIG is already set to Disabled from the next GPU reset: ask the vendor to reset the"
            " GPUs (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    return Check(
        "mig_mode",
        "Disabled (whole GPUs)",
        "; ".join(parts),
        "warn",
        "MIG mode partitions each GPU into instances: CUDA sees only MIG instances (or none), so"
        f" whole GPUs cannot be used for training; if whole GPUs were ordered, {fix}.",
    )


def rule_virtualization(gpus: list[GpuInfo], wsl: str | None = None) -> Check:
    """Report pass-through or vGPU: bare metal vs a VM changes what you pay for. UNVERIFIED when
    no format reported the mode: a vGPU cannot be ruled out from its absence. `wsl`: what says
    the login is a WSL2 guest (gpu_health/guest.py), whose GPU is the Windows host's: a warning."""
    modes = sorted({g.virtualization_mode for g in gpus if g.virtualization_mode})
    if wsl:
        return Check(
            "virtualization",
            "bare metal or pass-through",
            f"WSL2 guest ({wsl})",
            "warn",
            "the GPU is the Windows host's, handed to this WSL2 guest by GPU paravirtualisation"
            " (/dev/dxg), not bare metal or pass-through: its driver, errors and GPU sharing are"
            " the Windows host's; check the order said so",
        )
    named = sorted(
        {
            g.name
            for g in gpus
            if not g.virtualization_mode and (is_vgpu(g.name, g.product_brand) or says_vgpu(g.name))
        }
    )
    if named:
        # the table and the CSV give no mode, but a vGPU profile's name or brand says so
        modes.append(f"vGPU ({', '.join(named)}, by its name)")
    if not modes:
        return Check(
            "virtualization",
            "bare metal or pass-through",
            "not reported",
            "unverified",
            "this nvidia-smi output does not give the virtualisation mode (a vGPU shares the"
            " physical GPU); `nvidia-smi -q` shows it under GPU Virtualization Mode",
        )
    vgpu = [m for m in modes if "VGPU" in m.upper()]  # a guest's VGPU, or a host sharing its GPUs
    if vgpu:
        return Check(
            "virtualization",
            "bare metal or pass-through",
            ", ".join(modes),
            "warn",
            "a vGPU shares the physical GPU; check the order said so",
        )
    return Check("virtualization", "bare metal or pass-through", ", ".join(modes), "pass")


# NVIDIA restricts a vGPU that holds no licence once its grace period is over: CUDA work is
# refused ("CUDA error: operation not supported" on a guest whose -q says `Unlicensed`: the
# real/nvidia-smi-q__rtxa6000-24q-vgpu__*__unlicensed__guest.txt capture's page) and the GPU is
# throttled; "Unlicensed (Unrestricted)" is that grace period, "Unlicensed (Restricted)" its end
_LICENCE_FIX = (
    "NVIDIA throttles an unlicensed vGPU and refuses its CUDA work once a short grace period after"
    " boot is over (Unrestricted: the grace period, Restricted: after it); ask the vendor to license"
    " it (their licence server, or a client configuration token for nvidia-gridd), then check again"
)


def rule_vgpu_license(gpus: list[GpuInfo]) -> Check | None:
    """The vGPU software licence of every GPU whose driver reports one (a vGPU guest, or the vGPU
    driver on a passed-through GPU), and of every vGPU (by its mode, name or brand).

    FAIL: a License Status `Unlicensed` or `Unlicensed (Restricted)`. WARN: `Unlicensed
    (Unrestricted)` alone (the grace period: in full now, throttled once it is over).
    PASS: every such GPU `Licensed` (with its expiry, if printed). UNVERIFIED: a vGPU whose
    licence this output does not give (the table, the CSV; N/A), or a status of other words.
    None (no row) where no GPU read is a vGPU or reports a licence: bare metal, pass-through.
    """
    read = [g for g in gpus if not g.faults]
    said = [g for g in read if g.license_status]
    unsaid = [
        g for g in read if not g.license_status and is_vgpu(g.name, g.product_brand, g.virtualization_mode)
    ]
    if not said and not unsaid:
        return None

    def status(g: GpuInfo) -> str:
        product = f", {g.licensed_product}" if g.licensed_product else ""
        return f"{gpu_label(g)}: {g.license_status}{product}"

    unlicensed = [g for g in said if (g.license_status or "").lower().startswith("unlicensed")]
    # (Unrestricted: the grace period, which a guest checked before nvidia-gridd got its licence
    # is in too: it runs in full now and is throttled once the period is over, unless licensed)
    restricted = [g for g in unlicensed if "(unrestricted)" not in (g.license_status or "").lower()]
    if unlicensed:
        verdict: Verdict = "fail" if restricted else "warn"
        fix = (
            _LICENCE_FIX
            if restricted
            else f"{_LICENCE_FIX} (a licence still being fetched after boot: recheck in a few minutes)"
        )
        return Check("vgpu_license", "Licensed", "; ".join(map(status, unlicensed)), verdict, fix)
    odd = [g for g in said if not (g.license_status or "").lower().startswith("licensed")]
    if odd or unsaid:
        parts = [*map(status, odd)]
        if unsaid:
            parts.append(f"not reported for {gpu_list(unsaid, gpus)}")
        return Check(
            "vgpu_license",
            "Licensed",
            "; ".join(parts),
            "unverified",
            "a vGPU runs restricted (throttled, CUDA refused) without a licence, and this output does"
            " not say it holds one; `nvidia-smi -q` shows it under vGPU Software Licensed Product"
            " (License Status)",
        )
    return Check("vgpu_license", "Licensed", "; ".join(map(status, said)), "pass")


# the compute modes nvidia-smi reads (the table's `Compute M.` cell: Default, E. Process,
# E. Thread, Prohibited; -q's `Compute Mode`, -q -x's <compute_mode>, the CSV's compute_mode)
_EXCLUSIVE = ("Exclusive_Process", "Exclusive_Thread")

COMPUTE_MODE_FAIL_ADVICE = (
    "a GPU in the Prohibited compute mode lets no CUDA program create a context on it (no"
    " training, no inference): set it back with `sudo nvidia-smi -i N -c DEFAULT` (N the GPU"
    " named), or ask the vendor; on a vGPU whose profile runs no CUDA (an A-series"
    " virtual-applications profile such as A40-24A prints Prohibited) ask for a compute (C) or"
    " Q profile"
)


def compute_mode_warn_advice(modes: list[str]) -> str:
    """What an exclusive compute mode does, naming the `modes` read (Exclusive_Process; the old
    Exclusive_Thread, the table's `E. Thread`, lets one thread of one process use the GPU)."""
    modes = list(dict.fromkeys(m for m in modes if m in _EXCLUSIVE)) or ["Exclusive_Process"]
    who = "one thread of one process" if modes == ["Exclusive_Thread"] else "one process"
    return (
        f"in the {' and '.join(modes)} compute mode {who} may use each GPU: one training process per"
        " GPU runs, but a second CUDA process on that GPU (a notebook, a monitoring tool that uses"
        " CUDA, a data loader using CUDA) fails to start (`all CUDA-capable devices are busy or"
        " unavailable`); if you need that, `sudo nvidia-smi -i N -c DEFAULT` or ask the vendor (an"
        " HPC scheduler may set it per job)"
    )


COMPUTE_MODE_WARN_ADVICE = compute_mode_warn_advice(["Exclusive_Process"])


def rule_compute_mode(gpus: list[GpuInfo]) -> Check | None:
    """The compute mode lets CUDA programs run as a training box needs.

    FAIL: a GPU in the Prohibited mode (no CUDA context at all). WARN: a GPU in an exclusive
    mode (Exclusive_Process, or the old Exclusive_Thread): one process per GPU. UNVERIFIED: a
    mode this tool does not know, or a warn where another GPU's mode was not read (it may be
    Prohibited). None where no GPU's mode was read other than Default (the row appears only
    then: a Default box's report, and one whose mode no format read, has no row)."""
    read = [g for g in gpus if not g.faults]
    odd = [g for g in read if g.compute_mode not in (None, "Default")]
    if not odd:
        return None
    expected = "Default (any number of CUDA processes per GPU)"

    def named(some: list[GpuInfo]) -> str:
        return ", ".join(f"{gpu_label(g)}: {g.compute_mode}" for g in some)

    prohibited = [g for g in odd if g.compute_mode == "Prohibited"]
    exclusive = [g for g in odd if g.compute_mode in _EXCLUSIVE]
    unknown = [g for g in odd if g not in prohibited and g not in exclusive]
    if prohibited:
        return Check(
            "compute_mode",
            expected,
            named(prohibited + exclusive + unknown),
            "fail",
            COMPUTE_MODE_FAIL_ADVICE,
        )
    unread = [g for g in read if g.compute_mode is None]
    if unknown or unread:
        said = [named(exclusive + unknown)] + (
            [f"not reported for {gpu_list(unread, gpus)}"] if unread else []
        )
        return Check(
            "compute_mode",
            expected,
            "; ".join(said) + (" (a compute mode this tool does not know)" if unknown else ""),
            "unverified",
            "a GPU's compute mode was not read or is not one nvidia-smi documents (Default,"
            " Exclusive_Process, Prohibited): `nvidia-smi -q -d COMPUTE` shows it; "
            + compute_mode_warn_advice([g.compute_mode or "" for g in exclusive]),
        )
    advice = compute_mode_warn_advice([g.compute_mode or "" for g in exclusive])
    return Check("compute_mode", expected, named(exclusive), "warn", advice)
