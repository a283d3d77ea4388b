"""`invoke plan`: bits vs bytes in --bandwidth, the cards' real capacity (GiB, not 10^9 B), and
the advice when a job needs several servers or no card at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.steps.prove import planner

GB = 10**9
REAL = Path(__file__).parents[3] / "fixtures" / "real"


@pytest.mark.parametrize(
    ("text", "bytes_per_second"),
    [
        # b / bit = bits, whatever the case of the prefix: how links are sold and ISPs write them
        ("100Mb/s", 12.5e6),
        ("1Gb/s", 125e6),
        ("100Mbps", 12.5e6),
        ("100mbps", 12.5e6),
        ("100Mbit", 12.5e6),
        ("100 Mbit/s", 12.5e6),
        ("1Gbit", 125e6),
        # B / byte = bytes
        ("50MB/s", 50e6),
        ("50MBps", 50e6),
        ("1 GByte/s", 1e9),
        ("20MiB/s", 20 * 2**20),
    ],
)
def test_bandwidth_b_is_bits_and_B_is_bytes(text: str, bytes_per_second: float) -> None:
    """`100Mb/s` was read case-blind as 100 MB/s: an upload ETA 8x too short (16m40s for 100 GB
    over a 100 Mbit/s link that needs 2h13m), and `50MBps` as megabits, 8x too long."""
    assert planner.parse_bandwidth(text) == pytest.approx(bytes_per_second)


def test_upload_eta_over_a_100_megabit_link_written_mb_per_s() -> None:
    plan = planner.make_plan("7B", dataset_size="100GB", bandwidth="100Mb/s")
    assert plan.upload_s == pytest.approx(8000)
    assert planner.format_duration(plan.upload_s or 0) == "2h 13m 20s"


@pytest.mark.parametrize("text", ["100M", "100MB", "Mbit", "1" + "0" * 400 + "Mbit"])
def test_bandwidth_without_a_unit_or_absurd_is_one_sentence(text: str) -> None:
    with pytest.raises(UsageError) as exc:
        planner.parse_bandwidth(text)
    assert exc.value.message.startswith(f"--bandwidth {text!r} is not a rate like 100Mbit")
    assert "B or byte means bytes" in exc.value.message


def _nvidia_smi_total_mib(capture: str) -> int:
    """memory.total of GPU 0 in a real `nvidia-smi` table capture ('0MiB / 143771MiB')."""
    import re

    m = re.search(r"\d+\s*MiB\s*/\s*(\d+)\s*MiB", (REAL / capture).read_text())
    assert m, capture
    return int(m.group(1))


def test_card_capacity_is_what_nvidia_smi_reports_not_datasheet_gb_as_10_9() -> None:
    """Every captured card reports more than its datasheet "GB" x 10^9 bytes (an "80GB" HBM card has
    80 GiB); the planner fitted jobs into the smaller figure."""
    cards = {c.card: c for c in planner.load_catalogue()}
    for card, capture in (
        ("H200 SXM 141GB", "nvidia-smi__h200__8gpu__driver570.158.01.txt"),
        ("H100 SXM 80GB", "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"),
        ("A100 SXM 80GB", "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"),
        ("A100 SXM 40GB", "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt"),
        ("L40S 48GB", "nvidia-smi__l40s__1gpu__driver550.127.05.txt"),
        ("A10 24GB", "nvidia-smi__a10__1gpu__driver550.90.12.txt"),
        ("RTX 4090 24GB", "nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt"),
        ("RTX 3090 24GB", "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"),
    ):
        mib = _nvidia_smi_total_mib(capture)
        assert cards[card].capacity_bytes == mib * 2**20 > cards[card].memory_gb * GB, card
    # a card without a capture falls back to the datasheet figure, below the captured ones
    assert cards["A800 SXM 80GB"].capacity_bytes == 80 * GB


def test_7b_full_fits_one_h200_not_two() -> None:
    """7B full, bf16, AdamW, seq 2048: 145.56 GB on one GPU; an H200 has 143771 MiB = 150.76 GB.
    Read as 141 x 10^9 B it did not fit and the plan recommended 2 x H200 (twice the rent)."""
    plan = planner.make_plan("7B")
    assert plan.memory.total_one_gpu == 145_557_943_296
    best = plan.best()
    assert best is not None and (best.count, best.card.card) == (1, "H200 SXM 141GB")
    assert plan.nvlink.startswith("no")
    # the 80 GB cards need three: each keeps its own 31.56 GB of activations, so the 112 GB of
    # states share 85.52 - 2 - 31.56 = 51.96 GB per card: 112 / 51.96 = 2.16
    h100 = next(f for f in plan.fits if f.card.card == "H100 SXM 80GB")
    assert h100.count == 3


def test_more_than_8_cards_is_several_servers_per_server_host_and_cost_note() -> None:
    plan = planner.make_plan("80B", checkpointing=True, hours="72")  # 1280 GB of states
    best = plan.best()
    assert best is not None and best.count == 9 and best.card.card == "H200 SXM 141GB"
    assert plan.host.servers == 2
    assert plan.host.cpu_cores == 20  # 5 cards on each server, 4 cores per card (was 36 on "one host")
    assert plan.notes[0].startswith("9 x H200 SXM 141GB is more than one 8-GPU server: 2 servers")
    assert "each vendor cost is for one box, so 2 boxes cost 2 times that" in plan.notes[0]
    assert plan.to_json()["host"]["servers"] == 2


def test_no_card_fits_says_so() -> None:
    plan = planner.make_plan("1e13")
    assert plan.best() is None
    assert plan.notes[0].startswith("no card in the catalogue holds this job on 512 cards or fewer")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": "1e400"}, "--params '1e400' is above 10T parameters; give a count like 7B or 70B."),
        (
            {"params": "7B", "hours": "1e308"},
            "--hours '1e308' is more than 100 years (876,000 hours); give the rental hours.",
        ),
        (
            {"params": "7B", "dataset_size": "120"},
            "--dataset-size '120' has no unit; write it with one, e.g. 120GB (10^9 bytes) or 120GiB.",
        ),
    ],
)
def test_bad_inputs_that_crashed_or_misled(kwargs: dict[str, str], message: str) -> None:
    """1e400 and 1e308 hours were 'internal error (OverflowError)' (exit 70); a bare dataset size
    was 120 bytes: an upload of 0 s and no disk for the data."""
    with pytest.raises(UsageError) as exc:
        planner.make_plan(**kwargs)  # type: ignore[arg-type]
    assert exc.value.message == message


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_table_and_json_show_the_capacity_and_the_servers() -> None:
    out = _cli("plan", "--params", "80B", "--checkpointing", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    h200 = doc["recommended"]
    assert (h200["card"], h200["min_count"], h200["capacity_gb"]) == ("H200 SXM 141GB", 9, 150.8)
    assert h200["capacity_from"] == "nvidia-smi memory.total"
    table = _cli("plan", "--params", "1e13")
    assert table.returncode == 0, table.stderr
    assert "recommended: none: no card fits on 512 cards or fewer" in table.stdout
    bad = _cli("plan", "--params", "1e400")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "error: --params '1e400' is above 10T parameters; give a count like 7B or 70B."
    )


def _reader_gone(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with its stdout a pipe whose reader has already gone (`... | head -1`)."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)


def test_plan_json_to_a_reader_that_left_exits_141_quietly() -> None:
    """README, exit codes: 141 quietly. `plan --json | head -1` said 'internal error
    (BrokenPipeError ...)' and exited 70."""
    r = _reader_gone("plan", "--params", "7B", "--json")
    assert (r.returncode, r.stderr.decode()) == (141, "")


