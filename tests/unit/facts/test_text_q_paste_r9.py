"""`nvidia-smi -q` pasted flat (runs of spaces collapsed by a chat or a page, leading whitespace
stripped by an editor) or soft-wrapped at a page's width, and a table whose rows could not be
read below a lost GPU's line, are not misread (paste sweep 8, findings 3, 9, 10; cut sweep L).

Every real -q text capture, damaged in the test as a paste damages it and read as `invoke facts`
reads a saved file (through the paste normaliser): a process list whose entries lost their indent
was read as "known and empty" (foreign_processes PASS "none" on a box where someone's python
runs); a product name wrapped at 80 columns was read as cut ("RTX 4080" for "RTX 4080 SUPER":
gpu_model FAIL); a table cut after its banner below "Unable to determine the device handle for
GPU1" read as a failed nvidia-smi (nvidia_driver FAIL). Each test fails on the code before."""

from __future__ import annotations

import functools
import re
import textwrap
from pathlib import Path

import pytest

from gpuonboard.api import offline, paste
from gpuonboard.facts.nvidia_smi import GpuReport, parse_any
from gpuonboard.facts.nvidia_smi.text_q import _TEXT_ELIDED

from ..offline_judge import column_wrapped, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (a -q cut inside its first record, ollama issue #6364: tested in steps/checks/test_gpu_rules.py;
# an author's excerpt from a GPU's record on, no header, its page already flattened (round 36): no
# whole capture to damage, read as a -q fragment in facts/test_nvidia_smi_q_excerpt_r36.py)
Q_TEXTS = sorted(
    p.name
    for p in (*REAL.glob("nvidia-smi-q__*.txt"), *REAL.glob("nvidia-smi-q-d-*.txt"))
    if "__cut-" not in p.name and "-excerpt__" not in p.name
)
H200_LOAD = "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
RTX4090_BUSY = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt"
RTX4080_SUPER = "nvidia-smi-q__geforce-rtx-4080-super__1gpu__driver595.71.05__nvenc-load.txt"
RTX2080_SUPER = "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt"
LOST_GPU_TABLE = "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt"


def real(name: str) -> str:
    return (REAL / name).read_text()


def collapsed(text: str) -> str:
    """Runs of spaces as one (a chat app, an HTML page)."""
    return re.sub(r" {2,}", " ", text)


def stripped(text: str) -> str:
    """Every line's leading whitespace removed (an editor, a forum)."""
    return "\n".join(line.lstrip() for line in text.split("\n"))


def word_wrapped(text: str, width: int) -> str:
    """Every line longer than `width` broken at the last space before it, the space dropped (a
    mail client's or an editor's word wrap)."""
    out: list[str] = []
    for line in text.split("\n"):
        out += [line] if len(line) <= width else textwrap.wrap(line, width, replace_whitespace=False)
    return "\n".join(out)


DAMAGE = {
    "collapsed": collapsed,
    "stripped": stripped,
    "wrapped80": lambda t: column_wrapped(t, 80),
    "wrapped120": lambda t: column_wrapped(t, 120),
}


def read(text: str) -> GpuReport:
    """The -q text as offline judging reads a saved paste (normalised first)."""
    return parse_any(paste.normalise(text))


@functools.cache
def whole(name: str) -> GpuReport:
    report = read(real(name))
    # (a whole capture reads whole; one its author shortened with `...` says so, and only that)
    assert (report.complete and not report.gap) or report.gap == _TEXT_ELIDED, report.warnings
    return report


def order_of(name: str) -> str:
    """An order the whole capture meets: its first GPU's model and its GPU count."""
    gpus = whole(name).gpus
    return (
        f'gpu_model: "{gpus[0].name}"\ngpu_count: {len(gpus)}' if gpus[0].name else f"gpu_count: {len(gpus)}"
    )


def test_a_q_pasted_flat_is_incomplete_and_never_lists_no_process() -> None:
    """Every real -q, runs of spaces collapsed or indents stripped. Before: the flat paste read as
    whole, and a 'Processes' header whose 'Process ID' lines lost their indent read as an empty
    list ("known and empty")."""
    problems = []
    for name in Q_TEXTS:
        for damage in ("collapsed", "stripped"):
            report = read(DAMAGE[damage](real(name)))
            if report.complete or not report.gap.startswith("the nvidia-smi -q text lost its indentation"):
                problems.append((name, damage, "read as whole", report.gap))
            for before, after in zip(whole(name).gpus, report.gpus, strict=True):
                # the entries at the header's own indent are read; the list is not known whole
                pids = ([p.pid for p in before.processes], before.processes_known and not before.processes)
                if ([p.pid for p in after.processes], after.processes_known) != pids:
                    problems.append((name, damage, before.index, after.processes, after.processes_known))
    assert not problems


@pytest.mark.parametrize(
    ("name", "damage", "pids"),
    [
        (H200_LOAD, "collapsed", ("pid 10291 /root/tools/memhog", "pid 10293", "pid 10309 ./gpu_burn")),
        (
            RTX4090_BUSY,
            "stripped",
            ("GPU 1: pid 1285135 /usr/bin/python", "GPU 4: pid 1292330 /usr/bin/python"),
        ),
    ],
)
def test_someones_job_on_a_flat_q_still_fails_foreign_processes(
    tmp_path: Path, name: str, damage: str, pids: tuple[str, ...]
) -> None:
    """Before: foreign_processes PASS "none" on the box where memhog/gpu_burn or python runs."""
    verdict, actual = verdicts(tmp_path, name, DAMAGE[damage](real(name)), order_of(name))[
        "foreign_processes"
    ]
    assert verdict == "fail"
    assert all(pid in actual for pid in pids)


def test_a_pasted_q_never_claims_what_the_whole_does_not(tmp_path: Path) -> None:
    """foreign_processes and gpu_model of every real -q pasted flat or wrapped at 80/120 columns:
    the whole capture's verdict, or unverified; never another pass/fail/warn. Before: PASS "none"
    for FAIL (flat), FAIL "RTX 4080" for the SUPER (wrapped)."""
    problems = []
    for name in Q_TEXTS:
        text = real(name)
        before = verdicts(tmp_path, name, text, order_of(name))
        for damage, paste_damage in DAMAGE.items():
            after = verdicts(tmp_path, name, paste_damage(text), order_of(name))
            for rule in ("foreign_processes", "gpu_model"):  # (-q -d ECC names no model: no row)
                was, now = before.get(rule, ("no row", "")), after.get(rule, ("no row", ""))
                if now[0] not in (was[0], "unverified"):
                    problems.append((name, damage, rule, was, now))
    assert not problems


def test_a_q_wrapped_at_a_column_reads_as_the_whole() -> None:
    """Every real -q wrapped at 80 and 120 columns: a value wrapped onto the next line (column 0
    there) is the end of the value above it, not a new section. Where a value cannot be rejoined
    for sure it is unread and the report incomplete; every name read is the whole one. Before:
    'RTX 4080' / ' SUPER' read as the name 'NVIDIA GeForce RTX 4080' and a section 'SUPER'."""
    problems = []
    for name in Q_TEXTS:
        for width in (80, 120):
            report = read(column_wrapped(real(name), width))
            names = [g.name for g in report.gpus]
            if names not in ([g.name for g in whole(name).gpus], [""] * len(names)):
                problems.append((name, width, names))
            if report.complete and report != whole(name):
                problems.append((name, width, "complete but not the whole report"))
    assert not problems


def test_the_4080_super_wrapped_at_80_columns_is_the_4080_super(tmp_path: Path) -> None:
    """The sweep's example: `Product Name : NVIDIA GeForce RTX 4080` / ` SUPER`."""
    report = read(column_wrapped(real(RTX4080_SUPER), 80))
    assert report.complete
    assert [g.name for g in report.gpus] == ["NVIDIA GeForce RTX 4080 SUPER"]
    pasted = column_wrapped(real(RTX4080_SUPER), 80)
    got = verdicts(tmp_path, RTX4080_SUPER, pasted, "gpu_model: RTX 4080 SUPER")
    assert got["gpu_model"] == ("pass", "1 x NVIDIA GeForce RTX 4080 SUPER")


@pytest.mark.parametrize("name", [RTX4080_SUPER, RTX2080_SUPER])
def test_a_word_wrapped_name_is_unread_not_glued(tmp_path: Path, name: str) -> None:
    """A word wrap drops the space it breaks at: 'RTX 4080' / 'SUPER' may be 'RTX 4080SUPER' or
    'RTX 4080 SUPER', so the name is unread (gpu_model unverified), never another model. Before:
    the name read as 'NVIDIA GeForce RTX 4080' and gpu_model failed."""
    text = word_wrapped(real(name), 80)
    report = read(text)
    assert not report.complete
    assert [g.name for g in report.gpus] == [""]
    assert (
        "the -q value 'Product Name' was soft-wrapped where a space may have been lost: not read"
        in report.warnings
    )
    assert verdicts(tmp_path, name, text, order_of(name))["gpu_model"][0] == "unverified"


def test_a_q_cut_after_its_processes_header_lists_no_empty_list() -> None:
    """Before: a -q ending at '    Processes' (the entries cut off) read as whole with a known,
    empty process list. Since: every section before it was read (complete in its GPU facts),
    the list open."""
    text = real(H200_LOAD)
    cut = text[: text.index("    Processes\n") + len("    Processes\n")]
    report = read(cut)
    assert report.complete
    assert [(g.processes, g.processes_known, g.processes_open) for g in report.gpus] == [((), False, True)]


# (a table wrapped at 80 columns is read whole since round 23: api/test_offline_paste.py)
@pytest.mark.parametrize("damage", ["cut after 292 characters", "cut after its header rule"])
def test_a_table_whose_rows_cannot_be_read_below_a_lost_gpus_line_is_no_failed_driver(
    tmp_path: Path, damage: str
) -> None:
    """The banner gives the driver (it answered); the rows were cut off or mangled. The lost
    GPU's line names one GPU: nvidia_driver is unverified, not "nvidia-smi failed". Before: the
    file was loaded as a failed nvidia-smi and nvidia_driver failed."""
    text = real(LOST_GPU_TABLE)
    pasted = text[:292] if "292" in damage else text[: text.index("|====") + 92]
    assert verdicts(tmp_path, LOST_GPU_TABLE, text, "gpu_count: 4")["nvidia_driver"][0] == "pass"
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / LOST_GPU_TABLE).write_text(pasted)
    assert {k: o.exit_code for k, o in offline.load_outputs([str(folder / LOST_GPU_TABLE)]).items()} == {
        "nvidia_smi_table": 0
    }
    judged = verdicts(tmp_path, LOST_GPU_TABLE, pasted, "gpu_count: 4\nvram: 97887MiB")
    verdict, actual = judged["nvidia_driver"]
    assert verdict == "unverified"
    assert actual.startswith("driver 610.57.04")
    assert "incomplete probe: nvidia-smi answered, but no GPU row of its output could be read" in actual
    assert judged["gpu_count"][0] == "unverified"
    # no GPU's memory was read, in an output cut short: no claim (the whole capture passes vram)
    assert judged["vram"][0] == "unverified", judged["vram"]
    # the lost GPU is still the box's fault, as in the whole capture
    lost = "GPU 1 (0000:34:00.0): nvidia-smi reads no device handle: Unknown Error"
    assert judged["gpu_health"] == ("fail", lost)


