"""driver_compat: CUDA minor version compatibility, and the advice when no driver answers.

What these tests rely on (NVIDIA's own words, see also src/gpuonboard/data/cuda_minor_compat.yml):

* CUDA Compatibility, "Minor Version Compatibility" (docs.nvidia.com/deploy/cuda-compatibility/
  minor-version-compatibility.html): an application built with any CUDA 12.x toolkit runs, with a
  limited feature set, on a driver >= 525 (CUDA Toolkit release notes: >= 525.60.13); 11.x on
  >= 450.80.02; 13.x on >= 580. No GPU-class restriction, unlike forward compatibility, which
  "is applicable only for systems with NVIDIA Data Center GPUs, select NGC Server Ready SKUs of
  RTX cards, Jetson boards" (same guide, "Forward Compatibility").
* The NGC containers' entrypoint (/etc/shinit_v2, nvidia_entrypoint.sh) puts the cuda-compat
  libraries on the library path only when its check answers "CUDA Driver OK"; otherwise it prints
  "ERROR: This container was built for NVIDIA Driver Release NNN or later, but version X was
  detected and compatibility mode is UNAVAILABLE" and starts the command anyway, on the host's
  driver; and the images declare NVIDIA_REQUIRE_CUDA=cuda>=9.0, so the container toolkit does not
  refuse them either. A 24.08 (CUDA 12.6) container on a GeForce RTX 4090 with driver 535 therefore
  runs (minor version compatibility): a warning, not the NO-GO it used to be.
* PyTorch 24.08 release notes, Driver Requirements: "requires NVIDIA Driver release 560 or later";
  forward compatibility on data-centre GPUs from 470.57 (R470), 525.85 (R525), 535.86 (R535),
  545.23 (R545) -- the packaged table's row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import driver_compat, ngc

from ...facts.smi_failures import ADVICE, MISMATCH

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
IMAGE_2408 = "nvcr.io/nvidia/pytorch:24.08-py3"


def _facts(fixture: str) -> Facts:
    return parse_facts({"nvidia_smi": ProbeOutput((REAL / fixture).read_text(encoding="utf-8"), "", 0)})


def _check(fixture: str, image: str = IMAGE_2408) -> driver_compat.Check:
    return driver_compat.evaluate(_facts(fixture), image, ngc.load_releases())[0]


@pytest.mark.parametrize(
    ("fixture", "driver", "why"),
    [
        # GeForce: forward compatibility is refused (804), the host's 535 / 550 driver runs CUDA 12.6
        ("nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml", "535.86.05", "GeForce"),
        ("nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt", "550.127.05", "GeForce"),
        ("nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt", "535.161.07", "GeForce"),
        # data centre on R535 below 535.86 (forward compatibility's floor): still the CUDA 12 family
        ("nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml", "535.54.03", "535.86"),
    ],
)
def test_same_cuda_major_driver_runs_the_container_with_a_warning(
    fixture: str, driver: str, why: str
) -> None:
    check = _check(fixture)
    assert check.verdict == "warn", check
    assert check.actual.endswith(": minor version compat") and driver in check.actual
    assert "minor version compatibility" in check.detail and "525.60.13" in check.detail
    assert why in check.detail
    # what a fully supported setup needs is still said, and nothing claims the container fails
    assert "upgrade the driver to 560 or later" in check.detail
    assert "would fail" not in check.detail and "cannot initialise" not in check.detail


def test_geforce_message_names_the_newest_fully_supported_release() -> None:
    check = _check("nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml")
    # 23.10 is the newest release in the table whose native minimum (535) 535.86.05 meets
    assert "use NGC PyTorch 23.10 or older" in check.detail


@pytest.mark.parametrize(
    ("fixture", "driver"),
    [
        # below CUDA 12's minor-version floor and not on a forward-compatible branch of 24.08
        ("nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml", "515.105.01"),
        ("nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml", "510.47.03"),
    ],
)
def test_driver_below_the_cuda_major_floor_still_fails(fixture: str, driver: str) -> None:
    check = _check(fixture)
    assert check.verdict == "fail", check
    assert check.actual.endswith(": incompatible") and driver in check.actual
    assert "525.60.13" in check.detail and "cannot initialise" in check.detail


def test_forward_compat_and_native_verdicts_are_unchanged() -> None:
    assert _check("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").verdict == "pass"
    assert _check("nvidia-smi__h200__8gpu__driver570.158.01.txt").verdict == "pass"
    assert (
        _check(
            "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml", "nvcr.io/nvidia/pytorch:23.10-py3"
        ).verdict
        == "pass"
    )


def test_consumer_card_below_the_floor_is_incompatible() -> None:
    r = ngc.release_for(ngc.load_releases(), "24.08")
    assert r is not None
    c = ngc.compat(r, "470.256.02", "consumer")
    assert c.verdict == "incompatible"
    assert "GeForce" in c.message and "525.60.13" in c.message
    # no release in the table runs on R470 on a GeForce card; the advice must still read well
    assert c.newest_runnable is None
    assert "upgrade the driver to 560 or later" in c.message and ", or upgrade" not in c.message


def test_minor_version_compat_does_not_cross_a_cuda_major() -> None:
    """A CUDA 13 release on a CUDA 12 driver (575 < 580): minor version compatibility stops at the
    major, so only forward compatibility could help, and not on GeForce."""
    r13 = ngc.NgcRelease("25.08", "13.0.0", None, "580", (), "https://docs.nvidia.com/x")
    c = ngc.compat(r13, "575.57.08", "consumer", (r13,))
    assert c.verdict == "incompatible" and "13.x" in c.message and "580" in c.message
    r12 = ngc.NgcRelease("25.04", "12.9.0", None, "575", (), "https://docs.nvidia.com/x")
    assert ngc.compat(r12, "570.86.15", "consumer", (r12,)).verdict == "minor_version_compat"


def test_unrecognised_gpu_runs_through_minor_version_compat() -> None:
    r = ngc.release_for(ngc.load_releases(), "24.08")
    assert r is not None
    assert ngc.compat(r, "550.54.15", "unknown").verdict == "minor_version_compat"


def test_forward_compat_unverified_mentions_the_minor_version_fallback() -> None:
    r = ngc.release_for(ngc.load_releases(), "24.08")
    assert r is not None
    c = ngc.compat(r, "550.54.15", "datacenter")
    assert c.verdict == "forward_compat_unverified"
    assert "minor version compatibility" in c.message


# --- the packaged table of minor-version floors --------------------------------------------------


def test_packaged_minor_compat_floors() -> None:
    floors = ngc.load_minor_compat()
    assert floors == {11: "450.80.02", 12: "525.60.13", 13: "580"}
    # every release in the NGC table has a floor for its CUDA major
    for r in ngc.load_releases():
        assert ngc.minor_compat_floor(r) is not None, r.release


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        # unquoted, YAML reads 525.60 as the float 525.6
        ('- {cuda_major: 12, min_driver: 525.60, source: "https://x"}\n', "not a dotted version"),
        ('- {cuda_major: "12", min_driver: "525.60.13", source: "https://x"}\n', "not a whole number"),
        ('- {cuda_major: 12, min_driver: "525", source: "see notes"}\n', "does not start with a URL"),
        ('- {cuda_major: 12, min_driver: "525"}\n', "row 0"),
        (
            '- {cuda_major: 12, min_driver: "525", source: "https://x"}\n'
            '- {cuda_major: 12, min_driver: "530", source: "https://x"}\n',
            "listed twice",
        ),
        ("cuda_major: 12\n", "non-empty YAML list"),
    ],
)
def test_malformed_minor_compat_file_names_the_problem(tmp_path: Path, body: str, fragment: str) -> None:
    p = tmp_path / "floors.yml"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(ValueError, match=fragment):
        ngc.load_minor_compat(p)


# --- no driver answered: say which failure it is ---------------------------------------------------


def test_hung_nvidia_smi_is_not_told_to_install_a_driver() -> None:
    f = parse_facts({"nvidia_smi": ProbeOutput("", "", 124)})
    check = driver_compat.evaluate(f, IMAGE_2408, ngc.load_releases())[0]
    assert check.verdict == "fail"
    assert check.actual == "nvidia-smi did not answer (stopped)"
    assert "install the driver" not in check.detail and "hung" in check.detail


def test_driver_library_mismatch_is_named() -> None:
    f = parse_facts({"nvidia_smi": ProbeOutput(MISMATCH + "\n", "", 18)})
    check = driver_compat.evaluate(f, IMAGE_2408, ngc.load_releases())[0]
    assert (check.verdict, check.actual, check.detail) == (
        "fail",
        f"nvidia-smi failed ({MISMATCH})",
        ADVICE[MISMATCH],
    )
    assert "install the driver" not in check.detail


def test_missing_driver_still_says_install() -> None:
    f = parse_facts({"nvidia_smi": ProbeOutput("", "", 127)})
    check = driver_compat.evaluate(f, IMAGE_2408, ngc.load_releases())[0]
    assert (check.verdict, check.actual) == ("fail", "no NVIDIA driver answered")
    assert "install the NVIDIA driver" in check.detail


# NGC driver policy: the branches NVIDIA's notes say to upgrade from are a fail, quoted.

# a real 4x A100-SXM4-80GB box on driver 555.42.02 (an R555 driver, as the 8x H800 was)
A100_R555 = REAL / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"
NOTE_126 = (
    "users should upgrade from all R418, R440, R450, R460, R510, R520, R530, R545 and R555 drivers,"
    " which are not forward-compatible with CUDA 12.6"
)


@pytest.fixture(scope="module")
def releases() -> tuple[ngc.NgcRelease, ...]:
    return ngc.load_releases()


def test_data_file_records_both_lists_with_sources(releases: tuple[ngc.NgcRelease, ...]) -> None:
    by = {r.release: r for r in releases}
    for rel in ("24.10", "24.12"):
        r = by[rel]
        assert r.must_upgrade == ("R418", "R440", "R450", "R460", "R510", "R520", "R530", "R545", "R555")
        assert NOTE_126 in (r.must_upgrade_note or "") and r.must_upgrade_verified
        assert (r.must_upgrade_source or "").startswith("https://github.com/triton-inference-server/server/")
    assert by["24.04"].must_upgrade == ("R418", "R440", "R450", "R460", "R510", "R520")
    assert by["23.08"].must_upgrade == ("R418", "R440", "R460", "R520") and by["23.08"].must_upgrade_verified
    # 24.08's sentence is carried from 24.10 (same CUDA 12.6 base): recorded, but not verified
    assert "R555" in by["24.08"].must_upgrade and not by["24.08"].must_upgrade_verified


def test_real_a100_on_r555_fails_2408_quoting_nvidia() -> None:
    facts = parse_facts({"nvidia_smi": ProbeOutput(A100_R555.read_text(), "", 0)})
    check = driver_compat.evaluate(facts, "nvcr.io/nvidia/pytorch:24.08-py3", ngc.load_releases())[0]
    assert check.verdict == "fail"
    assert check.actual == "555.42.02 on datacenter GPU (NVIDIA A100-SXM4-80GB): must upgrade"
    assert NOTE_126 in check.detail and "560 or later" in check.detail


@pytest.mark.parametrize("rel", ["24.08", "24.10", "24.12"])
@pytest.mark.parametrize("klass", ["datacenter", "professional", "vgpu", "unknown"])
def test_r555_below_560_must_upgrade_on_any_gpu_but_geforce(
    releases: tuple[ngc.NgcRelease, ...], rel: str, klass: str
) -> None:
    r = ngc.release_for(releases, rel)
    assert r is not None
    c = ngc.compat(r, "555.42.06", klass, releases)
    assert c.verdict == "must_upgrade" and "R555" in c.message and "upgrade" in c.message


def test_r545_from_its_forward_compat_min_is_accepted_below_it_must_upgrade(
    releases: tuple[ngc.NgcRelease, ...],
) -> None:
    r = ngc.release_for(releases, "24.10")
    assert r is not None
    # "you can use ... 545.23 (or later R545)" is the more specific sentence: accepted from there
    assert ngc.compat(r, "545.23.08", "datacenter", releases).verdict == "forward_compat"
    assert ngc.compat(r, "545.01", "datacenter", releases).verdict == "must_upgrade"


def test_below_the_minor_floor_stays_incompatible(releases: tuple[ngc.NgcRelease, ...]) -> None:
    r = ngc.release_for(releases, "24.08")
    assert r is not None
    # R510 is on the upgrade list too, but below 525.60.13 CUDA 12 cannot start at all
    assert ngc.compat(r, "510.47.03", "datacenter", releases).verdict == "incompatible"


def test_branch_on_neither_list_keeps_its_verdicts(releases: tuple[ngc.NgcRelease, ...]) -> None:
    r = ngc.release_for(releases, "24.08")
    assert r is not None
    assert ngc.compat(r, "550.127.08", "datacenter", releases).verdict == "forward_compat_unverified"
    assert ngc.compat(r, "535.161.08", "datacenter", releases).verdict == "forward_compat"
    assert ngc.compat(r, "560.35.03", "consumer", releases).verdict == "compatible"


def test_malformed_must_upgrade_is_refused(tmp_path: Path) -> None:
    row = """
