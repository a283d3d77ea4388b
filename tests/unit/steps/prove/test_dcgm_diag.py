"""`dcgm_diag` over a dcgmi output that is not whole: a DCGM document cut short (the channel
closed, a pipe that ended) or a run its timeout stopped verified nothing and says so
(`unverified`, an incomplete probe), instead of warning "could not read dcgmi output" with the
advice to start DCGM's host engine, which was running. Output that holds no DCGM document (no
host engine) still warns with that advice."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuonboard.connection import LocalRunner
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import dcgm
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.prove.dcgm_diag import DCGM_PROBE, dcgm_checks, run_dcgm
from gpuonboard.testing import add_executable

PUBLIC = Path(__file__).resolve().parents[3] / "fixtures" / "public"
REAL = Path(__file__).parents[3] / "fixtures" / "real"
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


SOFTWARE_FAIL = PUBLIC / "dcgmi-diag-j__dcgm-4.5.2__gb10__level2__software-fail.json"
CUT_FAIL = [("dcgm_diag", "unverified"), ("dcgm_software", "fail")]


def test_a_fail_dcgm_printed_before_its_document_was_cut_still_fails() -> None:
    """The real DCGM 4.5.2 GB10 level-2 document whose software test Fails (persistence mode
    off), cut in-test 200 characters after its first "Fail" (inside that result's warning) and
    5 characters before its end: the Fail DCGM had printed still fails `dcgm_software`, naming
    the cut (with DCGM's message where it was read whole); the summary is an incomplete probe
    (`unverified`), the rest unread."""
    text = SOFTWARE_FAIL.read_text()
    for cut in (text.index('"Fail"') + 200, len(text) - 5):
        checks = dcgm_checks(dcgm.parse(text[:cut]), 2, listed=1)
        assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
        summary, software = checks
        assert summary.actual.startswith("incomplete probe: not JSON (cut short:"), summary.actual
        assert "cut short after it reported software Fail" in summary.detail
        said = ": Persistence Mode: Persistence mode for GPU 0 is disabled." if cut > len(text) // 2 else ""
        assert software.actual.startswith(f"Fail on GPU 0{said}")
        assert software.actual.endswith("(read before DCGM's document was cut short)")
    # the whole document fails the same rule
    whole = {c.name: c.verdict for c in dcgm_checks(dcgm.parse(text), 2, listed=1)}
    assert whole["dcgm_software"] == "fail"


def test_a_document_cut_before_any_fail_stays_unverified() -> None:
    """The same real document cut in-test 5 characters after its first "Fail" (inside the
    status string): no status was read whole, so no claim either way."""
    text = SOFTWARE_FAIL.read_text()
    (check,) = dcgm_checks(dcgm.parse(text[: text.index('"Fail"') + 5]), 2, listed=1)
    assert check.verdict == "unverified" and "nothing was verified" in check.detail


def test_a_whole_document_broken_mid_way_is_not_called_cut_short() -> None:
    """The same real document with a line `WARNING: x` put in-test after `"category" :
    "Hardware",`: it ends with its closing brace, so it is broken mid-way, not cut short; the
    software Fail before the break is still judged."""
    text = SOFTWARE_FAIL.read_text().replace('"Hardware",', '"Hardware",\nWARNING: x\n', 1)
    checks = dcgm_checks(dcgm.parse(text), 2, listed=1)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
    assert "broken mid-way, though it ends with its closing brace" in checks[0].actual
    assert "cut short" not in checks[0].actual + checks[0].detail + checks[1].actual


def test_a_raw_control_character_in_a_warning_does_not_drop_the_document() -> None:
    """The same real document with a raw tab (not `\\t`) put in-test inside its persistence
    warning: JSON forbids it, but the document is whole and is read in full."""
    text = SOFTWARE_FAIL.read_text().replace("as root.", "as root.\t(raw tab)", 1)
    checks = {c.name: c.verdict for c in dcgm_checks(dcgm.parse(text), 2, listed=1)}
    assert checks == {
        "dcgm_diag": "pass",
        "dcgm_software": "fail",
        "dcgm_memory": "pass",
        "dcgm_pcie": "pass",
    }


def test_a_timed_out_run_says_a_hang_can_be_a_gpu_fault() -> None:
    (check,) = dcgm_checks(None, 2, "dcgmi diag -r 2 did not finish within 900 s", incomplete=True)
    assert check.verdict == "unverified"
    assert "check `dmesg` for Xid errors or a hung GPU" in check.detail


def test_run_dcgm_keeps_the_fail_read_before_a_cut_when_dcgmi_also_wrote_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `dcgmi` on the PATH printing the real DCGM 4.5.2 document cut 5 characters before its
    end (edited) and a line on stderr: the stderr line joins the error, and the software Fail
    read before the cut still fails (the error's rewrite dropped what was read)."""
    doc = tmp_path / "doc.json"
    text = SOFTWARE_FAIL.read_text()
    doc.write_text(text[: len(text) - 5])
    bin_dir = tmp_path / "bin"
    add_executable(bin_dir, "dcgmi", f"#!/bin/sh\ncat '{doc}'\necho 'Error: pipe closed' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    host = Host("box", "127.0.0.1", connection="local", vars={"remote_tmp": str(tmp_path)})
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    facts.raw[DCGM_PROBE.name] = ProbeOutput(f"{bin_dir}/dcgmi\n", "", 0)
    checks, result = run_dcgm(StepContext(host, LocalRunner(host), facts, False, tmp_path), 2, 60)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL, checks
    assert checks[0].actual.endswith("; Error: pipe closed"), checks[0].actual
    assert result is not None and result["cut"] and result["partial"][0]["status"] == "fail"


def test_a_fail_dcgm_printed_after_a_break_still_fails() -> None:
    """The real DCGM 4.5.2 GB10 level-2 document with a line `WARNING: x` put in-test after
    `"category" : "Deployment",`, before the software test: nothing before the break is a test,
    and the software Fail DCGM printed whole after it used to be lost (no `dcgm_software` rule,
    "nothing was verified"); it now fails its rule, the summary still an incomplete probe."""
    text = SOFTWARE_FAIL.read_text().replace('"Deployment",', '"Deployment",\nWARNING: x\n', 1)
    checks = dcgm_checks(dcgm.parse(text), 2, listed=1)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
    summary, software = checks
    assert "broken mid-way; around the break it reported software Fail" in summary.detail
    assert software.actual.startswith(
        "Fail on GPU 0: Persistence Mode: Persistence mode for GPU 0 is disabled."
    )
    assert software.actual.endswith("(read around a break in DCGM's document)")


def test_raw_control_characters_in_dcgm_text_are_never_printed_raw() -> None:
    """The same real document with an ANSI colour escape (raw ESC) and a raw line break put
    in-test inside its persistence warnings (both: the GPU's and the summary's): the lenient
    read keeps the document, and the sentence quoting DCGM's warning carries neither raw: the
    ESC is written `\\x1b`, the break is a space."""
    text = SOFTWARE_FAIL.read_text().replace("as root.", "as root.\x1b[31m\n(red)")
    checks = {c.name: c for c in dcgm_checks(dcgm.parse(text), 2, listed=1)}
    actual = checks["dcgm_software"].actual
    assert checks["dcgm_software"].verdict == "fail"
    assert "as root.\\x1b[31m (red)" in actual, actual
    assert not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in actual + checks["dcgm_software"].detail)


def test_control_characters_in_dcgms_stderr_and_gpu_ids_are_never_printed_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `dcgmi` on the PATH printing the real DCGM 4.5.2 document cut 5 characters before its
    end, with the software test's GPU id edited in-test to `"0\\u001b[31m"` (a JSON-escaped ESC),
    and a stderr line holding a raw ESC colour code: the stderr line joined the error and the
    id the Fail's sentence raw; both are now written `\\x1b`."""
    doc = tmp_path / "doc.json"
    text = SOFTWARE_FAIL.read_text()
    text = text.replace('"entity_id" : 0', '"entity_id" : "0\\u001b[31m"', 1)
    doc.write_text(text[: len(text) - 5])
    bin_dir = tmp_path / "bin"
    script = f"#!/bin/sh\ncat '{doc}'\nprintf 'Error: \\033[31mpipe closed\\n' >&2\nexit 1\n"
    add_executable(bin_dir, "dcgmi", script)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    host = Host("box", "127.0.0.1", connection="local", vars={"remote_tmp": str(tmp_path)})
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    facts.raw[DCGM_PROBE.name] = ProbeOutput(f"{bin_dir}/dcgmi\n", "", 0)
    checks, _ = run_dcgm(StepContext(host, LocalRunner(host), facts, False, tmp_path), 2, 60)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL, checks
    assert checks[0].actual.endswith("; Error: \\x1b[31mpipe closed"), checks[0].actual
    assert checks[1].actual.startswith("Fail on GPU 0\\x1b[31m"), checks[1].actual
    for c in checks:
        assert not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in c.actual + c.detail), c


def test_a_test_read_after_a_break_in_a_document_also_cut_short_says_around_the_break() -> None:
    """The real DCGM 4.5.2 GB10 level-2 document with a line `WARNING: x` put in-test after
    `"category" : "Deployment",` and cut 5 characters before its end: the software Fail is read
    after the break, yet was said "read before DCGM's document was cut short"; it now says it
    was read around the break, and the summary that the document broke, then was cut."""
    text = SOFTWARE_FAIL.read_text().replace('"Deployment",', '"Deployment",\nWARNING: x\n', 1)
    checks = dcgm_checks(dcgm.parse(text[: len(text) - 5]), 2, listed=1)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
    summary, software = checks
    assert summary.actual.startswith("incomplete probe: not JSON (cut short:"), summary.actual
    assert "broken mid-way, then cut short; before the cut it reported software Fail" in summary.detail
    assert software.actual.endswith("(read around a break in DCGM's document)"), software.actual


def test_a_foreign_line_with_an_open_brace_does_not_make_a_whole_document_cut() -> None:
    """The same real document, whole, with a line `WARNING: {x` put in-test after `"category" :
    "Hardware",`: the foreign line's brace was counted as the document's, so it was called cut
    short; it is broken mid-way, and the software Fail before the break is judged."""
    text = SOFTWARE_FAIL.read_text().replace('"Hardware",', '"Hardware",\nWARNING: {x\n', 1)
    checks = dcgm_checks(dcgm.parse(text), 2, listed=1)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
    assert "broken mid-way, though it ends with its closing brace" in checks[0].actual, checks[0].actual
    assert "cut short" not in checks[0].actual + checks[0].detail + checks[1].actual


def test_a_one_line_document_broken_mid_way_is_not_called_cut_short() -> None:
    """The same real document, whole, re-printed in-test on one line (`json.dumps`, as a
    compact `dcgmi diag -j` prints it) with the first comma past its middle removed: the break's
    line was left out to find the cut, and with it the document's own closing braces, so it was
    called cut short; it ends with its closing brace, so it is broken mid-way."""
    raw = SOFTWARE_FAIL.read_text()
    compact = json.dumps(json.loads(raw[raw.index("{") :]))
    comma = compact.index(",", len(compact) // 2)
    checks = dcgm_checks(dcgm.parse(compact[:comma] + compact[comma + 1 :]), 2, listed=1)
    assert [(c.name, c.verdict) for c in checks] == CUT_FAIL
    assert "broken mid-way, though it ends with its closing brace" in checks[0].actual, checks[0].actual
    assert "cut short" not in checks[0].actual + checks[0].detail + checks[1].actual
    # the same line cut short before its end still is
    (cut, *_) = dcgm_checks(dcgm.parse(compact[: len(compact) * 2 // 3]), 2, listed=1)
    assert cut.actual.startswith("incomplete probe: not JSON (cut short:"), cut.actual


def test_dcgm_results_are_counted_against_the_gpus_attached_not_the_records_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real 8 x H100 `nvidia-smi -q` cut by the test exactly before its 4th GPU record (3
    whole records shown, `Attached GPUs : 8`: a cut between records, or a view of some GPUs),
    and a `dcgmi` printing the real DCGM 3.1.0 8-GPU document edited to name GPUs 0-2 only (its
    "0,...,7" lists cut to "0,1,2", the results of GPUs 3-7 removed). Before: the 3 records
    shown were the box's count, so `dcgm_diag` passed "10 tests, 10 pass" over 3 of 8 GPUs. Now
    DCGM's results are counted against the 8 attached: unverified, naming the 5 never tested."""
    lines = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text().splitlines(True)
    fourth = [i for i, line in enumerate(lines) if line.startswith("GPU 0000")][3]
    raw = (PUBLIC / "dcgmi-diag-j__dcgm-3.1.0__8gpu__all-pass.txt").read_text()
    doc = json.loads(raw[raw.index("{") :])
    for cat in doc["DCGM GPU Diagnostic"]["test_categories"]:
        for t in filter(None, cat["tests"]):
            t["results"] = [
                {**r, "gpu_ids": "0,1,2"} if r["gpu_ids"] == "0,1,2,3,4,5,6,7" else r
                for r in t["results"]
                if r["gpu_ids"] not in (3, 4, 5, 6, 7)
            ]
    (tmp_path / "doc.json").write_text(json.dumps(doc, indent="\t"))
    bin_dir = tmp_path / "bin"
    add_executable(bin_dir, "dcgmi", f"#!/bin/sh\ncat '{tmp_path / 'doc.json'}'\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    host = Host("box", "127.0.0.1", connection="local", vars={"remote_tmp": str(tmp_path)})
    facts = parse_facts({"nvidia_smi_q": ProbeOutput("".join(lines[:fourth]), "", 0)})
    assert facts.gpu is not None and len(facts.gpu.gpus) == 3
    facts.raw[DCGM_PROBE.name] = ProbeOutput(f"{bin_dir}/dcgmi\n", "", 0)
    checks, _ = run_dcgm(StepContext(host, LocalRunner(host), facts, False, tmp_path), 1, 60)
    summary = next(c for c in checks if c.name == "dcgm_diag")
    assert summary.verdict == "unverified", summary
    assert "DCGM gave results for GPU 0, 1, 2 only, of the 8 GPUs nvidia-smi lists" in summary.actual
