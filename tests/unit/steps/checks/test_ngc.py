"""Tests for gpuonboard.steps.checks.ngc: the NGC PyTorch release table, images, GPU class, verdicts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.steps.checks import ngc

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "real"


@pytest.fixture(scope="module")
def releases() -> tuple[ngc.NgcRelease, ...]:
    return ngc.load_releases()


@pytest.fixture(scope="module")
def r2408(releases: tuple[ngc.NgcRelease, ...]) -> ngc.NgcRelease:
    r = ngc.release_for(releases, "24.08")
    assert r is not None
    return r


# --- data file ---------------------------------------------------------------------------


def test_packaged_file_loads_and_covers_range(releases: tuple[ngc.NgcRelease, ...]) -> None:
    tags = [r.release for r in releases]
    assert "23.03" in tags and "24.12" in tags
    assert len(releases) >= 15


def test_sorted_and_unique(releases: tuple[ngc.NgcRelease, ...]) -> None:
    keys = [ngc.version_key(r.release) for r in releases]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


# NVIDIA's pages, and NVIDIA's own repositories (the Triton server's release notes and compatibility
# matrix, TensorRT-LLM's release notes)
NVIDIA_SOURCES = (
    "https://docs.nvidia.com/",
    "https://github.com/triton-inference-server/server/",
    "https://github.com/NVIDIA/",
)


def test_every_row_has_nvidia_source_url(releases: tuple[ngc.NgcRelease, ...]) -> None:
    for r in releases:
        assert r.source.startswith(NVIDIA_SOURCES), r.release
        for fb in r.forward_compat:
            assert fb.min.split(".")[0] == fb.branch[1:]


def test_2408_is_cuda_126_and_needs_560(r2408: ngc.NgcRelease) -> None:
    assert r2408.cuda.startswith("12.6")
    assert r2408.min_driver == "560"
    assert r2408.pytorch == "2.5.0a0+872d972e41"
    assert {fb.branch for fb in r2408.forward_compat} == {"R470", "R525", "R535", "R545"}


def test_release_for(releases: tuple[ngc.NgcRelease, ...]) -> None:
    assert ngc.release_for(releases, "24.08-py3") is not None
    assert ngc.release_for(releases, "19.01") is None


# --- version comparison ------------------------------------------------------------------


def test_version_key_is_numeric_per_part() -> None:
    assert ngc.version_key("535.104.05") > ngc.version_key("535.86.10")
    assert ngc.version_key("560.35.03") >= ngc.version_key("560")
    with pytest.raises(ValueError):
        ngc.version_key("560.x")


# --- compat ------------------------------------------------------------------------------


def test_compatible_native(r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]) -> None:
    c = ngc.compat(r2408, "560.35.03", "consumer", releases)
    assert c.verdict == "compatible"
    assert c.needed_driver == "560"
    assert c.newest_runnable is not None


def test_h100_on_r535_is_forward_compat(r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]) -> None:
    klass = ngc.gpu_class("NVIDIA H100 80GB HBM3")
    c = ngc.compat(r2408, "535.161.08", klass, releases)
    assert c.verdict == "forward_compat"
    assert "forward-compatibility" in c.message and "data-centre" in c.message


def test_rtx4090_on_535_runs_only_through_minor_version_compat(
    r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]
) -> None:
    # forward compatibility is refused on GeForce (804), so NGC's entrypoint starts on the host's
    # 535 driver: CUDA 12.6 on a CUDA 12 driver >= 525.60.13 is minor version compatibility
    klass = ngc.gpu_class("NVIDIA GeForce RTX 4090", "GeForce")
    assert klass == "consumer"
    c = ngc.compat(r2408, "535.86.05", klass, releases)
    assert c.verdict == "minor_version_compat"
    assert "804" in c.message and "GeForce" in c.message
    # newest release whose native requirement 535.86.05 meets
    expected = max(
        (r for r in releases if ngc.runs_natively(r, "535.86.05")), key=lambda r: ngc.version_key(r.release)
    )
    assert c.newest_runnable == expected.release
    assert expected.release in c.message
    assert r2408.min_driver in c.message and c.needed_driver == r2408.min_driver


def test_a100_on_r510(r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]) -> None:
    c = ngc.compat(r2408, "510.47.03", ngc.gpu_class("NVIDIA A100-SXM4-40GB"), releases)
    r510_listed = any(fb.branch == "R510" for fb in r2408.forward_compat)
    assert c.verdict == ("forward_compat" if r510_listed else "incompatible")
    # an older release still lists R510, so something is runnable via forward compat
    older = [r for r in releases if any(fb.branch == "R510" for fb in r.forward_compat)]
    if older:
        assert c.newest_runnable == older[-1].release


def test_professional_card_is_only_a_warning(
    r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]
) -> None:
    klass = ngc.gpu_class("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX")
    assert klass == "professional"
    c = ngc.compat(r2408, "535.161.08", klass, releases)
    assert c.verdict == "forward_compat_unverified"
    # professional cards do not count towards newest_runnable via forward compat
    assert c.newest_runnable == ngc.newest_runnable(releases, "535.161.08", "consumer")


def test_below_forward_compat_min_is_incompatible(releases: tuple[ngc.NgcRelease, ...]) -> None:
    r = ngc.release_for(releases, "24.08")
    assert r is not None
    # below R535's forward-compatibility floor (535.86), but in the CUDA 12 family: minor version compat
    assert ngc.compat(r, "535.54.03", "datacenter", releases).verdict == "minor_version_compat"
    assert ngc.compat(r, "515.105.01", "datacenter", releases).verdict == "incompatible"


@pytest.mark.parametrize("driver", ["550.54.15", "550.127.08"])
def test_branch_newer_than_listed_is_a_warning_not_a_fail(
    r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...], driver: str
) -> None:
    # 24.08 needs 560 natively and lists forward-compat branches up to R545: R550 is newer than
    # every listed branch, so it must not be judged worse than 545.23 (which passes)
    assert ngc.compat(r2408, "545.23.08", "datacenter", releases).verdict == "forward_compat"
    c = ngc.compat(r2408, driver, "datacenter", releases)
    assert c.verdict == "forward_compat_unverified"
    assert "unverified" in c.message and "560" in c.message
    # newest_runnable is not worse than for an older, listed branch
    assert c.newest_runnable == ngc.newest_runnable(releases, "545.23.08", "datacenter")
    # GeForce still cannot use forward compatibility at all: only minor version compatibility
    assert ngc.compat(r2408, driver, "consumer", releases).verdict == "minor_version_compat"


@pytest.mark.parametrize("driver", ["550.54.15", "560.35.03", "570.86.15"])
def test_2504_newer_branches_warn(releases: tuple[ngc.NgcRelease, ...], driver: str) -> None:
    r = ngc.release_for(releases, "25.04")
    assert r is not None
    assert ngc.compat(r, driver, "datacenter", releases).verdict == "forward_compat_unverified"
    assert ngc.compat(r, "575.51.03", "datacenter", releases).verdict == "compatible"


def test_unlisted_branch_between_listed_ones_gets_no_forward_compat(
    r2408: ngc.NgcRelease, releases: tuple[ngc.NgcRelease, ...]
) -> None:
    # R530 sits between listed R525 and R535, and the CUDA 12.6 notes name it among the branches
    # to upgrade from ("users should upgrade from all ... R530 ... drivers"): a fail, not the
    # minor-version-compatibility warning it got while only the accepted list was recorded
    c = ngc.compat(r2408, "530.30.02", "datacenter", releases)
    assert c.verdict == "must_upgrade" and "R530" in c.message
    # R550 is on neither list: newer than every listed branch, still a warning
    assert ngc.compat(r2408, "550.54.15", "datacenter", releases).verdict == "forward_compat_unverified"


def test_compat_defaults_to_packaged_table(r2408: ngc.NgcRelease) -> None:
    assert ngc.compat(r2408, "570.158.01", "datacenter").verdict == "compatible"


# --- parse_image -------------------------------------------------------------------------


MIRRORS = ("https://mirror.example.cn/", "registry.local:5000")


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/pytorch:24.08-py3", ("24.08", "py3")),
        ("NVCR.IO/nvidia/pytorch:24.08-py3 ", ("24.08", "py3")),
        ("mirror.example.cn/nvidia/pytorch:24.08-py3", ("24.08", "py3")),
        ("registry.local:5000/nvidia/pytorch:23.11-py3-igpu", ("23.11", "py3-igpu")),
        # a tag pinned with a digest: the tag names the release
        ("nvcr.io/nvidia/pytorch:24.08-py3@sha256:" + "a" * 64, ("24.08", "py3")),
        ("nvcr.io/nvidia/pytorch@sha256:" + "b" * 64, (None, None)),
        ("nvcr.io/nvidia/pytorch:latest", (None, None)),
        ("nvcr.io/nvidia/pytorch", (None, None)),
        ("nvcr.io/nvidia/pytorch:24.08", (None, None)),
        ("nvcr.io/nvidia/pytorch:24.08-py2", (None, None)),
        ("nvcr.io/nvidia/pytorch:24.13-py3", (None, None)),
        ("nvcr.io/nvidia/pytorch:99.99-py3", (None, None)),
        ("nvcr.io/nvidia/pytorch:24.8-py3", (None, None)),
        # not NGC: Docker Hub, someone else's registry, an unconfigured host
        ("nvidia/pytorch:24.08-py3", (None, None)),
        ("ghcr.io/x/nvidia/pytorch:24.08-py3", (None, None)),
        ("other.example.com/nvidia/pytorch:24.08-py3", (None, None)),
        ("nvcr.io/nvidia/tensorflow:24.08-tf2-py3", (None, None)),
        ("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime", (None, None)),
        ("", (None, None)),
    ],
)
def test_parse_image(image: str, expected: tuple[str | None, str | None]) -> None:
    assert ngc.parse_image(image, MIRRORS) == expected


def test_mirror_counts_only_when_configured() -> None:
    assert ngc.parse_image("mirror.example.cn/nvidia/pytorch:24.08-py3") == (None, None)
    info = ngc.read_image("mirror.example.cn/nvidia/pytorch:24.08-py3")
    assert not info.is_ngc and "nvcr.io/nvidia/pytorch" in (info.problem or "")


@pytest.mark.parametrize(
    ("image", "fragment"),
    [
        ("nvcr.io/nvidia/pytorch:24.13-py3", "not a valid NGC tag"),
        ("nvcr.io/nvidia/pytorch:99.99-py3", "not a valid NGC tag"),
        ("nvcr.io/nvidia/pytorch:24.08-py2", "not an NGC PyTorch tag"),
        ("ghcr.io/x/nvidia/pytorch:24.08-py3", "is not nvcr.io/nvidia/pytorch"),
        ("nvcr.io/nvidia/pytorch@sha256:" + "b" * 64, "pinned by digest only"),
    ],
)
def test_read_image_says_why(image: str, fragment: str) -> None:
    info = ngc.read_image(image)
    assert info.release is None and fragment in (info.problem or "")


def test_igpu_variant_is_flagged() -> None:
    info = ngc.read_image("nvcr.io/nvidia/pytorch:24.08-py3-igpu")
    assert info.igpu and info.release == "24.08" and info.problem is None
    assert not ngc.read_image("nvcr.io/nvidia/pytorch:24.08-py3").igpu


# --- gpu_class ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "brand", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", "NVIDIA", "datacenter"),
        ("NVIDIA H100 80GB HBM3", None, "datacenter"),
        ("NVIDIA H200", None, "datacenter"),
        ("NVIDIA L40S", None, "datacenter"),
        ("NVIDIA A10", None, "datacenter"),
        ("Tesla T4", "Tesla", "datacenter"),
        ("Tesla P100-PCIE-16GB", None, "datacenter"),
        ("Tesla V100-SXM2-32GB", None, "datacenter"),
        ("NVIDIA GeForce RTX 4090", "GeForce", "consumer"),
        ("NVIDIA GeForce RTX 3090", None, "consumer"),
        ("NVIDIA RTX 6000 Ada Generation", None, "professional"),
        ("NVIDIA RTX 6000 Ada Gene...", None, "professional"),
        ("NVIDIA RTX 4000 SFF Ada Generation", "NVIDIA RTX", "professional"),
        ("Quadro RTX 8000", "Quadro", "professional"),
        ("NVIDIA RTX A6000", None, "professional"),
        ("Some Other Accelerator", None, "unknown"),
    ],
)
def test_gpu_class(name: str, brand: str | None, expected: str) -> None:
    assert ngc.gpu_class(name, brand) == expected


_NAME_PATTERNS = (
    re.compile(r"<product_name>([^<]+)</product_name>"),
    re.compile(r"^\s*Product Name\s*:\s*(.+?)\s*$", re.M),
    re.compile(r"^\|\s+\d+\s+((?:NVIDIA|Tesla|Quadro)\b.*?)\s{2,}(?:On|Off)\b", re.M),
    re.compile(r"^(?:[^,\n]*,\s*)?((?:NVIDIA|Tesla|Quadro) [^,\n]+?)\s*,", re.M),
)
_BRAND_RE = re.compile(r"<product_brand>([^<]+)</product_brand>")


def _fixture_gpus() -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    for path in sorted(FIXTURES.glob("nvidia-smi*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        brand_m = _BRAND_RE.search(text)
        for pat in _NAME_PATTERNS:
            for m in pat.finditer(text):
                out.append((path.name, m.group(1).strip(), brand_m.group(1) if brand_m else None))
    return sorted(set(out))


def _expected_class(name: str) -> str:
    n = name.lower()
    if "geforce" in n or "titan" in n:  # NVIDIA TITAN V / RTX: consumer cards without GeForce
        return "consumer"
    if "ada gen" in n or re.search(r"rtx a\d", n) or "quadro" in n or "rtx pro" in n:
        return "professional"
    if "gb10" in n:  # DGX Spark (real/nvidia-smi__gb10__*): a class the table does not claim
        return "unknown"
    if n == "nvidia rtxa6000-24q":  # a vGPU profile's name, the model without its space: unknown
        return "unknown"
    if n == "nvidia rtx virtual workstation":  # a vGPU licence's product name (-q), not a GPU's
        return "unknown"
    if n == "nvidia vgpu-48gb":  # AutoDL's renamed share (round 37): no class claimed
        return "unknown"
    if n == "nvidia dgx display":  # a DGX Station's display adapter (round 35): no class claimed
        return "unknown"
    return "datacenter"


def test_gpu_class_over_real_fixtures() -> None:
    gpus = _fixture_gpus()
    names = {n for _, n, _ in gpus}
    # the fixture set covers all three classes
    assert any("GeForce" in n for n in names)
    assert any("Ada Gen" in n for n in names)
    assert any("H100" in n for n in names) and any("Tesla" in n for n in names)
    for fname, name, brand in gpus:
        # the driver's placeholder name "Graphics Device" says nothing: its brand tells the class
        expected = "consumer" if name == "Graphics Device" and brand == "GeForce" else _expected_class(name)
        assert ngc.gpu_class(name, brand) == expected, (fname, name, brand)


# --- malformed data ----------------------------------------------------------------------

_GOOD_ROW = """- release: "24.08"
  cuda: "12.6"
  pytorch: "2.5.0a0+872d972e41"
  min_driver: "560"
  forward_compat:
    - {branch: "R535", min: "535.86"}
  source: "https://docs.nvidia.com/x.html (Driver Requirements)"