- release: "24.08"
  cuda: "12.6"
  pytorch: null
  min_driver: "560"
  forward_compat:
    - {branch: "R535", min: "535.86"}
  source: "https://example.invalid/notes"
  must_upgrade: [R555, "555"]
  must_upgrade_note: "x"
  must_upgrade_source: "https://example.invalid/notes"
  must_upgrade_verified: false
"""
    p = tmp_path / "t.yml"
    p.write_text(row)
    with pytest.raises(ValueError, match="not like 'R555'"):
        ngc.load_releases(p)
    p.write_text(row.replace('[R555, "555"]', "[R555]").replace('  must_upgrade_note: "x"\n', ""))
    with pytest.raises(ValueError, match="must_upgrade_note"):
        ngc.load_releases(p)


# --- releases after 25.04 (NVIDIA's Triton compatibility matrix; see data/ngc_pytorch.yml) ----------


@pytest.mark.parametrize(
    ("release", "cuda", "min_driver"),
    [
        ("25.03", "12.8.1", "570"),
        ("25.05", "12.9.0", "575"),
        ("25.06", "12.9", "575"),
        ("25.08", "13.0", "580"),
        ("25.09", "13.0", "580"),
        ("25.10", "13.0.2", "580"),
        ("25.11", "13.0.2", "580"),
        ("25.12", "13.1.0", "590"),
        ("26.01", "13.1.1", "590"),
        ("26.03", "13.2.0", "595"),
        ("26.07", "13.3.0", "610"),
    ],
)
def test_releases_after_2504_are_in_the_table(release: str, cuda: str, min_driver: str) -> None:
    """The table stopped at 25.04: every later tag (CUDA 12.9, then 13.x) was "unknown". Each row
    now holds the CUDA NVIDIA's matrix gives its PyTorch build and that CUDA's driver branch; its
    forward-compatible branches were not read (absent, not an empty list)."""
    row = ngc.release_for(ngc.load_releases(), release)
    assert row is not None
    assert row.cuda.startswith(cuda) and row.min_driver == min_driver
    assert not row.forward_compat and not row.forward_compat_read


@pytest.mark.parametrize(
    ("fixture", "image", "verdict", "actual", "said"),
    [
        # a GeForce card on R575: CUDA 13 needs R580 (its minor-version floor), no forward compat
        (
            "nvidia-smi__geforce-rtx-4070-laptop__1gpu__driver575.64.03__spaces-collapsed.txt",
            "nvcr.io/nvidia/pytorch:25.10-py3",
            "fail",
            "incompatible",
            "below 580, the oldest driver of CUDA 13.x minor version compatibility",
        ),
        # a data-centre GPU on R575: the branches NVIDIA lists for 25.10 were not read: unverified
        (
            "nvidia-smi__h200__8gpu__driver575.57.08__load.txt",
            "nvcr.io/nvidia/pytorch:25.10-py3",
            "warn",
            "forward compat unverified",
            "are not in gpuonboard's table (its notes were not read for them)",
        ),
        # R555, a branch NVIDIA's notes say to upgrade from (carried from 25.01's), and below R580
        (
            "nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt",
            "nvcr.io/nvidia/pytorch:25.12-py3",
            "fail",
            "incompatible",
            "its branch R555 is one NVIDIA's notes say to upgrade from",
        ),
        # R580 on a 13.1 release: CUDA 13.x minor version compatibility on a GeForce card
        (
            "nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver595.58.03__dtd-v13.xml",
            "nvcr.io/nvidia/pytorch:26.07-py3",
            "warn",
            "minor version compat",
            "older than 610",
        ),
        (
            "nvidia-smi__h200__1gpu__driver580.159.04.txt",
            "nvcr.io/nvidia/pytorch:25.10-py3",
            "pass",
            "compatible",
            "meets NGC PyTorch 25.10's requirement (driver 580 or later)",
        ),
        (
            "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
            "nvcr.io/nvidia/pytorch:25.12-py3",
            "pass",
            "compatible",
            "meets NGC PyTorch 25.12's requirement (driver 590 or later)",
        ),
    ],
)
def test_newer_releases_are_judged_on_real_boxes(
    fixture: str, image: str, verdict: str, actual: str, said: str
) -> None:
    """These boxes got "unknown: 25.10 is not in the table" (a warn) whatever their driver; a
    CUDA 13 container on a GeForce R575 driver cannot initialise CUDA."""
    check = _check(fixture, image)
    assert check.verdict == verdict, check
    assert check.actual.endswith(actual), check.actual
    assert said in check.detail, check.detail


def test_a_row_without_forward_compat_is_not_read_not_none(tmp_path: Path) -> None:
    """`forward_compat` absent: the branches were not read, so a data-centre driver below the
    minimum is unverified (warn); `forward_compat: []` (NVIDIA lists none) still refuses it."""
    row = '- release: "25.10"\n  cuda: "13.0.2"\n  pytorch: null\n  min_driver: "580"\n'
    row += '  source: "https://docs.nvidia.com/x"\n'
    unread = tmp_path / "unread.yml"
    unread.write_text(row)
    none = tmp_path / "none.yml"
    none.write_text(row + "  forward_compat: []\n")
    (r_unread,), (r_none,) = ngc.load_releases(unread), ngc.load_releases(none)
    assert (r_unread.forward_compat_read, r_none.forward_compat_read) == (False, True)
    verdicts = {
        klass: (
            ngc.compat(r_unread, "570.158.01", klass).verdict,
            ngc.compat(r_none, "570.158.01", klass).verdict,
        )
        for klass in ("datacenter", "professional", "vgpu", "consumer", "unknown")
    }
    unverified = ("forward_compat_unverified", "incompatible")
    assert verdicts == {
        "datacenter": unverified,
        "professional": unverified,
        "vgpu": unverified,
        "consumer": ("incompatible", "incompatible"),
        "unknown": ("incompatible", "incompatible"),
    }


@pytest.mark.parametrize(
    "image", ["nvcr.io/nvidia/pytorch:25.09-py3", "nvcr.io/nvidia/pytorch:25.09-py3-igpu"]
)
def test_jetson_thor_is_not_judged_either_way(image: str) -> None:
    """A real Jetson Thor ("NVIDIA Thor", driver 580.00, CUDA 13.0, a PCI-style Bus-Id: not the
    Orin iGPU's nvgpu driver) failed every -py3 image, "use -py3-igpu", which no NVIDIA text read
    says (a Thor user's Dockerfile builds on nvcr.io/nvidia/pytorch:25.09-py3): neither is judged."""
    check = _check("nvidia-smi__thor__1gpu__driver580.00__spaces-collapsed.txt", image)
    assert check.verdict == "warn", check
    assert check.actual == f"{image.rsplit(':', 1)[1]} on Jetson Thor (NVIDIA Thor): not judged"
    assert "no NVIDIA text gpuonboard read says which NGC PyTorch image" in check.detail
    # the Orin iGPU keeps its verdicts: a -py3 image fails there
    orin = _check("nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt", image.replace("-igpu", ""))
    assert orin.verdict == "fail" and orin.detail.endswith("use nvcr.io/nvidia/pytorch:25.09-py3-igpu")


def test_a_gpu_nvidia_smi_cannot_read_is_no_unknown_model() -> None:
    """8 x A40 on 525.60.13, GPU 4's row all `ERR!`: the check said "525.60.13 on unknown GPU ():
    minor version compat" (a warning, forward compatibility "cannot be assumed for an unrecognised
    GPU") where the seven A40s it names are data-centre cards, judged as such."""
    check = _check("nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt")
    assert check.actual.startswith("525.60.13 on datacenter GPU (NVIDIA A40): "), check
    assert "unrecognised GPU" not in check.detail


def test_a_gpu_without_a_name_but_with_its_brand_is_judged_by_its_brand() -> None:
    """The real 8 x H100 `-q` with GPU 3's Product Name unread (`N/A`) and its Product Brand
    GeForce: the brand says its class, so it is judged as a consumer card (a CUDA 13 image
    cannot run on 535 there), not left out as a GPU nvidia-smi could not name."""
    text = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text()
    starts = [m.start() for m in re.finditer(r"(?m)^GPU [0-9A-Fa-f]{8}:", text)]
    block = re.sub(r"(?m)^(\s+Product Name\s*: ).*$", r"\g<1>N/A", text[starts[3] : starts[4]], count=1)
    block = re.sub(r"(?m)^(\s+Product Brand\s*: ).*$", r"\g<1>GeForce", block, count=1)
    facts = parse_facts({"nvidia_smi_q": ProbeOutput(text[: starts[3]] + block + text[starts[4] :], "", 0)})
    check = driver_compat.evaluate(facts, "nvcr.io/nvidia/pytorch:25.10-py3", ngc.load_releases())[0]
    assert check.verdict == "fail" and check.actual.startswith("535.161.08 on consumer GPU"), check


A16_VGPU_HOST = "nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt"
A100_VGPU_HOST = "nvidia-smi__a100-80gb-pcie__1gpu__driver550.90.05__cuda-na__vgpu-host__mig-section-cut.txt"
H200_XML = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"


def _no_cuda_facts(fixture: str) -> Facts:
    """The capture's facts; the real H200 `-q -x` (driver 580.159.04) with its
    `<cuda_version>13.0</cuda_version>` edited to `Not Found`, as `-q -x` prints it where no CUDA
    driver is found (facts/nvidia_smi/values.py)."""
    if fixture != H200_XML:
        return _facts(fixture)
    text = (REAL / fixture).read_text(encoding="utf-8")
    edited = text.replace("<cuda_version>13.0</cuda_version>", "<cuda_version>Not Found</cuda_version>")
    assert edited != text
    return parse_facts({"nvidia_smi": ProbeOutput(edited, "", 0)})


@pytest.mark.parametrize(
    ("fixture", "driver", "said", "releases"),
    [
        # a Nutanix AHV host's A16 (Host VGPU mode, `-q -i 0`): 24.08 passed as "forward compat"
        (A16_VGPU_HOST, "470.129.04", "Not Found", ("24.08", "24.04", "26.09")),
        # immich-app/immich#14808's vGPU host: A100 80GB PCIe on 550.90.05, `CUDA Version: N/A`;
        # 24.04 (550 or later) passed as "compatible", 24.08 warned "forward compat unverified"
        (A100_VGPU_HOST, "550.90.05", "N/A", ("24.04", "24.08", "23.10")),
        (H200_XML, "580.159.04", "Not Found", ("24.08", "25.10")),
    ],
)
def test_a_driver_with_no_cuda_runs_no_container(
    fixture: str, driver: str, said: str, releases: tuple[str, ...]
) -> None:
    """nvidia-smi found no CUDA driver (a vGPU host's driver, a container given no `compute`
    capability): no container's CUDA can start there, whatever its release, known or not. The
    check passed (or warned) on the driver's version alone, where nvidia_driver fails it."""
    facts = _no_cuda_facts(fixture)
    for release in releases:
        image = f"nvcr.io/nvidia/pytorch:{release}-py3"
        check = driver_compat.evaluate(facts, image, ngc.load_releases())[0]
        assert check.verdict == "fail", (release, check)
        assert check.actual == f"driver {driver} with no CUDA driver (nvidia-smi: CUDA Version {said})"
        assert check.detail.startswith("nvidia-smi found no CUDA driver where it ran")


def test_formats_that_disagree_on_cuda_leave_the_driver_unverified() -> None:
    """The real H200's `-q -x` (CUDA 13.0) beside its own table, read the same second, with the
    table's `CUDA Version: 13.0` edited to `N/A` (no CUDA driver): two answers about the driver's
    CUDA, so the check passed 24.08 on the driver version of one of them; neither is judged."""
    xml = (REAL / H200_XML).read_text(encoding="utf-8")
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text(encoding="utf-8")
    edited = table.replace("CUDA Version: 13.0     ", "CUDA Version: N/A      ")
    assert edited != table
    facts = parse_facts(
        {"nvidia_smi": ProbeOutput(xml, "", 0), "nvidia_smi_table": ProbeOutput(edited, "", 0)}
    )
    check = driver_compat.evaluate(facts, IMAGE_2408, ngc.load_releases())[0]
    assert check.verdict == "unverified", check
    assert check.actual.startswith("the nvidia-smi outputs disagree: CUDA 13.0 in -q -x, N/A in the table")


GEFORCE_R555 = "nvidia-smi__geforce-rtx-4060-ti__1gpu__driver555.42.02__ollama.txt"
GEFORCE_R550 = "nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt"


@pytest.mark.parametrize("release", ["24.08", "24.12", "25.01", "25.03", "25.04"])
def test_a_geforce_card_on_a_branch_to_upgrade_from_runs_as_an_older_one_does(release: str) -> None:
    """A real GeForce RTX 4060 Ti on 555.42.02 (CUDA 12.5) failed `must_upgrade` for 24.08 to
    25.04, quoting NVIDIA's "users should upgrade from all ... R555 drivers, which are not
    forward-compatible with CUDA 12.6", while a real RTX 4090 on the older 550.127.05 warned
    `minor version compat`. That sentence is about "the CUDA driver's compatibility package"
    (forward compatibility), which no GeForce card uses on any branch: both run the container
    through minor version compatibility, so both warn, saying so."""
    image = f"nvcr.io/nvidia/pytorch:{release}-py3"
    older = _check(GEFORCE_R550, image)
    newer = _check(GEFORCE_R555, image)
    assert older.verdict == newer.verdict == "warn", newer
    assert newer.actual == "555.42.02 on consumer GPU (NVIDIA GeForce RTX 4060 Ti): minor version compat"
    assert "forward compatibility does not work on GeForce cards" in newer.detail
    assert "minor version compatibility" in newer.detail and "not forward-compatible" not in newer.detail
