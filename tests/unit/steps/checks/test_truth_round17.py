"""Verdicts of truth sweep round 17 on views that answer only part of a question, cut from real
captures (tests/fixtures/real) exactly as nvidia-smi prints them: a `--query-gpu` CSV of some of
its fields, `nvidia-smi -q -d PIDS` (the header and each GPU's Processes section)."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from ...offline_judge import checks as offline_checks
from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
CSVS = sorted(p.name for p in REAL.glob("nvidia-smi-query-gpu*.csv"))
# (a -q cut before its first GPU's Processes says so: test_gpu_rules, ollama issue #6364)
Q_TEXTS = sorted(p.name for p in REAL.glob("nvidia-smi-q__*.txt") if "__cut-" not in p.name)


def csv_of(name: str, fields: list[str]) -> str | None:
    """The real CSV as `--query-gpu=<fields>` prints it (None: it lacks one of them)."""
    rows = list(csv.reader(io.StringIO((REAL / name).read_text()), skipinitialspace=True))
    head = [h.split(" [")[0] for h in rows[0]]
    if not all(f in head for f in fields):
        return None
    cols = [head.index(f) for f in fields]
    return (
        "\n".join(
            ", ".join(rows[0][c] if n == 0 else row[c] for c in cols) for n, row in enumerate(rows) if row
        )
        + "\n"
    )


REMAP = ["remapped_rows.pending", "remapped_rows.failure"]


@pytest.mark.parametrize("name", CSVS)
@pytest.mark.parametrize("field", REMAP)
def test_one_of_the_remap_fields_passes_no_memory_repair(tmp_path: Path, name: str, field: str) -> None:
    """`remapped_rows.failure` alone says nothing of a pending remap, `pending` alone nothing of a
    failed one: neither is "nothing pending" (a real H200 CSV of `name, remapped_rows.failure` passed)."""
    text = csv_of(name, ["name", "pci.bus_id", field])
    both = csv_of(name, ["name", "pci.bus_id", *REMAP])
    if (
        text is None
        or both is None
        or verdicts(tmp_path, "gpu.csv", both)["memory_repair"][1] != "nothing pending"
    ):
        pytest.skip("no such field, or a card whose repair state is not required (no ECC)")
    verdict, actual = verdicts(tmp_path, "gpu.csv", text)["memory_repair"]
    assert verdict == "unverified", actual
    assert "gave only one of pending remaps and remapping failure" in actual


def q_view(name: str, sections: tuple[str, ...] = ("Processes",)) -> str:
    """The real `-q` as `nvidia-smi -q -d <display>` prints it: its header, and of each GPU its
    first line and the display's sections (`Processes` for PIDS, `ECC Mode`/`ECC Errors` for ECC)."""
    out, keep = [], True
    for line in (REAL / name).read_text().split("\n"):
        if re.match(r"GPU [0-9A-Fa-f]{4,8}:", line):
            keep = False
            out.append(line)
        elif re.match(r"    \S", line):
            keep = line.strip().startswith(sections)
            out += [line] if keep else []
        elif keep or not line.startswith(" "):
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("name", Q_TEXTS)
def test_an_empty_process_list_without_figures_is_no_pass(tmp_path: Path, name: str) -> None:
    """A job in another container is not listed and shows only in the figures: `-q -d PIDS` of a
    box whose full `-q` fails foreign_processes on them passed "none"."""
    verdict, actual = verdicts(tmp_path, "q.txt", q_view(name))["foreign_processes"]
    assert verdict in ("unverified", "fail", "warn"), actual
    if verdict != "fail":
        # (an excerpt of one record, no header: its list is not known whole, round 36)
        said = ("no utilisation or memory figure read", "pid", "no process list read")
        assert any(words in actual for words in said), actual


# (not several pods' views of one GPU, refused whole: api/test_offline_list_pods_mig.py)
LISTS = sorted(p.name for p in REAL.glob("nvidia-smi-L__*.txt") if "-listed-5-times-" not in p.name)


