"""Every answer nvidia-smi gives, merged (facts/gpu_merge.py), judged on real captures: an output
cut short is incomplete through the merge, a refusal is no broken driver, a GPU nvidia-smi cannot
open is a fault, and each field says which format it came from."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts import gpu_set
from gpuonboard.facts.nvidia_smi import QUERY_FIELDS, GpuInfo
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import acceptance, driver_compat, gpu_health
from gpuonboard.steps.checks.ngc import load_releases

REAL = Path(__file__).parents[2] / "fixtures" / "real"
EDITED = Path(__file__).parents[2] / "fixtures" / "edited"
H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
H200_TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
REFUSAL = (EDITED / "nvidia-smi-q-x__provider-policy-refusal__edited.txt").read_text()
H100_ORDER = OrderSpec(gpu_model="H100 80GB", gpu_count=8)
GPU_PROBES = ("nvidia_smi", "nvidia_smi_q", "nvidia_smi_csv", "nvidia_smi_table", "nvidia_smi_list")


def out(text: str, code: int = 0, err: str = "") -> ProbeOutput:
    return ProbeOutput(text, err, code)


def rules(raw: dict[str, ProbeOutput], order: OrderSpec = H100_ORDER) -> dict[str, tuple[str, str]]:
    facts = parse_facts(raw)
    checks = acceptance.evaluate(order, facts) + gpu_health.evaluate(facts)
    return {c.name: (c.verdict, c.actual) for c in checks}


def test_a_table_cut_between_gpu_rows_is_unverified_not_two_gpus() -> None:
    """The plain table states no GPU count: cut after GPU 1 it lists 2 of 8, and said
    'gpu_count fail 2' (NO-GO for a box whose GPUs are all there)."""
    cut = "".join(H100_TABLE.read_text().splitlines(keepends=True)[:13])
    got = rules({"nvidia_smi_table": out(cut)})
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    # (the driver answered with its version and two whole GPU rows: no later cut undoes that)
    assert got["nvidia_driver"][0] == "pass" and "nvidia-smi answered" in got["nvidia_driver"][1]


def test_a_q_cut_inside_a_product_name_is_no_other_model() -> None:
    text = H100_Q.read_text()
    last = text.rindex("Product Name")
    cut = text[: text.index(":", last) + 2]  # "Product Name : " and nothing after it
    got = rules({"nvidia_smi_q": out(cut)})
    assert got["gpu_model"][0] == "unverified", got["gpu_model"]
    assert got["gpu_count"][0] in ("unverified", "pass")
    # (the capture's own GPUs throttle: that failure is real; none of the order's rules fails)
    assert all(got[n][0] != "fail" for n in ("nvidia_driver", "gpu_model", "gpu_count")), got


def test_a_gpu_without_a_device_handle_is_a_fault_not_a_cut_output() -> None:
    """nvidia-smi prints this line in place of a GPU it cannot open (fallen off the bus): the
    -q of 8 attached GPUs then holds 7 records and the line; GPU 4 is unreadable, a failure."""
    text = H100_Q.read_text()
    blocks = text.split("\nGPU 0000")
    gpu4 = blocks[5]
    line = "Unable to determine the device handle for gpu 0000:9B:00.0: Unknown Error\n"
    edited = text.replace("\nGPU 0000" + gpu4, "\n" + line, 1)
    facts = parse_facts({"nvidia_smi_q": out(edited, 15)})
    assert facts.gpu is not None and len(facts.gpu.gpus) == 8 and facts.gpu.complete
    unread = [g for g in facts.gpu.gpus if g.faults]
    assert [(g.pci_bus_id, g.faults) for g in unread] == [
        ("0000:9B:00.0", ("no device handle: Unknown Error",))
    ]
    got = rules({"nvidia_smi_q": out(edited, 15)})
    assert got["gpu_count"] == ("fail", "8 (1 unreadable)")
    assert got["gpu_health"][0] == "fail"


def test_every_format_refused_is_unverified_in_every_step() -> None:
    raw = {name: out("", 6, REFUSAL) for name in GPU_PROBES}
    facts = parse_facts(raw)
    got = rules(raw)
    assert got["nvidia_driver"][0] == "unverified" and "refuses" in got["nvidia_driver"][1]
    assert got["gpu_count"][0] == "unverified"
    health = {c.name: c for c in gpu_health.evaluate(facts)}
    assert "gpu_health" not in health  # (the step's own "nothing checked" check, below)
    nothing = gpu_health.rule_nothing_checked(facts)
    assert nothing.verdict == "unverified" and "refuses nvidia-smi -q -x" in nothing.actual
    ngc = driver_compat.evaluate(facts, "nvcr.io/nvidia/pytorch:24.08-py3", load_releases())
    assert [(c.name, c.verdict) for c in ngc] == [("ngc_driver", "unverified")]


def test_another_commands_text_for_every_argument_is_no_broken_driver() -> None:
    """A replay that answers every nvidia-smi argument with `topo -m`'s matrix (exit 0): no GPU
    listing was read, which says nothing about the driver."""
    topo = (REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt").read_text()
    raw = {name: out(topo) for name in (*GPU_PROBES, "nvidia_topo")}
    got = rules(raw)
    assert got["nvidia_driver"][0] == "unverified", got["nvidia_driver"]
    assert got["gpu_count"][0] == "unverified"


def test_a_refused_xml_and_an_answering_table_merge_with_provenance() -> None:
    raw = {
        "nvidia_smi": out(REFUSAL),  # exit 0: a replay that prints the refusal
        "nvidia_smi_q": out(REAL.joinpath("nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text()),
        "nvidia_smi_table": out(H200_TABLE.read_text()),
    }
    facts = parse_facts(raw)
    assert facts.gpu_evidence is not None
    assert facts.gpu_evidence.answered == ("text", "table")
    assert [r.args for r in facts.gpu_evidence.refusals] == ["-q -x"]
    assert facts.gpu is not None and facts.gpu.source == "text+table"
    got = rules(raw, OrderSpec(gpu_model="H200", gpu_count=1))
    assert got["nvidia_driver"] == ("pass", "driver 580.159.04, CUDA 13.0")
    assert got["gpu_model"][0] == "pass"


def test_each_field_from_the_richest_format_that_read_it() -> None:
    """The H200's XML and its table: every field the XML read comes from it; the table adds
    nothing the XML lacks, so no field names the table."""
    facts = parse_facts(
        {"nvidia_smi": out(H200_XML.read_text()), "nvidia_smi_table": out(H200_TABLE.read_text())}
    )
    assert facts.gpu is not None and facts.gpu.source == "xml+table"
    (gpu,) = facts.gpu.gpus
    assert gpu.provenance == ()  # one format read every field
    csv_head = ",".join(QUERY_FIELDS)
    assert csv_head.startswith("index,name")


def test_mig_devices_under_a_gpu_in_l_mean_mig_is_on() -> None:
    """Only `-L` answered, listing MIG devices under the H200: MIG is on (a warning naming the
    fix), never 'Disabled' for want of a format that says so."""
    listing = (REAL / "nvidia-smi-L__h200-mig__1gpu-5mig__driver590.48.01.txt").read_text()
    got = rules({"nvidia_smi_list": out(listing)}, OrderSpec(gpu_model="H200", gpu_count=1))
    assert got["mig_mode"][0] == "warn", got["mig_mode"]
    assert got["gpu_model"][0] == "pass" and got["gpu_count"] == ("pass", "1 (MIG on: 5 slices)")
    assert got["vram"][0] if "vram" in got else True


def test_a_whole_listing_beside_another_capture_is_no_count() -> None:
    """A complete XML of 4 GPUs beside a `-L` of 8 (another capture; the `-L` lines are built in
    the real captures' line shape): neither count is chosen (the 4 said "fail 4", quietly dropping
    -L's GPUs): the GPU set is a disagreement, named, and the count unverified."""
    xml = (
        Path(__file__).parents[2]
        / "fixtures"
        / "derived"
        / "nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml"
    )
    listing = "".join(
        f"GPU {i}: NVIDIA A100-SXM4-80GB (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n" for i in range(8)
    )
    got = rules(
        {"nvidia_smi": out(xml.read_text()), "nvidia_smi_list": out(listing)},
        OrderSpec(gpu_model="A100 80GB", gpu_count=8),
    )
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert "the nvidia-smi outputs disagree: -L lists GPU" in got["gpu_count"][1]
    assert got["nvidia_driver"][0] == "fail" and "not in -q -x" in got["nvidia_driver"][1]


def test_a_cut_q_with_a_whole_l_is_counted_from_l() -> None:
    """`-q` cut inside GPU 0 ("Attached GPUs : 8") and `-L` listing all 8: the count is 8 (pass),
    the fields of the GPUs -q never reached are unverified where a rule needs them."""
    cut = (
        EDITED / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08__cut-in-gpu0__edited.txt"
    ).read_text()
    listing = "".join(
        f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n" for i in range(8)
    )
    got = rules(
        {"nvidia_smi_q": out(cut), "nvidia_smi_list": out(listing)},
        OrderSpec(gpu_model="H100 80GB", gpu_count=8, vram_bytes=80 * 10**9),
    )
    assert got["gpu_count"] == ("pass", "8")
    assert got["gpu_model"][0] == "pass"
    assert got["vram"][0] == "unverified"


# Formats of two boxes, or of one box that changed between them, in one folder: real captures of
# two boxes, or a real capture with one cell changed (derive.py), each pair judged as
# `invoke facts FOLDER` judges it. No answer is chosen over the other: nvidia_driver fails naming
# both values and their formats, and no rule that reads the GPUs passes.
DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_ORDER = "gpu_model: H200\ngpu_count: 1\nvram: 141GB\n"
DISAGREE = [
    # an HGX board's PCI addresses in both (bus ids alike), another driver each
    (
        (H100_Q, H100_TABLE),
        "driver 535.161.08 in -q, 550.90.07 in the table",
        "gpu_model: H100 80GB\ngpu_count: 8\nvram: 80GB\n",
    ),
    (
        (
            REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
            REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
        ),
        "the CSV query lists GPU 0 (00000000:00:06.0), not in -q",
        H200_ORDER,
    ),
    (
        (H200_Q, REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt"),
        "name NVIDIA H200 in -q, NVIDIA L40S in -L",
        H200_ORDER,
    ),
    (
        (H200_Q, DERIVED / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04__memory-81559__derived.csv"),
        "memory total 143771 MiB in -q, 81559 MiB in the CSV query",
        H200_ORDER,
    ),
    (
        (H200_XML, REAL / "nvidia-smi__h200__8gpu__driver570.158.01.txt"),
        "driver 580.159.04 in -q -x, 570.158.01",
        H200_ORDER,
    ),
]
# formats of one box: they agree, however each spells a PCI address or cuts a name
SAME_BOX = [
    (H200_XML, H200_Q, H200_TABLE, REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv"),
    (H200_Q, DERIVED / "nvidia-smi__h200__1gpu__driver580.159.04__domain-4-digits__derived.txt"),
    (
        REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt",
        REAL / "nvidia-smi-query-gpu__l40s__1gpu__driver595.80__nvenc-load.csv",
        REAL / "nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt",
    ),
    (
        REAL / "nvidia-smi-L__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01.txt",
        REAL / "nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        REAL / "nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3-mig__1gpu__driver590.48.01__idle.csv",
    ),
    (
        REAL / "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
        REAL / "nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv",
        REAL / "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
    ),
]


def csv_edited(tmp_path: Path, box: tuple[Path, ...], cells: dict[str, str]) -> tuple[Path, ...]:
    """`box` with its real CSV's named cells of its one GPU row set to `cells`."""
    source = box[-1]
    rows = list(csv.reader(io.StringIO(source.read_text())))
    header = [h.strip() for h in rows[0]]
    for name, value in cells.items():
        rows[1][header.index(name)] = f" {value}"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    (tmp_path / "edit").mkdir()
    edited = tmp_path / "edit" / source.name
    edited.write_text(text.getvalue())
    return (*box[:-1], edited)


def _judged(
    tmp_path: Path, files: tuple[Path, ...], order: str | None = None
) -> tuple[Facts, dict[str, Check]]:
    folder = tmp_path / "box"
    folder.mkdir()
    for f in files:
        (folder / f.name).write_bytes(f.read_bytes())
    facts = parse_facts(offline.load_outputs([str(folder)]))
    spec = None
    if order:
        (tmp_path / "order.yml").write_text(order)
        spec = offline.load_order(str(tmp_path / "order.yml"))
    return facts, {c.name: c for c in offline.judge(facts, spec)}


@pytest.mark.parametrize(("files", "said", "order"), DISAGREE, ids=[case[0][1].name for case in DISAGREE])
def test_formats_that_disagree_are_named_never_one_chosen(
    tmp_path: Path, files: tuple[Path, ...], said: str, order: str
) -> None:
    facts, got = _judged(tmp_path, files, order)
    driver = got["nvidia_driver"]
    assert driver.verdict == "fail" and said in driver.actual, driver
    assert "the nvidia-smi outputs disagree" in driver.actual
    assert "dmesg" in driver.detail and "one box at one time" in driver.detail
    passed = [n for n in ("gpu_model", "gpu_count", "vram") if got[n].verdict == "pass"]
    assert not passed, {n: got[n].actual for n in passed}
    assert any(said in d for d in facts.summary()["nvidia_smi_disagree"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("files", SAME_BOX, ids=lambda fs: fs[-1].name)
def test_formats_of_one_box_agree_however_spelled(tmp_path: Path, files: tuple[Path, ...]) -> None:
    facts, got = _judged(tmp_path, files)
    assert facts.gpu is not None and facts.gpu.disagreements == ()
    assert facts.summary()["nvidia_smi_disagree"] == []
    assert got["nvidia_driver"].verdict == "pass", got["nvidia_driver"]
    assert len(facts.gpu_evidence.answered) == len(files)  # type: ignore[union-attr]


def test_a_field_only_q_reads_is_kept_beside_the_csv(tmp_path: Path) -> None:
    """-q's remapped rows (the CSV asked none) survive the merge, and the GPU says which format
    gave which field."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alone, _ = _judged(tmp_path / "a", (H200_Q,))
    both, _ = _judged(tmp_path / "b", SAME_BOX[0][1:])
    assert alone.gpu is not None and both.gpu is not None
    (q,), (merged,) = alone.gpu.gpus, both.gpu.gpus
    assert q.remapped_rows_pending is not None
    assert (merged.remapped_rows_pending, merged.remapped_rows_uncorrectable) == (
        q.remapped_rows_pending,
        q.remapped_rows_uncorrectable,
    )


@pytest.mark.parametrize("other", ["0000:07:00.0", "07:00.0", "00000000:07:00.0 ", "0:07:00.0"])
def test_a_pci_address_is_one_however_its_domain_is_written(other: str) -> None:
    """nvidia-smi's 8-digit domain, older drivers' 4 digits, lspci's none: one address (GPU
    numbers told apart, so only the address can match them)."""
    a = GpuInfo(index=0, name="", pci_bus_id="00000000:07:00.0")
    assert gpu_set._same(a, GpuInfo(index=1, name="", pci_bus_id=other))
    assert not gpu_set._same(a, GpuInfo(index=0, name="", pci_bus_id="00000000:08:00.0"))


@pytest.mark.parametrize(
    ("topo", "verdict"),
    [
        ("nvidia-smi-topo-m__h200__8gpu-10nic.txt", "unverified"),
        ("nvidia-smi-topo-m__h200__1gpu__driver580.159.04.txt", "pass"),
    ],
)
def test_a_matrix_of_more_gpus_than_listed_is_another_boxs(tmp_path: Path, topo: str, verdict: str) -> None:
    """The 1-GPU H200's whole `-q` beside an 8-GPU H200 box's `topo -m` (NV18 everywhere) passed
    `interconnect` as NVLink, a link the box cannot have; its own matrix passes."""
    order = "gpu_model: H200\ngpu_count: 1\ninterconnect: pcie\n"
    _, got = _judged(tmp_path, (H200_Q, REAL / topo), order)
    assert got["interconnect"].verdict == verdict, got["interconnect"]
    if verdict == "unverified":
        assert got["interconnect"].actual.startswith(
            "unknown: nvidia-smi topo -m shows 8 GPUs, nvidia-smi lists 1"
        )


def _h200_with_cuda(tmp_path: Path, table_says: str, q_says: str) -> tuple[Facts, dict[str, Check]]:
    """The H200 box's real table and -q (driver 580.159.04, CUDA 13.0 in both), each with its CUDA
    version replaced by the words given (as printed in its own format), nothing else changed."""
    table = H200_TABLE.read_text().replace("CUDA Version: 13.0     |", f"CUDA Version: {table_says:<7}|")
    q_text = H200_Q.read_text()
    assert q_text.count(": 13.0\n") == 1
    (tmp_path / "edited").mkdir()
    (tmp_path / "edited" / H200_TABLE.name).write_text(table)
    (tmp_path / "edited" / H200_Q.name).write_text(q_text.replace(": 13.0\n", f": {q_says}\n"))
    return _judged(tmp_path, (tmp_path / "edited" / H200_TABLE.name, tmp_path / "edited" / H200_Q.name))


def test_a_table_finding_no_cuda_beside_a_q_reading_one_disagrees(tmp_path: Path) -> None:
    """The H200 table saying `CUDA Version: N/A` (no CUDA driver) beside its -q's 13.0: the merge
    kept 13.0 and nvidia_driver passed silently; "no CUDA driver" is an answer: the outputs
    disagree (two boxes, or a box that changed between calls)."""
    facts, got = _h200_with_cuda(tmp_path, "N/A", "13.0")
    driver = got["nvidia_driver"]
    assert driver.verdict == "fail", driver
    assert "the nvidia-smi outputs disagree: CUDA 13.0 in -q, N/A in the table" in driver.actual


def test_no_cuda_said_in_two_formats_words_is_one_answer(tmp_path: Path) -> None:
    # the table's N/A and -q's Not Found both say no CUDA driver: no disagreement, the box fails
    facts, got = _h200_with_cuda(tmp_path, "N/A", "Not Found")
    assert facts.gpu is not None and facts.gpu.disagreements == ()
    assert got["nvidia_driver"].verdict == "fail" and "disagree" not in got["nvidia_driver"].actual
