"""NGC PyTorch container compatibility: which host driver runs which ``nvcr.io/nvidia/pytorch`` tag.

The table lives in ``gpuonboard/data/ngc_pytorch.yml`` (see the comment at its top for the
fields and for where each value came from). Everything here is pure: no I/O except reading
that file.

Forward compatibility
---------------------
A driver older than a release's ``min_driver`` can still run the container through the CUDA
forward-compatibility package (``cuda-compat``) shipped inside it, but only when

* the driver is on one of the release's ``forward_compat`` branches at or above that branch's
  ``min``, and
* the GPU supports forward compatibility. NVIDIA documents it for data-centre GPUs and for
  *select* NVIDIA RTX professional GPUs (and Jetson). This module therefore gives
  ``"datacenter"`` cards the ``forward_compat`` verdict, ``"professional"`` cards only
  ``forward_compat_unverified`` (a warning), and consumer GeForce cards ``incompatible``: there
  the compatibility package is refused with CUDA error 804 ("forward compatibility was attempted on
  non supported HW"). A vGPU guest (``compat_class`` ``"vgpu"``, whatever its board) is not on
  NVIDIA's list either: its vGPU software release decides which CUDA versions run, so it gets
  ``forward_compat_unverified`` too.

Minor version compatibility
---------------------------
Refused forward compatibility is not the end: the container's entrypoint then starts on the host's
own driver, and a CUDA 12.x runtime runs on any driver of the CUDA 12 family (>= 525.60.13), on
any GPU, with a limited feature set (no JIT of PTX newer than the driver). A driver below the
release's minimum but at or above that floor therefore gets ``minor_version_compat`` (a warning),
not ``incompatible``; the floors live in ``gpuonboard/data/cuda_minor_compat.yml``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from gpuonboard.resources import DATA_DIR, data_file
from gpuonboard.steps.checks.model_match import is_vgpu
from gpuonboard.steps.checks.ngc_image import (  # noqa: F401 - re-exported
    IGPU_VARIANT,
    NGC_IMAGE,
    VARIANTS,
    NgcImage,
    mirror_host,
    parse_image,
    read_image,
)
from gpuonboard.steps.checks.once import loaded_once

DATA_FILE = DATA_DIR / "ngc_pytorch.yml"
MINOR_COMPAT_FILE = DATA_DIR / "cuda_minor_compat.yml"

GpuClass = Literal["datacenter", "consumer", "professional", "unknown"]
# the class `compat` weighs: a GPU's class, or "vgpu" for a vGPU guest (never forward compat)
CompatClass = Literal["datacenter", "consumer", "professional", "unknown", "vgpu"]
# NVIDIA's page on which CUDA versions each vGPU software release supports
VGPU_CUDA_PAGE = "https://docs.nvidia.com/cuda/vGPU/index.html"
Verdict = Literal[
    "compatible",
    "forward_compat",
    "forward_compat_unverified",
    "minor_version_compat",
    "must_upgrade",
    "incompatible",
]

_RELEASE_RE = re.compile(r"^\d{2}\.\d{2}$")
_VERSION_RE = re.compile(r"^\d+(\.\d+)*$", re.ASCII)  # ("5²0.47" from a garbled box: unreadable)
_BRANCH_RE = re.compile(r"^R(\d+)$")
# the classes forward compatibility may carry (NVIDIA: data-centre GPUs, select RTX professional
# ones; a vGPU's software release decides), as a message names them
_MAY_FORWARD = {"datacenter": "data-centre GPU", "professional": "RTX professional GPU", "vgpu": "vGPU"}


@dataclass(frozen=True)
class ForwardBranch:
    """A data-centre driver branch accepted through CUDA forward compatibility.

    ``branch`` is ``"R535"``; ``min`` is the lowest driver of that branch accepted (``"535.86"``).
    """

    branch: str
    min: str

    @property
    def number(self) -> int:
        """The branch number, e.g. 535 for ``"R535"``."""
        m = _BRANCH_RE.match(self.branch)
        if m is None:  # pragma: no cover - guarded by load_releases
            raise ValueError(f"bad branch {self.branch!r}")
        return int(m.group(1))


@dataclass(frozen=True)
class NgcRelease:
    """One NGC PyTorch container release (``nvcr.io/nvidia/pytorch:<release>-py3``)."""

    release: str
    cuda: str
    pytorch: str | None
    min_driver: str
    forward_compat: tuple[ForwardBranch, ...]
    source: str
    # branches NVIDIA's notes for the release say to upgrade from ("users should upgrade from all
    # R418, ... drivers, which are not forward-compatible with CUDA 12.6"), the sentence itself,
    # where it was read, and whether that page (NVIDIA's own) was read for this release
    must_upgrade: tuple[str, ...] = ()
    must_upgrade_note: str | None = None
    must_upgrade_source: str | None = None
    must_upgrade_verified: bool = False
    # the GPU architecture families NVIDIA's notes say the release supports, oldest first, where
    # that was read, and the older release they were taken from when not read for this one
    architectures: tuple[str, ...] = ()
    architectures_source: str | None = None
    architectures_from: str | None = None
    # False where the row has no `forward_compat` (the notes naming the branches were not read):
    # below min_driver a data-centre driver is then unverified, never forward_compat nor refused
    forward_compat_read: bool = True


@dataclass(frozen=True)
class Compat:
    """Verdict of :func:`compat` for one release, driver and GPU class."""

    verdict: Verdict
    message: str
    newest_runnable: str | None
    needed_driver: str


@functools.lru_cache(maxsize=2048)  # (the NGC table's ~200 versions, compared per host and release)
def version_key(version: str) -> tuple[int, ...]:
    """Numeric sort key of a dotted version: ``"535.104.05"`` -> ``(535, 104, 5)``.

    Comparison is per dot part, so ``"535.104.05" > "535.86.10"``; a shorter version that is a
    prefix compares lower (``"560" <= "560.35.03"``), which is what a branch floor needs.
    """
    v = version.strip()
    if not _VERSION_RE.match(v):
        raise ValueError(f"not a numeric dotted version: {version!r}")
    return tuple(int(p) for p in v.split("."))


def _driver_at_least(driver: str, minimum: str) -> bool:
    return version_key(driver) >= version_key(minimum)


def _row_error(path: Path, index: int, row: Any, problem: str) -> ValueError:
    name = row.get("release") if isinstance(row, dict) else None
    label = f"row {index}" + (f" (release {name!r})" if name is not None else "")
    return ValueError(f"{path}: {label}: {problem}")


def _req_str(path: Path, index: int, row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _row_error(path, index, row, f"field {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _parse_row(path: Path, index: int, row: Any) -> NgcRelease:
    if not isinstance(row, dict):
        raise _row_error(path, index, row, f"expected a mapping, got {type(row).__name__}")
    release = _req_str(path, index, row, "release")
    if not _RELEASE_RE.match(release):
        raise _row_error(path, index, row, f"release {release!r} is not of the form YY.MM (quote it)")
    cuda = _req_str(path, index, row, "cuda")
    if not _VERSION_RE.match(cuda):
        raise _row_error(path, index, row, f"cuda {cuda!r} is not a dotted version")
    pytorch = row.get("pytorch")
    if pytorch is not None and (not isinstance(pytorch, str) or not pytorch.strip()):
        raise _row_error(path, index, row, f"field 'pytorch' must be a string or null, got {pytorch!r}")
    min_driver = _req_str(path, index, row, "min_driver")
    if not _VERSION_RE.match(min_driver):
        raise _row_error(path, index, row, f"min_driver {min_driver!r} is not a dotted version")
    source = _req_str(path, index, row, "source")
    if not source.startswith(("https://", "http://")):
        raise _row_error(path, index, row, f"source {source!r} does not start with a URL")
    fc_raw = row.get("forward_compat", [])
    if not isinstance(fc_raw, list):
        raise _row_error(path, index, row, "field 'forward_compat' must be a list")
    branches: list[ForwardBranch] = []
    for fc in fc_raw:
        if not isinstance(fc, dict) or set(fc) != {"branch", "min"}:
            raise _row_error(path, index, row, f"forward_compat entry {fc!r} must be {{branch, min}}")
        branch, minimum = str(fc["branch"]), str(fc["min"])
        m = _BRANCH_RE.match(branch)
        if m is None:
            raise _row_error(path, index, row, f"forward_compat branch {branch!r} is not like 'R535'")
        if not _VERSION_RE.match(minimum) or version_key(minimum)[0] != int(m.group(1)):
            raise _row_error(path, index, row, f"forward_compat min {minimum!r} is not on branch {branch}")
        branches.append(ForwardBranch(branch=branch, min=minimum))
    must, note, must_source, must_verified = _must_upgrade(path, index, row)
    families = row.get("architectures") or []
    if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
        raise _row_error(path, index, row, "field 'architectures' must be a list of family names")
    if families:
        _req_str(path, index, row, "architectures_source")
    return NgcRelease(
        release=release,
        cuda=cuda,
        pytorch=pytorch.strip() if isinstance(pytorch, str) else None,
        min_driver=min_driver,
        forward_compat=tuple(branches),
        source=source,
        must_upgrade=must,
        must_upgrade_note=note,
        must_upgrade_source=must_source,
        must_upgrade_verified=must_verified,
        architectures=tuple(families),
        architectures_source=row.get("architectures_source") if families else None,
        forward_compat_read="forward_compat" in row,
    )


def _must_upgrade(
    path: Path, index: int, row: dict[str, Any]
) -> tuple[tuple[str, ...], str | None, str | None, bool]:
    """The optional `must_upgrade` list with its `must_upgrade_note` (NVIDIA's sentence, quoted),
    `must_upgrade_source` (URL) and `must_upgrade_verified`; all or none."""
    raw = row.get("must_upgrade")
    if raw is None:
        return (), None, None, False
    if not isinstance(raw, list) or not raw:
        raise _row_error(path, index, row, "field 'must_upgrade' must be a non-empty list of branches")
    branches = []
    for b in raw:
        if not isinstance(b, str) or _BRANCH_RE.match(b) is None:
            raise _row_error(path, index, row, f"must_upgrade branch {b!r} is not like 'R555'")
        branches.append(b)
    note = _req_str(path, index, row, "must_upgrade_note")
    source = _req_str(path, index, row, "must_upgrade_source")
    if not source.startswith(("https://", "http://")):
        raise _row_error(path, index, row, f"must_upgrade_source {source!r} does not start with a URL")
    verified = row.get("must_upgrade_verified")
    if not isinstance(verified, bool):
        raise _row_error(path, index, row, "field 'must_upgrade_verified' must be true or false")
    return tuple(branches), note, source, verified


def load_releases(path: Path | None = None) -> tuple[NgcRelease, ...]:
    """Load and validate the release table, sorted oldest first.

    ``path`` defaults to the packaged ``data/ngc_pytorch.yml``. Raises :class:`ValueError`
    naming the file and the offending row when the file is malformed (including duplicate
    releases).
    """
    return _packaged_releases() if path is None else _read_releases(Path(path))


@loaded_once
def _packaged_releases() -> tuple[NgcRelease, ...]:
    """The packaged table, read once a process (a 50-host check judged it per host, twice)."""
    return _read_releases(DATA_FILE)


def _read_releases(p: Path) -> tuple[NgcRelease, ...]:
    rows = [_parse_row(p, i, row) for i, row in enumerate(_yaml_list(p, "releases"))]
    seen: set[str] = set()
    for i, r in enumerate(rows):
        if r.release in seen:
            raise ValueError(f"{p}: row {i} (release {r.release!r}): duplicate release")
        seen.add(r.release)
    return _carried(sorted(rows, key=lambda r: version_key(r.release)))


def nearest_older(releases: Sequence[NgcRelease], tag: str) -> NgcRelease | None:
    """The newest row older than `tag` (a month in a gap, or after the table); None when the tag
    is older than every row."""
    older = [r for r in releases if version_key(r.release) < version_key(tag)]
    return max(older, key=lambda r: version_key(r.release)) if older else None


def carried_to(row: NgcRelease, release: str) -> NgcRelease:
    """`row` as read for a later `release` whose notes were not read: its families and branches
    to upgrade from, said as the older notes' (architectures_from, must_upgrade_verified)."""
    return replace(
        row,
        release=release,
        architectures_from=(row.architectures_from or row.release) if row.architectures else None,
        must_upgrade_verified=False,
    )


def _carried(rows: Sequence[NgcRelease]) -> tuple[NgcRelease, ...]:
    """Rows whose notes were not read for the branches to upgrade from or the GPU families take
    the nearest older row's, as not read for them: a branch not forward-compatible with an older
    CUDA is not with a newer one (NVIDIA lists only production / long-term branches), and family
    support is cut from the oldest end (25.01 dropped Pascal and Volta)."""
    out: list[NgcRelease] = []
    for row in rows:
        last_must = next((r for r in reversed(out) if r.must_upgrade), None)
        last_arch = next((r for r in reversed(out) if r.architectures), None)
        if not row.must_upgrade and last_must is not None:
            # a branch on both of the older row's lists (R545 of the CUDA 12.6 notes: accepted from
            # its forward-compatible minimum up) is not carried to a row whose forward-compatible
            # branches were not read: there it is unknown (forward_compat_unverified), not refused
            both: set[str] = set()
            if not row.forward_compat_read:
                both = {fb.branch for fb in last_must.forward_compat}
            row = replace(
                row,
                must_upgrade=tuple(b for b in last_must.must_upgrade if b not in both),
                must_upgrade_note=last_must.must_upgrade_note,
                must_upgrade_source=last_must.must_upgrade_source,
                must_upgrade_verified=False,
            )
        if not row.architectures and last_arch is not None:
            row = replace(
                row,
                architectures=last_arch.architectures,
                architectures_source=last_arch.architectures_source,
                architectures_from=last_arch.architectures_from or last_arch.release,
            )
        out.append(row)
    return tuple(out)


def _minor_floor_row(path: Path, index: int, row: Any) -> tuple[int, str]:
    if not isinstance(row, dict) or set(row) != {"cuda_major", "min_driver", "source"}:
        raise ValueError(f"{path}: row {index}: expected {{cuda_major, min_driver, source}}, got {row!r}")
    major, floor, source = row["cuda_major"], row["min_driver"], row["source"]
    if not isinstance(major, int) or isinstance(major, bool) or major < 1:
        raise ValueError(f"{path}: row {index}: cuda_major {major!r} is not a whole number")
    if not isinstance(floor, str) or not _VERSION_RE.match(floor.strip()):
        raise ValueError(f"{path}: row {index}: min_driver {floor!r} is not a dotted version (quote it)")
    if not isinstance(source, str) or not source.startswith(("https://", "http://")):
        raise ValueError(f"{path}: row {index}: source {source!r} does not start with a URL")
    return major, floor.strip()


def load_minor_compat(path: Path | None = None) -> dict[int, str]:
    """CUDA major -> oldest driver of CUDA minor version compatibility (``{12: "525.60.13"}``).

    ``path`` defaults to the packaged ``data/cuda_minor_compat.yml`` (read once); a malformed
    file raises :class:`ValueError` naming the file and the row.
    """
    return dict(_packaged_minor_compat() if path is None else _read_minor_compat(Path(path)))


@loaded_once
def _packaged_minor_compat() -> tuple[tuple[int, str], ...]:
    return _read_minor_compat(MINOR_COMPAT_FILE)


def _yaml_list(p: Path, what: str) -> list[Any]:
    """A data file's YAML: a non-empty list (ValueError naming the file otherwise)."""
    raw = data_file(p)
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{p}: expected a non-empty YAML list of {what}")
    return raw


def _read_minor_compat(p: Path) -> tuple[tuple[int, str], ...]:
    rows = [_minor_floor_row(p, i, row) for i, row in enumerate(_yaml_list(p, "CUDA majors"))]
    if len({m for m, _ in rows}) != len(rows):
        raise ValueError(f"{p}: a cuda_major is listed twice")
    return tuple(rows)


_DATACENTER_RE = re.compile(
    r"\b(?:[agh]h?\d{2,3}[a-z]?|gb\d{3}|b\d{3}a?|l40s?|l4|l20|l2|t4|v100|p100|p40|p4|k80|k40|m60|m40|a2)\b"
)
# (`ada gen`: the table cuts a long name, `NVIDIA RTX 500 Ada Gener...`; only NVIDIA's
# professional Ada cards are named `... Ada Generation`)
_PRO_RE = re.compile(
    r"\brtx\s+(?:pro\s+)?(?:a\d{3,4}|[2-8]000|[45]500)\b|\bada\s+gen|\bquadro\b|\bt\d{3,4}\b"
)


@functools.lru_cache(maxsize=256)  # (pure: each GPU of a host asks it, for each release compared)
def gpu_class(name: str, brand: str | None = None) -> GpuClass:
    """Classify a GPU by its nvidia-smi name (and optional XML ``<product_brand>``).

    Returns ``"datacenter"`` (Tesla / A100 / H100 / H200 / L40S / A10 / T4 / V100 / P100 ...),
    ``"consumer"`` (GeForce, TITAN), ``"professional"`` (Quadro, NVIDIA RTX A6000 / RTX 6000 Ada /
    RTX 4000 SFF Ada ...) or ``"unknown"``. Only ``"datacenter"`` is treated as supporting CUDA
    forward compatibility; ``"professional"`` is "select models only" (warn).
    """
    n = " ".join(name.lower().replace("_", " ").split())
    b = (brand or "").strip().lower()
    if "geforce" in n or "titan" in n or b in {"geforce", "titan"}:
        return "consumer"
    if b == "quadro" or b == "nvidia rtx" or b.startswith("quadro") or _PRO_RE.search(n):
        return "professional"
    if n.startswith("tesla") or b == "tesla" or _DATACENTER_RE.search(n):
        return "datacenter"
    if re.search(r"\brtx\s+[2-5]0[5-9]0\b", n):
        return "consumer"
    return "unknown"


def compat_class(name: str, brand: str | None = None, virtualization_mode: str | None = None) -> CompatClass:
    """The class :func:`compat` weighs for a GPU: ``"vgpu"`` for a vGPU guest (its profile name,
    vGPU product brand or ``VGPU`` virtualization mode: `model_match.is_vgpu`), else
    :func:`gpu_class`. NVIDIA's forward-compatibility page lists data-centre GPUs, select RTX
    server cards and Jetson, not vGPU guests, whose vGPU software release decides which CUDA
    versions run (VGPU_CUDA_PAGE): so a vGPU of a data-centre board is never ``"datacenter"`` here.
    """
    if is_vgpu(name, brand, virtualization_mode):
        return "vgpu"
    return gpu_class(name, brand)


def release_for(releases: Sequence[NgcRelease], tag: str) -> NgcRelease | None:
    """The row for ``tag`` (``"24.08"``, or a full tag like ``"24.08-py3"``), else ``None``."""
    wanted = tag.strip().split("-", 1)[0]
    for r in releases:
        if r.release == wanted:
            return r
    return None


def _forward_branch(release: NgcRelease, driver: str) -> ForwardBranch | None:
    branch = version_key(driver)[0]
    for fb in release.forward_compat:
        if fb.number == branch and _driver_at_least(driver, fb.min):
            return fb
    return None


def _beyond_listed(release: NgcRelease, driver: str) -> bool:
    """The driver is on a branch newer than every forward-compatible branch listed for the release.

    NVIDIA's notes list branches as of the release date; a later branch (R550 for a release that
    lists up to R545) is not named there, yet is newer than what is: unverified, not refused.
    """
    if not release.forward_compat:
        return False
    return version_key(driver)[0] > max(fb.number for fb in release.forward_compat)


def must_upgrade_branch(release: NgcRelease, driver: str) -> str | None:
    """The driver's branch (``"R555"``) when NVIDIA's notes for ``release`` say to upgrade from it
    and the driver is below the release's native minimum, else ``None``.

    A branch on both of NVIDIA's lists (R545 in the CUDA 12.6 notes: "you can use ... 545.23 (or
    later R545)" and "users should upgrade from all ... R545 ... drivers") is read with the more
    specific sentence winning: from that branch's forward-compatibility ``min`` up it is accepted,
    below it it must be upgraded.
    """
    if runs_natively(release, driver):
        return None
    branch = f"R{version_key(driver)[0]}"
    if branch not in release.must_upgrade or _forward_branch(release, driver) is not None:
        return None
    return branch


def runs_natively(release: NgcRelease, driver: str) -> bool:
    """True when ``driver`` meets the release's native requirement (any GPU)."""
    return _driver_at_least(driver, release.min_driver)


@functools.lru_cache(maxsize=256)  # (each host asks it of the packaged table: ~200 releases read)
def _packaged_newest(driver: str, klass: str) -> str | None:
    """newest_runnable over the packaged table (load_releases())."""
    return newest_runnable(load_releases(), driver, klass)


def newest_runnable(releases: Sequence[NgcRelease], driver: str, klass: str) -> str | None:
    """Newest release in ``releases`` this driver runs: natively, or (datacenter only) via forward
    compat, counting a branch newer than every listed one (see :func:`compat`)."""
    best: NgcRelease | None = None
    for r in releases:
        ok = runs_natively(r, driver) or (
            klass == "datacenter"
            and must_upgrade_branch(r, driver) is None
            and (_forward_branch(r, driver) is not None or _beyond_listed(r, driver))
        )
        if ok and (best is None or version_key(r.release) > version_key(best.release)):
            best = r
    return best.release if best is not None else None


def minor_compat_floor(release: NgcRelease, floors: Mapping[int, str] | None = None) -> str | None:
    """The oldest driver that runs ``release`` through CUDA minor version compatibility (the floor
    of its CUDA major: ``"525.60.13"`` for a CUDA 12.x release), or ``None`` when unknown."""
    table = load_minor_compat() if floors is None else floors
    return table.get(version_key(release.cuda)[0])


def runs_with_minor_compat(release: NgcRelease, driver: str, floors: Mapping[int, str] | None = None) -> bool:
    """True when ``driver`` is at or above the minor-version-compatibility floor of the release's
    CUDA major (any GPU: it needs no compatibility package)."""
    floor = minor_compat_floor(release, floors)
    return floor is not None and _driver_at_least(driver, floor)


def _no_forward_compat(release: NgcRelease, driver: str, klass: str) -> str:
    """Why forward compatibility does not carry ``driver`` to ``release`` on a ``klass`` GPU."""
    if klass == "consumer":
        return "forward compatibility does not work on GeForce cards (CUDA error 804)"
    branch = f"R{version_key(driver)[0]}"
    if not release.forward_compat_read and klass in _MAY_FORWARD:  # (only a branch to upgrade from)
        note, where = release.must_upgrade_note, release.must_upgrade_source
        read = "" if release.must_upgrade_verified else ", not read on the page of this release itself"
        return f'its branch {branch} is one NVIDIA\'s notes say to upgrade from ("{note}" ({where}){read})'
    if klass == "datacenter":
        same = next((f for f in release.forward_compat if f.branch == branch), None)
        if same is not None:
            return f"forward compatibility on branch {branch} needs {same.min} or later"
        listed = ", ".join(f.branch for f in release.forward_compat) or "none"
        return f"branch {branch} is not a forward-compatible branch for it ({listed})"
    if klass in ("professional", "vgpu"):
        return "its branch is not one of the release's forward-compatible branches"
    return "forward compatibility cannot be assumed for an unrecognised GPU (CUDA error 804 risk)"


def _minor_compat_note(release: NgcRelease, floors: Mapping[int, str] | None) -> str:
    floor = minor_compat_floor(release, floors)
    major = version_key(release.cuda)[0]
    return (
        f"it runs through CUDA minor version compatibility (CUDA {major}.x on a driver >= {floor}; the "
        "container prints 'compatibility mode is UNAVAILABLE' and starts) with a limited feature set: PTX "
        "newer than the driver cannot be JIT-compiled (cudaErrorUnsupportedPtxVersion)"
    )


def _must_upgrade_compat(release: NgcRelease, driver: str, must: str, newest: str | None) -> Compat:
    """``must_upgrade``: the driver's branch is one NVIDIA's notes for the release say to upgrade
    from; the message quotes NVIDIA's sentence and where it was read."""
    rel, need = release.release, release.min_driver
    where = release.must_upgrade_source or release.source
    read = (
        ""
        if release.must_upgrade_verified
        else " (not read on the page of this release itself: see the data file)"
    )
    starts = (
        " The container may still start through CUDA minor version compatibility, with a limited"
        " feature set, but NVIDIA's notes say to upgrade this driver."
    )
    return Compat(
        "must_upgrade",
        f"Driver {driver} is older than {need}, which NGC PyTorch {rel} (CUDA {release.cuda}) needs, "
        f"and its branch {must} is one NVIDIA's notes say to upgrade from: "
        f'"{release.must_upgrade_note}" '
        f"({where}){read}.{starts} Upgrade the driver to {need} or later"
        + (
            f", or use NGC PyTorch {newest} or older."
            if newest and version_key(newest) < version_key(rel)
            else "."
        ),
        newest,
        need,
    )


def _notes_url(release: str) -> str:
    """NVIDIA's PyTorch release-notes page of a YY.MM release."""
    page = release.replace(".", "-")
    return f"https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-{page}.html"


def _unverified_forward_compat(
    release: NgcRelease,
    driver: str,
    klass: str,
    fb: ForwardBranch | None,
    newest: str | None,
    fallback_note: str,
) -> Compat | None:
    """``forward_compat_unverified`` (warn): a release whose forward-compatible branches were not
    read, on a data-centre / professional GPU or a vGPU (a branch NVIDIA says to upgrade from
    excepted); a listed forward-compatible branch ``fb`` on a professional GPU or a vGPU, or on a
    data-centre / professional GPU or a vGPU a branch newer than every listed one; else None."""
    rel, need = release.release, release.min_driver
    branch = f"R{version_key(driver)[0]}"
    if not release.forward_compat_read and klass in _MAY_FORWARD and branch not in release.must_upgrade:
        return Compat(
            "forward_compat_unverified",
            f"Driver {driver} is older than {need}, which NGC PyTorch {rel} (CUDA {release.cuda}) needs "
            f"natively, and the driver branches NVIDIA lists as forward-compatible for {rel} are not in "
            f"gpuonboard's table (its notes were not read for them), so whether this {_MAY_FORWARD[klass]} "
            f"runs it through the CUDA forward-compatibility package is unverified{fallback_note} -- check "
            f"NVIDIA's notes for {rel} ({_notes_url(rel)}), test the container, or upgrade the driver to "
            f"{need} or later.",
            newest,
            need,
        )
    if (fb is not None or _beyond_listed(release, driver)) and klass == "vgpu":
        return Compat(
            "forward_compat_unverified",
            f"Driver {driver} is older than {need}, which NGC PyTorch {rel} needs natively, and this is a "
            f"vGPU: NVIDIA's forward-compatibility support covers data-centre GPUs, not vGPU guests, whose "
            f"vGPU software release decides which CUDA versions run ({VGPU_CUDA_PAGE}){fallback_note} -- "
            f"check that page for the host's vGPU release, test the container, or upgrade the driver to "
            f"{need} or later.",
            newest,
            need,
        )
    if fb is not None and klass == "professional":
        return Compat(
            "forward_compat_unverified",
            f"Driver {driver} is older than {need}; branch {fb.branch} is forward-compatible for NGC PyTorch "
            f"{rel}, but NVIDIA supports forward compatibility only on select RTX professional GPUs, so "
            f"this card may refuse it with CUDA error 804{fallback_note} -- test it or upgrade the driver "
            f"to {need} or later.",
            newest,
            need,
        )
    if klass in ("datacenter", "professional") and _beyond_listed(release, driver):
        listed = ", ".join(f.branch for f in release.forward_compat)
        return Compat(
            "forward_compat_unverified",
            f"Driver {driver} is older than {need}, which NGC PyTorch {rel} needs natively, and its branch "
            f"{branch} is newer than every forward-compatible branch NVIDIA lists for {rel} ({listed}) "
            f"but not listed itself: forward compatibility is unverified for it{fallback_note} -- test "
            f"the container or upgrade the driver to {need} or later.",
            newest,
            need,
        )
    return None


def _without_forward_compat(
    release: NgcRelease,
    driver: str,
    klass: str,
    newest: str | None,
    minor: bool,
    minor_floors: Mapping[int, str] | None,
) -> Compat:
    """No forward compatibility: ``minor_version_compat`` (warn) at or above the CUDA major's
    minor-compatibility floor, else ``incompatible``."""
    rel, need = release.release, release.min_driver
    fallback = (
        f"use NGC PyTorch {newest} or older, or upgrade the driver to {need} or later"
        if newest
        else f"upgrade the driver to {need} or later (no release in gpuonboard's table runs fully on it)"
    )
    why = _no_forward_compat(release, driver, klass)
    if minor:
        return Compat(
            "minor_version_compat",
            f"Driver {driver} is older than {need}, which NGC PyTorch {rel} (CUDA {release.cuda}) needs, "
            f"and {why}; {_minor_compat_note(release, minor_floors)}. For full support {fallback}.",
            newest,
            need,
        )
    floor = minor_compat_floor(release, minor_floors)
    below = (
        f", and it is below {floor}, the oldest driver of CUDA {version_key(release.cuda)[0]}.x minor "
        "version compatibility, so CUDA cannot initialise in the container"
        if floor is not None
        else ""
    )
    return Compat(
        "incompatible",
        f"Driver {driver} is too old for NGC PyTorch {rel}, which needs driver {need} or later, and "
        f"{why}{below}; {fallback}.",
        newest,
        need,
    )


def compat(
    release: NgcRelease,
    driver: str,
    klass: str,
    releases: Sequence[NgcRelease] | None = None,
    minor_floors: Mapping[int, str] | None = None,
) -> Compat:
    """Can ``driver`` on a GPU of class ``klass`` run NGC PyTorch ``release``?

    * ``driver >= release.min_driver`` -> ``compatible``.
    * else, a driver on a branch NVIDIA's notes for the release say to upgrade from
      (``release.must_upgrade``, below that branch's forward-compat ``min`` when it is on both
      lists) -> ``must_upgrade`` (a fail), on any GPU but a GeForce card (the sentence is about
      "the CUDA driver's compatibility package", forward compatibility, which GeForce cards never
      use: there the branch is judged as any other, by minor version compatibility); the message
      quotes NVIDIA's sentence.
    * else, driver on a listed forward-compat branch at/above its ``min``: ``forward_compat`` on a
      data-centre GPU, ``forward_compat_unverified`` (warn) on a professional GPU or a vGPU
      (``klass`` ``"vgpu"``, :func:`compat_class`).
    * else, on a data-centre or professional GPU or a vGPU, a driver whose branch is newer than every listed
      forward-compat branch (R550/R560/R570 for a release listing up to R545):
      ``forward_compat_unverified`` (warn) -- newer than what NVIDIA's notes name, never a fail.
    * else, a driver at or above the minor-version-compatibility floor of the release's CUDA major
      (``minor_floors``, default the packaged table; 525.60.13 for CUDA 12.x), on any GPU:
      ``minor_version_compat`` (warn). NGC's entrypoint loads the compatibility package only when
      it works there, and otherwise starts on the host's driver, which runs the container's CUDA
      12.x runtime with a limited feature set (NVIDIA, "CUDA Compatibility", Minor Version
      Compatibility): it runs, so never a fail; not fully supported, so never a pass.
    * otherwise ``incompatible``: CUDA cannot initialise in the container.

    ``newest_runnable`` (computed over ``releases``, default the packaged table) counts only
    releases the driver runs with full support: natively, or through forward compatibility on a
    data-centre GPU.
    """
    table = load_releases() if releases is None else releases
    rel, need = release.release, release.min_driver
    newest = _packaged_newest(driver, klass) if releases is None else newest_runnable(table, driver, klass)
    if runs_natively(release, driver):
        return Compat(
            "compatible",
            f"Driver {driver} meets NGC PyTorch {rel}'s requirement (driver {need} or later), "
            "so the container runs natively.",
            newest,
            need,
        )
    # below the CUDA major's minor-compatibility floor the container cannot start at all: that is
    # "incompatible" (below); at or above it, NVIDIA's upgrade sentence decides, except on a
    # GeForce card: the sentence is about "the CUDA driver's compatibility package" (forward
    # compatibility, offered to data-centre GPUs the sentence before), which a GeForce card never
    # uses, so there R555 runs as R550 does, through minor version compatibility
    minor_ok = runs_with_minor_compat(release, driver, minor_floors)
    must = must_upgrade_branch(release, driver) if minor_ok and klass != "consumer" else None
    if must is not None:
        return _must_upgrade_compat(release, driver, must, newest)
    fb = _forward_branch(release, driver)
    if fb is not None and klass == "datacenter":
        return Compat(
            "forward_compat",
            f"Driver {driver} is older than {need} but on forward-compatible branch {fb.branch} "
            f"(>= {fb.min}), so NGC PyTorch {rel} works through the CUDA forward-compatibility package "
            f"(data-centre GPUs only); upgrade to {need} or later to stop relying on it.",
            newest,
            need,
        )
    minor = runs_with_minor_compat(release, driver, minor_floors)
    fallback_note = f"; if it is refused, {_minor_compat_note(release, minor_floors)}" if minor else ""
    unverified = _unverified_forward_compat(release, driver, klass, fb, newest, fallback_note)
    if unverified is not None:
        return unverified
    return _without_forward_compat(release, driver, klass, newest, minor, minor_floors)
