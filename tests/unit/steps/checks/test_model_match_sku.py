"""Truth sweep: what was ordered against what is there, for the SKUs rentals really ship
(reworked boards, export-market and PCIe variants), judged on real captures
(tests/fixtures/real) and on GPU names as NVIDIA's driver prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.steps.checks.fabric_health import nvlink_model, rule_fabric_manager, rule_nvlink
from gpuonboard.steps.checks.gpu_markers import sold_memory
from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
REWORKED_4090 = "nvidia-smi__geforce-rtx-4090-48gb-modded__2gpu__driver580.105.08__vastai.txt"
STOCK_4090 = "nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt"
# a HAMi pod's RTX 3090 capped to 20000 MiB (less than sold: a share; test_model_match_shared_cap.py)
HAMI_3090 = (
    "nvidia-smi__geforce-rtx-3090__1gpu__driver550.54.14__hami-cap-20000mib__copied-command__hami-700.txt"
)


def _judge(tmp_path: Path, name: str, order: str) -> tuple[str, str]:
    text = (REAL / name).read_text(encoding="utf-8")
    verdict = verdicts(tmp_path, name, text, order)["gpu_model"][0]
    return verdict, details(tmp_path, name, text, order)["gpu_model"]


# --- SKU-1: a board reworked to more memory than NVIDIA sells the model with -------------------


@pytest.mark.parametrize("model", ["RTX 4090", "GeForce RTX 4090", "4090", "RTX4090"])
def test_a_reworked_48gb_4090_warns_an_order_for_the_4090(tmp_path: Path, model: str) -> None:
    """2 x 'NVIDIA GeForce RTX 4090' with 49140 MiB each: NVIDIA sells the card with 24 GB
    (24564 MiB), so these are boards reworked after sale; an order for the card was passed."""
    verdict, detail = _judge(tmp_path, REWORKED_4090, f"gpu_model: '{model}'\n")
    assert verdict == "warn"
    assert "49140 MiB" in detail and "24 GB only" in detail and "RTX 4090 48GB" in detail


@pytest.mark.parametrize("model", ["RTX 4090 48GB", "RTX 4090 48G", "4090 48G"])
def test_an_order_naming_the_reworked_size_passes_it(tmp_path: Path, model: str) -> None:
    assert _judge(tmp_path, REWORKED_4090, f"gpu_model: '{model}'\n")[0] == "pass"


@pytest.mark.parametrize("vram", ["48GB", "48G", "48GiB", "49140MiB"])
def test_an_order_stating_the_reworked_size_as_vram_passes_it(tmp_path: Path, vram: str) -> None:
    """`{gpu_model: RTX 4090, vram: 48GB}` states the memory the boards have, as the model's
    '48GB' does: the warning asked for the size in gpu_model only."""
    assert _judge(tmp_path, REWORKED_4090, f"gpu_model: RTX 4090\nvram: {vram}\n")[0] == "pass"


def test_an_order_stating_the_sold_size_as_vram_still_warns(tmp_path: Path) -> None:
    """vram 24GB is the stock card's memory (met by more): the reworked board is still said,
    and the advice names both ways to order it."""
    verdict, detail = _judge(tmp_path, REWORKED_4090, "gpu_model: RTX 4090\nvram: 24GB\n")
    assert verdict == "warn" and "RTX 4090 48GB" in detail and "vram: 48GB" in detail


def test_an_order_for_the_sold_size_fails_the_reworked_board(tmp_path: Path) -> None:
    assert _judge(tmp_path, REWORKED_4090, "gpu_model: RTX 4090 24GB\n")[0] == "fail"


def _sold_model_captures() -> list[str]:
    """The real nvidia-smi captures whose GPUs are a model of `sold_memory`, with their memory."""
    rows = {" ".join(sorted(words)) for words, _ in sold_memory()}
    out = []
    for path in sorted(REAL.glob("nvidia-smi*__*")):
        try:
            report = parse_facts(offline.load_outputs([str(path)])).gpu
        except Exception:  # (a capture the offline judge refuses alone)
            continue
        gpus = [g for g in (report.gpus if report else []) if g.name and g.memory_total_mib]
        if gpus and any(r.replace("RTX", "").strip() in gpus[0].name.upper() for r in rows):
            out.append(path.name)
    return out


CAPTURES = _sold_model_captures()
# 8 x 'NVIDIA H800' with 143771 MiB each, an H200's memory (nccl issue #2360; round 33)
H800_WITH_H200_MEMORY = "nvidia-smi__h800-named-143771mib__8gpu__driver560.35.03__nccl-2360.txt"


def test_the_family_holds_stock_and_reworked_cards() -> None:
    assert STOCK_4090 in CAPTURES and REWORKED_4090 in CAPTURES and H800_WITH_H200_MEMORY in CAPTURES
    assert len(CAPTURES) > 40  # (the data-centre rows: every H100, H200, B200, A100... capture)


@pytest.mark.parametrize("name", CAPTURES)
def test_only_the_reworked_board_of_the_family_warns(tmp_path: Path, name: str) -> None:
    """Every real capture of a model NVIDIA sells with fixed sizes, ordered by the name it
    prints: the stock cards pass (24564 MiB of 24 GB is within the reserved margin), only the
    reworked board warns."""
    report = parse_facts(offline.load_outputs([str(REAL / name)])).gpu
    assert report is not None
    model = report.gpus[0].name
    verdict, detail = _judge(tmp_path, name, f"gpu_model: '{model}'\n")
    if name in (REWORKED_4090, H800_WITH_H200_MEMORY):
        assert verdict == "warn" and "changed after sale" in detail
    elif name == HAMI_3090:
        assert verdict == "warn" and detail.index("GPU-sharing layer caps") < detail.index(
            "changed after sale"
        )
    else:
        assert "changed after sale" not in detail


@pytest.mark.parametrize(
    ("ordered", "delivered", "mib", "verdict"),
    [
        # names as NVIDIA's driver prints them (open-gpu-kernel-modules README, device 2684 / 2685);
        # 49140 / 24564 MiB as the real captures show them
        ("RTX 4090 D", "NVIDIA GeForce RTX 4090 D", 49140, "warn"),
        ("RTX 4090 D", "NVIDIA GeForce RTX 4090 D", 24564, "pass"),
        ("RTX 4090D 48G", "NVIDIA GeForce RTX 4090 D", 49140, "pass"),
        ("RTX 4090", "NVIDIA GeForce RTX 4090 D", 49140, "fail"),  # (the D, before any size)
        ("RTX 4090", "NVIDIA GeForce RTX 4090", None, "pass"),  # (no memory read: nothing to say)
    ],
)
def test_reworked_memory_by_name(ordered: str, delivered: str, mib: int | None, verdict: str) -> None:
    assert match_model(ordered, delivered, mib).verdict == verdict


def test_every_sold_memory_row_names_a_model_and_its_sizes() -> None:
    rows = sold_memory()
    assert rows and all(words and sizes and all(n > 0 for n in sizes) for words, sizes in rows)


# --- SKU-2: an SXM model's row judged its PCIe (NVL) card ----------------------------------------

# NVML's sentence for a GPU with NVLink hardware and no link up (a PCIe card without its bridge:
# tests/fixtures/real/nvidia-smi-nvlink-s__a100-pcie-40gb__2gpu-all-inactive__driver555.42.02.txt)
ALL_INACTIVE_MSG = "NVML: Unable to retrieve Nvlink information as all links are inActive"


def _nvlink_s(name: str, gpus: int) -> str:
    return "".join(
        f"GPU {i}: {name} (UUID: GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd)\n{ALL_INACTIVE_MSG}\n"
        for i in range(gpus)
    )


# every name NVIDIA's driver prints with a variant word after a model that has an NVLink-board row
# (NVIDIA/open-gpu-kernel-modules README, "Compatible GPUs": 2321, 233A; and the H200 NVL, 233B)
VARIANT_NAMES = ["NVIDIA H800 NVL", "NVIDIA H100 NVL", "NVIDIA H200 NVL"]


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_a_pcie_nvl_card_is_no_nvlink_board_part(name: str) -> None:
    """The H800 NVL (PCIe, 94 GB, device 233A) matched the H800 SXM row: 8 NVLink links
    demanded and an NVSwitch fabric manager on 8 cards. Its bridge is optional, as the H100 NVL's."""
    row = nvlink_model(name)
    assert row is None or (row.links is None and not row.nvswitch), row
    status = parse_nvlink_status(_nvlink_s(name, 8))
    assert rule_nvlink([name] * 8, status) is None
    assert rule_fabric_manager([name] * 8, [(None, None)] * 8, None) is None


