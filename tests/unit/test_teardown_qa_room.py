"""Pure helpers of teardown's local-side checks: the room a pull still needs, and two hosts
whose vars.results_dest names one local dir."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.teardown import shared_dest
from gpuonboard.steps.teardown import held_bytes, room_problem


def test_room_problem_counts_what_an_interrupted_pull_already_brought() -> None:
    assert room_problem(10_000, 0, 9_999) == 10_000
    assert room_problem(10_000, 4_000, 5_999) == 6_000
    assert room_problem(10_000, 4_000, 6_000) is None  # (a lower bound: never a false refusal)
    assert room_problem(10_000, 20_000, 0) is None
    assert room_problem(10_000, 0, None) is None  # free space unknown: rsync says it, if ever


def test_held_bytes_counts_regular_files_only(tmp_path: Path) -> None:
    (tmp_path / "d" / ".gpuonboard-rsync-partial").mkdir(parents=True)
    (tmp_path / "d" / "a").write_bytes(b"x" * 10)
    (tmp_path / "d" / ".gpuonboard-rsync-partial" / "b").write_bytes(b"y" * 5)
    outside = tmp_path / "big"
    outside.write_bytes(b"z" * 1000)
    (tmp_path / "d" / "link").symlink_to(outside)
    assert held_bytes(tmp_path / "d") == 15
    assert held_bytes(tmp_path / "missing") == 0


def test_shared_dest_names_the_two_hosts_and_the_dir(tmp_path: Path) -> None:
    assert shared_dest({"a": "/r/{host}", "b": "/r/{host}", "c": ""}, tmp_path) is None
    assert shared_dest({"a": "/r", "b": "/s", "c": "", "d": ""}, tmp_path) is None
    clash = shared_dest({"a": "", "b": "runs", "c": f"{tmp_path}/runs/"}, tmp_path)
    assert clash is not None and clash.startswith(
        f"hosts b and c would pull their results into the same local dir {tmp_path}/runs "
    )


def test_a_results_dest_naming_another_hosts_default_dir_is_a_clash(tmp_path: Path) -> None:
    """gpu1's vars.results_dest `results/gpu2` is gpu2's default copy (results/<host>)."""
    clash = shared_dest({"gpu1": "results/gpu2", "gpu2": ""}, tmp_path)
    assert clash is not None and clash.startswith(
        f"hosts gpu1 and gpu2 would pull their results into the same local dir {tmp_path}/results/gpu2 "
    ), clash
    assert shared_dest({"gpu1": "results/gpu1", "gpu2": ""}, tmp_path) is None
