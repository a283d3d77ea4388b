"""Real captures cut at a line end (cut sweep 23): a session dropped or a scroll-back that ended
between two lines leaves an output no sign of its own tells from a whole one (a `--query-gpu`
CSV's rows, `-L`'s lines, a kernel log). What the tool can know, it must use:

- A: another format of the same box that lists every GPU of the cut one and more. The CSV of
  the HPE A100 box cut after its first row, beside the box's whole table, failed gpu_count as
  "1" and passed ecc_mode "on all 1 GPUs": the narrower format was taken as the GPU set because
  it ranks higher. The set is now the widest, and the report an incomplete probe.
- B: a fault read from an output that says it is cut short (a table without its closing rows,
  a `-q` listing fewer GPUs than `Attached GPUs`) stays a fault, but its count is of what was
  read: `Disabled on all 2 GPUs` of the 3-GPU M60/P40 table, `4 x NVIDIA A30` of the 8-GPU one,
  now say so.
- C: an `nvlink -s` block cut at a line end counted the links it never listed: the V100's GPU 3
  cut after its link 3 failed as "3 of 6 links active" where 4 of 6 are.

The sweep over every real capture of every kind judges each cut beside the whole, offline (as
`invoke facts FILE` reads a saved file) and as the live probe's parser reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory.model import OrderSpec

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# one box, three formats (tests/fixtures/real/SOURCES.md: HPE DL380 Gen11, 2 x A100-PCIE-40GB)
HPE = (
    "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt",
    "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
    "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt",
)
HPE_ORDER = "gpu_model: A100 40GB\ngpu_count: 2\n"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def judged(folder: Path, files: dict[str, str], order: str) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of the files saved in one folder (one box), judged offline."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(folder / name) for name in files]))
    return {
        c.name: (c.verdict, c.actual)
        for c in offline.judge(facts, offline.load_order(str(folder / "order.yml")))
    }


# --- A: a format cut at a line end beside a whole one of the same box --------------------------


def test_a_csv_cut_after_its_first_row_beside_the_whole_table_is_no_count(tmp_path: Path) -> None:
    table, csv = real(HPE[0]), real(HPE[1])
    whole = judged(tmp_path / "whole", {HPE[0]: table, HPE[1]: csv}, HPE_ORDER)
    assert whole["gpu_count"] == ("pass", "2")
    cut = "".join(lines_of(csv)[:2])  # the header and GPU 0's row: a whole CSV to look at
    got = judged(tmp_path / "cut", {HPE[0]: table, HPE[1]: cut}, HPE_ORDER)
    verdict, actual = got["gpu_count"]
    assert verdict == "unverified", actual
    assert actual == (
        "2 listed; incomplete probe: the `nvidia-smi --query-gpu` CSV lists 1 GPU(s) but the plain"
        " `nvidia-smi` table lists 2 (an output cut short, or captures of other times)"
    )
    assert got["ecc_mode"][0] == "unverified" and "all 2 GPUs" in got["ecc_mode"][1], got["ecc_mode"]


def test_every_line_cut_of_a_format_beside_another_of_its_box_is_never_a_count(tmp_path: Path) -> None:
    """Each of the HPE box's three formats, cut at every line end, judged beside each other one
    whole: gpu_count never fails, and no rule passes, fails or warns where the two whole ones do
    not."""
    moved = []
    for name in HPE:
        lines = lines_of(real(name))
        for other in (o for o in HPE if o != name):
            base = judged(tmp_path / f"{name}-{other}", {name: real(name), other: real(other)}, HPE_ORDER)
            assert base["gpu_count"] == ("pass", "2"), (name, other)
            for n in range(1, len(lines)):
                files = {name: "".join(lines[:n]), other: real(other)}
                try:
                    got = judged(tmp_path / f"{name}-{other}-{n}", files, HPE_ORDER)
                except UsageError:
                    continue  # (a few lines offline refuses with a sentence naming the file)
                for rule, (verdict, actual) in got.items():
                    was = base.get(rule, ("(no row)", ""))[0]
                    if verdict != was and verdict != "unverified":
                        moved.append(
                            f"{name}[:{n} lines] + {other}: {rule} {was} -> {verdict} ({actual[:90]})"
                        )
    assert not moved, "\n".join(moved[:10])


# --- B: a fault read from an output cut short counts the GPUs read ------------------------------

TABLE_CUTS = [
    # (capture, lines kept, rule, what the cut read)
    ("nvidia-smi__tesla-m60-p40__3gpu__driver418.240__spaces-collapsed.txt", 11, "ecc_mode", "on all 2 GPUs"),
    ("nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt", 27, "gpu_model", "4 x NVIDIA A30"),
    ("nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt", 27, "persistence_mode", "GPU 4"),
]


@pytest.mark.parametrize(("name", "keep", "rule", "said"), TABLE_CUTS)
def test_a_fault_of_a_table_cut_short_is_of_what_was_read(
    tmp_path: Path, name: str, keep: int, rule: str, said: str
) -> None:
    order = "gpu_model: NVIDIA A100\ngpu_count: 8\n"
    whole = verdicts(tmp_path, name, real(name), order)[rule]
    verdict, actual = verdicts(tmp_path, name, "".join(lines_of(real(name))[:keep]), order)[rule]
    assert verdict == whole[0] == ("warn" if rule == "persistence_mode" else "fail")
    assert said in actual and "incomplete probe: nvidia-smi's output lists" in actual, actual


# --- C: an nvlink -s block cut at a line end ---------------------------------------------------


def test_an_nvlink_block_cut_at_a_line_counts_only_the_links_listed(tmp_path: Path) -> None:
    name = "nvidia-smi-nvlink-s__v100-sxm2-32gb__1of-n-gpu__2-inactive.txt"
    order = "interconnect: nvlink\n"
    whole = verdicts(tmp_path, name, real(name), order)["nvlink_links"]
    assert whole[0] == "fail" and whole[1].startswith("GPU 3: 4 of 6 links active, inactive link(s) 3, 5")
    verdict, actual = verdicts(tmp_path, name, "".join(lines_of(real(name))[:5]), order)["nvlink_links"]
    assert verdict == "fail"  # (link 3 is down: a fault the cut kept)
    assert actual.startswith("GPU 3: 3 of the 4 links listed active (6 on this model), inactive link(s) 3")


# --- the sweep: every real capture of every kind, cut at line ends ------------------------------


def _captures() -> list[Path]:
    # (round 37: a --query-gpu CSV among prose is capped at unverified by the prose around it, as a
    # document may quote it; a cut that keeps the CSV's lines alone leaves no prose, a plain CSV:
    # api/test_offline_csv_prose_r37.py)
    return sorted(
        p for p in REAL.iterdir() if p.is_file() and p.name != "SOURCES.md" and "prose" not in p.name
    )


def _order_of(facts: Facts) -> OrderSpec:
    """An order the whole capture meets in each thing it shows: its GPUs' count, model, memory
    and driver; its CPU cores."""
    kw: dict[str, object] = {}
    gpu = facts.gpu
    if gpu is not None and gpu.gpus:
        names = [g.name for g in gpu.gpus if g.name]
        memory = [g.memory_total_mib for g in gpu.gpus if g.memory_total_mib]
        kw.update(
            gpu_model=min(names, key=len) if names else None,
            gpu_count=len(gpu.gpus),
            vram_bytes=min(memory) * 2**20 // 10**9 * 10**9 if memory else None,
            min_driver=gpu.driver_version.split(".")[0] if gpu.driver_version else None,
        )
    if facts.cpu is not None and facts.cpu.physical_cores:
        kw["cpu_cores"] = facts.cpu.physical_cores
    return OrderSpec(**kw)  # type: ignore[arg-type]


def _cuts(text: str) -> list[tuple[str, str]]:
    """The first N lines for a few N, and the last line kept cut mid-line."""
    lines = lines_of(text)
    n = len(lines)
    points = sorted({k for k in (1, 2, n // 3, n // 2, 2 * n // 3, n - 1) if 0 < k < n})
    cuts = [(f"{k} lines", "".join(lines[:k])) for k in points]
    if points and len(lines[points[-1]].strip()) > 4:
        last = lines[points[-1]]
        cuts.append(
            (f"{points[-1]} lines + half a line", "".join(lines[: points[-1]]) + last[: len(last) // 2])
        )
    return cuts


def _loaded(path: Path, text: str) -> tuple[str, Facts] | None:
    """(the kind offline judging reads it as, its facts), None where offline refuses it. The
    kind is "" where the live probe never reads such an output: none, or one a command line above
    it says is part of the box or a container's view (`$ kubectl logs POD`), which the probe on
    the box never runs."""
    path.write_text(text, encoding="utf-8")
    try:
        outputs = offline.load_outputs([str(path)])
    except UsageError:
        return None
    given = [k for k, o in outputs.items() if o.stderr != "not probed" and not (o.in_container or o.partial)]
    return (given[0] if given else ""), parse_facts(outputs)


def _judged(facts: Facts, order: OrderSpec) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


# A cut at a line end no sign tells from a whole output, where the tool has nothing else to go
# by: a kernel log ends where it ends (the lines a cut left out are the log of a later moment),
# `nvlink -s` cut to its first line is byte for byte a 1-GPU `nvidia-smi -L`, and cut after a
# GPU's whole block lists that GPU only; a CSV log of samples cut to its header and one row is a
# 1-GPU CSV. Each is named here, never a kind or a file skipped whole. Since round 32 an `nvlink
# -s` (or `-e`) alone lists its GPUs by its GPU lines, as `-L`: its cut to its first GPU's line
# or block names whole GPUs, and no sign tells it from a listing of those GPUs (an elided whole
# is unverified where the cut passes).
INDISTINGUISHABLE = {
    ("kernel_log", "gpu_xid"),
    ("kernel_log", "nvswitch_sxid"),
    ("kernel_log", "host_hw_errors"),
    ("nvidia_smi_list", "ecc_mode"),
    ("nvidia_smi_list", "ecc_uncorrectable"),
    ("nvidia_smi_list", "memory_repair"),
    ("nvidia_smi_list", "mig_mode"),
    ("nvidia_smi_list", "gpu_model"),
    ("nvidia_smi_list", "gpu_count"),
    ("nvidia_nvlink", "gpu_model"),
    ("nvidia_nvlink", "gpu_count"),
    ("nvidia_nvlink_errors", "gpu_model"),
    ("nvidia_nvlink_errors", "gpu_count"),
    ("nvidia_nvlink", "nvlink_links"),
}


def _may_pass(kind: str, rule: str, actual: str, cut: str) -> bool:
    """A pass of a cut the whole does not pass that is no wrong pass: an INDISTINGUISHABLE one, a
    CSV of one row, or a GPU count met by the GPUs read of a listing that says it is cut (at
    least that many: `1 listed; incomplete probe: nvidia-smi says 4 attached but lists 1`) or of
    a view of some GPUs (`nvidia-smi ... -i 0`: `1 listed; at least 1 on the box`, round 40)."""
    return (
        (kind, rule) in INDISTINGUISHABLE
        or (kind == "nvidia_smi_csv" and len(lines_of(cut)) == 2)
        or (rule == "gpu_count" and ("listed; incomplete probe:" in actual or "on the box" in actual))
    )


# the GPU rules whose fault names a count of GPUs (or links) the output read
COUNTING = ("gpu_model", "ecc_mode", "persistence_mode", "mig_mode", "foreign_processes", "nvlink_links")


def _moved(
    kind: str, cut: str, facts: Facts, whole: dict[str, tuple[str, str]], got: dict[str, tuple[str, str]]
) -> list[str]:
    """What a cut judges wrongly against its whole: a pass the whole has not; a fault of an
    output that says it is cut short whose count (another than the whole's) is not said to be
    of what was read."""
    cut_short = facts.gpu is not None and not facts.gpu.complete
    out = []
    for rule, (verdict, actual) in got.items():
        was, said = whole.get(rule, ("(no row)", ""))
        if verdict == "pass" and was != "pass" and not _may_pass(kind, rule, actual, cut):
            out.append(f"{rule} {was} -> pass ({actual[:90]})")
        fault = cut_short and verdict in ("fail", "warn") and rule in COUNTING and actual != said
        if fault and "incomplete probe" not in actual and "not listed" not in actual:
            out.append(f"{rule} {was} -> {verdict} ({actual[:90]}), not said to be of what was read")
    return out


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
def test_no_line_cut_of_a_real_capture_is_judged_beyond_what_it_read(tmp_path: Path, path: Path) -> None:
    """Offline and live: a rule the whole capture does not pass is never passed by a cut of it
    (but where `_may_pass` says why); a fault read from a cut that says it is cut short says its
    count is of what was read."""
    try:
        text = path.read_text(encoding="utf-8")
        loaded = _loaded(tmp_path / path.name, text)
    except (UnicodeDecodeError, UsageError):
        pytest.skip("not read whole as text")
    if loaded is None:
        pytest.skip("refused whole by offline judging (SOURCES.md says why)")
    _, whole_facts = loaded
    order = _order_of(whole_facts)
    whole = _judged(whole_facts, order)
    moved = []
    for label, cut in _cuts(text):
        got = _loaded(tmp_path / path.name, cut)
        if got is None:
            continue
        kind, facts = got
        live = parse_facts({kind: ProbeOutput(cut, "", 0)}) if kind else facts
        for how, read in (("offline", facts), ("live", live)):
            moved += [
                f"{how} {label} ({kind}): {m}" for m in _moved(kind, cut, read, whole, _judged(read, order))
            ]
    assert not moved, "\n".join(moved[:8])