def test_the_h800_sxm_keeps_its_own_links_and_fabric() -> None:
    """Control: the H800 SXM ('NVIDIA H800', 8 links in tests/fixtures/real/
    nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt) is still judged against its 8 links."""
    row = nvlink_model("NVIDIA H800")
    assert row is not None and row.links == 8 and row.nvswitch
    check = rule_nvlink(["NVIDIA H800"] * 8, parse_nvlink_status(_nvlink_s("NVIDIA H800", 8)))
    assert check is not None and check.verdict == "fail" and "0 of 8 links" in check.actual


# --- SKU-3: the H100 SXM5 94GB, which nvidia-smi names 'NVIDIA H100' ----------------------------

# names as NVIDIA's driver prints them (open-gpu-kernel-modules 560.31.02 README, "Compatible
# GPUs"), with the form pci.ids gives their device ids
H100_SXM5_94GB = "NVIDIA H100"  # 2339: GH100 [H100 SXM5 94GB]
SXM_NAMES = [H100_SXM5_94GB, "NVIDIA H100 80GB HBM3", "NVIDIA H800", "NVIDIA H20", "NVIDIA H200"]
PCIE_NAMES = ["NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H800 PCIe", "NVIDIA H800 NVL", "NVIDIA H200 NVL"]


@pytest.mark.parametrize(
    ("ordered", "verdict"),
    [
        ("H100 SXM", "pass"),
        ("HGX H100", "pass"),
        ("H100 SXM5", "pass"),
        ("H100", "pass"),
        ("H100 PCIe", "fail"),
    ],
)
def test_the_h100_sxm5_94gb_is_an_sxm_part(ordered: str, verdict: str) -> None:
    """'NVIDIA H100' (device 2339, the H100 SXM5 94GB of e.g. 4-GPU HGX nodes) failed an order
    for an SXM H100 ("the name does not say SXM and is no SXM-only model") and passed one for
    the PCIe card."""
    assert match_model(ordered, H100_SXM5_94GB, None).verdict == verdict


