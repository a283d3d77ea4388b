"""rule_nvlink_errors on real `nvidia-smi nvlink -e` captures (and counts changed in them)."""

from pathlib import Path

import pytest

from gpuonboard.facts.nvlink import GpuNvlinkErrors, NvlinkErrors, parse_nvlink_errors
from gpuonboard.steps.checks.fabric_health import load_nvlink_error_thresholds, rule_nvlink_errors

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100_FILE = "nvidia-smi-nvlink-e__h100-80gb-hbm3__1gpu__driver-unknown__elided.txt"
H100 = ["NVIDIA H100 80GB HBM3"]
# the driver's refusal of NVLink queries on a MIG GPU, captured for `nvlink -s` (the sentence
# names NVLink queries in general; no `nvlink -e` capture of it here)
MIG = "nvidia-smi-nvlink-s__h100-mig__not-supported__driver590.48.01.txt"


def read(name: str) -> str:
    return (REAL / name).read_text()


def with_count(counter: str, link: int, value: int, text: str | None = None) -> str:
    """The H100 capture with its `counter` on `link` (0, 1 or 17) set to `value` (derived)."""
    text = read(H100_FILE) if text is None else text
    line = f" Link {link}: {counter}: 0\n"
    at = text.index(line)
    return text[:at] + line.replace(": 0\n", f": {value}\n") + text[at + len(line) :]


def test_thresholds_cite_dcgm() -> None:
    rows = {t.name: t for t in load_nvlink_error_thresholds()}
    assert (rows["Recovery Errors"].fail_at, rows["Replay Errors"].fail_at) == (1, 1)
    assert (rows["CRC Errors"].warn_at, rows["CRC Errors"].fail_at) == (1, None)
    assert all("DCGM" in t.source for t in rows.values())
    assert all(rows[n].verified for n in ("Recovery Errors", "Replay Errors", "CRC Errors"))


CUT = " (links of GPU 0 (3 of 18 links listed) not read)"  # the capture is elided after link 1


def test_all_zero_on_links_cut_from_the_listing_is_no_pass() -> None:
    """3 of an H100's 18 links listed (`[...]`), all zero: the links left out may hold errors."""
    c = rule_nvlink_errors(H100, parse_nvlink_errors(read(H100_FILE)))
    assert c is not None and c.name == "nvlink_errors"
    assert (c.verdict, c.actual) == ("unverified", "counters not readable for GPU 0 (3 of 18 links listed)")


@pytest.mark.parametrize("counter", ["Recovery Errors", "Replay Errors"])
def test_recovery_or_replay_fails_naming_gpu_link_counter(counter: str) -> None:
    c = rule_nvlink_errors(H100, parse_nvlink_errors(with_count(counter, 17, 2)))
    assert c is not None and c.verdict == "fail"
    assert c.actual == f"GPU 0 link 17: {counter} 2" + CUT
    assert "reseat or replace the NVLink bridge / board" in c.detail


def test_crc_errors_warn() -> None:
    c = rule_nvlink_errors(H100, parse_nvlink_errors(with_count("CRC Errors", 1, 40)))
    assert c is not None and (c.verdict, c.actual) == ("warn", "GPU 0 link 1: CRC Errors 40" + CUT)


def test_fail_lists_warnings_too() -> None:
    text = with_count("Replay Errors", 0, 9, text=with_count("CRC Errors", 17, 3))
    c = rule_nvlink_errors(H100, parse_nvlink_errors(text))
    assert c is not None and c.verdict == "fail"
    assert c.actual == "GPU 0 link 0: Replay Errors 9; GPU 0 link 17: CRC Errors 3" + CUT


def test_not_applicable_missing_and_unlisted() -> None:
    errors = parse_nvlink_errors(read(H100_FILE))
    assert rule_nvlink_errors(["NVIDIA L40S"], errors) is None
    assert rule_nvlink_errors(["NVIDIA A100-PCIE-40GB"], None) is None
    missing = rule_nvlink_errors(H100, None)
    assert missing is not None and missing.verdict == "unverified"
    empty = rule_nvlink_errors(H100, parse_nvlink_errors(""))
    assert empty is not None and empty.verdict == "unverified"
    # two SXM GPUs, one listed: GPU 1's counters are unknown, not zero
    two = rule_nvlink_errors(H100 * 2, errors)
    assert two is not None and two.verdict == "unverified" and "GPU 1 (not listed)" in two.actual


def test_mig_mode_is_unverified() -> None:
    c = rule_nvlink_errors(["NVIDIA H100 80GB HBM3"], parse_nvlink_errors(read(MIG)))
    assert c is not None and c.verdict == "unverified" and "GPU 0 (MIG mode)" in c.actual


