"""Host outputs' words that must be true (measure38d): an LXD CLI's own output (`lxc list a1`) is
no output this tool reads (api/transcript.py _part_tool, command_line.ENGINES_UNREAD), not "lxc's
output it could not read"; a docker info cut before its `Name:` line says so and quotes no empty
`Name: ` (facts/docker_memory.py _unmatched)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

from ..offline_judge import checks

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
LXC_16 = "session__lxc-list-then-lxc-exec-busybox-free-m-1991__lxd-5357.txt"
DOCKER_14 = "docker-info__cut-after-total-memory-30.58gib__no-name-line__cadvisor-3084.txt"


def _notes(tmp_path: Path, name: str, text: str) -> list[str]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / name)], notes)
    return notes


def test_lxc_list_is_no_output_read_and_lxc_exec_free_is_judged(tmp_path: Path) -> None:
    text = (REAL / LXC_16).read_text(encoding="utf-8")
    for engine in ("lxc", "incus"):
        copy = text.replace("$ lxc ", f"$ {engine} ")
        folder = tmp_path / engine
        folder.mkdir()
        notes = " ".join(_notes(folder, "session.txt", copy))
        assert f"line 1 (`{engine} list a1`) is not an output this tool reads" in notes, notes
        assert "could not read what it printed" not in notes, notes
        got = {c.name: c for c in checks(folder, "session.txt", copy, "ram: 2GB\n")}
        assert got["ram"].verdict == "pass", got["ram"]


def test_a_docker_info_cut_before_its_name_says_so(tmp_path: Path) -> None:
    text = (REAL / DOCKER_14).read_text(encoding="utf-8")
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", text, "ram: 32GB\ncpu_cores: 4\n")}
    for rule in ("ram", "cpu_cores"):
        actual = got[rule].actual
        assert got[rule].verdict == "unverified", got[rule]
        assert "it has no `Name:` line (the output ends after `Total Memory:`, cut short)" in actual, actual
        assert "`Name: `" not in actual and "no other output of the box was given" in actual, actual
    # (its Name line given back: quoted, and not called cut)
    named = text.replace(" Total Memory: 30.58GiB", " Total Memory: 30.58GiB\n Name: ip-10-0-0-5")
    actual = {c.name: c for c in checks(tmp_path, "docker-info.txt", named, "ram: 32GB\n")}["ram"].actual
    assert "its `Name: ip-10-0-0-5`" in actual and "cut short" not in actual, actual
