"""Step `driver_compat`: can the host's driver run the chosen NGC PyTorch container?

The verdict depends on the GPU class: CUDA forward compatibility (an older data-centre
driver running a newer container through its cuda-compat package) works only on
data-centre GPUs (not in a vGPU guest: `ngc.compat_class`); on GeForce cards the container
fails at run time with CUDA error 804.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuonboard.connection.gather import Facts
from gpuonboard.connection.probe_commands import TIMED_OUT
from gpuonboard.facts.nvidia_smi.values import no_cuda
from gpuonboard.facts.nvidia_smi_failure import (
    HUNG_ADVICE,
    UNKNOWN_CAUSE_ADVICE,
    nvidia_smi_failure,
)
from gpuonboard.facts.probe import Probe
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import VERDICT_RANK, Check, Plan, Step, StepArgsError, StepContext, Verdict
from gpuonboard.steps.checks import gpu_family, ngc
from gpuonboard.steps.checks.gpu_rules import EXEC_NO_CUDA, NO_CUDA_ADVICE
from gpuonboard.steps.checks.missing_facts import (
    RERUN_ADVICE,
    cuda_in_container,
    disputed_said,
    incomplete_said,
    not_found_said,
)

DEFAULT_IMAGE = "nvcr.io/nvidia/pytorch:24.08-py3"
NVCC_PROBE = Probe(
    "nvcc",
    "for n in nvcc /usr/local/cuda/bin/nvcc; do"
    " command -v $n >/dev/null 2>&1 && exec $n --version; done; exit 127",
)
_VERDICTS: dict[str, Verdict] = {
    "compatible": "pass",
    "forward_compat": "pass",
    "forward_compat_unverified": "warn",
    "minor_version_compat": "warn",
    "must_upgrade": "fail",  # NVIDIA's notes for the release say to upgrade from the driver's branch
    "incompatible": "fail",
}


def parse_nvcc(text: str) -> str | None:
    """`Cuda compilation tools, release 12.2, V12.2.140` -> '12.2.140' (or '12.2')."""
    m = re.search(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?", text)
    if not m:
        return None
    return m.group(2) or m.group(1)


def nvcc_said(text: str) -> str | None:
    """The CUDA toolkit release(s) of an nvcc output, as said: `12.2.140`; where the text holds
    several nvcc outputs naming different releases (two toolkits' nvcc, `/usr/local/cuda-11.1` and
    `-11.0`, or two boxes'), each, never one of them kept silently (measure33b 23); None where
    none is read."""
    found = [
        m.group(2) or m.group(1) for m in re.finditer(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?", text)
    ]
    named = list(dict.fromkeys(found))
    if len(named) > 1:
        return (
            f"{', '.join(named)} ({len(found)} nvcc outputs in one text: several CUDA toolkits, each"
            " its own nvcc, or several boxes')"
        )
    return named[0] if named else None


# an integrated GPU (Jetson / IGX iGPU): nvidia-smi names it "Orin (nvgpu)"; its driver comes
# with JetPack / L4T (540.4.0 on JetPack 6), not from the data-centre branches the table lists
_INTEGRATED = re.compile(r"\(nvgpu\)|\b(?:orin|xavier|tegra|thor)\b", re.IGNORECASE)
# Jetson Thor (JetPack 7): nvidia-smi names it "NVIDIA Thor" on a 580 driver with CUDA 13.0 and a
# PCI-style Bus-Id (tests/fixtures/real), not the nvgpu driver of the Orin iGPU the -py3-igpu
# images are built for, and a Thor user's Dockerfile builds on nvcr.io/nvidia/pytorch:25.09-py3;
# no NVIDIA text read says which image runs on it, so neither variant is judged there
_THOR = lazy_re(r"\bthor\b", re.IGNORECASE)


def is_integrated(name: str) -> bool:
    """Whether nvidia-smi's GPU name is an integrated (Jetson / IGX iGPU) GPU."""
    return bool(_INTEGRATED.search(name))


def image_for(args: Mapping[str, Any], host_vars: Mapping[str, Any]) -> str:
    """The container image: step arg, else the inventory's `vars.container_image`, else 24.08."""
    image = args.get("image") or host_vars.get("container_image") or DEFAULT_IMAGE
    if not isinstance(image, str):
        raise StepArgsError(f"image must be a text like {DEFAULT_IMAGE}")
    return image


def evaluate(
    facts: Facts, image: str, releases: tuple[ngc.NgcRelease, ...], mirrors: Sequence[str] = ()
) -> list[Check]:
    """The compatibility rule, plus the host CUDA toolkit as information.

    ``mirrors``: configured registry mirrors of nvcr.io (``registry_mirror``); an image under one
    of them counts as NGC PyTorch too.
    """
    checks = [_driver_check(facts, image, releases, mirrors)]
    nvcc = facts.raw.get(NVCC_PROBE.name)
    if nvcc is not None and nvcc.exit_code != 127:
        version = nvcc_said(nvcc.stdout)
        checks.append(
            Check(
                "host_cuda_toolkit",
                "(information)",
                f"nvcc {version}" if version else "nvcc present, version unreadable",
                "pass",
                "the container brings its own CUDA; the host toolkit does not matter for it",
            )
        )
    return checks


def _missing_release(release: str, releases: tuple[ngc.NgcRelease, ...]) -> str:
    """Why a valid YY.MM tag has no row: inside the table's range (a gap), newer, or older."""
    if not releases:
        return f"NGC PyTorch {release} is not in gpuonboard's table (the table is empty)"
    first, last = releases[0].release, releases[-1].release
    key = ngc.version_key(release)
    if key > ngc.version_key(last):
        return (
            f"NGC PyTorch {release} is newer than every release in gpuonboard's table (newest {last}): "
            "its driver requirement is unverified; check NVIDIA's notes or pin one of the listed releases"
        )
    if key < ngc.version_key(first):
        return f"NGC PyTorch {release} is older than every release in gpuonboard's table (oldest {first})"
    below = max((r.release for r in releases if ngc.version_key(r.release) < key), key=ngc.version_key)
    above = min((r.release for r in releases if ngc.version_key(r.release) > key), key=ngc.version_key)
    return (
        f"NGC PyTorch {release} is not in gpuonboard's table (no driver requirement recorded for that "
        f"month; the nearest listed releases are {below} and {above})"
    )


def _missing_check(facts: Facts, tag: str, releases: tuple[ngc.NgcRelease, ...], expected: str) -> Check:
    """A release the table lacks: unknown (warn), saying why; a tag after a listed one (in a gap,
    or newer than the table) needs at least the nearest older row's driver (NGC's needs only
    rise) and supports none of the GPU families that row's notes dropped (support is cut from the
    oldest end: a V100 in a 25.02 or 26.xx container)."""
    check = Check(
        "ngc_driver", expected, f"unknown: {tag} is not in the table", "warn", _missing_release(tag, releases)
    )
    base = ngc.nearest_older(releases, tag)
    if base is None:
        return check
    driver = facts.gpu.driver_version.strip() if facts.gpu is not None and facts.gpu.driver_version else ""
    with contextlib.suppress(ValueError):
        if driver and not ngc.runs_natively(base, driver):
            check = replace(
                check,
                detail=f"{check.detail}. It needs at least driver {base.min_driver} natively, as"
                f" {base.release} does (NGC's driver needs only rise), and this host's is {driver}.",
            )
    gpus = facts.gpu.gpus if facts.gpu is not None else []
    carried = ngc.carried_to(base, tag)
    return _with_family(
        check, gpu_family.support_problem(carried, gpus, releases) if base.architectures else None
    )


def _driver_check(
    facts: Facts, image: str, releases: tuple[ngc.NgcRelease, ...], mirrors: Sequence[str] = ()
) -> Check:
    info = ngc.read_image(image, mirrors)
    expected = f"a driver that runs {image}"
    if info.problem is not None or info.release is None:
        why = info.problem or "not an NGC PyTorch image"
        return Check(
            "ngc_driver",
            expected,
            "unknown: no verdict for this image",
            "warn",
            f"{why}; gpuonboard judges only {ngc.NGC_IMAGE}:YY.MM-py3 images",
        )
    first_name = facts.gpu.gpus[0].name if facts.gpu is not None and facts.gpu.gpus else ""
    if is_integrated(first_name):
        return _integrated_check(info.tag, info.release, info.igpu, first_name, expected)
    if info.igpu:
        first_name = first_name or "a discrete GPU"
        return Check(
            "ngc_driver",
            expected,
            f"{info.tag} is the iGPU image",
            "fail",
            f"{info.tag} is NGC's image for integrated GPUs (Jetson / IGX iGPU), not for discrete GPUs "
            f"such as {first_name}; use {ngc.NGC_IMAGE}:{info.release}-py3",
        )
    if (no_cuda_check := _no_cuda_check(facts, expected)) is not None:
        return no_cuda_check
    release = ngc.release_for(releases, info.release)
    if release is None:
        return _missing_check(facts, info.release, releases, expected)
    expected = f">= {release.min_driver} for {release.release} (CUDA {release.cuda})"
    if facts.gpu is None or not facts.gpu.gpus:
        unread = facts.unread_not_a_fault()
        if unread:  # a provider's policy, a cut-off output: no evidence about the driver
            return Check("ngc_driver", expected, f"no GPU could be read ({unread})", "unverified")
        actual, advice = driver_failure(facts)
        return Check("ngc_driver", expected, actual, "fail", advice)
    if not facts.gpu.driver_version:
        return Check(
            "ngc_driver",
            expected,
            "driver version not reported",
            "unverified",
            "nvidia-smi listed the GPUs without a driver version; run nvidia-smi on the host to read it",
        )
    # (two drivers, or a CUDA version and "no CUDA driver", named: neither judged)
    if disputed := disputed_said(facts, "driver_version", "cuda_version"):
        return Check("ngc_driver", expected, disputed, "unverified", RERUN_ADVICE)
    driver = facts.gpu.driver_version.strip()
    try:
        klass, first, result = _worst_class(release, driver, facts.gpu.gpus)
    except ValueError:
        return Check(
            "ngc_driver",
            expected,
            f"driver version {driver!r} unreadable",
            "unverified",
            "nvidia-smi did not report a numeric driver version; check the driver installation",
        )
    on = "vGPU" if klass == "vgpu" else f"{klass} GPU"
    actual = f"{driver} on {on} ({first.name}): {result.verdict.replace('_', ' ')}"
    check = Check("ngc_driver", expected, actual, _VERDICTS[result.verdict], result.message)
    return _with_family(check, gpu_family.support_problem(release, facts.gpu.gpus, releases))


def _no_cuda_check(facts: Facts, expected: str) -> Check | None:
    """A fail where nvidia-smi found no CUDA driver (`CUDA Version: N/A` / `Not Found`: a vGPU
    host's driver, a container given no `compute` capability): no container's CUDA can start
    there, whatever the image's release; None otherwise, or where the formats disagree on it
    (judged unverified with the driver)."""
    gpu = facts.gpu
    if gpu is None or not gpu.gpus or not no_cuda(gpu.cuda_version) or disputed_said(facts, "cuda_version"):
        return None
    driver = (gpu.driver_version or "").strip() or "of unread version"
    actual = f"driver {driver} with no CUDA driver (nvidia-smi: CUDA Version {gpu.cuda_version})"
    if exec_cuda := cuda_in_container(facts):  # (that container's CUDA, not the box's)
        said = incomplete_said(facts) or exec_cuda
        return Check("ngc_driver", expected, f"{actual}; {said}", "unverified", EXEC_NO_CUDA)
    return Check("ngc_driver", expected, actual, "fail", NO_CUDA_ADVICE)


# the classes of a mixed box, the least forward-compatible first (a tie names that one)
_CLASS_ORDER = ("consumer", "unknown", "professional", "vgpu", "datacenter")


def _worst_class(release: Any, driver: str, gpus: Sequence[Any]) -> tuple[ngc.CompatClass, Any, Any]:
    """The container's compatibility on the box's GPU class it suits least (class, its first GPU,
    `ngc.compat`'s result): a GeForce beside data-centre cards cannot use the forward-compatibility
    package that lets them run a newer CUDA, whichever nvidia-smi lists first. ValueError when
    the driver version is not numeric. A GPU nvidia-smi lists but says nothing of its class
    (no name: `ERR!`, a fault gpu_health fails; no brand, no virtualisation mode) is no class of
    its own where others are told: it is one of the box's cards, never an unrecognised model."""
    by_class: dict[ngc.CompatClass, Any] = {}
    for gpu in [g for g in gpus if g.name.strip() or g.product_brand or g.virtualization_mode] or gpus:
        by_class.setdefault(ngc.compat_class(gpu.name, gpu.product_brand, gpu.virtualization_mode), gpu)
    judged = [(k, by_class[k], ngc.compat(release, driver, k)) for k in _CLASS_ORDER if k in by_class]
    return max(judged, key=lambda j: VERDICT_RANK[_VERDICTS[j[2].verdict]])


def _with_family(check: Check, problem: tuple[Verdict, str, str] | None) -> Check:
    """The driver's verdict joined with the GPU family's (a V100 in a 25.xx container: whatever
    the driver, its PyTorch has no kernels for it): the worse verdict, both said."""
    if problem is None:
        return check
    verdict, actual, detail = problem
    worse = max(check.verdict, verdict, key=VERDICT_RANK.__getitem__)
    return replace(
        check, actual=f"{check.actual}; {actual}", verdict=worse, detail=f"{check.detail} {detail}."
    )


def driver_failure(facts: Facts) -> tuple[str, str]:
    """Why no GPU could be judged, and what to do: no driver, a hung one, or a failing one (its own
    line quoted and advised by cause: `facts.nvidia_smi_failure`). Also the container step's."""
    raw = facts.gpu_raw if "nvidia_smi" in facts.raw else None
    if not facts.nvidia_smi_present:
        return "no NVIDIA driver answered", not_found_said(facts)[1]
    if raw is not None and raw.exit_code == TIMED_OUT:
        return "nvidia-smi did not answer (stopped)", HUNG_ADVICE
    line, advice = ("", "") if raw is None else nvidia_smi_failure(raw.stdout, raw.stderr)
    quoted = f" ({line[:160]})" if line else ""
    if facts.gpu is None:
        return "nvidia-smi failed" + quoted, advice or UNKNOWN_CAUSE_ADVICE
    # it answered (exit 0); "No devices were found" is such an answer
    return (
        "nvidia-smi listed no GPU" + (quoted if advice else ""),
        advice or "no GPU to run the container on; ask the vendor for the ordered GPUs",
    )


def _integrated_check(tag: str | None, release: str, igpu: bool, gpu: str, expected: str) -> Check:
    """An integrated GPU (Jetson): only the -igpu image runs there, and its driver comes with
    JetPack, which the table of data-centre driver minimums does not cover. Jetson Thor: neither
    image is judged (see _THOR)."""
    if _THOR.search(gpu):
        return Check(
            "ngc_driver",
            expected,
            f"{tag} on Jetson Thor ({gpu}): not judged",
            "warn",
            "Jetson Thor (JetPack 7) runs another driver than the Orin iGPU's (nvgpu) that the -py3-igpu"
            " images are built for, and no NVIDIA text gpuonboard read says which NGC PyTorch image"
            f" (-py3 or -py3-igpu) runs on it; check NGC's notes for {release} or test the container",
        )
    if not igpu:
        return Check(
            "ngc_driver",
            expected,
            f"{tag} is built for discrete GPUs; this host's GPU is integrated ({gpu})",
            "fail",
            f"the -py3 images do not run on an integrated GPU (Jetson / IGX iGPU); use"
            f" {ngc.NGC_IMAGE}:{release}-py3-igpu",
        )
    return Check(
        "ngc_driver",
        expected,
        f"{tag} on integrated GPU ({gpu}): not judged",
        "warn",
        "the driver of an integrated GPU comes with JetPack / L4T, which gpuonboard's table does not"
        f" cover; check NGC's notes for the JetPack release {tag} needs",
    )


def _mirrors(ctx: StepContext) -> list[str]:
    """The configured mirrors of nvcr.io: the host's `registry_mirror` (one, or a list), else
    the vendor's."""
    given = ctx.host.vars.get("registry_mirror")
    listed = given if isinstance(given, list | tuple) else [given]
    out = [m for m in listed if isinstance(m, str) and m.strip()]
    vendor = ctx.host.vendor.registry_mirror if ctx.host.vendor else None
    out += [vendor] if isinstance(vendor, str) else list(vendor or ())
    return out


class DriverCompatStep(Step):
    """Read-only: the host's driver vs the chosen NGC PyTorch image (and nvcc as information)."""

    name = "driver_compat"
    read_only = True
    ARGS = {"image": f"container image (default: vars.container_image, else {DEFAULT_IMAGE})"}

    def probes(self) -> list[Probe]:
        """nvcc --version, wherever the CUDA toolkit put it."""
        return [NVCC_PROBE]

    def plan(self, ctx: StepContext) -> Plan:
        """Evaluate; failed when the driver cannot run the image."""
        try:
            image = image_for(self.args, ctx.host.vars)
        except StepArgsError as exc:
            return Plan(False, str(exc), failed=True)
        checks = evaluate(ctx.facts, image, ngc.load_releases(), _mirrors(ctx))
        main = checks[0]
        msg = f"{image}: {main.actual}" + (
            f"; {main.detail}" if main.verdict != "pass" and main.detail else ""
        )
        return Plan(False, msg, checks=checks, failed=main.verdict == "fail")
