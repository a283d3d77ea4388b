"""`gpuonboard facts` on a run's own evidence, `reports/<run>/raw/<host>/`: it is recognised by
the run's summary.json (whose `raw` records name the files in that folder), each file is read
as the probe the run recorded (with its exit code), and a probe offline judging does not read
is skipped with one note; the same files in a user's own folder keep today's error. Runs are
written by the real api.write_reports from real captured outputs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.results import HostResult, conclude

REAL = Path(__file__).parents[1] / "fixtures" / "real"
RUN = "20261201-000000-aaaa"
CONTAINER_PROBE = "container:5c59f674b1"  # a probe name that becomes a hashed file name


def _outputs() -> dict[str, ProbeOutput]:
    def real(name: str) -> str:
        return (REAL / name).read_text()

    return {
        "nvidia_smi": ProbeOutput(real("nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"), "", 0),
        "lscpu": ProbeOutput(real("lscpu__intel-xeon-16vcpu__h200-vm.txt"), "", 0),
        "free": ProbeOutput(real("free__ubuntu-18.04-vm.txt"), "", 0),  # the probe runs `free -k`
        "nproc": ProbeOutput(real("nproc__h200-vm.txt"), "", 0),
        "nvidia_topo": ProbeOutput("", "", 127),  # recorded, failed: not judged as a topology
        CONTAINER_PROBE: ProbeOutput("sha256:0123abcd\n", "", 0),
    }


def _write_run(reports: Path, host: str = "gpu-1") -> Path:
    """A run's reports as `check` writes them; the host's raw folder."""
    meta = {
        **dict.fromkeys(("playbook_path", "inventory", "started", "finished"), "-"),
        **{"run_id": RUN, "playbook": "acceptance", "check_mode": False, "duration": 1.0, "exit_code": 0},
    }
    outputs = _outputs()
    facts = dataclasses.replace(parse_facts(outputs), raw=outputs)  # (only these probes' files)
    result = HostResult(Host(name=host, address="10.0.0.1"), "ok", "1 ok", facts=facts)
    out = api.write_reports(conclude([result]), meta, reports, RUN)
    (folder,) = (out / "raw").iterdir()
    return folder


def test_a_runs_raw_folder_is_recognised_by_its_summary(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    manifest = offline.raw_dir_manifest(folder)
    assert manifest is not None
    assert {probe for probe, _code in manifest.values()} == set(_outputs())
    assert manifest["nvidia_smi.txt"] == ("nvidia_smi", 0)
    assert manifest["nvidia_topo.txt"] == ("nvidia_topo", 127)
    assert sorted(manifest) == sorted(f.name for f in folder.iterdir())
    # through the `latest` link, as a user types it
    assert offline.raw_dir_manifest(tmp_path / "reports" / "latest" / "raw" / folder.name) == manifest

    # the same files in a user's own folder, or under a `raw/` with no run of ours beside it
    own = tmp_path / "vendor" / "raw" / folder.name
    shutil.copytree(folder, own)
    assert offline.raw_dir_manifest(own) is None
    (own.parent.parent / "summary.json").write_text(json.dumps({"schema": "other/1", "hosts": []}))
    assert offline.raw_dir_manifest(own) is None
    (own.parent.parent / "summary.json").write_text("{not json")
    assert offline.raw_dir_manifest(own) is None
    # another host's folder of the same run is not this one's
    other = folder.parent / "gpu-2"
    other.mkdir()
    assert offline.raw_dir_manifest(other) is None


def test_a_runs_raw_folder_is_judged_and_an_unread_probe_skipped_with_one_note(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    notes: list[str] = []
    raw = offline.load_outputs([str(folder)], notes)
    assert sorted(raw) == ["free", "lscpu", "nproc", "nvidia_smi", "nvidia_topo"]
    assert raw["nvidia_topo"].exit_code == 127  # as the live run read it: failed, not empty text
    assert notes == [
        f"{folder}: 1 saved output of this gpuonboard run skipped, offline judging does not read it"
        f" ({CONTAINER_PROBE})."
    ]
    facts = parse_facts(raw)
    assert facts.gpu is not None and len(facts.gpu.gpus) == 1
    assert facts.nproc == 16 and facts.topology is None


def test_the_same_files_in_a_users_folder_keep_the_error(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    own = tmp_path / "from-vendor"
    shutil.copytree(folder, own)
    odd = sorted(f.name for f in own.iterdir())[0]  # the container probe's hashed name sorts first
    assert odd.startswith("container_")
    with pytest.raises(UsageError, match=rf"^{own / odd}: not a recognised command output"):
        offline.load_outputs([str(own)])


def test_a_run_folder_or_its_raw_folder_names_the_host_folder_to_give(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    run = tmp_path / "reports" / RUN
    for given, example in ((run, run / "raw" / "gpu-1"), (run / "raw", run / "raw" / "gpu-1")):
        with pytest.raises(UsageError) as err:
            offline.load_outputs([str(given)])
        assert str(err.value) == (
            f"{given}: this is a gpuonboard run's folder, not one box's saved outputs; give one host's"
            f" folder of it (its hosts: gpu-1), e.g. {example}/"
        )
    assert folder == run / "raw" / "gpu-1"