def test_a_view_of_some_gpus_pasted_flat_or_wrapped_still_names_them_by_address() -> None:
    """Every real -q of some of the attached GPUs (`-i 0`, `-d ECC -i ...`), each damaged as a
    paste damages it. Before: a flat or soft-wrapped paste was read as cut short, and its GPU was
    named by its place: the A16 at 13:00.0 (1 of 4) was "GPU 0 x4 of x16" in pcie_link."""
    texts = sorted(p.name for p in REAL.glob("nvidia-smi-q*.txt"))
    views = [name for name in texts if any(g.unplaced for g in read(real(name)).gpus)]
    assert len(views) >= 2
    problems = []
    for name in views:
        for damage, damaged in DAMAGE.items():
            report = read(damaged(real(name)))
            named = [g.unplaced for g in report.gpus if g.pci_bus_id]
            if not named or not all(named):
                problems.append((name, damage, report.gap, [g.called() for g in report.gpus]))
    assert not problems


def test_the_versions_above_the_records_wrapped_read_whole_or_not_at_all() -> None:
    """Every real -q text wrapped at 60 or 72 columns (R550+ prints its values from column 57):
    `Driver Version : 580` / `.159.04`. Before, the lines above the first GPU record were never
    rejoined: the driver read "580" and the CUDA version "13." (min_driver judged on 580)."""
    problems = []
    for name in Q_TEXTS:
        want = (whole(name).driver_version, whole(name).cuda_version)
        for width in (60, 72):
            report = read(column_wrapped(real(name), width))
            got = (report.driver_version, report.cuda_version)
            if any(g is not None and g != w for g, w in zip(got, want, strict=True)):
                problems.append((name, width, got, want))
    assert not problems


