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


def test_in_progress_beside_an_unreadable_status_is_unverified() -> None:
    """GPU 3's State edited to `In Progress` and its Status to `ERR!`: the fabric query failed
    for that GPU, so the state printed beside it is no reading; it failed "GPU 3: In Progress".
    The same state beside `N/A` (a registration still running, read whole) still fails."""
    lines = edited(H100_8, 3, "ERR!").split("\n")
    i = next(i for i, line in enumerate(lines) if line.strip().startswith("Status") and "ERR!" in line)
    lines[i - 1] = lines[i - 1].replace("Completed", "In Progress")
    verdict, actual = fabric("\n".join(lines))
    assert verdict == "unverified", actual
    assert actual.endswith("fabric status could not be read (ERR!) on GPU 3 (In Progress)")
    lines[i] = lines[i].replace("ERR!", "N/A")
    verdict, actual = fabric("\n".join(lines))
    assert verdict == "fail" and actual.endswith("GPU 3: In Progress"), actual