# The recovery counters Blackwell drivers print (names as a B300's driver 595.91.07 prints them,
# search index file id 71075276249; no raw capture of them here, so the parsed counters are built
# directly): NVIDIA DCGM warns on a successful recovery and fails a failed one (its health-watch
# tests, search index file id 56325496426); their sum is no failure by itself.
B300 = ["NVIDIA B300 SXM6 AC"]
RECOVERY = ("Link recovery successful events", "Link recovery failed events", "Total link recovery events")


def b300_counters(link: int, **counts: int) -> NvlinkErrors:
    """18 links, every recovery counter zero but `counts` on `link` (keys: successful, failed)."""
    links = {n: dict.fromkeys(RECOVERY, 0) for n in range(18)}
    ok, failed = counts.get("successful", 0), counts.get("failed", 0)
    links[link].update({RECOVERY[0]: ok, RECOVERY[1]: failed, RECOVERY[2]: ok + failed})
    return NvlinkErrors((GpuNvlinkErrors(0, B300[0], None, links),))


def test_successful_link_recovery_warns_not_fails() -> None:
    """A Blackwell link that retrained and came back: DCGM warns; the old data failed on the sum."""
    c = rule_nvlink_errors(B300, b300_counters(5, successful=3))
    assert c is not None and c.verdict == "warn"
    assert c.actual == (
        "GPU 0 link 5: Link recovery successful events 3; GPU 0 link 5: Total link recovery events 3"
    )
    assert "recoveries that succeeded" in c.detail


def test_failed_link_recovery_fails() -> None:
    c = rule_nvlink_errors(B300, b300_counters(7, successful=1, failed=2))
    assert c is not None and c.verdict == "fail"
    assert c.actual.startswith("GPU 0 link 7: Link recovery failed events 2; ")


def test_no_recovery_passes() -> None:
    c = rule_nvlink_errors(B300, b300_counters(0))
    assert c is not None and (c.verdict, c.actual) == (
        "pass",
        "all NVLink error counters zero on 18 link(s) of 1 GPU(s)",
    )


def whole_h100(**values: str) -> str:
    """The H100 capture with its `[...]` elision filled (derived): links 2-16 in the shape of its
    link 1 block, every count 0; `values` set one link's counter ('Link 5: Replay Errors': 'N/A')."""
    text = read(H100_FILE)
    block = text[text.index("         Link 1: Replay") : text.index("         [...]")]
    filled = "".join(block.replace("Link 1:", f"Link {n}:") for n in range(2, 17))
    text = text.replace("         [...]\n\n", filled)
    for line, value in values.items():
        text = text.replace(f" {line}: 0\n", f" {line}: {value}\n")
    return text


def test_whole_listing_all_zero_passes() -> None:
    """The control of the N/A cases below: 18 links, every count 0, is a pass."""
    c = rule_nvlink_errors(H100, parse_nvlink_errors(whole_h100()))
    assert c is not None and (c.verdict, c.actual) == (
        "pass",
        "all NVLink error counters zero on 18 link(s) of 1 GPU(s)",
    )


@pytest.mark.parametrize("value", ["N/A", "ERR!"])
@pytest.mark.parametrize("counter", ["Replay Errors", "Recovery Errors", "CRC Errors"])
def test_judged_counter_not_a_count_is_unverified(counter: str, value: str) -> None:
    """A judged counter printed N/A or ERR! on one link, its other counters 0: no zero, so the
    GPU's row is unverified naming link and counter (it passed before: the value was skipped)."""
    c = rule_nvlink_errors(H100, parse_nvlink_errors(whole_h100(**{f"Link 5: {counter}": value})))
    assert c is not None and c.verdict == "unverified"
    assert c.actual == f"counters not readable for GPU 0 link 5 ({counter} printed {value})"


def test_judged_counter_not_a_count_is_named_beside_a_fail() -> None:
    text = whole_h100(**{"Link 5: CRC Errors": "N/A", "Link 9: Replay Errors": "4"})
    c = rule_nvlink_errors(H100, parse_nvlink_errors(text))
    assert c is not None and c.verdict == "fail"
    assert (
        c.actual == "GPU 0 link 9: Replay Errors 4 (links of GPU 0 link 5 (CRC Errors printed N/A) not read)"
    )


def test_unjudged_value_not_a_count_is_not_judged() -> None:
    """A BER figure under a name the data file does not list is no count and no gap."""
    text = whole_h100().replace(
        " Link 3: CRC Errors: 0\n", " Link 3: CRC Errors: 0\n         Link 3: Effective BER: 1.5e-15\n"
    )
    errors = parse_nvlink_errors(text)
    gpu = errors.by_index(0)
    assert gpu is not None and gpu.unread == {3: {"Effective BER": "1.5e-15"}}
    c = rule_nvlink_errors(H100, errors)
    assert c is not None and c.verdict == "pass"
