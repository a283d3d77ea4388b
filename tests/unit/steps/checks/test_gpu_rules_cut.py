"""The verdicts of real nvidia-smi outputs cut short where what was read is whole: a table cut
inside its Processes table (every GPU row read) and a whole `nvidia-smi -L` beside a table cut
inside a GPU's rows. What the whole part proves is judged; what the cut took stays unverified,
never a pass and never a hardware claim (round 26's fresh captures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.gpu_health.usage import CUT_LIST

from ...offline_judge import checks, details, health_row, judged_box, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
RTX4090_Q = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt"

# (capture, order, the verdicts its whole GPU rows prove)
CUT_IN_PROCESSES = [
    (
        # peci1/nvidia-htop #9: 2 x GTX 1080 Ti, GPU 0 at 59 % with 10.7 GiB used
        "nvidia-smi__geforce-gtx-1080-ti__2gpu__driver440.82__cut-in-processes__nvidia-htop-9.txt",
        "gpu_model: GTX 1080 Ti\ngpu_count: 2\nvram: 11GB",
        {
            "nvidia_driver": "pass",
            "vram": "pass",
            "temperature": "pass",
            "mig_mode": "pass",
            "ecc_mode": "pass",
        },
    ),
    (
        # microsoft/pai #2001: 1 x GTX TITAN X at 14 % with 11.4 GiB used
        "nvidia-smi__geforce-gtx-titan-x__1gpu__driver384.111__cut-in-processes__pai-2001.txt",
        "gpu_model: GTX TITAN X\ngpu_count: 1\nvram: 12GB",
        {"nvidia_driver": "pass", "vram": "pass", "temperature": "pass", "mig_mode": "pass"},
    ),
    (
        # NVIDIA/nvidia-docker #476: 1 x Tesla K80 (ECC on) at 60 %
        "nvidia-smi__tesla-k80__1gpu__driver384.66__cut-in-processes__nvidia-docker-476.txt",
        "gpu_model: Tesla K80\ngpu_count: 1\nvram: 11GB",
        {
            "nvidia_driver": "pass",
            "gpu_model": "pass",
            "vram": "pass",
            "ecc_mode": "pass",
            "mig_mode": "pass",
        },
    ),
    (
        # slackr31337/wyoming-piper-gpu #20: 1 x Tesla P4, ECC Off (a data-centre GPU: a fail read
        # from its whole row, as before), cut under its `| Processes:` header
        "nvidia-smi__tesla-p4__1gpu__driver550.135__cut-in-processes__wyoming-piper-gpu-20.txt",
        "gpu_model: Tesla P4\ngpu_count: 1\nvram: 8GB",
        {
            "nvidia_driver": "pass",
            "gpu_model": "pass",
            "vram": "pass",
            "ecc_mode": "fail",
            "temperature": "pass",
        },
    ),
]


@pytest.mark.parametrize(
    ("name", "order", "expected"), CUT_IN_PROCESSES, ids=[c[0].split("__")[-1] for c in CUT_IN_PROCESSES]
)
def test_a_table_cut_in_its_processes_is_judged_by_its_whole_gpu_rows(
    tmp_path: Path, name: str, order: str, expected: dict[str, str]
) -> None:
    """Before: nvidia_driver, gpu_model, vram, ecc_*, temperature and mig_mode all unverified
    "incomplete probe" though each GPU row was whole. Now each is judged from the rows as they
    read; foreign_processes, whose list the cut took, stayed unverified (a GPU at work with its
    process list cut was no fault seen, never a pass); round 33: each busy GPU, driving no
    display, holds 1.7-11.4 GiB, a job's whatever the list names: a fail of what was read."""
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), order)
    assert {rule: got[rule][0] for rule in expected} == expected
    assert not any("incomplete probe" in actual for _, actual in got.values())
    verdict, actual = got["foreign_processes"]
    assert verdict == "fail" and actual.endswith("(of what was read; its process list cut away)")


AKASH = "gpu_model: Quadro RTX 4000\ngpu_count: 2\nvram: 8GB\n"


