"""A cgroup limit file whose value was edited by hand (`131_072_000 # ie, 131 MB`: digit
separators, a `# note`) is named, never dropped without a word (api/saved_cgroup.py edited_limit;
measure38d 19): said in a note beside the session's other outputs, and alone refused naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
MEMORY_MAX_19 = "session__cat-memory-max-underscored-hash-note-131mb__quoted__ong-100.txt"
FREE_M = (REAL / "free-m__devcontainer-110gib__vit-notes.txt").read_text(encoding="utf-8")
SAID = "the cgroup memory limit `/sys/fs/cgroup/memory.max` reads `131_072_000 # ie, 131 MB`"


def _loaded(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "box.txt").write_text(text, encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "box.txt")], notes)
    return notes


def test_the_edited_memory_max_alone_is_named(tmp_path: Path) -> None:
    text = (REAL / MEMORY_MAX_19).read_text(encoding="utf-8")
    with pytest.raises(UsageError) as err:
        _loaded(tmp_path, text)
    assert SAID in str(err.value) and "not the file's own form (a number or `max`)" in str(err.value)
    assert "save the file's own value" in str(err.value)


def test_beside_a_free_it_is_a_note_and_the_free_is_judged(tmp_path: Path) -> None:
    text = (REAL / MEMORY_MAX_19).read_text(encoding="utf-8").replace("> ", "$ ")
    session = f"{text}$ free -m\n{FREE_M}"
    notes = " ".join(_loaded(tmp_path, session))
    assert SAID in notes and "not an output this tool reads" not in notes, notes
    assert verdicts(tmp_path, "box.txt", session, "ram: 100GB\n")["ram"][0] == "pass"


@pytest.mark.parametrize(
    ("listing", "said"),
    [
        ("/sys/fs/cgroup/memory.max:131072000 # 125m\n/sys/fs/cgroup/cpu.max:max 100000\n", "memory limit"),
        ("/sys/fs/cgroup/memory.max:max\n/sys/fs/cgroup/cpu.max:200_000 100_000\n", "CPU quota"),
        ("==> /sys/fs/cgroup/cpuset.cpus.effective <==\n0-7 # eight\n", "CPU set"),
    ],
)
def test_every_limit_file_edited_is_named(tmp_path: Path, listing: str, said: str) -> None:
    with pytest.raises(UsageError) as err:
        _loaded(tmp_path, listing)
    assert f"the cgroup {said}" in str(err.value) and "not the file's own form" in str(err.value), err.value


def test_the_files_own_values_are_still_read(tmp_path: Path) -> None:
    plain = (
        (REAL / MEMORY_MAX_19).read_text(encoding="utf-8").replace("131_072_000 # ie, 131 MB", "131072000")
    )
    got = verdicts(tmp_path, "box.txt", plain, "ram: 16GB\n")
    assert got["ram"] == ("fail", "125.0 MiB usable (cgroup memory limit; no free output was given)"), got
    listing = (
        "/sys/fs/cgroup/memory.max:max\n/sys/fs/cgroup/cpu.max:max 100000\n"
        "/sys/fs/cgroup/cpuset.cpus.effective:0-7,16\n"
    )
    assert not any("not the file's own form" in note for note in _loaded(tmp_path, listing))
