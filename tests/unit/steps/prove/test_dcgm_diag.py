"""`dcgm_diag` over a dcgmi output that is not whole: a DCGM document cut short (the channel
closed, a pipe that ended) or a run its timeout stopped verified nothing and says so
(`unverified`, an incomplete probe), instead of warning "could not read dcgmi output" with the
advice to start DCGM's host engine, which was running. Output that holds no DCGM document (no
host engine) still warns with that advice."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts import dcgm
from gpuonboard.steps.prove.dcgm_diag import dcgm_checks

PUBLIC = Path(__file__).resolve().parents[3] / "fixtures" / "public"
ALL_PASS = PUBLIC / "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt"


def test_a_dcgm_document_cut_short_is_an_incomplete_probe() -> None:
    """The real DCGM 3.1.0 8-GPU all-pass `dcgmi diag -j` cut in-test to its first half."""
    text = ALL_PASS.read_text()
    (check,) = dcgm_checks(dcgm.parse(text[: len(text) // 2]), 1, listed=8)
    assert check.verdict == "unverified", check
    assert check.actual.startswith("incomplete probe: not JSON (")
    assert "nothing was verified (no claim about the GPUs)" in check.detail
    assert "host engine" not in check.detail
    # the whole document is read as before
    whole = dcgm_checks(dcgm.parse(text), 1, listed=8)
    assert whole[0].verdict == "pass" and all(c.verdict == "pass" for c in whole)


def test_a_run_stopped_by_its_timeout_is_an_incomplete_probe() -> None:
    (check,) = dcgm_checks(None, 3, "dcgmi diag -r 3 did not finish within 3600 s", incomplete=True)
    assert check.verdict == "unverified"
    assert check.actual == "incomplete probe: dcgmi diag -r 3 did not finish within 3600 s"


def test_no_dcgm_document_still_warns_with_the_host_engine_advice() -> None:
    (check,) = dcgm_checks(dcgm.parse("Error: unable to connect to host engine\n"), 1)
    assert check.verdict == "warn" and check.actual.startswith("could not read dcgmi output: no JSON")
    assert "systemctl start nvidia-dcgm" in check.detail
