"""nvidia-smi outputs a CI job's log carried: each line behind the log's stamp (a space or a tab
after it), a Kubernetes controller's klog record quoting them as a multi-line value (`tail=<`, a
tab before each line, ` >`), and a `--query-gpu` CSV right above the table with no prompt between
(api/paste.py _STAMP, api/paste_frames.py klog_unquoted, api/csv_among.py). Before, the table's
whole banner was not judged (min_driver unverified) and the CSV was dropped with no note
(measure33c 6).

Real capture: tests/fixtures/real/SOURCES.md (llm-d-incubation/llm-d-fast-model-actuation#720)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FMA = REAL / (
    "nvidia-smi__gha-stamped-klog-tail-csv-above-table-cut-after-banner__driver580.105.08__llm-d-fma-720.txt"
)
H100X8 = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()
CSV = (
    "index, uuid, memory.used [MiB]\n"
    "0, GPU-a03ba92b-28df-07c5-63c2-0580029282cd, 76587 MiB\n"
    "1, GPU-712a7368-87ac-0446-3465-21e91333d0c7, 0 MiB\n"
)
ORDER = 'gpu_count: 8\nmin_driver: "550"\n'


def _judged(tmp_path: Path, text: str, order: str = ORDER) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """(rule -> (verdict, actual), the notes) of `text` saved alone."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "log.txt").write_text(text)
    notes: list[str] = []
    raw = offline.load_outputs([str(folder / "log.txt")], notes)
    facts = parse_facts(raw)
    (folder / "order.yml").write_text(order)
    checks = offline.judge(facts, offline.load_order(str(folder / "order.yml")))
    return {c.name: (c.verdict, c.actual) for c in checks}, notes


def test_the_real_ci_log_judges_the_banner_and_says_the_csv_was_not_read(tmp_path: Path) -> None:
    judged, notes = _judged(
        tmp_path, FMA.read_text(), 'gpu_model: H100 80GB\ngpu_count: 8\nmin_driver: "580"\n'
    )
    assert judged["min_driver"] == ("pass", "580.105.08")
    assert judged["gpu_count"][0] == judged["gpu_model"][0] == "unverified"  # (no GPU row: cut)
    (note,) = [n for n in notes if "--query-gpu" in n]
    assert "CSV above nvidia-smi's table (6 rows of `index, uuid, memory.used [MiB]`) is not read" in note


@pytest.mark.parametrize("gap", [" ", "\t", " \t"], ids=["space", "tab", "space-tab"])
def test_a_table_behind_a_ci_logs_stamps_is_read(tmp_path: Path, gap: str) -> None:
    """A whole real table, each line behind a GitHub Actions stamp and a space, a tab or both."""
    text = "".join(f"2026-09-03T19:49:04.{n:07d}Z{gap}{line}\n" for n, line in enumerate(H100X8.splitlines()))
    judged, _ = _judged(tmp_path, text)
    assert judged["gpu_count"] == ("pass", "8")
    assert judged["min_driver"] == ("pass", "550.90.07")


KLOG_HEAD = (
    'I0903 19:44:11.116529       1 instance-data.go:39] "Fetched tail of log of instance" worker=0 tail=<\n'
)


