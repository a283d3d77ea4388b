"""fabric_manager where a GPU's fabric registration reads `State : Completed` but no Status was
read (`Status : N/A`, or no Status line): a registration that completed with an error says
Completed too (`Status : Insufficient Resources`), so Completed alone clears nothing: unverified,
naming the GPU. Every real capture pairs Completed with Success (checked below).

The captures are real (tests/fixtures/real); each test edits ONE Status line of one GPU in memory
(named in the test): to `N/A`, or drops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any

from ...offline_judge import health_row

REAL = Path(__file__).parents[3] / "fixtures" / "real"
SHARED = Path(__file__).parents[4] / "shared" / "fixtures" / "real"
H100_8 = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_1 = "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
H200_610 = "nvidia-smi-q__h200__1gpu__driver610.43.02.txt"


def fabric(text: str) -> tuple[str, str]:
    return health_row(text, "fabric_manager")


def edited(name: str, nth: int, new: str | None) -> str:
    """The real capture with its `nth` Fabric Status line (0: the first GPU's) set to `new`
    as its value, or dropped (None)."""
    lines = (REAL / name).read_text().split("\n")
    at = [i for i, line in enumerate(lines) if line.strip().startswith("Status") and "Success" in line]
    i = at[nth]
    assert lines[i - 1].strip().startswith("State") and "Completed" in lines[i - 1]
    if new is None:
        del lines[i]
    else:
        lines[i] = lines[i].replace("Success", new)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("name", "nth", "new", "gpu"),
    [
        (H200_1, 0, "N/A", "GPU 0"),
        (H200_1, 0, None, "GPU 0"),
        (H200_610, 0, "N/A", "GPU 0"),
        (H100_8, 5, "N/A", "GPU 5"),
        (H100_8, 0, None, "GPU 0"),
    ],
)
def test_completed_without_status_is_unverified(name: str, nth: int, new: str | None, gpu: str) -> None:
    assert fabric((REAL / name).read_text())[0] == "pass"  # the capture as saved
    verdict, actual = fabric(edited(name, nth, new))
    assert verdict == "unverified", actual
    assert actual.endswith(f"fabric state Completed, status not reported on {gpu}")


def test_completed_with_an_error_status_still_fails() -> None:
    verdict, actual = fabric(edited(H100_8, 2, "Insufficient Resources"))
    assert verdict == "fail" and "GPU 2: status Insufficient Resources" in actual


def _captures() -> list[Path]:
    return sorted(p for d in (REAL, SHARED) if d.is_dir() for p in d.glob("nvidia-smi*"))


def test_every_real_completed_has_success_and_passes() -> None:
    # the control: every real capture that reads Completed reads Success beside it, and its
    # fabric_manager row is no "status not reported"
    seen = 0
    for path in _captures():
        text = path.read_text(errors="replace")
        gpus = parse_any(text).gpus
        if not any(g.fabric_state == "Completed" for g in gpus):
            continue
        seen += 1
        assert all(g.fabric_status == "Success" for g in gpus if g.fabric_state == "Completed"), path.name
        if not path.name.endswith(".csv"):
            assert "status not reported" not in fabric(text)[1], path.name
    assert seen >= 8


def test_completed_with_an_unreadable_status_says_it_could_not_be_read() -> None:
    """Status `ERR!` (nvidia-smi could not read it; review L of round 23): unverified, and the
    row says the status could not be read (it said "not reported", which reads as N/A)."""
    verdict, actual = fabric(edited(H100_8, 3, "ERR!"))
    assert verdict == "unverified", actual
    assert actual.endswith("fabric state Completed, status could not be read (ERR!) on GPU 3")


def _rows(text: str) -> dict[str, tuple[str, str]]:
    """Every gpu_health row over `text` read as the live probe's nvidia-smi output."""
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks import gpu_health

    from ...offline_judge import parse_facts

    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(facts)}


