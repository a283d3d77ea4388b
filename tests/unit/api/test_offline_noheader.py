"""A `--format=csv,noheader` output read by the field list of its copied command line (nvidia-smi
heads each column with its field name), and refused in one sentence that says how to save it when
no command line names the fields (round 12: it was "not a recognised command output"). The rows
are our own real H200 capture's (tests/fixtures/real/SOURCES.md), without its header row."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NAME = "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv"
COMMAND = (
    "root@h200:~# nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id,"
    "ecc.mode.current,clocks_throttle_reasons.active --format=csv,noheader"
)


def facts_of(tmp_path: Path, text: str) -> object:
    path = tmp_path / "query.csv"
    path.write_text(text)
    return parse_facts(offline.load_outputs([str(path)])).gpu


def test_the_rows_under_their_command_read_as_with_the_header(tmp_path: Path) -> None:
    whole = (REAL / NAME).read_text()
    rows = whole.split("\n", 1)[1]
    headed, bare = facts_of(tmp_path, whole), facts_of(tmp_path, f"{COMMAND}\n{rows}")
    assert bare is not None and headed is not None
    got = bare.gpus[0]  # type: ignore[attr-defined]
    assert (got.name, got.memory_total_mib, got.pci_bus_id, got.ecc_mode) == (
        "NVIDIA H200",
        143771,
        "00000000:00:06.0",
        "Enabled",
    )
    assert bare.driver_version == headed.driver_version == "580.159.04"  # type: ignore[attr-defined]
    assert got.clock_event_reasons == headed.gpus[0].clock_event_reasons  # type: ignore[attr-defined]


def test_rows_without_a_command_naming_their_fields_are_refused_saying_how(tmp_path: Path) -> None:
    rows = (REAL / NAME).read_text().split("\n", 1)[1]
    with pytest.raises(UsageError) as err:
        facts_of(tmp_path, rows)
    assert "a CSV without its header row" in str(err.value)
    assert "save it with its header (`--format=csv`, without `noheader`)" in str(err.value)
    # a command whose field list has another count than the rows: not taken for their header
    with pytest.raises(UsageError):
        facts_of(tmp_path, "$ nvidia-smi --query-gpu=index,name --format=csv,noheader\n" + rows)


BUSY = "nvidia-smi-query-gpu__util-power-only__1gpu__k8s-pod-busy.csv"


def test_a_csv_whose_header_names_no_identity_is_read(tmp_path: Path) -> None:
    """A real header `utilization.gpu [%], utilization.memory [%], power.draw [W]` (no index,
    name or memory.total) was refused as "a CSV without its header row"; and under its copied
    `--format=csv` command (no noheader) the command's field list was put above the header,
    which then read as a row of field names: the GPU at 100 % was never judged (round 14). Its
    utilisation alone, memory used not queried, is no evidence of a job (an idle Kepler reads
    100 % at 0 MiB: rules.md foreign_processes): unverified, saying what was read (round 39)."""
    from ..offline_judge import verdicts

    text = (REAL / BUSY).read_text()
    command = (
        "$ kubectl exec -n hpa-test gpu-workload-7d7f4dbdf-9559s -- nvidia-smi"
        " --query-gpu=utilization.gpu,utilization.memory,power.draw --format=csv\n"
    )
    said = (
        "GPU 0 at 100 % utilisation, its memory used not reported (nor whether it drives a display),"
        " no process list read"
    )
    assert verdicts(tmp_path, "query.csv", text)["foreign_processes"] == ("unverified", said)
    # (under its `kubectl exec` the GPUs are the pod's: so noted)
    busy = verdicts(tmp_path, "query.csv", command + text)["foreign_processes"]
    assert busy[0] == "unverified" and busy[1].startswith(said)
    assert busy[1].endswith("shows only the GPUs of the container it ran in)")
