"""Step `driver_compat`: can the host's driver run the chosen NGC PyTorch container?

The verdict depends on the GPU class: CUDA forward compatibility (an older data-centre
driver running a newer container through its cuda-compat package) works only on
data-centre GPUs; on GeForce cards the container fails at run time with CUDA error 804.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import ngc
from ..facts.gather import Facts
from ..facts.probe import Probe
from .base import Check, Plan, Step, StepArgsError, StepContext, Verdict

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
    "incompatible": "fail",
}


def parse_nvcc(text: str) -> str | None:
    """`Cuda compilation tools, release 12.2, V12.2.140` -> '12.2.140' (or '12.2')."""
    m = re.search(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?", text)
    if not m:
        return None
    return m.group(2) or m.group(1)


def image_for(args: Mapping[str, Any], host_vars: Mapping[str, Any]) -> str:
    """The container image: step arg, else the inventory's `vars.container_image`, else 24.08."""
    image = args.get("image") or host_vars.get("container_image") or DEFAULT_IMAGE
    if not isinstance(image, str):
        raise StepArgsError(f"image must be a text like {DEFAULT_IMAGE}")
    return image


def evaluate(facts: Facts, image: str, releases: tuple[ngc.NgcRelease, ...]) -> list[Check]:
    """The compatibility rule, plus the host CUDA toolkit as information."""
    checks = [_driver_check(facts, image, releases)]
    nvcc = facts.raw.get(NVCC_PROBE.name)
    if nvcc is not None and nvcc.exit_code != 127:
        version = parse_nvcc(nvcc.stdout)
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


def _driver_check(facts: Facts, image: str, releases: tuple[ngc.NgcRelease, ...]) -> Check:
    tag, _ = ngc.parse_image(image)
    release = ngc.release_for(releases, tag) if tag else None
    if release is None:
        known = f"{releases[0].release} to {releases[-1].release}" if releases else "none"
        return Check(
            "ngc_driver",
            f"a driver that runs {image}",
            "unknown: not an NGC PyTorch release in the table",
            "warn",
            f"gpuonboard knows NGC PyTorch releases {known}; pin one of those to get a verdict",
        )
    expected = f">= {release.min_driver} for {release.release} (CUDA {release.cuda})"
    if facts.gpu is None or not facts.gpu.driver_version or not facts.gpu.gpus:
        return Check("ngc_driver", expected, "no NVIDIA driver answered", "fail", "install the driver first")
    first = facts.gpu.gpus[0]
    klass = ngc.gpu_class(first.name, first.product_brand)
    result = ngc.compat(release, facts.gpu.driver_version, klass)
    actual = f"{facts.gpu.driver_version} on {klass} GPU ({first.name}): {result.verdict.replace('_', ' ')}"
    return Check("ngc_driver", expected, actual, _VERDICTS[result.verdict], result.message)


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
        checks = evaluate(ctx.facts, image, ngc.load_releases())
        main = checks[0]
        msg = f"{image}: {main.actual}" + (
            f"; {main.detail}" if main.verdict != "pass" and main.detail else ""
        )
        return Plan(False, msg, checks=checks, failed=main.verdict == "fail")