def _state_and_status(name: str, nth: int, state: str, status: str) -> str:
    """The real capture with its `nth` Fabric block's State set to `state` and Status to `status`."""
    lines = edited(name, nth, status).split("\n")
    i = next(i for i, line in enumerate(lines) if line.strip().startswith("Status") and status in line)
    lines[i - 1] = lines[i - 1].replace("Completed", state)
    return "\n".join(lines)


@pytest.mark.parametrize("state", ["In Progress", "Not Started"])
def test_a_state_not_completed_beside_an_unreadable_status_fails(state: str) -> None:
    """GPU 3's State edited to `In Progress` / `Not Started` and its Status to `ERR!` (review O
    of round 24): NVML reads State and Status in one call and fills the Status only for a
    Completed State, so the State is a reading and the Status is none: it fails as read ("GPU 3:
    In Progress"; it was unverified "status could not be read"), as the same State beside `N/A`
    does, and sensor_faults names no "fabric status reads ERR!"."""
    for status in ("ERR!", "N/A"):
        text = _state_and_status(H100_8, 3, state, status)
        verdict, actual = fabric(text)
        assert verdict == "fail" and actual.endswith(f"GPU 3: {state}"), actual
        assert "fabric status" not in _rows(text).get("sensor_faults", ("-", ""))[1]


@pytest.mark.parametrize(
    "name",
    ["nvidia-smi-q__h200__1gpu__driver580.159.04.txt", "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"],
)
def test_an_unreadable_status_beside_state_na_is_no_sensor_fault(name: str) -> None:
    """A PCIe card's Fabric block reads `State : N/A`; its `Status : N/A` edited to `ERR!` (review
    O of round 24): no State was registered, so the Status is no reading: sensor_faults does not
    warn "GPU 0: fabric status reads ERR!" and fabric_manager does not apply."""
    lines = (REAL / name).read_text().split("\n")
    i = next(i for i, line in enumerate(lines) if line.strip() == "Fabric")
    assert lines[i + 1].split(":")[1].strip() == "N/A" and lines[i + 2].split(":")[1].strip() == "N/A"
    lines[i + 2] = lines[i + 2].replace("N/A", "ERR!")
    rows = _rows("\n".join(lines))
    assert "sensor_faults" not in rows and "fabric_manager" not in rows, rows


def test_an_unreadable_status_beside_state_na_in_xml_is_no_sensor_fault() -> None:
    """The H200 -q -x capture's `<status>N/A</status>` (its State N/A) edited to `ERR!`: no fault."""
    text = (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()
    assert "<state>N/A</state>" in text
    text = text.replace("<status>N/A</status>", "<status>ERR!</status>", 1)
    assert "sensor_faults" not in _rows(text)


@pytest.mark.parametrize(("state", "status"), [("ERR!", "ERR!"), ("[Unknown Error]", "[Unknown Error]")])
def test_a_state_that_is_a_fault_marker_keeps_the_status_fault_a_sensor_fault(
    state: str, status: str
) -> None:
    """GPU 3's State and Status both edited to `ERR!` (and both to `[Unknown Error]`; review R
    of round 24): a State that reads a fault marker is no State, so the Status's `ERR!` is
    unread, not a Status NVML left empty; and fabric_manager reads the State. sensor_faults
    passed "every sensor read; not read (no sensor, no check uses it): GPU 3: Fabric/State
    reads ERR!"; it warns, naming both (the NVML string `[Unknown Error]` as a Status is a value:
    the State alone), and fabric_manager is unverified."""
    text = _state_and_status(H100_8, 3, state, status)
    rows = _rows(text)
    faults = [f"GPU 3: fabric state reads {state}"] + (
        ["GPU 3: fabric status reads ERR!"] if status == "ERR!" else []
    )
    assert rows["sensor_faults"] == ("warn", "; ".join(faults))
    assert rows["fabric_manager"][0] == "unverified"