@pytest.mark.parametrize("name", LISTS)
def test_an_ordered_size_with_no_memory_in_the_output_is_unverified(tmp_path: Path, name: str) -> None:
    """`nvidia-smi -L` gives no memory: a size in gpu_model ('RTX 2080 Ti 22G', the modded card,
    of a real 11 GB 2080 Ti) was not checked and passed."""
    text = (REAL / name).read_text()
    model = re.search(r"GPU 0: (?:NVIDIA )?(.+?) \(UUID", text)
    if model is None or re.search(r"\d+\s*GB", model.group(1)):
        pytest.skip("no first GPU name, or a name that says its size")
    verdict, actual = verdicts(tmp_path, name, text, f"gpu_model: {model.group(1)} 99G")["gpu_model"]
    assert verdict in ("unverified", "fail"), actual


def test_the_same_size_is_checked_where_the_memory_is_given(tmp_path: Path) -> None:
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    assert verdicts(tmp_path, "t.txt", table, "gpu_model: H200 141G")["gpu_model"][0] == "pass"
    assert verdicts(tmp_path, "t.txt", table, "gpu_model: H200 16G")["gpu_model"][0] == "fail"


@pytest.mark.parametrize("version", ["12.8", "11.8", "13.0", "12"])
def test_a_cuda_version_as_min_driver_is_refused(tmp_path: Path, version: str) -> None:
    """`min_driver: "12.8"` passed every driver (550.90.07 >= 12.8): CUDA 12.8 needs 570.26."""
    from gpuonboard.api import offline
    from gpuonboard.errors import InventoryError

    (tmp_path / "order.yml").write_text(f'min_driver: "{version}"\n')
    with pytest.raises(
        InventoryError, match=f"not '{re.escape(version)}', which is numbered like a CUDA version"
    ):
        offline.load_order(str(tmp_path / "order.yml"))


def _real_names() -> list[tuple[str, int | None]]:
    """Every GPU name (and its VRAM) in the real nvidia-smi captures, once."""
    from gpuonboard.facts.nvidia_smi import parse_any

    seen: dict[str, int | None] = {}
    for path in sorted(REAL.glob("nvidia-smi*")):
        try:
            report = parse_any(path.read_text(encoding="utf-8", errors="replace"))
        except Exception:  # (a capture this parser refuses: not a name to test)
            continue
        for g in report.gpus:
            vgpu = re.search(r"-\d+[ABCQ]$", g.name.strip())  # (a vGPU profile: matched whole)
            if g.name.strip() and not g.name.endswith("...") and not g.faults and not vgpu:
                seen.setdefault(g.name.strip(), g.memory_total_mib)
    return sorted(seen.items())


NAMES = _real_names()


def test_the_names_are_the_real_family() -> None:
    assert len(NAMES) > 40


@pytest.mark.parametrize(("name", "vram"), NAMES, ids=[n for n, _ in NAMES])
def test_datasheet_words_and_glued_chinese_do_not_change_the_match(name: str, vram: int | None) -> None:
    """A memory type from the datasheet (`H200 141GB HBM3e`, `L40S 48GB GDDR6`: nvidia-smi prints
    none) and a Chinese word glued after the model (`RTX 4090 24G显存`, `RTX 2080Ti版`) failed a
    correct box ("'HBM3E' not in the name", "'24G' not in the name")."""
    from gpuonboard.steps.checks.model_match import match_model

    model = re.sub(r"^(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+)?", "", name)
    base = match_model(model, name, vram).verdict
    # (a name that says its memory type, `H100 80GB HBM3`, is checked against it: another fails)
    kinds = () if re.search(r"HBM|GDDR", name) else (" HBM3e", " GDDR6X", " HBM 2e")
    for extra in (*kinds, "版", "显存", " 涡轮版"):
        assert match_model(model + extra, name, vram).verdict == base, extra


