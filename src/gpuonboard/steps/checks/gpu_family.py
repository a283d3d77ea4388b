"""A GPU's architecture family (Volta, Ampere, Blackwell...), and whether an NGC PyTorch release
supports it: NVIDIA's notes name the families each release runs on ("Release 25.01 supports CUDA
compute capability 7.5 and later ... Turing ... Blackwell"); a V100 in a 25.xx container finds
no kernels for its sm_70 (`no kernel image is available for execution on the device`)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.facts.nvidia_smi.model import GpuInfo
from gpuonboard.steps.base import Verdict
from gpuonboard.steps.checks.gpu_arch import FAMILIES_FILE as FAMILIES_FILE
from gpuonboard.steps.checks.gpu_arch import families as families
from gpuonboard.steps.checks.gpu_arch import name_families as name_families
from gpuonboard.steps.checks.gpu_arch import name_family
from gpuonboard.steps.checks.ngc import NgcRelease, version_key


def family_of(gpu: GpuInfo) -> str | None:
    """The GPU's family: as nvidia-smi -q says it, else as its name tells (None: unknown)."""
    said = (gpu.product_architecture or "").strip()
    if said in families():
        return said
    from gpuonboard.steps.checks.gpu_identity import model_name

    return name_family(model_name(gpu))


def _release_with(releases: Sequence[NgcRelease], family: str, newest: bool) -> str | None:
    """The newest (or oldest) release whose notes list the family."""
    listed = [r.release for r in releases if family in r.architectures]
    return max(listed, key=version_key) if newest and listed else min(listed, key=version_key, default=None)


def _added_in(releases: Sequence[NgcRelease], family: str) -> str | None:
    """The release whose notes added the family: the first listing it after one whose list ends
    with an older family (24.12's ends with Ada Lovelace, 25.01 adds Blackwell); None when the
    table shows no such step (Ada Lovelace is in the first list read: when it came is unknown)."""
    order = families()
    listing = [r for r in releases if r.architectures and not r.architectures_from]
    for before, after in zip(listing, listing[1:], strict=False):
        newer = order.index(before.architectures[-1]) < order.index(family)
        if family in after.architectures and family not in before.architectures and newer:
            return after.release
    return None


def _a(family: str) -> str:
    return f"an {family}" if family[0] in "AEIOU" else f"a {family}"


def support_problem(
    release: NgcRelease, gpus: Sequence[GpuInfo], releases: Sequence[NgcRelease]
) -> tuple[Verdict, str, str] | None:
    """(verdict, short actual, detail) where a GPU's family is not one the release supports:
    older than every listed one fails (no kernels for it), newer warns; None when every known
    family is listed, or the release lists none."""
    listed = release.architectures
    order = families()
    seen: dict[str, str] = {}
    for gpu in gpus:
        family = family_of(gpu)
        added = _added_in(releases, family) if family and not listed else None
        if (
            family is not None
            and family not in listed
            and (listed or (added and version_key(added) > version_key(release.release)))
        ):
            seen.setdefault(family, gpu.name)
    if not seen:
        return None
    family, name = min(seen.items(), key=lambda item: order.index(item[0]))
    if not listed:  # (notes not read for the release: a family first supported by a later one)
        first = _added_in(releases, family)
        return (
            "warn",
            f"{name} is {_a(family)} GPU, newer than {release.release}",
            f"The {name} is {_a(family)} GPU, first supported by NGC PyTorch {first} (NVIDIA's notes);"
            f" {release.release}'s PyTorch may have no kernels for it: use NGC PyTorch {first} or later",
        )
    said = f"NGC PyTorch {release.release} supports {', '.join(listed)} GPUs" + (
        f" (as NVIDIA's notes for {release.architectures_from} say; not read for {release.release})"
        if release.architectures_from
        else ""
    )
    if order.index(family) < order.index(listed[0]):
        other = _release_with(releases, family, newest=True)
        return (
            "fail",
            f"{name} is {_a(family)} GPU, which {release.release} does not support",
            f"{said}: the {name} is {_a(family)} GPU, for which its PyTorch has no kernels ('no kernel"
            " image is available'); "
            + (f"use NGC PyTorch {other} or older" if other else "use an older NGC PyTorch release"),
        )
    other = _release_with(releases, family, newest=False)
    return (
        "warn",
        f"{name} is {_a(family)} GPU, newer than {release.release} lists",
        f"{said}: the {name} is {_a(family)} GPU, newer than those; its kernels may be compiled at the"
        " first run or missing: "
        + (f"use NGC PyTorch {other} or later" if other else "use a newer NGC PyTorch release"),
    )