ANNOTATED = "nvidia-smi-q-d-ecc-row-remapper-i__1of8gpu__driver550.90.07__remap-pending-annotated.txt"


@pytest.mark.parametrize("width", [70, 71, 72])
def test_an_annotation_cut_off_its_value_keeps_the_value(tmp_path: Path, width: int) -> None:
    """The real row-remapper -q whose `Pending : Yes <===` line (73 characters, the user's mark
    after the value) a page cut at `width` columns, leaving `=` on a line of its own: the pending
    remap is still read (memory_repair fails as on the capture; before, the value was left unread
    as a break that may have lost a space, and memory_repair warned of the remapped row only)."""
    text = (REAL / ANNOTATED).read_text()
    whole = verdicts(tmp_path, ANNOTATED, text)["memory_repair"]
    assert whole[0] == "fail" and "row remap pending" in whole[1]
    verdict, actual = verdicts(tmp_path, ANNOTATED, column_wrapped(text, width))["memory_repair"]
    assert (verdict, actual) == whole


WITH_PROCESSES = [name for name in Q_TEXTS if "Process ID" in (REAL / name).read_text()]


def _process_names(tmp_path: Path, name: str, text: str) -> list[tuple[int, int, str]]:
    """(GPU, PID, name) of every process `text` lists, saved as `name` and read offline."""
    folder = tmp_path / f"p{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text)
    facts = offline.parse_facts(offline.load_outputs([str(folder / name)]))
    return [(g.index, p.pid, p.name) for g in facts.gpu.gpus for p in g.processes]