@pytest.mark.parametrize("name", SXM_NAMES)
def test_every_sxm_name_of_the_driver_meets_sxm_and_not_pcie(name: str) -> None:
    # (the name's model word: 'H100' of 'NVIDIA H100 80GB HBM3', whose last word 'HBM3' names
    # no model: round 25, an order of no model word fails)
    model = name.split()[1]
    assert match_model(f"{model} SXM", name, None).verdict == "pass"
    assert match_model(f"{model} PCIe", name, None).verdict == "fail"


@pytest.mark.parametrize("name", PCIE_NAMES)
def test_every_pcie_card_of_those_models_fails_sxm(name: str) -> None:
    assert match_model(f"{name.split()[1]} SXM", name, None).verdict == "fail"


def test_every_sxm_only_row_lists_names_holding_its_model() -> None:
    from gpuonboard.resources import table_rows
    from gpuonboard.steps.checks.gpu_markers import MARKERS_FILE, sxm_only
    from gpuonboard.steps.checks.model_match import model_tokens

    rows = table_rows(MARKERS_FILE, "sxm_only")
    assert len(rows) == len(sxm_only()) > 0
    for row, words in zip(rows, sxm_only(), strict=True):
        assert all(words <= model_tokens(n) for n in row["names"]), row


def test_the_h100_sxm5_94gb_has_its_18_nvlink_links() -> None:
    row = nvlink_model(H100_SXM5_94GB)
    assert row is not None and row.links == 18 and row.nvswitch
    for name in PCIE_NAMES:
        row = nvlink_model(name)
        assert row is None or row.links is None, name


