"""The verdicts of real nvidia-smi outputs cut short where what was read is whole: a table cut
inside its Processes table (every GPU row read) and a whole `nvidia-smi -L` beside a table cut
inside a GPU's rows. What the whole part proves is judged; what the cut took stays unverified,
never a pass and never a hardware claim (round 26's fresh captures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.gpu_health.usage import CUT_LIST

from ...offline_judge import health_row, judged_box, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"

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
    read; foreign_processes, whose list the cut took, stays unverified (a GPU at work with its
    process list cut is no fault seen, never a pass) and says the cut."""
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), order)
    assert {rule: got[rule][0] for rule in expected} == expected
    assert not any("incomplete probe" in actual for _, actual in got.values())
    verdict, actual = got["foreign_processes"]
    assert verdict == "unverified" and CUT_LIST in actual


AKASH = "gpu_model: Quadro RTX 4000\ngpu_count: 2\nvram: 8GB\n"


def test_a_whole_listing_beside_a_table_cut_in_gpu_1_judges_the_model(tmp_path: Path) -> None:
    """akash-network/provider-configs #12: `nvidia-smi -L` (2 x Quadro RTX 4000, whole) beside the
    table cut inside GPU 1's second row. Before: gpu_model and nvidia_driver unverified
    "incomplete probe". Now: the names and the count of the whole listing pass gpu_model (GPU 1's
    cut rows add nothing against them), the driver passes; vram, whose GPU 1 total the cut took,
    and the health rules over GPU 1's rows stay unverified, saying the cut."""
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
    assert checks["mig_mode"].verdict == "unverified" and "incomplete probe" in checks["mig_mode"].actual


def test_the_table_cut_in_gpu_1_alone_stays_unverified(tmp_path: Path) -> None:
    """Control: the same cut table without the listing: nothing counts its GPUs whole (GPU 2 and
    more may follow in the part cut away), so gpu_model stays unverified "incomplete probe"."""
    text = (
        REAL
        / "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt"
    ).read_text()
    got = verdicts(tmp_path, "nvidia-smi.txt", text, AKASH)
    assert got["gpu_model"][0] == "unverified" and "incomplete probe" in got["gpu_model"][1]
    assert got["nvidia_driver"][0] == "unverified"


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
    no table: unverified, saying the cut, as the ASCII paste is."""
    name = "nvidia-smi__geforce-gtx-titan-x__1gpu__driver384.111__cut-in-processes__pai-2001.txt"
    text = (REAL / name).read_text()
    drawn = verdicts(tmp_path, "nvidia-smi.txt", _box_drawn(text))
    assert drawn["foreign_processes"][0] == "unverified" and CUT_LIST in drawn["foreign_processes"][1]
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
