"""The "expected ..." list of a refused saved output is written from the readers' one registry
(api/kind_names.py SAVED_OUTPUTS), so no reader is left out of it: the cgroup limit files the
tool reads (docs/guides/offline.md) were missing from the hand-written list, so a user who saved
`docker run ... cat /sys/fs/cgroup/cpu.max` of a new container was not told to save the box's
own files with their names.

Real capture: tests/fixtures/sessions/SOURCES.md (coreutils/coreutils#108)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import kind_names, offline
from gpuonboard.errors import UsageError

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
CPU_MAX = SESSIONS / "transcript__docker-run-cpus6-cat-cgroup-cpu.max-no-file-name__coreutils-108.txt"


def test_every_kind_the_readers_give_is_in_the_registry() -> None:
    listed = {kind for kinds, _text in kind_names.SAVED_OUTPUTS for kind in kinds}
    given = {
        *offline.KINDS,
        *offline.FABRIC_KINDS,
        *kind_names.SHOWN_KINDS,
        *kind_names._KIND_NAMES,
        "cgroup_limits",
        "nvidia_smi_apps",
    }
    assert given <= listed, given - listed


def test_the_refusal_of_a_new_containers_cpu_max_names_the_cgroup_files(tmp_path: Path) -> None:
    path = tmp_path / "cgroup.txt"
    path.write_text(CPU_MAX.read_text())
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    said = str(err.value)
    assert "not a recognised command output" in said
    assert "grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max" in said
    assert "nvidia-smi topo -m" in said and "or systemctl is-active in a file named *fabric*)" in said