"""


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (_GOOD_ROW + _GOOD_ROW.replace("24.08", "24.10").replace('"560"', '"56x"'), "'24.10'"),
        (_GOOD_ROW.replace('"24.08"', "24.10"), "row 0"),
        (_GOOD_ROW.replace("https://docs.nvidia.com/x.html", "see notes"), "'24.08'"),
        (_GOOD_ROW.replace('"R535", min: "535.86"', '"R535", min: "525.85"'), "'24.08'"),
        (_GOOD_ROW + _GOOD_ROW, "duplicate"),
        (_GOOD_ROW.replace('  cuda: "12.6"\n', ""), "'cuda'"),
    ],
)
def test_malformed_file_names_the_row(tmp_path: Path, body: str, fragment: str) -> None:
    p = tmp_path / "bad.yml"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(fragment)):
        ngc.load_releases(p)


def test_good_tmp_file_loads(tmp_path: Path) -> None:
    p = tmp_path / "good.yml"
    p.write_text(_GOOD_ROW, encoding="utf-8")
    (r,) = ngc.load_releases(p)
    assert r.forward_compat == (ngc.ForwardBranch("R535", "535.86"),)


def test_not_a_list(tmp_path: Path) -> None:
    p = tmp_path / "bad.yml"
    p.write_text("release: 24.08\n", encoding="utf-8")
    with pytest.raises(ValueError, match="list"):
        ngc.load_releases(p)


# --- driver_compat over the image's tag ----------------------------------------------------


def _a100_facts() -> object:
    # a real `nvidia-smi -q -x` of an A100 box on driver 535.54.03 (runs 23.10 natively)
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput

    xml = (FIXTURES / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml").read_text()
    return parse_facts({"nvidia_smi": ProbeOutput(xml, "", 0)})


@pytest.mark.parametrize(
    ("image", "verdict", "fragment"),
    [
        ("nvcr.io/nvidia/pytorch:24.08-py3-igpu", "fail", "not for discrete GPUs"),
        ("nvcr.io/nvidia/pytorch:24.09-py3", "warn", "24.09 is not in gpuonboard's table"),
        ("nvcr.io/nvidia/pytorch:24.13-py3", "warn", "not a valid NGC tag"),
        ("nvcr.io/nvidia/pytorch:24.08-py2", "warn", "not an NGC PyTorch tag"),
        ("ghcr.io/x/nvidia/pytorch:24.08-py3", "warn", "is not nvcr.io/nvidia/pytorch"),
        ("nvcr.io/nvidia/pytorch:23.10-py3@sha256:" + "a" * 64, "pass", ">= 535 for 23.10"),
        ("mirror.example.cn/nvidia/pytorch:23.10-py3", "pass", ">= 535 for 23.10"),
    ],
)
def test_driver_compat_judges_the_tag(image: str, verdict: str, fragment: str) -> None:
    from gpuonboard.steps.checks import driver_compat

    f = _a100_facts()
    mirrors = ["https://mirror.example.cn/"]
    check = driver_compat.evaluate(f, image, ngc.load_releases(), mirrors)[0]
    assert check.verdict == verdict, check
    assert fragment in check.detail + check.actual + check.expected, check
    assert "pin one of" not in check.detail or verdict == "pass"


def test_driver_compat_knows_every_mirror_of_a_list() -> None:
    """`registry_mirror` as a list (the container step tries each): an image named under any of
    them is the NGC image, judged as such."""
    from types import SimpleNamespace

    from gpuonboard.steps.checks.driver_compat import _mirrors

    host = SimpleNamespace(vars={"registry_mirror": ["https://a.example.cn/", "b.example.cn"]}, vendor=None)
    assert _mirrors(SimpleNamespace(host=host)) == ["https://a.example.cn/", "b.example.cn"]  # type: ignore[arg-type]
    host = SimpleNamespace(
        vars={"registry_mirror": "a.example.cn"}, vendor=SimpleNamespace(registry_mirror="v.cn")
    )
    assert _mirrors(SimpleNamespace(host=host)) == ["a.example.cn", "v.cn"]  # type: ignore[arg-type]
