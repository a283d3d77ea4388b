"""The container against the GPU's architecture family, and releases the table reads from
older ones (truth sweep, round 18), judged on real captures (tests/fixtures/real)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.steps.checks import driver_compat, gpu_family, ngc

FIXTURES = Path(__file__).parents[3] / "fixtures"
CAPTURES = sorted(
    f"{p.parent.name}/{p.name}"
    for folder in ("real", "public")
    for p in (FIXTURES / folder).glob("nvidia-smi*")
    if p.suffix in (".txt", ".xml", ".csv") and "__" in p.name
)


def facts_of(name: str) -> Facts | None:
    try:
        facts = parse_facts(offline.load_outputs([str(FIXTURES / name)]))
    except Exception:  # (a capture the offline judge refuses as a whole)
        return None
    return facts if facts.gpu is not None and facts.gpu.gpus and facts.gpu.driver_version else None


def ngc_check(facts: Facts, tag: str) -> driver_compat.Check:
    return driver_compat.evaluate(facts, f"nvcr.io/nvidia/pytorch:{tag}-py3", ngc.load_releases())[0]


def test_a_names_family_is_the_one_nvidia_smi_says() -> None:
    """Every real capture that prints a Product Architecture: the family its GPU's name gives
    (data/gpu_architectures.yml, read where the box does not say it) is the same, or unknown."""
    said = 0
    for name in CAPTURES:
        facts = facts_of(name)
        for gpu in facts.gpu.gpus if facts and facts.gpu else []:
            if gpu.product_architecture:
                by_name = gpu_family.family_of(dataclasses.replace(gpu, product_architecture=None))
                assert by_name in (None, gpu.product_architecture), (name, gpu.name)
                said += by_name is not None
    assert said >= 10


def families_of(name: str) -> set[str | None]:
    facts = facts_of(name)
    return {gpu_family.family_of(g) for g in facts.gpu.gpus} if facts and facts.gpu else set()


@pytest.mark.parametrize("name", CAPTURES)
def test_a_gpu_family_the_release_dropped_fails_whatever_the_driver(name: str) -> None:
    """NGC 25.01 and later support compute capability 7.5 and later (Turing ... Blackwell): a V100,
    a TITAN V, a P100 or a K20m passed `ngc_driver` for 25.04 where the driver was new enough (its
    PyTorch has no kernels for them). Pascal/Volta GPUs were supported by 24.12."""
    facts = facts_of(name)
    old = families_of(name) & {"Kepler", "Maxwell", "Pascal", "Volta"}
    if facts is None or not old:
        pytest.skip("no GPU older than Turing")
    check = ngc_check(facts, "25.04")
    assert check.verdict == "fail", check
    assert "GPU, which 25.04 does not support" in check.actual
    if {"Pascal", "Volta"} >= old:  # (older families: no release read lists them)
        assert "use NGC PyTorch 24.12 or older" in check.detail
        assert "GPU, which" not in ngc_check(facts, "24.12").actual
    else:
        assert "use an older NGC PyTorch release" in check.detail


@pytest.mark.parametrize("name", CAPTURES)
def test_a_blackwell_gpu_in_a_release_before_its_support_warns(name: str) -> None:
    """25.01 is the first release whose notes name Blackwell: a B200 or an RTX PRO 6000 Blackwell
    with 24.08 (the default image) or 24.12 passed; it warns, naming 25.01."""
    facts = facts_of(name)
    if (
        facts is None
        or "Blackwell" not in families_of(name)
        or driver_compat.is_integrated(facts.gpu.gpus[0].name if facts.gpu else "")
    ):
        pytest.skip("no discrete Blackwell GPU")
    for tag in ("24.08", "24.12"):
        check = ngc_check(facts, tag)
        assert check.verdict in ("warn", "fail"), check
        assert "is a Blackwell GPU, newer than" in check.actual
        assert "NGC PyTorch 25.01 or later" in check.detail
    assert "Blackwell GPU" not in ngc_check(facts, "25.04").actual


@pytest.mark.parametrize("name", CAPTURES)
def test_families_every_release_supports_are_not_named(name: str) -> None:
    """Turing to Hopper GPUs run every release read: no family sentence for them."""
    facts = facts_of(name)
    if (
        facts is None
        or not families_of(name)
        or not families_of(name) <= {"Turing", "Ampere", "Ada Lovelace", "Hopper"}
    ):
        pytest.skip("not only Turing to Hopper GPUs")
    for tag in ("24.08", "24.12", "25.04"):
        assert " GPU, " not in ngc_check(facts, tag).actual


def test_a_branch_an_older_release_said_to_upgrade_from_is_refused_by_a_newer_one() -> None:
    """R555 (a new-feature branch, never forward-compatible) failed 24.12 with NVIDIA's sentence
    but only warned for 25.04, "newer than every forward-compatible branch": the sentence of the
    nearest older notes read is carried, saying it was not read for 25.04."""
    facts = facts_of("real/nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt")
    assert facts is not None
    check = ngc_check(facts, "25.04")
    assert check.verdict == "fail", check
    assert check.actual.endswith("must upgrade")
    assert "not read on the page of this release itself" in check.detail


def test_a_tag_newer_than_the_table_says_the_driver_it_needs_at_least() -> None:
    """A tag newer than every row (26.11) is unknown, but needs at least the newest row's driver
    natively: a 535 box is told so; a V100 fails it (support is cut from the oldest end)."""
    facts = facts_of(
        "real/nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt"
    )
    assert facts is not None
    check = ngc_check(facts, "26.11")
    assert check.verdict == "fail", check
    newest = ngc.load_releases()[-1]
    assert f"It needs at least driver {newest.min_driver} natively, as {newest.release} does" in check.detail
    assert "Volta GPU, which 26.11 does not support" in check.actual


def test_a_tag_in_a_gap_takes_the_nearest_older_rows_families() -> None:
    """25.02 (not in the table, between 25.01 and 25.04, both without Volta) only warned
    "unknown" for a V100 where 26.11 failed it: a month in a gap is read as the nearest older row."""
    facts = facts_of("public/nvidia-smi__tesla-v100-sxm2__1gpu__driver470.256.02__aws-p3.txt")
    assert facts is not None
    check = ngc_check(facts, "25.02")
    assert check.verdict == "fail", check
    assert "Volta GPU, which 25.02 does not support" in check.actual
    assert "as NVIDIA's notes for 25.01 say; not read for 25.02" in check.detail


def test_a_mixed_box_is_judged_on_the_gpu_class_it_suits_least_whatever_the_listing_order() -> None:
    """A real homelab box of a GeForce RTX 3090 and two Tesla V100s (driver 580): the container's
    compatibility was judged on the first GPU listed alone, so the same box listed V100-first was
    "forward compat on datacenter GPU" where the GeForce, which has no forward-compatibility
    package, decides. Every release of the table: the same verdict and words in either order."""
    facts = facts_of("public/nvidia-smi__rtx3090-2xv100-sxm2__driver580.95.05__homelab.txt")
    assert facts is not None and facts.gpu is not None and len(facts.gpu.gpus) == 3
    reordered = dataclasses.replace(
        facts, gpu=dataclasses.replace(facts.gpu, gpus=list(reversed(facts.gpu.gpus)))
    )
    for release in ngc.load_releases():
        listed, turned = ngc_check(facts, release.release), ngc_check(reordered, release.release)
        assert (listed.verdict, listed.actual) == (turned.verdict, turned.actual), release.release
    check = ngc_check(reordered, "25.12")
    assert "on consumer GPU (NVIDIA GeForce RTX 3090)" in check.actual


@pytest.mark.parametrize(
    ("tag", "verdict"),
    [
        ("25.01", "forward_compat"),
        ("25.03", "forward_compat_unverified"),
        ("25.04", "forward_compat"),
        ("25.05", "forward_compat_unverified"),
    ],
)
def test_a_branch_on_both_lists_is_not_refused_where_the_forward_branches_were_not_read(
    tag: str, verdict: str
) -> None:
    """R545 from 545.23 up is forward-compatible in the CUDA 12.6-12.8 notes, which also list R545
    among the branches to upgrade from (the more specific sentence wins). The rows whose
    forward-compatible branches were not read (25.03, 25.05 ...) carried the upgrade list alone,
    so an H100 on 545.23.08 failed `must_upgrade` there while 25.01 and 25.04 either side of
    25.03 accepted it: unknown there (forward_compat_unverified), never refused."""
    release = ngc.release_for(ngc.load_releases(), tag)
    assert release is not None
    assert ngc.compat(release, "545.23.08", "datacenter").verdict == verdict
    assert ngc.compat(release, "555.42.06", "datacenter").verdict == "must_upgrade"  # (on one list only)