def test_a_whole_listing_beside_a_table_cut_in_gpu_1_judges_the_model(tmp_path: Path) -> None:
    """akash-network/provider-configs #12: `nvidia-smi -L` (2 x Quadro RTX 4000, whole) beside the
    table cut inside GPU 1's second row. Before: gpu_model and nvidia_driver unverified
    "incomplete probe". Now: the names and the count of the whole listing pass gpu_model (GPU 1's
    cut rows add nothing against them), the driver passes; vram, whose GPU 1 total the cut took,
    and the health rules over GPU 1's rows stay unverified, saying the cut (but mig_mode, which the
    listed model decides: test_gpu_rules_cut_listed.py)."""
    files = {
        "nvidia-smi-L.txt": (
            REAL / "nvidia-smi-L__quadro-rtx-4000__2gpu__akash-provider-configs-12.txt"
        ).read_text(),
        "nvidia-smi.txt": (
            REAL
            / "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt"
        ).read_text(),
    }
    _facts, checks = judged_box(tmp_path, files, AKASH)
    assert (checks["gpu_model"].verdict, checks["gpu_model"].actual) == ("pass", "2 x Quadro RTX 4000")
    assert checks["gpu_count"].verdict == "pass" and checks["nvidia_driver"].verdict == "pass"
    assert checks["vram"].verdict == "unverified" and "incomplete probe" in checks["vram"].actual
    # (a model without MIG, named by the whole listing: judged as -L alone judges it, round 33)
    assert checks["mig_mode"].verdict == "pass", checks["mig_mode"]


def test_the_table_cut_in_gpu_1_alone_stays_unverified(tmp_path: Path) -> None:
    """Control: the same cut table without the listing: nothing counts its GPUs whole (GPU 2 and
    more may follow in the part cut away), so gpu_model stays unverified "incomplete probe"; the
    driver printed GPU 0's whole row, so nvidia_driver passes (round 32), the cut said."""
    text = (
        REAL
        / "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt"
    ).read_text()
    got = verdicts(tmp_path, "nvidia-smi.txt", text, AKASH)
    assert got["gpu_model"][0] == "unverified" and "incomplete probe" in got["gpu_model"][1]
    assert got["nvidia_driver"][0] == "pass" and "incomplete probe" in got["nvidia_driver"][1]