@pytest.mark.parametrize("closed", ["", " >\n"], ids=["cut", "closed"])
@pytest.mark.parametrize("lines", [None, 4], ids=["whole", "banner-only"])
def test_a_table_a_klog_record_quotes_is_read_as_a_containers_log(
    tmp_path: Path, closed: str, lines: int | None
) -> None:
    """A real table as a klog record's multi-line value (its lines behind a tab, ` >` after it),
    whole or cut after its banner: read (a banner alone judges min_driver; before, under the
    record's head, it was a quote in a log, not judged), as a container's log: the record quotes
    a pod's log tail, whose GPUs are the container's (review of round 33: 8 x H100 passed
    gpu_count, gpu_model and foreign_processes, where `kubectl logs` of it is unverified)."""
    table = H100X8.splitlines()[:lines]
    text = KLOG_HEAD + "".join(f"\t{line}\n" for line in table) + closed
    order = ORDER + "gpu_model: H100 80GB\n"
    judged, _ = _judged(tmp_path, text, order)
    logs, _ = _judged(tmp_path, "$ kubectl logs my-pod\n" + "\n".join(table) + "\n", order)
    assert judged["min_driver"] == logs["min_driver"] == ("pass", "550.90.07")
    for rule in ("gpu_count", "gpu_model", "foreign_processes"):
        assert judged.get(rule, ("",))[0] == logs.get(rule, ("",))[0], (judged.get(rule), logs.get(rule))
        assert judged.get(rule, ("unverified",))[0] == "unverified", judged[rule]
    if lines is None:
        assert "quotes a container's log" in judged["gpu_count"][1], judged["gpu_count"]
        assert "shows only the GPUs of the container it ran in" in judged["gpu_count"][1]


def test_a_csv_right_above_a_whole_table_is_noted_and_the_table_judged(tmp_path: Path) -> None:
    judged, notes = _judged(tmp_path, CSV + H100X8)
    assert judged["gpu_count"] == ("pass", "8")
    assert any(
        "CSV above nvidia-smi's table (2 rows of `index, uuid, memory.used [MiB]`)" in n for n in notes
    )


def test_words_above_a_table_are_no_csv(tmp_path: Path) -> None:
    """A line of words above the table (a heading) is no CSV: no note, the table read as before."""
    judged, notes = _judged(tmp_path, "GPU status of node 3:\n" + H100X8)
    assert judged["gpu_count"] == ("pass", "8")
    assert not any("--query-gpu" in n for n in notes)


def test_a_csv_alone_is_read_as_before(tmp_path: Path) -> None:
    assert verdicts(tmp_path, "gpus.csv", CSV, "gpu_count: 2\n")["gpu_count"] == ("pass", "2")


# --- a headerless CSV among another program's lines (measure33c 29) ---------------------------

MINER = REAL / "nvidia-smi-query-gpu__noheader-among-miner-lines__8x-rtx-a4000__rainbowminer-1796.txt"
HEADERLESS = "a CSV without its header row"


def _refusal(tmp_path: Path, text: str) -> str:
    folder = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "out.txt").write_text(text)
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(folder / "out.txt")])
    return str(refused.value)


def test_a_miners_headerless_csv_is_refused_with_the_csvs_own_sentence(tmp_path: Path) -> None:
    """RainbowMiner#1796 (real): its `1. nvidia-smi` heading, 8 headerless rows of 12 fields, its
    own `WARNING: No devices available` below: refused as no output this tool reads before."""
    said = _refusal(tmp_path, MINER.read_text())
    assert f"{HEADERLESS} (8 rows of 12 fields among another program's lines)" in said
    assert "--query-gpu=..." in said and "--format=csv" in said


ROWS = MINER.read_text().split("\n")[3:11]  # (the miner's 8 rows)


@pytest.mark.parametrize(
    ("above", "below"),
    [
        ("1. nvidia-smi\n" + "-" * 40 + "\n\n", "\nWARNING: No devices available.\n"),  # the real shape
        ("=== GPU report ===\n", ""),  # a heading alone
        ("", "\nDone in 0.4 s\n"),  # a trailer alone
        ("Status: OK\n", "Status: PAUSED ByError\n (press P to resume)\n"),
    ],
)
def test_the_rows_among_any_lines_get_the_headerless_sentence(tmp_path: Path, above: str, below: str) -> None:
    said = _refusal(tmp_path, above + "\n".join(ROWS[:3]) + "\n" + below)
    assert f"{HEADERLESS} (3 rows of 12 fields" in said


def test_a_line_of_words_with_commas_is_no_csv_block(tmp_path: Path) -> None:
    """Prose with commas (one line each, or not rows of one count) is not called a CSV."""
    text = "Hello, this is a note, with commas.\nAnd another line, also, with some, more.\nEnd.\n"
    assert HEADERLESS not in _refusal(tmp_path, text)