# --- SKU-4: a model word ending in G read as a memory size ('A10G' shown as 'A10GB') ------------


@pytest.mark.parametrize(
    ("capture", "model", "said"),
    [
        ("nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml", "A10", "the name says 'A10G'"),
        ("nvidia-smi__a10__1gpu__driver550.90.12.txt", "A10G", "'A10G' not in the name"),
        ("nvidia-smi__a10__1gpu__driver550.90.12.txt", "A10G 24G", "'A10G' not in the name"),
    ],
)
def test_the_a10g_is_named_as_nvidia_smi_prints_it(
    tmp_path: Path, capture: str, model: str, said: str
) -> None:
    """The A10 and the A10G (AWS's, device 2237) are other cards: the failure names the word as
    written, not 'A10GB' (the G after the digits was taken for a size unit)."""
    verdict, detail = _judge(tmp_path, capture, f"gpu_model: {model}\n")
    assert verdict == "fail" and said in detail and "A10GB" not in detail


# --- SKU-5: a name nvidia-smi's table cut is no SXM claim; a converged card is no SXM part -------

# the H100 CNX converged card (a PCIe H100 with a ConnectX-7 NIC on its board): pci.ids 2313
# 'GH100 [H100 CNX]' (search index file 14007831047), named so in a GPU database (file 27379275444)
H100_CNX = "NVIDIA H100 CNX"


def _cuts(name: str) -> list[str]:
    """Every cut nvidia-smi's table may make of a name after its model word, as it prints them
    ('NVIDIA H100 P...', 'NVIDIA H100 ...'; real: 'NVIDIA GeForce RTX 2080 ...', 'Tesla V100-SXM2...')."""
    start = len(" ".join(name.split()[:2])) + 1
    return [name[:end] + "..." for end in range(start, len(name))]


CUT_NAMES = sorted({cut for name in [*SXM_NAMES, *PCIE_NAMES, H100_CNX] for cut in _cuts(name)})


@pytest.mark.parametrize("cut", CUT_NAMES)
def test_a_cut_name_is_never_claimed_sxm(cut: str) -> None:
    """'NVIDIA H100 P...' (the H100 PCIe, cut) failed an order for the H100 PCIe ("'PCIe' ordered,
    this is an SXM part") and was given the H100 SXM's 18 NVLink links and NVSwitch: the words the
    cut hides may be PCIe or NVL, so neither form is told and no NVLink row applies."""
    model = cut.split()[1]
    assert "SXM part" not in match_model(f"{model} PCIe", cut, None).why, cut
    for order in (f"{model} SXM", f"HGX {model}"):  # (a visible 'NV...', 'PCI...' fails them)
        assert match_model(order, cut, None).verdict in ("warn", "fail"), (order, cut)
    assert nvlink_model(cut) is None, cut


@pytest.mark.parametrize(
    "cut", ["NVIDIA H100 P...", "NVIDIA H100 N...", "NVIDIA H100 ...", "NVIDIA H800 P..."]
)
@pytest.mark.parametrize("form", ["PCIe", "SXM", "HGX"])
def test_a_cut_before_the_form_warns_either_form(cut: str, form: str) -> None:
    model = cut.split()[1]
    order = f"HGX {model}" if form == "HGX" else f"{model} {form}"
    assert match_model(order, cut, None).verdict == "warn"