def _word_wrapped(text: str, width: int) -> str:
    return "\n".join(
        "\n".join(textwrap.wrap(line, width, break_on_hyphens=False)) if len(line) > width else line
        for line in text.split("\n")
    )


@pytest.mark.parametrize("name", WITH_PROCESSES)
def test_process_names_of_a_wrapped_q_are_read(tmp_path: Path, name: str) -> None:
    """Every real -q that lists processes, wrapped at 60, 72 and 80 columns: cut at the column,
    every process keeps its name (before, a text whose fragments all started with a word was
    taken for a word wrap and every wrapped name read blank, and a Windows path cut after its
    `\\` lost it to the Markdown line-break rule); wrapped by word, a name that fits a line keeps
    it (before, `Name :` with its value moved whole to the next line read blank)."""
    text = (REAL / name).read_text()
    whole = _process_names(tmp_path, name, text)
    assert whole and all(process_name for _, _, process_name in whole)
    for width in (60, 72, 80):
        assert _process_names(tmp_path, name, column_wrapped(text, width)) == whole, width
        got = _process_names(tmp_path, name, _word_wrapped(text, width))
        fits = [p for p in whole if " " not in p[2] and len(p[2]) <= width]
        assert [p for p in got if p in fits] == fits, width


IDLE_CAPPED = "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"


@pytest.mark.parametrize("width", range(43, 61))
def test_a_unit_wrapped_off_its_number_is_read(tmp_path: Path, width: int) -> None:
    """The real idle A10 -q (SW Power Cap Active at 15.65 W of 150 W) word-wrapped at `width`
    columns: throttling passes as on the capture, or is unverified, never warns. Before, at 49-51
    columns `Power Draw : 15.65` / `W` (the unit moved to a line of its own, the space between
    them dropped) left the draw unread while `SW Power Cap :` / `Active` was joined, and the
    throttling rule warned of a power cap at a draw it could not see."""
    text = real(IDLE_CAPPED)
    whole = verdicts(tmp_path, IDLE_CAPPED, text)["throttling"]
    assert whole[0] == "pass" and "15.65 W of 150 W" in whole[1]
    verdict, _ = verdicts(tmp_path, IDLE_CAPPED, word_wrapped(text, width))["throttling"]
    assert verdict in ("pass", "unverified")
    if width in (49, 50, 51):
        assert _draws(word_wrapped(text, width)) == [15.65]


def _draws(text: str) -> list[float | None]:
    report = parse_any(paste.normalise(text))
    assert isinstance(report, GpuReport)
    return [g.power_draw_w for g in report.gpus]


@pytest.mark.parametrize("name", Q_TEXTS)
def test_every_power_draw_of_a_word_wrapped_q_is_read_or_left_unread(name: str) -> None:
    """Every real -q text word-wrapped at 45 to 60 columns: each GPU's power draw is the capture's
    or unread, never another figure (a unit joined to its number read no other)."""
    whole = _draws(real(name))
    for width in range(45, 61):
        got = _draws(word_wrapped(real(name), width))
        assert all(g is None or g == w for g, w in zip(got, whole, strict=True)), width


WINDOWS_Q = [name for name in Q_TEXTS if name.endswith("__windows-wddm.txt")]


@pytest.mark.parametrize("name", WINDOWS_Q)
def test_a_windows_q_wrapped_at_any_column_is_judged_as_the_whole(tmp_path: Path, name: str) -> None:
    """Each real Windows -q wrapped at every width from 60 to 100 columns judges as the capture.
    Before, where a process path ran over 3 lines with the first cut inside a name
    (`...\\AppData\\Local\\Microsoft\\WinGet` / `\\Packages\\...\\bin\\` / `ffmpeg.exe`, at 61
    columns; the 591.86 one at 74, 86 and 88 too), the middle line's `\\` was taken for a Markdown
    line break and dropped, the line read one column short, the wrap was no longer rejoined and
    the -q read as cut: every rule unverified."""
    text = real(name)
    whole = verdicts(tmp_path, name, text)
    moved = []
    for width in range(60, 101):
        got = verdicts(tmp_path, name, column_wrapped(text, width))
        moved += [(width, rule, whole.get(rule), now) for rule, now in got.items() if now != whole.get(rule)]
    assert not moved