def test_a_q_cut_inside_its_process_list_never_passes_foreign_processes(tmp_path: Path) -> None:
    """The real TITAN V `-q` (R560, its desktop's Xorg, gnome-shell and a test program listed:
    a warn whole) cut after its Processes' first `GPU instance ID` line: whole in its GPU facts
    since round 26, its process list cut away. Its idle figures (0 %, 290 MiB, engines idle) pass
    a GPU whose format lists no processes, never one whose list was cut: unverified, saying so."""
    lines = (REAL / "nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("    Processes")) + 2
    got = verdicts(tmp_path, "nvidia-smi-q.txt", "".join(lines[:at]))
    assert got["foreign_processes"] == ("unverified", f"no process list read for GPU 0 ({CUT_LIST})")
    assert got["temperature"][0] == "pass"  # (the GPU's sections read whole, judged)


def _box_drawn(text: str) -> str:
    """`text` as a page draws the table in box characters: borders `├─┼─┤`, header rules
    `╞═╪═╡`, cell walls `│` (one character for one)."""
    out = []
    for line in text.split("\n"):
        body = line.strip()
        if body.startswith("|=") and body.endswith("|"):
            out.append("╞" + body[1:-1].replace("=", "═").replace("+", "╪").replace("|", "╪") + "╡")
        elif body.startswith("+-") and body.endswith("+"):
            out.append("├" + body[1:-1].replace("-", "─").replace("+", "┼") + "┤")
        else:
            out.append(line.replace("|", "│"))
    return "\n".join(out)


def test_a_box_drawn_table_cut_under_its_processes_header_rule_is_no_whole_empty_list(
    tmp_path: Path,
) -> None:
    """microsoft/pai #2001's table (cut under its Processes table's `|===|` header rule) as a
    page draws it in box characters: that rule, `╞═══╡`, read back as `+===+`, was taken for the
    table's closing border: a whole, empty process list, and the GPU at 14 % with 11.4 GiB used
    failed foreign_processes ("another job") from the list the cut took. A header rule closes
    no table: read as the ASCII paste is, saying the cut (round 33: a fail of what was read, the
    11.4 GiB held, never "nvidia-smi lists no process there")."""
    name = "nvidia-smi__geforce-gtx-titan-x__1gpu__driver384.111__cut-in-processes__pai-2001.txt"
    text = (REAL / name).read_text()
    drawn = verdicts(tmp_path, "nvidia-smi.txt", _box_drawn(text))
    assert drawn["foreign_processes"][1].endswith("(of what was read; its process list cut away)")
    assert "lists no process" not in drawn["foreign_processes"][1]
    assert drawn == verdicts(tmp_path, "nvidia-smi.txt", text)


def test_a_q_x_cut_inside_its_process_list_is_read_and_no_desktop_is_called_from_the_cut() -> None:
    """The real RTX 4000 SFF Ada `-q -x` (R595: cosmic-comp, a desktop, and a compute job listed;
    foreign_processes fails whole) as the live probe reads it, cut inside its <processes>. Before,
    the GPU record the cut went through was dropped: no GPU, every rule of the GPU unjudged. Now
    the record is read (every element before the list whole: its temperature judged), its list
    open: the 3.5 GiB a display-driving GPU holds is no desktop's warn from the list the cut took,
    unverified, saying the cut."""
    lines = (
        (REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
        .read_text()
        .splitlines(keepends=True)
    )
    at = next(i for i, line in enumerate(lines) if line.strip() == "<processes>") + 5
    text = "".join(lines[:at])
    verdict, actual = health_row(text, "foreign_processes")
    assert verdict == "unverified" and CUT_LIST in actual
    assert health_row(text, "temperature")[0] == health_row("".join(lines), "temperature")[0] == "pass"


A16_ORDER = "gpu_model: A16\ngpu_count: 4\n"


def _a16_q_cut_after_replays() -> str:
    """The real `nvidia-smi -q -i 0` of an A16 host (1 of 4 attached) cut by the test after its
    `Replay Number Rollovers` line: GPU 0's record holds its PCIe replays, not yet its memory,
    temperature, power or utilisation."""
    text = (REAL / "nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Replay Number Rollovers" in line)
    return "".join(lines[: at + 1])


def test_a_whole_listing_beside_a_q_i_view_cut_in_its_record_passes_no_gpu_rule(tmp_path: Path) -> None:
    """The real A16 host's whole `nvidia-smi -L` (4 GPUs) beside its `-q -i 0` cut inside GPU 0's
    record (_a16_q_cut_after_replays). Before: the listing made the report whole, so
    pcie_replays passed on GPU 0's replays alone ("not reported for GPU 1, GPU 2, GPU 3", no
    GPU read whole). Now the cut record leaves the report incomplete: pcie_replays is
    unverified "incomplete probe"; the listing's whole names and count still pass gpu_model and
    gpu_count."""
    files = {
        "nvidia-smi-L.txt": (REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt").read_text(),
        "nvidia-smi-q.txt": _a16_q_cut_after_replays(),
    }
    _facts, checks = judged_box(tmp_path, files, A16_ORDER)
    replays = checks["pcie_replays"]
    assert replays.verdict == "unverified" and "incomplete probe" in replays.actual
    assert (checks["gpu_model"].verdict, checks["gpu_model"].actual) == ("pass", "4 x NVIDIA A16")
    assert checks["gpu_count"].verdict == "pass"
    assert not any(c.verdict == "pass" for c in checks.values() if c.name in ("pcie_link", "ecc_mode"))


LOST = "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt"


@pytest.mark.parametrize("rows", ["gpu 2 whole", "gpu 2 first row"])
def test_a_table_cut_below_a_lost_gpu_claims_no_missing_gpu(tmp_path: Path, rows: str) -> None:
    """The real RTX PRO 6000 table (GPU 1 lost: `Unable to determine the device handle for GPU1`,
    GPUs 0, 2 and 3 read) cut by the test after GPU 2's closing border (a cut between two GPU
    records), or after GPU 2's first row; an order of 3 GPUs (the whole table passes it: 3
    readable). Before: gpu_count failed ("3 (1 unreadable)", "2 of the 3 listed GPUs can be
    read, 3 ordered"), a claim of missing GPUs from the cut. Now: unverified, "incomplete
    probe"."""
    lines = (REAL / LOST).read_text().splitlines(keepends=True)
    borders = [i for i, line in enumerate(lines) if line.startswith("+---") and "+-----" in line[40:]]
    gpu2 = next(i for i, line in enumerate(lines) if line.startswith("|   2 "))
    cut = "".join(lines[: borders[2] + 1] if rows == "gpu 2 whole" else lines[: gpu2 + 1])
    order = "gpu_model: RTX PRO 6000\ngpu_count: 3\n"
    whole = verdicts(tmp_path, "nvidia-smi.txt", (REAL / LOST).read_text(), order)
    assert whole["gpu_count"][0] == "pass"
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", cut, order)["gpu_count"]
    assert verdict == "unverified" and "incomplete probe" in actual


def test_a_q_x_cut_inside_its_process_list_judges_the_entries_read_whole() -> None:
    """The real RTX 4000 SFF Ada `-q -x` (cosmic-comp and VS Code as graphics, then `python`, a
    compute job, then chromium) cut by the test right after the python entry's
    `</process_info>`, inside <processes>. Before: the entries read whole were dropped with the
    open list, foreign_processes unverified ("the list the cut took"). Now the whole entries are
    read, the list left open: the compute job read fails foreign_processes, as the whole output
    does. Cut after cosmic-comp's entry alone, a graphics process beside a busy GPU, it stays
    unverified, saying the cut."""
    lines = (
        (REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
        .read_text()
        .splitlines(keepends=True)
    )
    ends = [i for i, line in enumerate(lines) if line.strip() == "</process_info>"]
    python = next(i for i in ends if "<process_name>python</process_name>" in "".join(lines[i - 8 : i]))
    verdict, actual = health_row("".join(lines[: python + 1]), "foreign_processes")
    assert verdict == health_row("".join(lines), "foreign_processes")[0] == "fail"
    assert "python" in actual
    verdict, actual = health_row("".join(lines[: ends[0] + 1]), "foreign_processes")
    assert verdict == "unverified" and CUT_LIST in actual


def test_a_table_cut_below_a_lost_gpu_says_no_count_delivered_of_the_models(tmp_path: Path) -> None:
    """The real RTX PRO 6000 table (GPU 1 lost) cut by the test after GPU 2's closing border,
    ordered as "4x RTX PRO 6000". Before: gpu_model's fail (GPU 1 unreadable, a fault read)
    said "the order's model says 4 x, 3 delivered", a count of the box from the cut. Now the
    fail stands on the lost GPU, and no count delivered is said."""
    lines = (REAL / LOST).read_text().splitlines(keepends=True)
    borders = [i for i, line in enumerate(lines) if line.startswith("+---") and "+-----" in line[40:]]
    order = "gpu_model: 4x RTX PRO 6000\n"
    got = checks(tmp_path, "nvidia-smi.txt", "".join(lines[: borders[2] + 1]), order)
    model = next(c for c in got if c.name == "gpu_model")
    assert model.verdict == "fail" and "GPU 1 unreadable" in model.actual
    assert "delivered" not in model.detail and "incomplete probe" in model.actual


# the real H200 -q (one GPU, driver 590.48.01, CUDA 13.1)
H200_Q = "nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt"


@pytest.mark.parametrize(
    ("name", "cut", "driver"),
    [
        # -q cut after `CUDA Version : 13.1` and the blank line, inside `Attached GPUs`
        (H200_Q, 300, "590.48.01"),
        # -q cut on the first letter of `CUDA Version` (the driver's line whole above it)
        (H200_Q, 190, "590.48.01"),
    ],
)
def test_a_q_cut_in_its_header_is_an_incomplete_probe(
    tmp_path: Path, name: str, cut: int, driver: str
) -> None:
    """Edit: the capture cut at `cut` characters. Before, the -q cut in its header was read as a
    whole answer: "nvidia-smi answered but listed no GPU" (a claim of the box, from a text cut
    short), its whole driver line dropped; now the cut is said, with the driver read above it."""
    text = (REAL / name).read_text(encoding="utf-8")[:cut]
    got = verdicts(tmp_path, name, text, 'gpu_count: 1\nmin_driver: "300"\n')
    assert got["nvidia_driver"][0] == "unverified" and "incomplete probe" in got["nvidia_driver"][1]
    assert f"driver {driver}" in got["nvidia_driver"][1]
    assert "listed no GPU" not in got["nvidia_driver"][1] and got["gpu_count"][0] == "unverified"


@pytest.mark.parametrize("cut", [183, 186, 189])
def test_a_driver_version_on_the_cut_line_is_not_read(tmp_path: Path, cut: int) -> None:
    """Edit: the H200 -q cut inside (183: `590.`, 186: `590.48.`) or right after (189, its
    newline) the value of `Driver Version`, the text's last line: a version that may be cut
    short is no version: never said as the box's, nor judged (min_driver unverified)."""
    text = (REAL / H200_Q).read_text(encoding="utf-8")[:cut]
    got = verdicts(tmp_path, H200_Q, text, 'gpu_count: 1\nmin_driver: "590.48.01"\n')
    assert got["min_driver"][0] == "unverified"
    assert "590.48" not in got["nvidia_driver"][1]


def test_attached_gpus_above_a_cut_says_the_set_is_not_short(tmp_path: Path) -> None:
    """Project-HAMi/HAMi#446: a node's `nvidia-smi -a` saying `Attached GPUs : 2`, cut inside GPU
    0's record. `Attached GPUs` counts a GPU whose handle fails too, so the count read above the
    cut says the set is not short, never that it is whole: unverified, naming both counts (round
    30 passed it; changed on purpose)."""
    name = "nvidia-smi-a__tesla-v100s-pcie-32gb__2gpu-attached__driver535.104.05__cut-in-gpu0-record"
    text = (REAL / f"{name}__hami-446.txt").read_text()
    rules = verdicts(tmp_path, "nvidia-smi-a.txt", text, "gpu_model: V100S\ngpu_count: 2")
    assert rules["gpu_count"] == (
        "unverified",
        "2 attached, 1 read; incomplete probe: nvidia-smi says 2 attached but lists 1",
    )
    assert rules["gpu_model"][0] == "unverified"


def test_attached_gpus_of_eight_above_a_cut_in_gpu_three_is_no_pass(tmp_path: Path) -> None:
    """The real 8x RTX 4090 `nvidia-smi -q` (`Attached GPUs : 8`) cut by the test at line 700,
    inside GPU 3's record (GPUs 4-7 lost): a GPU nvidia-smi could not open is counted in
    `Attached GPUs` and its `Unable to determine the device handle` line may be in the part cut
    away, so gpu_count (order 8) is unverified, never the pass it was."""
    lines = (REAL / RTX4090_Q).read_text().splitlines(keepends=True)
    rules = verdicts(tmp_path, "nvidia-smi-q.txt", "".join(lines[:700]), "gpu_count: 8")
    assert rules["gpu_count"][0] == "unverified", rules["gpu_count"]
    assert rules["gpu_count"][1].startswith("8 attached, 4 read; incomplete probe")


K8S_TOPO = (
    "nvidia-smi-topo-m__8gpu-pix-phb-sys-mlx4__copied-command__cut-after-gpu4-row__kubernetes-53497.txt"
)


def test_whole_rows_of_a_cut_topo_m_without_nvlink_fail_an_nvlink_order(tmp_path: Path) -> None:
    """kubernetes/kubernetes#53497: `$ nvidia-smi topo -m` (the command copied: not `-mp`) of an
    8-GPU PCIe box cut after GPU4's row. Each of GPU0-4's whole rows links it to every other GPU
    by PIX/PHB/SYS only: NVLink to no GPU, which the rows cut away cannot change. Before,
    interconnect was unverified "cut short" for an NVLink order; it fails now, naming them."""
    text = (REAL / K8S_TOPO).read_text()
    order = "gpu_count: 8\ninterconnect: nvlink\n"
    (tmp_path / "m").mkdir()
    (tmp_path / "p").mkdir()
    verdict, actual = verdicts(tmp_path / "m", "topo.txt", text, order)["interconnect"]
    assert verdict == "fail", actual
    assert actual.startswith("GPU0, GPU1, GPU2, GPU3, GPU4 have NVLink to no other GPU")
    # (a PCIe order: the rows read say nothing of the cut ones' paths: unverified as before)
    pcie = verdicts(tmp_path / "p", "topo.txt", text, "gpu_count: 8\ninterconnect: pcie\n")
    assert pcie["interconnect"][0] == "unverified"


@pytest.mark.parametrize(
    "edit",
    ["no-command", "mp-command", "row-cut"],
)
def test_a_cut_matrix_stays_unverified_where_its_rows_cannot_decide(tmp_path: Path, edit: str) -> None:
    """The same capture edited in-test: its command line removed (`-mp` prints the same PCIe
    cells), made `nvidia-smi topo -mp`, or every row cut after its fourth cell (no row whole):
    unverified, as before."""
    lines = (REAL / K8S_TOPO).read_text().split("\n")
    if edit == "no-command":
        lines = lines[1:]
    elif edit == "mp-command":
        lines[0] = "$ nvidia-smi topo -mp"
    else:
        lines = lines[:2] + [" ".join(line.split()[:4]) for line in lines[2:]]
    got = verdicts(tmp_path, "topo.txt", "\n".join(lines), "gpu_count: 8\ninterconnect: nvlink\n")
    assert got["interconnect"][0] == "unverified", got["interconnect"]
    if edit == "mp-command":  # (m31c 4, DeepEP#60: it was "the topo -m matrix was cut short")
        assert (
            "`nvidia-smi topo -mp` shows the PCIe paths only, never NVLink, and is cut short"
            in (got["interconnect"][1])
        )
        said = details(tmp_path, "topo.txt", "\n".join(lines), "gpu_count: 8\ninterconnect: nvlink\n")
        assert "`nvidia-smi topo -m` (without -p)" in said["interconnect"]


@pytest.mark.parametrize(
    ("cut", "ordered", "verdict"), [(300, "590.48.01", "pass"), (300, "595", "fail"), (190, "580", "pass")]
)
def test_a_whole_driver_line_above_a_cut_is_judged_by_min_driver(
    tmp_path: Path, cut: int, ordered: str, verdict: str
) -> None:
    """The real H200 -q cut in its header (300: inside `Attached GPUs`; 190: on `CUDA Version`'s
    first letter), its `Driver Version : 590.48.01` line whole above the cut: min_driver was
    unverified, "incomplete probe", the box's driver read and left unjudged. The version line is
    whole: judged (round 31); nvidia_driver and gpu_count stay unverified (no GPU row read)."""
    text = (REAL / H200_Q).read_text(encoding="utf-8")[:cut]
    got = verdicts(tmp_path, H200_Q, text, f'gpu_count: 1\nmin_driver: "{ordered}"\n')
    assert got["min_driver"] == (verdict, "590.48.01")
    assert got["nvidia_driver"][0] == got["gpu_count"][0] == "unverified"


def test_a_driver_line_after_another_programs_head_is_not_judged(tmp_path: Path) -> None:
    """The same header with each line after a log's head (`[  12.3] `): the version line is no
    line of nvidia-smi's own output but a quote of it, never judged by min_driver."""
    text = (REAL / H200_Q).read_text(encoding="utf-8")[:300]
    quoted = "".join(f"[   12.345678] {line}" for line in text.splitlines(True))
    got = verdicts(tmp_path, H200_Q, quoted, 'gpu_count: 1\nmin_driver: "580"\n')
    assert got["min_driver"][0] == "unverified"  # (read as a kernel log: no nvidia-smi output)


# (a table, or its banner alone, a page ran onto one line; the order; min_driver's verdict, the
# version; nvidia_driver's verdict: the table's GPU row is read, the banner alone lists none)
ONE_LINE = [
    (
        "nvidia-smi__a100-sxm4-40gb__1gpu__driver535.129.03__table-on-one-line__nshx-csdn.txt",
        "535",
        "pass",
        "pass",
    ),
    (
        "nvidia-smi__a100-sxm4-40gb__1gpu__driver535.129.03__table-on-one-line__nshx-csdn.txt",
        "550",
        "fail",
        "pass",
    ),
    ("nvidia-smi__banner-only__driver470.82.01__on-one-line__mynw.txt", "470", "pass", "unverified"),
    ("nvidia-smi__banner-only__driver470.82.01__on-one-line__mynw.txt", "525", "fail", "unverified"),
]


@pytest.mark.parametrize(("name", "ordered", "verdict", "driver"), ONE_LINE)
def test_a_whole_banner_of_a_table_on_one_line_is_judged_by_min_driver(
    tmp_path: Path, name: str, ordered: str, verdict: str, driver: str
) -> None:
    """A table (or its banner alone) a page ran onto one line (measure31d 09, 10): its banner
    `+---+ | NVIDIA-SMI 470.82.01 Driver Version: 470.82.01 CUDA Version: 11.4 |` is whole and was
    quoted, yet min_driver was unverified "no GPU row ... could be read", where a table cut below
    its banner passes it. Judged as read. The table's GPU row is read too (round 35:
    facts/test_nvidia_smi_table_joined_r35.py); the banner alone lists no GPU (unverified)."""
    version = name.split("__driver")[1].split("__")[0]
    got = verdicts(
        tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), f'gpu_count: 1\nmin_driver: "{ordered}"\n'
    )
    assert got["min_driver"] == (verdict, version)
    assert got["nvidia_driver"][0] == driver


def test_a_banner_on_one_line_cut_before_its_closing_bar_is_not_judged(tmp_path: Path) -> None:
    """The same one-line banner cut inside `CUDA Version` (no closing `|`): not whole, not judged."""
    text = (REAL / "nvidia-smi__banner-only__driver470.82.01__on-one-line__mynw.txt").read_text()
    cut = text[: text.index("CUDA Version") + 6]
    got = verdicts(tmp_path, "nvidia-smi.txt", cut, 'gpu_count: 1\nmin_driver: "470"\n')
    assert got["min_driver"][0] == "unverified"


RTX208X_CUT = (
    "nvidia-smi__geforce-rtx-208x__1gpu__driver435.21__vm__copied-command"
    "__cut-after-gpu0-name-cell__gpu-passthrough-4.txt"
)


def test_a_table_cut_after_gpu_0s_name_cell_lists_gpu_0(tmp_path: Path) -> None:
    """clayfreeman/gpu-passthrough#4's table ends on `|   0  GeForce RTX 208...  Off  |` (measure31d
    30): gpu_count was unverified "no GPU row ... could be read" where tables cut further down
    count "N listed; cut off". GPU 0's index and name cell are read: it is listed (its model, cut
    to `208...`, and its memory stay unverified)."""
    order = 'gpu_model: GeForce RTX 2080 Ti\ngpu_count: 1\nvram: 11GB\nmin_driver: "435"\n'
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / RTX208X_CUT).read_text(), order)
    assert got["gpu_count"][0] == "pass"
    assert got["gpu_count"][1].startswith("1 listed; incomplete probe")
    assert got["gpu_model"][0] == got["vram"][0] == got["nvidia_driver"][0] == "unverified"
    assert got["min_driver"] == ("pass", "435.21")
    two = verdicts(tmp_path, "nvidia-smi.txt", (REAL / RTX208X_CUT).read_text(), "gpu_count: 2\n")
    assert two["gpu_count"][0] == "unverified"  # (1 listed: the cut may hold more)


@pytest.mark.parametrize("tail", ["|   0  GeForce RTX 208...  Off  | 00000000:0", "|   0  GeForce RTX 2"])
def test_a_first_row_cut_in_its_bus_id_lists_the_gpu_and_one_cut_in_its_name_does_not(
    tmp_path: Path, tail: str
) -> None:
    """The same table's last line cut inside the Bus-Id (the name cell whole: GPU 0 listed) or
    inside the name (nothing of the GPU's row whole: no GPU read)."""
    text = (REAL / RTX208X_CUT).read_text().rsplit("\n", 2)[0] + "\n" + tail
    got = verdicts(tmp_path, "nvidia-smi.txt", text, "gpu_count: 1\n")
    assert got["gpu_count"][0] == ("pass" if "Off" in tail else "unverified"), got["gpu_count"]