def test_a_cut_name_still_says_what_its_cut_word_may_be() -> None:
    why = match_model("H100 SXM", "NVIDIA H100 P...", None).why
    assert "the ordered 'SXM' not in the part shown" in why and "'P...' may be PCIe" in why


def test_a_cut_name_saying_sxm_keeps_its_form() -> None:
    """Control: a cut after the SXM word ('Tesla V100-SXM2...', real) is still an SXM part."""
    assert match_model("V100 SXM2", "Tesla V100-SXM2...", None).verdict != "fail"
    assert match_model("V100 PCIe", "Tesla V100-SXM2...", None).verdict == "fail"


@pytest.mark.parametrize(
    ("ordered", "verdict"),
    [("H100 SXM", "fail"), ("HGX H100", "fail"), ("H100", "fail"), ("H100 CNX", "pass")],
)
def test_the_h100_cnx_is_another_card_than_the_sxm_h100(ordered: str, verdict: str) -> None:
    """'NVIDIA H100 CNX' holds the SXM-only model's words and no PCIe/NVL, so it was taken for
    an SXM part (passing 'H100 SXM' and given 18 NVLink links): CNX marks another product."""
    assert match_model(ordered, H100_CNX, None).verdict == verdict
    assert nvlink_model(H100_CNX) is None


def test_the_a100_sxm_64gb_is_judged_against_its_12_links_without_nvswitch() -> None:
    """'NVIDIA A100-SXM-64GB' (device 20B3 in NVIDIA's driver list; the 4-GPU nodes of CINECA's
    Leonardo) matched no row: a node whose NVLinks were all down had no nvlink_links check at all."""
    name = "NVIDIA A100-SXM-64GB"
    row = nvlink_model(name)
    assert row is not None and row.links == 12 and not row.nvswitch
    check = rule_nvlink([name] * 4, parse_nvlink_status(_nvlink_s(name, 4)))
    assert check is not None and check.verdict == "fail" and "0 of 12 links" in check.actual
    assert rule_fabric_manager([name] * 4, [(None, None)] * 4, None) is None
    assert nvlink_model("NVIDIA A100-SXM4-80GB") is not None  # (its own row, first)


# --- SKU-6: an NVLink domain in a name ('NVIDIA H20 NVL16') is no PCIe NVL card ------------------

# NVIDIA's driver names device 230E (subsystem 10DE 20DF) 'NVIDIA H20 NVL16' (data/gpu_pci_ids.yml,
# from NVIDIA/open-gpu-kernel-modules README, "Compatible GPUs"): an H20 in a 16-GPU NVLink
# domain, as 'GB200 NVL72' names a rack; 'NVL' alone ('NVIDIA H100 NVL') is the PCIe card
H20_NVL16 = "NVIDIA H20 NVL16"


@pytest.mark.parametrize(
    ("ordered", "verdict"),
    [
        ("H20 NVL16", "pass"),
        ("8x H20 NVL16", "pass"),
        # (round 32: another device than the H20's 2329, whose name the driver prints without
        # 'NVL16': another product, as the H20-3e is; was a pass)
        ("H20", "fail"),
        ("HGX H20", "fail"),
        ("H20 NVL", "fail"),  # the PCIe NVL card's word: this is none
        ("H100 NVL16", "fail"),
    ],
)
def test_an_nvlink_domain_in_the_name_is_no_pcie_nvl_card(ordered: str, verdict: str) -> None:
    """'NVIDIA H20 NVL16' failed an order for exactly that ('H20 NVL16': "'NVL' in the name marks
    another product (not ordered)"): its 'NVL16' was read as the 'NVL' of the PCIe H100 NVL, while
    the order's 'NVL16' was left out as an NVLink domain ('GB200 NVL72')."""
    check = match_model(ordered, H20_NVL16, None)
    assert check.verdict == verdict, check.why
    if verdict == "pass":
        assert "NVL" not in check.why
    if ordered in ("H20", "HGX H20"):
        assert check.why == "'NVL16' in the name marks another product (not ordered)"