@pytest.mark.parametrize(
    ("ordered", "name", "verdict"),
    [
        ("RTX 4080S", "NVIDIA GeForce RTX 4080 SUPER", "pass"),
        ("2080S", "NVIDIA GeForce RTX 2080 SUPER", "pass"),
        ("RTX 4080S", "NVIDIA GeForce RTX 4080", "fail"),
        ("RTX 4080", "NVIDIA GeForce RTX 4080 SUPER", "fail"),
        ("L40S", "NVIDIA L40S", "pass"),  # (no SUPER: L40S and V100S are cards of their own)
        ("L40", "NVIDIA L40S", "fail"),
        ("V100S", "Tesla V100S-PCIE-32GB", "pass"),
        ("4090 24G显存", "NVIDIA GeForce RTX 4090", "pass"),
        ("H100 80GB HBM3", "NVIDIA H100 PCIe", "fail"),  # (HBM3 dropped; PCIe still another product)
        ("H100 80GB HBM2e", "NVIDIA H100 80GB HBM3", "fail"),  # (the PCIe card's memory: the name says HBM3)
        ("GH200 HBM3", "NVIDIA GH200 144G HBM3e", "fail"),
        ("GH200 144G HBM3e", "NVIDIA GH200 144G HBM3e", "pass"),
    ],
)
def test_short_super_and_kept_distinctions(ordered: str, name: str, verdict: str) -> None:
    from gpuonboard.steps.checks.model_match import match_model

    assert match_model(ordered, name, 24564 if "4090" in name else None).verdict == verdict


@pytest.mark.parametrize("name", Q_TEXTS)
def test_ecc_off_on_a_gpu_the_output_does_not_name_is_no_workstation_claim(tmp_path: Path, name: str) -> None:
    """`nvidia-smi -q -d ECC` names no model: ECC Disabled on its GPUs was said to be "workstation
    GPU with ECC" (warn) of real GeForce RTX 4090s; whether it is a fault depends on the model."""
    text = (REAL / name).read_text()
    if not re.search(r"ECC Mode\s*\n\s*Current\s*:\s*Disabled", text):
        pytest.skip("no GPU with ECC Disabled")
    verdict, actual = verdicts(tmp_path, "q.txt", q_view(name, ("ECC Mode", "ECC Errors")))["ecc_mode"]
    assert (verdict, "workstation" in actual) == ("unverified", False), actual


def test_a_data_disk_written_as_mount_and_size_is_both(tmp_path: Path) -> None:
    """`data_disk: /data 500G` (as an order sheet says it) failed a real 500G disk at /data as
    "/data 500G is not a mount point"."""
    df = (REAL / "df-h__zh-cn__vda1-80g-root_vdb1-500g-data.txt").read_text()
    assert verdicts(tmp_path, "df.txt", df, "data_disk: /data 500G")["data_disk"][0] == "pass"
    assert verdicts(tmp_path, "df.txt", df, "data_disk: /data 5000G")["data_disk"][0] == "fail"
    assert verdicts(tmp_path, "df.txt", df, "data_disk: /srv")["data_disk"][0] != "pass"


def _catalogue() -> list[tuple[str, int, int]]:
    import yaml

    from gpuonboard.resources import DATA_DIR

    rows = yaml.safe_load((DATA_DIR / "gpu_catalogue.yml").read_text())
    return [(r["card"], r["memory_gb"], r["nvidia_smi_mib"]) for r in rows if r.get("nvidia_smi_mib")]


CARDS = _catalogue()


