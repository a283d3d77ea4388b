"""Verdicts of truth sweep round 18, on views cut from real captures (tests/fixtures/real)
exactly as nvidia-smi prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.model_names import names_a_model

from ...offline_judge import checks, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
VIEWS = sorted(p.name for p in REAL.glob("nvidia-smi*__*.txt") if not p.name.startswith("nvidia-smi-L"))


def listing(name: str) -> tuple[str, str] | None:
    """The real capture's GPUs as `nvidia-smi -L` prints them, and an order naming the first GPU's
    model with the size of memory the capture shows (None: no named GPU with its memory, or a name
    cut before its model, which an order file may not hold since round 25)."""
    try:
        report = parse_facts(offline.load_outputs([str(REAL / name)])).gpu
    except Exception:  # (a capture the offline judge refuses as a whole)
        return None
    gpus = report.gpus if report is not None else []
    # (a memory under 1 GB, a display adapter's, is no size an order file may name: '0GB')
    if not gpus or not gpus[0].name or (gpus[0].memory_total_mib or 0) < 1024 or gpus[0].memory_unified:
        return None
    if not names_a_model(gpus[0].name):  # (a name the table cut before its model: 'NVIDIA GeForce ...')
        return None
    lines = [
        f"GPU {n}: {g.name} (UUID: {g.uuid or f'GPU-{n:08d}-0000-0000-0000-000000000000'})"
        for n, g in enumerate(gpus)
    ]
    order = f"gpu_model: {gpus[0].name} {round(gpus[0].memory_total_mib / 1024)}GB\n"
    return "\n".join(lines) + "\n", order


@pytest.mark.parametrize("name", VIEWS)
def test_a_listing_without_memory_never_fails_a_size_the_whole_capture_meets(
    tmp_path: Path, name: str
) -> None:
    """`nvidia-smi -L` prints no memory: an ordered size the name does not say is unverified by
    it, never failed. A Grace superchip's name says CPU + GPU memory ('NVIDIA GH200 480GB' of a
    96 GB GPU): `GH200 96GB` against its listing failed "VRAM unknown", a verdict from absence."""
    made = listing(name)
    if made is None:
        pytest.skip("no named GPU with its memory")
    text, order = made
    whole = verdicts(tmp_path, name, (REAL / name).read_text(errors="replace"), order)
    if whole.get("gpu_model", ("",))[0] != "pass":
        pytest.skip("the whole capture does not pass the order")
    (check,) = [c for c in checks(tmp_path, "nvidia-smi-L.txt", text, order) if c.name == "gpu_model"]
    assert check.verdict in ("pass", "unverified"), check
    if check.verdict == "unverified":
        assert "gives the GPU's memory" in check.detail or "gives no GPU memory" in check.detail


PUBLIC = Path(__file__).parents[3] / "fixtures" / "public"


@pytest.mark.parametrize(
    ("name", "model", "kinds", "other"),
    [
        ("nvidia-smi-L__rtx-3060-ti__vast-ai__1gpu.txt", "RTX 3060 Ti", ("GDDR6", "GDDR6X"), "HBM3"),
        ("nvidia-smi-L__gtx-1650__1gpu.txt", "GTX 1650", ("GDDR5", "GDDR6"), "GDDR6X"),
    ],
)
def test_a_memory_type_the_model_is_sold_with_under_one_name_cannot_be_told(
    tmp_path: Path, name: str, model: str, kinds: tuple[str, ...], other: str
) -> None:
    """The RTX 3060 Ti comes with GDDR6 or GDDR6X, the GTX 1650 with GDDR5 or GDDR6, each under one
    name nvidia-smi prints the same (a rented Vast.ai 3060 Ti's `-L`): either ordered type passed.
    It is unverified; a type the model is not sold with fails."""
    text = (PUBLIC / name).read_text()
    for kind in kinds:
        found = [
            c for c in checks(tmp_path, name, text, f"gpu_model: {model} {kind}") if c.name == "gpu_model"
        ]
        assert found[0].verdict == "unverified", found[0]
        assert f"the {model} is sold with {' and '.join(kinds)} under one name" in found[0].detail
    verdict, _ = verdicts(tmp_path, name, text, f"gpu_model: {model} {other}")["gpu_model"]
    assert verdict == "fail"
    assert verdicts(tmp_path, name, text, f"gpu_model: {model}")["gpu_model"][0] == "pass"


def test_every_memory_kinds_row_names_a_model_and_its_types() -> None:
    """data/gpu_name_markers.yml `memory_kinds`: each row a model with two or more types."""
    from gpuonboard.steps.checks.gpu_markers import memory_kinds

    rows = memory_kinds()
    assert rows
    assert all(len(kinds) >= 2 and words for words, kinds in rows)


H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
H200_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"


def with_health(text: str, values: dict[str, str]) -> str:
    """The real R590 `-q` with its Fabric -> Health fields set as a GB300's print them
    (NVIDIA/k8s-test-infra#677: Summary, Bandwidth, Route Unhealthy...; the capture's are N/A)."""
    out = []
    for line in text.split("\n"):
        label, sep, _ = line.partition(":")
        if sep and label.strip() in values and line.startswith("            "):
            line = f"{label}: {values[label.strip()]}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize(
    ("values", "verdict", "said"),
    [
        ({"Summary": "Unhealthy", "Bandwidth": "Full"}, "fail", "GPU 0: Summary Unhealthy"),
        ({"Summary": "Unhealthy", "Route Unhealthy": "True"}, "fail", "GPU 0: Route Unhealthy True"),
        ({"Summary": "Limited Capacity", "Bandwidth": "Degraded"}, "warn", "GPU 0: Bandwidth Degraded"),
        (
            {"Summary": "Healthy", "Route Recovery in progress": "True"},
            "warn",
            "Route Recovery in progress True",
        ),
        ({"Summary": "Healthy", "Bandwidth": "Full", "Route Unhealthy": "False"}, "pass", "Completed"),
    ],
)
def test_the_fabric_health_block_is_judged(
    tmp_path: Path, values: dict[str, str], verdict: str, said: str
) -> None:
    """R570+ prints a Health block under Fabric; a GB200 whose State is Completed and Status
    Success printed Summary Unhealthy (kubernetes-sigs/dra-driver-nvidia-gpu#626) and passed
    `fabric_manager` here: an unhealthy summary or route fails, a degraded bandwidth or a route
    recovery warns."""
    text = with_health(H200_Q.read_text(), values)
    assert text != H200_Q.read_text()
    got, actual = verdicts(tmp_path, H200_Q.name, text)["fabric_manager"]
    assert got == verdict, actual
    assert said in actual


def test_the_csv_fabric_health_summary_is_judged(tmp_path: Path) -> None:
    """`fabric.health.summary` of a `--query-gpu` CSV (the real R590 H200 CSV, its `[N/A]` cell
    set to a GB200's `Unhealthy`)."""
    rows = H200_CSV.read_text().split("\n")
    head = [h.strip() for h in rows[0].split(",")]
    cells = rows[1].split(",")
    cells[head.index("fabric.health.summary")] = " Unhealthy"
    text = "\n".join([rows[0], ",".join(cells), *rows[2:]])
    got, actual = verdicts(tmp_path, H200_CSV.name, text)["fabric_manager"]
    assert (got, "GPU 0: Summary Unhealthy" in actual) == ("fail", True), actual


def test_a_fabric_state_pass_over_a_listing_cut_short_is_of_what_was_read(tmp_path: Path) -> None:
    """A real 8-GPU H100 `-q` cut after its 4th GPU: every GPU rule said "of what was read", and
    `fabric_manager` passed "fabric state Completed on 4 GPU(s)", judging the box a VM slice."""
    name = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
    text = (REAL / name).read_text()
    starts = [i for i, line in enumerate(text.split("\n")) if line.startswith("GPU 0000")]
    cut = "\n".join(text.split("\n")[: starts[4]]) + "\n"
    assert verdicts(tmp_path, name, text)["fabric_manager"][0] == "pass"
    got, actual = verdicts(tmp_path, name, cut)["fabric_manager"]
    assert got == "unverified", actual
    assert "of what was read; incomplete probe" in actual


def test_a_rack_scale_tray_with_its_service_state_and_no_fabric_state_is_unverified(tmp_path: Path) -> None:
    """A GB200 NVL72 compute tray (the real 4-GPU table) with `systemctl is-active` of the
    fabric manager saved beside it: no row was given; the GPUs' fabric state decides there."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "nvidia-smi.txt").write_text(
        (REAL / "nvidia-smi__gb200__4gpu__driver580.126.09__openshift-blog.txt").read_text()
    )
    (folder / "systemctl-fabric.txt").write_text("inactive\n")
    from gpuonboard.api import offline as off

    found = [
        c for c in off.judge(parse_facts(off.load_outputs([str(folder)])), None) if c.name == "fabric_manager"
    ]
    assert found and found[0].verdict == "unverified", found
    assert "NVSwitch trays" in found[0].detail


def test_a_revision_word_marks_another_card() -> None:
    """`NVIDIA GeForce RTX 5090 D v2` (as a real log prints it: search index file 58302835659) is a
    24 GB card, the RTX 5090 D a 32 GB one: an order for the RTX 5090 D passed it."""
    from gpuonboard.steps.checks.model_match import match_model

    name = "NVIDIA GeForce RTX 5090 D v2"
    assert match_model("RTX 5090 D", name).verdict == "fail"
    assert "'v2' in the name marks another product" in match_model("RTX 5090 D", name).why
    assert match_model("RTX 5090 D v2", name).verdict == "pass"


def test_an_ordered_pcie_card_of_a_model_whose_only_pcie_card_is_nvl() -> None:
    """NVIDIA's only PCIe H200 is the H200 NVL (a real one's table: search index file
    57754680604): an order for an "H200 PCIe" failed it, "'NVL' marks another product". The
    H100 has both an H100 PCIe and an H100 NVL: there NVL stays another card."""
    from gpuonboard.steps.checks.model_match import match_model

    assert match_model("H200 PCIe", "NVIDIA H200 NVL").verdict == "pass"
    assert match_model("H200", "NVIDIA H200 NVL").verdict == "fail"
    assert match_model("H100 PCIe", "NVIDIA H100 NVL").verdict == "fail"


@pytest.mark.parametrize("ordered", ["RTX 5090 Dv2", "RTX 5090DV2", "5090D V2", "RTX 5090 D v2"])
def test_a_revision_written_joined_is_the_same_order(ordered: str) -> None:
    """Listings write the RTX 5090 D v2 joined ('Dv2', '5090DV2'): it failed as "'DV 2' not in
    the name"."""
    from gpuonboard.steps.checks.model_match import match_model

    assert match_model(ordered, "NVIDIA GeForce RTX 5090 D v2").verdict == "pass"