def test_the_h20_nvl16_is_still_another_product_than_the_h20() -> None:
    """Control: its PCI id is another than the H20's (2329), so the GPU-identity rule keeps them
    apart, and the H100 NVL is still the PCIe card that fails an H100 order."""
    from gpuonboard.steps.checks.gpu_identity import same_product

    assert not same_product(H20_NVL16, "NVIDIA H20")
    assert match_model("H100", "NVIDIA H100 NVL", None).verdict == "fail"


# --- SKU-7: a MIG-backed vGPU type with an attribute ('A100-1-5CME') -------------------------------

# NVIDIA's MIG-backed vGPU types are <board>-<slices>-<GB><series>[ME|NOME|MEALL|GFX]: the MIG
# profile's media extensions or graphics (NVIDIA/vgpu-device-manager pkg/types/vgpu.go,
# migBackedRegex; NVIDIA's vGPU docs list "A100-1-5CME | 5120 | MIG 1g.5gb+me", "H800-1-10CME")
GRID_A100_4C = "nvidia-smi__grid-a100-4c-vgpu__1gpu__driver510.47.03__guest.txt"


def _mig_backed_guest() -> str:
    """The real `GRID A100-4C` guest's table with its name cell and memory total made those of the
    A100-1-5CME type (5 GB, MIG 1g.5gb+me), column widths kept: nothing else edited."""
    text = (REAL / GRID_A100_4C).read_text(encoding="utf-8")
    text = text.replace("GRID A100-4C        On ", "GRID A100-1-5CME    On ")
    return text.replace("0MiB /  4096MiB", "0MiB /  5120MiB")


def test_a_mig_backed_vgpu_with_media_extensions_fails_an_order_for_the_board(tmp_path: Path) -> None:
    """'GRID A100-1-5CME' (a 5 GB MIG slice of an A100, shared through vGPU) passed an order for an
    A100: the vGPU name reader knew no attribute after the series letter, so the name was read as
    a GPU's, and 'virtualization' stayed unverified beside it."""
    text = _mig_backed_guest()
    got = verdicts(tmp_path, GRID_A100_4C, text, "gpu_model: A100\ngpu_count: 1\n")
    assert got["gpu_model"][0] == "fail"
    said = details(tmp_path, GRID_A100_4C, text, "gpu_model: A100\ngpu_count: 1\n")["gpu_model"]
    assert "vGPU profile with 5 GB of the A100 board's framebuffer on 1 compute slice(s)" in said
    assert "A100-1-5CME" in said
    assert got["virtualization"][0] == "warn" and "A100-1-5CME" in got["virtualization"][1]


@pytest.mark.parametrize(
    ("ordered", "delivered", "verdict"),
    [
        ("A100-1-5CME", "GRID A100-1-5CME", "pass"),  # the profile ordered
        ("vGPU A100-1-5CME", "NVIDIA A100-1-5CME", "pass"),
        ("A100-1-5C", "NVIDIA A100-1-5CME", "fail"),  # another profile: its media extensions
        ("H100 80GB", "NVIDIA H100XM-1-10CME", "fail"),
        ("H800", "NVIDIA H800-1-10CME", "fail"),
        ("RTX PRO 6000 Blackwell", "NVIDIA RTX Pro 6000 Blackwell DC-1-24CGFX", "fail"),
        ("A100", "NVIDIA A100-1-5CNOME", "fail"),
        ("A100", "NVIDIA A100-7-40CMEALL", "fail"),
    ],
)
def test_every_mig_backed_vgpu_attribute_is_read_as_a_vgpu(
    ordered: str, delivered: str, verdict: str
) -> None:
    check = match_model(ordered, delivered, None)
    assert check.verdict == verdict, check.why
    if verdict == "fail":
        assert "vGPU" in check.why, check.why