def test_recommended_is_the_smallest_card_that_holds_the_job() -> None:
    """ "Most memory first" recommended 1 x H200 for a 350M model (12.9 GB) and for the README's
    70B QLoRA example, which the README says fits "one 48 GB L40S"."""
    small = planner.make_plan("350M").best()
    assert small is not None and small.count == 1 and small.card.memory_gb == 24
    qlora = planner.make_plan("70B", mode="qlora", checkpointing=True).best()
    assert qlora is not None and (qlora.count, qlora.card.card) == (1, "L40S 48GB")
    lora = planner.make_plan("13B", mode="lora").best()
    assert lora is not None and (lora.count, lora.card.card) == (1, "H100 SXM 80GB")


def test_a_multi_gpu_full_fine_tune_is_recommended_nvlink_cards() -> None:
    """The plan says "order NVLink" for a multi-GPU full fine-tune: of two cards that both need 2,
    the recommended one has NVLink, though the PCIe one is smaller."""

    def card(name: str, gb: float, links: tuple[str, ...]) -> planner.Card:
        return planner.Card(name, gb, 100.0, links, None, "datacenter", "https://example.invalid/")

    catalogue = (card("PCIe 60GB", 60, ("pcie",)), card("SXM 70GB", 70, ("nvlink", "pcie")))
    # 80 GB states + 0.47 GB activations (checkpointed) on each card: 2 of either
    plan = planner.make_plan("5B", checkpointing=True, catalogue=catalogue)
    assert [f.count for f in plan.fits] == [2, 2]
    best = plan.best()
    assert best is not None and best.card.card == "SXM 70GB" and plan.nvlink.startswith("yes")
    assert plan.fits[1].note == "PCIe only: slower"
    # an adapter job needs no NVLink: the smaller card first
    lora = planner.make_plan("5B", mode="lora", catalogue=catalogue)
    assert [f.card.card for f in lora.fits][0] == "PCIe 60GB"
