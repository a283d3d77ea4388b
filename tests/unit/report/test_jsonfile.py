"""A raw probe output holding a secret of the run is masked: raw_outputs gives both the bytes
written to raw/<host>/<probe>.txt and the ones summary.json's sha256 is of (so the report still
says `verified`)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from gpuonboard import atomicfile, masking
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.report.jsonfile import raw_outputs, write_outputs


def test_a_secret_in_a_probe_output_is_masked() -> None:
    token = masking.Secret("ghp_s3cretRegistryToken")
    out = ProbeOutput(f"login ok\ntoken={token.reveal()}\n", "", 0)
    result = SimpleNamespace(facts=SimpleNamespace(raw={"files_probe": out}, private=frozenset()))
    data, code = raw_outputs(result)["files_probe"]  # type: ignore[arg-type]
    assert token.reveal().encode() not in data
    assert data == f"login ok\ntoken={masking.MASK}\n".encode()
    assert code == 0


def test_an_output_read_past_its_exit_code_is_saved_with_that_code() -> None:
    """df's 1 (one filesystem unreadable) and nvidia-smi's 14 (a corrupted infoROM) are read as
    answered (exit_code 0): the run's raw output keeps the code the command gave, so judging
    that saved output again reads it as the run did."""
    from pathlib import Path

    from gpuonboard.connection.gather import parse_facts

    real = Path(__file__).parents[2] / "fixtures" / "real"
    # (a real df and `topo -m`; df's and nvidia-smi's own words for the code each gave)
    df = ProbeOutput(
        (real / "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt").read_text(), "df: /mnt/x: Stale file handle", 1
    )
    topo = ProbeOutput(
        (real / "nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt").read_text(),
        "WARNING: infoROM is corrupted at gpu 0008:00:00.0",
        14,
    )
    facts = parse_facts({"df": df, "nvidia_topo": topo})
    assert (facts.raw["df"].exit_code, facts.raw["nvidia_topo"].exit_code) == (0, 0)
    result = SimpleNamespace(facts=facts)
    saved = raw_outputs(result)  # type: ignore[arg-type]
    assert (saved["df"][1], saved["nvidia_topo"][1]) == (1, 14)


def test_a_run_folder_is_judged_again_as_the_run_judged_it() -> None:
    """The lines of stderr a reader reads are kept with the raw output (before it) and split back
    when the folder is judged again: df's `df: /scratch: ...` (its mount unread, not the ordered
    /data: /data is on the system disk, a fail, not "df lists only some filesystems") and
    nvidia-smi's infoROM warning (a fault of GPU 0: sensor_faults warns)."""
    from pathlib import Path

    from gpuonboard.api.saved_probe import run_output
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.inventory import DataDiskSpec, OrderSpec
    from gpuonboard.steps.checks.gpu_health.step import evaluate
    from gpuonboard.steps.checks.host_rules import rule_data_disk

    real = Path(__file__).parents[2] / "fixtures" / "real"
    live = parse_facts(
        {
            "df": ProbeOutput(
                (real / "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt").read_text(),
                "df: /scratch: Transport endpoint is not connected\n",
                1,
            ),
            "nvidia_smi_table": ProbeOutput(
                (real / "nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt").read_text(),
                "WARNING: infoROM is corrupted at gpu 0000:C2:00.0\n",
                14,
            ),
        }
    )
    saved = raw_outputs(SimpleNamespace(facts=live))  # type: ignore[arg-type]
    again = parse_facts(
        {name: run_output(Path(f"{name}.txt"), data, name, code) for name, (data, code) in saved.items()}
    )
    order = OrderSpec(data_disk=DataDiskSpec("/data", 9 * 10**9))
    verdicts = [
        (rule_data_disk(order, f, 0.03), {c.name: c for c in evaluate(f)}["sensor_faults"])
        for f in (live, again)
    ]
    (disk, faults), (disk_again, faults_again) = verdicts
    assert disk.verdict == "fail" and (disk_again.verdict, disk_again.actual) == (disk.verdict, disk.actual)
    assert faults.verdict == "warn" and (faults_again.verdict, faults_again.actual) == (
        faults.verdict,
        faults.actual,
    )


def test_raw_files_are_written_as_open_wb_writes_them(tmp_path: Path) -> None:
    """A host's raw files: the bytes as given (empty, a 1 MiB output, one of three pieces and a
    few bytes, written a piece a call, bytes not UTF-8, CRLF), an older longer file emptied
    first, and the mode and flags a file open(path, "wb") makes has."""
    outputs = {
        "empty": (b"", 0),
        "big": (bytes(range(256)) * 4096, 0),
        "huge": (os.urandom(3 * atomicfile.PIECE + 7), 0),
        "crlf": (b"a\r\nb\n\xff", 1),
    }
    (tmp_path / "raw" / "h").mkdir(parents=True)
    (tmp_path / "raw" / "h" / "crlf.txt").write_bytes(b"x" * 100)
    written = write_outputs(tmp_path, "h", outputs)
    with open(tmp_path / "made-by-open.txt", "wb") as f:
        f.write(b"")
    expected_mode = os.stat(tmp_path / "made-by-open.txt").st_mode
    assert written == {f"raw/h/{probe}.txt": data for probe, (data, _code) in outputs.items()}
    for name, data in written.items():
        assert (tmp_path / name).read_bytes() == data
        assert os.stat(tmp_path / name).st_mode == expected_mode
