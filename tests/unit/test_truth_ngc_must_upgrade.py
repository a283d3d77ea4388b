"""NGC driver policy: the branches NVIDIA's notes say to upgrade from are a fail, quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import driver_compat, ngc

REAL = Path(__file__).parents[1] / "fixtures" / "real"
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
@pytest.mark.parametrize("klass", ["datacenter", "professional", "consumer"])
def test_r555_below_560_must_upgrade_on_any_gpu(
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
