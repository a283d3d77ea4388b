"""Two answers to what a box's CPUs are that disagree, one of them a view (a grep's): the refusal
said "pass one file per command" of files that were one per command, naming the grep only; it
says that the two disagree (as two whole ones are said to) and what to save (measure31b 39:
lxc/lxcfs#181, an LXD container's `/proc/cpuinfo` with its 4 CPUs beside lscpu's 32 of the host)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.offline import load_outputs
from gpuonboard.api.unread import ONE_PER_COMMAND
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CPUINFO = "proc-cpuinfo-grep-processor__lxd-container-limits-cpu-4__lxcfs-181.txt"
LSCPU = "lscpu__xeon-e5-2660__2socket-32cpu__host-view-in-lxd-container-limits-cpu-4__lxcfs-181.txt"


def _quoted(text: str) -> str:
    return "".join(f"> {line}\n" for line in text.splitlines())


def test_a_grepped_cpuinfo_and_an_lscpu_that_disagree_are_said_to(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo.txt").write_text(
        _quoted("cat /proc/cpuinfo |grep processor\n" + (REAL / CPUINFO).read_text())
    )
    (tmp_path / "lscpu.txt").write_text(_quoted((REAL / LSCPU).read_text()))
    with pytest.raises(UsageError) as err:
        load_outputs([str(tmp_path)])
    said = str(err.value)
    assert "whose 32 CPUs, 16 cores (lscpu) are not the first's 4 CPUs online (/proc/cpuinfo)" in said
    assert "lxcfs shows its CPUs in /proc/cpuinfo, while lscpu may show the host's" in said
    assert "`cat /proc/cpuinfo |grep processor` keeps only the lines grep let through" in said
    assert said.endswith("; save the outputs of one box, taken at one time.")
    assert ONE_PER_COMMAND not in said


def test_a_view_that_agrees_still_names_only_the_view(tmp_path: Path) -> None:
    """The same grep beside an lscpu of 4 CPUs online (the first 4 of the fixture's 32, cut in the
    test): no disagreement; the grep is named, and one file per command asked for."""
    (tmp_path / "cpuinfo.txt").write_text(
        "$ cat /proc/cpuinfo |grep processor\n" + (REAL / CPUINFO).read_text()
    )
    lscpu = (REAL / LSCPU).read_text().replace("CPU(s):                32", "CPU(s):                4")
    lscpu = lscpu.replace("0-31", "0-3").replace("Socket(s):             2", "Socket(s):             1")
    lscpu = lscpu.replace("Core(s) per socket:    8", "Core(s) per socket:    2")
    (tmp_path / "lscpu.txt").write_text(lscpu)
    with pytest.raises(UsageError) as err:
        load_outputs([str(tmp_path)])
    assert "not the first's" not in str(err.value) and ONE_PER_COMMAND in str(err.value)