@pytest.mark.parametrize(("card", "size", "mib"), CARDS, ids=[c for c, _, _ in CARDS])
def test_the_datasheet_size_passes_the_memory_nvidia_smi_shows(
    tmp_path: Path, card: str, size: int, mib: int
) -> None:
    """Each card's datasheet size (`vram: 24G` of an A10) passes the memory.total real captures
    show for it (23028 MiB: ECC takes 1/16 of a GDDR card's memory), in any unit spelling; the
    next size up fails (an RTX 3080's 10240 MiB passed `vram: 11G` when G was read as 10^9)."""
    csv_text = f"name, memory.total [MiB]\n{card}, {mib} MiB\n"
    for spelling in (f"{size}G", f"{size}GB", f"{size} GiB", f"{size * 1024}MiB"):
        assert verdicts(tmp_path, "gpu.csv", csv_text, f"vram: {spelling}")["vram"][0] == "pass", spelling
    bigger = -(-size * 115 // 100)  # (15 % more: no two sizes of a card line are closer)
    assert verdicts(tmp_path, "gpu.csv", csv_text, f"vram: {bigger}G")["vram"][0] == "fail"


def test_a_format_that_hung_fails_the_driver_though_another_listed_the_gpus() -> None:
    """`-L` answers (it asks the driver little) while `-q -x` stops after GPU 2 and the table hangs
    (a GPU stuck on the bus): GO with nvidia_driver PASS, nothing said of the hang; it fails as a
    hang of every format does, naming the formats stopped."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.gpu_rules import rule_driver

    listing = (REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt").read_text()
    xml = (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()
    raw = {
        "nvidia_smi_list": ProbeOutput(listing, "", 0),
        "nvidia_smi": ProbeOutput(xml[: len(xml) // 2], "", 124),
        "nvidia_smi_table": ProbeOutput("", "", 124),
    }
    # persistence mode not known to be on (-L says nothing of it): each call initialises every
    # GPU, tens of seconds on a box of many: slow, maybe not stuck
    slow = rule_driver(parse_facts(raw))
    assert slow.verdict == "warn" and "sudo nvidia-smi -pm 1" in slow.detail, slow
    assert "; `nvidia-smi -q -x` and `nvidia-smi` did not answer within 60 s (stopped)" in slow.actual
    # the table answered with persistence mode On: a call that hangs with it on is a stuck GPU
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    stuck = rule_driver(
        parse_facts({"nvidia_smi_table": ProbeOutput(table, "", 0), "nvidia_smi": raw["nvidia_smi"]})
    )
    assert stuck.verdict == "fail" and "Xid 79" in stuck.detail, stuck
    whole = rule_driver(parse_facts({"nvidia_smi": ProbeOutput(xml, "", 0)}))
    assert whole.verdict == "pass"


def _tails() -> list[str]:
    import yaml

    from gpuonboard.resources import DATA_DIR

    return [row["name"] for row in yaml.safe_load((DATA_DIR / "gpu_name_markers.yml").read_text())["tails"]]


TAILS = _tails()


@pytest.mark.parametrize("full", TAILS)
def test_a_cut_that_may_hide_a_marker_is_no_pass(full: str) -> None:
    """nvidia-smi's table cuts `NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition` to
    `NVIDIA RTX PRO 6000 Blac...` (real capture: 3 such cards, 300 W caps): an order for the
    (600 W) RTX PRO 6000 Blackwell passed. Every cut inside a word before the marker warns."""
    from gpuonboard.steps.checks.model_match import match_model

    marker = re.search(r"\b(Max-Q|Laptop)\b", full)
    assert marker is not None
    ordered = full[: marker.start()].removeprefix("NVIDIA ").strip()
    for end in range(len("NVIDIA RTX 5"), marker.start() - 1):
        if full[end - 1].isalpha() and full[end].isalpha():  # (a cut inside a word)
            verdict = match_model(ordered, full[:end] + "...", None).verdict
            assert verdict in ("warn", "fail"), full[:end]


def test_a_cut_no_known_name_continues_with_a_marker_passes() -> None:
    from gpuonboard.steps.checks.model_match import match_model

    assert match_model("RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Gene...", 49140).verdict == "pass"
    assert (
        match_model(
            "RTX PRO 6000 Blackwell Max-Q", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
        ).verdict
        == "pass"
    )


def test_a_view_of_some_gpus_names_its_gpu_by_address(tmp_path: Path) -> None:
    """`nvidia-smi -q -d ECC,ROW_REMAPPER -i 52:00.0` of an 8-GPU box numbers its one record 0: the
    pending remap of the GPU at 52:00.0 was blamed on GPU 0 (and its reset advice would reset
    the wrong GPU). A -q cut short keeps its numbers (its records are GPUs 0, 1, ... in order)."""
    name = "nvidia-smi-q-d-ecc-row-remapper-i__1of8gpu__driver550.90.07__remap-pending-annotated.txt"
    verdict, actual = verdicts(tmp_path, name, (REAL / name).read_text())["memory_repair"]
    assert verdict == "fail" and actual.startswith("GPU at PCI 00000000:52:00.0: row remap pending"), actual
    assert "GPU 0" not in actual


def test_a_format_that_failed_while_others_answered_is_said() -> None:
    """`-q -x` and `-q` exiting 4 `Insufficient Permissions` beside a table that answers: the
    failure was in no row nor summary (the rules' "not reported" read as a field the box lacks)."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.gpu_rules import rule_driver

    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    raw = {
        "nvidia_smi_table": ProbeOutput(table, "", 0),
        "nvidia_smi": ProbeOutput("", "Insufficient Permissions\n", 4),
        "nvidia_smi_q": ProbeOutput("", "Insufficient Permissions\n", 4),
    }
    check = rule_driver(parse_facts(raw))
    assert check.verdict == "pass"
    assert check.detail == (
        "`nvidia-smi -q -x` failed (exit 4: Insufficient Permissions); `nvidia-smi -q` failed (exit 4:"
        " Insufficient Permissions); the facts come from the formats that answered (table)"
    )


APPS = Path(__file__).parents[3] / "fixtures" / "compute-apps"
H200_CSV = "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"


@pytest.mark.parametrize(("state", "verdict"), [("load", "fail"), ("idle", None)])
def test_a_saved_compute_apps_csv_lists_the_processes(
    tmp_path: Path, state: str, verdict: str | None
) -> None:
    """A saved `--query-compute-apps` CSV (the live probe's process list) was refused as "a CSV
    without its header row"; beside a GPU CSV of the same box it lists the GPU's processes."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    apps = APPS / f"nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__{state}.csv"
    raw = offline.load_outputs([str(apps), str(REAL / H200_CSV)])
    assert "nvidia_smi_apps" in raw
    rules = {c.name: c for c in offline.judge(parse_facts(raw), None)}
    check = rules["foreign_processes"]
    if verdict == "fail":
        assert check.verdict == "fail" and "pid 12267 ./gpu_burn (13526 MiB)" in check.actual, check
    else:
        assert "pid" not in check.actual, check


def test_a_compute_apps_csv_without_gpu_uuid_is_refused(tmp_path: Path) -> None:
    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    path = tmp_path / "apps.csv"
    path.write_text("pid, process_name, used_gpu_memory [MiB]\n12267, ./gpu_burn, 13526 MiB\n")
    with pytest.raises(UsageError, match="a `--query-compute-apps` CSV without `gpu_uuid`"):
        offline.load_outputs([str(path)])


def test_a_one_section_view_of_one_gpu_is_whole(tmp_path: Path) -> None:
    """`nvidia-smi -q -d TEMPERATURE` of one GPU (one record, one section: a real R304 capture)
    was an incomplete probe ("cut off") with its R304 `Gpu : 49 C` unread."""
    public = Path(__file__).parents[3] / "fixtures" / "public"
    name = "nvidia-smi-q-d-temperature__geforce-6200__driver304.108__monitorix-28.txt"
    rules = verdicts(tmp_path, name, (public / name).read_text())
    assert rules["nvidia_driver"][0] == "pass", rules["nvidia_driver"]
    assert rules["temperature"] == ("pass", "49 C on GPU 0")
    # every real -q cut to one display of one section stays whole where the -q was whole
    for q in Q_TEXTS:
        view = q_view(q, ("Temperature",))
        if re.search(r"Attached GPUs\s+: 1\n", view) and "incomplete" not in str(
            verdicts(tmp_path, q, (REAL / q).read_text())["nvidia_driver"]
        ):
            assert "incomplete" not in verdicts(tmp_path, q, view)["nvidia_driver"][1], q


@pytest.mark.parametrize(
    ("lscpu", "said"),
    [
        (("", "sh: 1: lscpu: not found", 127), "16 logical CPUs (lscpu not installed)"),
        (("", "lscpu: failed to determine number of CPUs", 1), "16 logical CPUs (lscpu failed)"),
        (("garbage\n", "", 0), "16 logical CPUs (lscpu unreadable)"),
    ],
)
def test_cpu_cores_says_why_lscpu_gave_nothing(lscpu: tuple[str, str, int], said: str) -> None:
    """A minimal image without lscpu (exit 127) was "lscpu unreadable"."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.host_rules import rule_cpu

    facts = parse_facts({"lscpu": ProbeOutput(*lscpu), "nproc": ProbeOutput("16\n", "", 0)})
    assert rule_cpu(OrderSpec(cpu_cores=8), facts).actual == said


def test_a_network_volume_gives_no_size(tmp_path: Path) -> None:
    """A RunPod pod's 100 GB network volume at /workspace shows in df as the MooseFS cluster
    (`mfs#us-mo-1.runpod.net:9421  448T`): a 500 GB order passed on size."""
    public = Path(__file__).parents[3] / "fixtures" / "public"
    name = "df-h-grep__runpod-a100-pod__mfs-network-volume-448t.txt"
    df = (public / name).read_text()
    order = "data_disk: {mount: /workspace, min_size: 500GB}"
    verdict, actual = verdicts(tmp_path, name, df, order)["data_disk"]
    assert (verdict, actual.endswith("(a network share)")) == ("unverified", True), actual
    assert verdicts(tmp_path, name, df, "data_disk: /workspace")["data_disk"][0] == "warn"


PUBLIC = Path(__file__).parents[3] / "fixtures" / "public"
AUTODL = (
    "df-h__autodl-rtx4090-container__overlay-root.txt",
    "free-h__autodl-rtx4090-container__host-1.0ti.txt",
)


def _folder(tmp_path: Path, extra: dict[str, str]) -> Path:
    folder = tmp_path / f"box{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    for name in AUTODL:
        (folder / name).write_text((PUBLIC / name).read_text())
    for name, text in extra.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("limits", "ram", "verdict"),
    [
        ({}, "512GB", "unverified"),  # (the host's 1.0 TiB: the container may have 32 GB of it)
        (
            {"cg.txt": "/sys/fs/cgroup/memory.max:34359738368\n/sys/fs/cgroup/cpu.max:800000 100000\n"},
            "512GB",
            "fail",
        ),
        ({"cg.txt": "/sys/fs/cgroup/memory.max:max\n/sys/fs/cgroup/cpu.max:max 100000\n"}, "512GB", "pass"),
        (
            {
                "cg.txt": "==> /sys/fs/cgroup/memory.max <==\n34359738368\n\n"
                "==> /sys/fs/cgroup/cpu.max <==\nmax 100000\n"
            },
            "32GB",
            "pass",
        ),
    ],
)
def test_a_container_shows_the_hosts_ram(
    tmp_path: Path, limits: dict[str, str], ram: str, verdict: str
) -> None:
    """A real AutoDL container (overlay root, `free -h` of the host's 1.0Ti) passed `ram: 512GB`:
    the container's cgroup limit decides, and offline without it the pass is unverified."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    folder = _folder(tmp_path, limits)
    (tmp_path / "order.yml").write_text(f"ram: {ram}\n")
    facts = parse_facts(offline.load_outputs([str(folder)]))
    rules = {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}
    assert rules["ram"].verdict == verdict, rules["ram"]
    if not limits:
        assert "grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max" in rules["ram"].detail


def test_a_container_limit_lxcfs_shows_as_the_total_is_no_dimm() -> None:
    """With lxcfs `free` shows the container's limit as its total: "a missing or failed DIMM" was
    blamed for a 4000MB LXD limit (canonical/lxd#6166)."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.host_rules import rule_ram

    total = 4000 * 10**6 // 1024  # KiB
    free = (
        "              total        used        free      shared  buff/cache   available\n"
        f"Mem:     {total}      100000     3000000           0      500000     3500000\n"
        "Swap:             0           0           0\n"
    )
    facts = parse_facts(
        {
            "free": ProbeOutput(free, "", 0),
            "cgroup_limits": ProbeOutput(f"/sys/fs/cgroup/memory.max\t{total * 1024}\n", "", 0),
        }
    )
    check = rule_ram(OrderSpec(ram_bytes=8 * 2**30), facts, 0.03)
    assert check.verdict == "fail" and "DIMM" not in check.detail.replace("not a missing DIMM", "")
    assert "the container's limit" in check.detail


@pytest.mark.parametrize(
    "order",
    [
        'data_disk: "/data 600"',
        'data_disk: "/data 4TB NVMe"',
        'vram: "80"',
        'ram: "512"',
        "data_disk: {mount: /data, min_size: '600'}",
    ],
)
def test_a_size_without_its_unit_is_refused(tmp_path: Path, order: str) -> None:
    """A quoted bare number was read as bytes: `vram: "80"` passed any GPU, `/data 600` any disk."""
    from gpuonboard.api import offline
    from gpuonboard.errors import InventoryError

    (tmp_path / "order.yml").write_text(order + "\n")
    with pytest.raises(
        InventoryError, match="needs a unit|must be a mount point, or a mount point and a size"
    ):
        offline.load_order(str(tmp_path / "order.yml"))


def test_processes_no_uuid_places_leave_the_lists_unknown() -> None:
    """Processes of a compute-apps list whose UUID names no GPU listed (GPUs without UUIDs) were
    dropped and the GPUs' lists read as empty ("none")."""
    from gpuonboard.facts.gpu_merge import _with_processes
    from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess

    gpus = [GpuInfo(index=0, name="NVIDIA H100"), GpuInfo(index=1, name="NVIDIA H100")]
    apps = {"GPU-aaaa": [GpuProcess(7, "./gpu_burn", "C", 13526)]}
    assert not any(g.processes_known for g in _with_processes(gpus, apps))
    one = _with_processes(gpus[:1], apps)[0]
    assert one.processes_known and one.processes[0].pid == 7  # (one GPU, one UUID: that GPU's)


def test_an_empty_process_table_on_one_line_says_none(tmp_path: Path) -> None:
    """`| Processes:  No running processes found |` (a real RunPod pod's table, driver 580): the
    list was not read, and an idle pod's foreign_processes was unverified."""
    name = "nvidia-smi__a100-80gb-pcie__runpod-pod__driver580.159.04__one-line-processes.txt"
    assert verdicts(tmp_path, name, (PUBLIC / name).read_text())["foreign_processes"] == ("pass", "none")


def test_a_failed_nvlink_command_is_quoted() -> None:
    """`nvidia-smi nvlink -s` exiting 3 with its message was "no `nvidia-smi nvlink -s` output"
    (and on one GPU "printed nothing"), where `topo -m`'s same failure is quoted. On one GPU, 3
    (nvidia-smi's "not supported": NVLink is not available there) is not applicable; any other
    failure says nothing of the links (test_truth_round12, test_probe_exit_codes)."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    failed = ProbeOutput("", "The requested operation is not available on target device\n", 3)
    h100 = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text()
    facts = parse_facts({"nvidia_smi_q": ProbeOutput(h100, "", 0), "nvidia_nvlink": failed})
    check = next(c for c in health_checks(facts) if c.name == "nvlink_links")
    assert (check.verdict, check.actual) == ("unverified", "`nvidia-smi nvlink -s` failed")
    assert check.detail == "exit 3: The requested operation is not available on target device"
    h200 = (REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text()
    lone = parse_facts({"nvidia_smi_q": ProbeOutput(h200, "", 0), "nvidia_nvlink": failed})
    said = next(c for c in health_checks(lone) if c.name == "nvlink_links")
    assert (said.verdict, said.actual) == (
        "pass",
        "not applicable: one GPU in the box, no NVLink peer (`nvidia-smi nvlink -s` says NVLink is"
        " not available there)",
    ), said


@pytest.mark.parametrize("rate", ["3x50GB/s", "8x400GB", "8x50GBps"])
def test_an_rdma_rate_in_bytes_is_refused(tmp_path: Path, rate: str) -> None:
    """`rdma: "3x50GB/s"` was read as 50 Gb/s (case ignored) and passed 100G ports for a 400G one."""
    from gpuonboard.api import offline
    from gpuonboard.errors import InventoryError

    (tmp_path / "order.yml").write_text(f'rdma: "{rate}"\n')
    with pytest.raises(InventoryError, match="a rate in bytes"):
        offline.load_order(str(tmp_path / "order.yml"))


def test_rdma_ports_down_and_slower_are_said_apart(tmp_path: Path) -> None:
    """8 x NDR ordered, 6 up: the ports down were shown at mlx5's 40 Gb/s placeholder, and the
    box's up 100G front-end NICs were listed as "short" with them."""
    name = "ibstat__h100-8x-ndr400__down-polling__gpud.txt"
    verdict, actual = verdicts(tmp_path, name, (REAL / name).read_text(), 'rdma: "8x400G"')["rdma_ports"]
    assert verdict == "fail"
    assert "down: mlx5_11/1 DOWN (Polling) Ethernet, mlx5_5/1 DOWN (Disabled) Ethernet" in actual
    assert "up below 400 Gb/s, not counted: mlx5_1/1 ACTIVE 100 Gb/s" in actual
    assert "40 Gb/s" not in actual


def test_a_port_down_with_its_link_up_is_no_cable(tmp_path: Path) -> None:
    """`State: Down` with `Physical state: LinkUp` (a ConnectX-6 VF with no LID) was advised only
    "check cables and switch ports": the link is up, the subnet manager or the VF setup is not."""
    name = "ibstat__connectx6-mt4124__1port-down-linkup__sriov-pod.txt"
    rules = {c.name: c for c in offline_checks(tmp_path, name, (REAL / name).read_text(), 'rdma: "1x200G"')}
    check = rules["rdma_ports"]
    assert check.verdict == "fail" and "DOWN (LinkUp)" in check.actual
    assert "no subnet manager gave it a LID" in check.detail


def test_advice_to_run_q_says_where_q_failed() -> None:
    """`-q` and `-q -x` exiting 4 `Insufficient Permissions` beside a table: the rules' advice
    "`nvidia-smi -q -d PCIE` shows them" named the command the host had just refused."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.gpu_health.step import evaluate

    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    refused = ProbeOutput("", "Insufficient Permissions\n", 4)
    raw = {"nvidia_smi_table": ProbeOutput(table, "", 0), "nvidia_smi": refused, "nvidia_smi_q": refused}
    pcie = next(c for c in evaluate(parse_facts(raw)) if c.name == "pcie_link")
    assert pcie.verdict == "unverified"
    assert pcie.detail.endswith(
        "; on this box `nvidia-smi -q` failed (exit 4: Insufficient Permissions): ask the vendor for it"
    )
