"""facts/nvidia_smi/query_csv.py: a `--query-gpu` CSV whose header names only fields nvidia-smi
names without a dot (`timestamp, driver_version`) is a query's CSV, read for the fields it has;
one cut inside its first row is an output cut short. Real capture (tests/fixtures/real), edited
in-test as each test says."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi.query_csv import is_query_header

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
EXPORTER = (
    "query-gpu-csv__timestamp-driver-version__a100-pcie__cut-inside-first-row__nvidia-gpu-exporter-67.txt"
)
ORDER = "gpu_count: 1\n"


def test_a_csv_of_undotted_fields_cut_inside_its_first_row_is_cut(tmp_path: Path) -> None:
    """Round 30 (exporter67): utkuozdemir/nvidia_gpu_exporter#67's `$ ./ nvidia-smi
    --query-gpu="timestamp,driver_version" --format=csv`, its header, then its first row cut after
    `2022/03/22`, was refused (exit 2) as not a recognised output; now read as a --query-gpu CSV
    cut inside its first row: the GPU rules unverified, saying so. Stored without its command
    line, which the test puts back (and judges it without: the header alone tells it)."""
    text = (REAL / EXPORTER).read_text()
    assert text == "timestamp, driver_version\n2022/03/22"
    assert is_query_header("timestamp, driver_version")
    command = '$ ./ nvidia-smi --query-gpu="timestamp,driver_version" --format=csv\n'
    for shown in (command + text, text):
        got = verdicts(tmp_path, "nvidia-smi.txt", shown, ORDER)
        for rule in ("nvidia_driver", "gpu_count"):
            verdict, actual = got[rule]
            assert verdict == "unverified", (rule, actual)
            assert "CSV row 0: the output ends inside it, cut short (1 of its 2 cells)" in actual


def test_a_whole_csv_of_undotted_fields_is_read(tmp_path: Path) -> None:
    """Round 30 (exporter67c): the same query whole (edited in-test: its first row completed to
    the `2022/03/22 20:23:46.283, 510.47.03` the issue's exporter log reads) was refused as "a CSV
    without its header row" though its header is there: now the driver is read, 510.47.03, and
    the GPU's model, which the query did not ask for, is unverified."""
    text = (REAL / EXPORTER).read_text() + " 20:23:46.283, 510.47.03\n"
    got = verdicts(tmp_path, "nvidia-smi.txt", text, "gpu_count: 1\ngpu_model: A100\n")
    assert got["nvidia_driver"] == ("pass", "driver 510.47.03, CUDA unknown"), got["nvidia_driver"]
    assert got["gpu_count"][0] == "pass" and got["gpu_model"][0] == "unverified", got
    # (a header of words that are no nvidia-smi field stays no query's: `date, version`)
    assert not is_query_header("date, version")
