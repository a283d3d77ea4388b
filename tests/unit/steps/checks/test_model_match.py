"""GPU model matching (steps/checks/model_match.py): ordered model names against the names
nvidia-smi prints, real ones from the captures included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.steps.checks.model_match import match_model, model_matches, model_tokens

FIX = Path(__file__).parents[3] / "fixtures"


@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        ("A100 80GB SXM", "NVIDIA A100-SXM4-80GB", True),
        ("A100 80GB", "NVIDIA A100-SXM4-80GB", True),
        ("A100 80GB SXM", "NVIDIA A100-SXM4-40GB", False),
        ("A100 80GB PCIe", "NVIDIA A100-SXM4-80GB", False),
        ("A100 80GB PCIe", "NVIDIA A100 80GB PCIe", True),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", True),
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("H100 SXM", "NVIDIA H100 PCIe", False),
        ("A100 80 GB", "NVIDIA A100-SXM4-80GB", True),
        ("", "NVIDIA A100-SXM4-80GB", False),
    ],
)
def test_model_matching(ordered: str, delivered: str, ok: bool) -> None:
    assert model_matches(ordered, delivered) is ok


def test_model_tokens_drop_vendor_words() -> None:
    assert model_tokens("NVIDIA A100-SXM4-80GB") == {"A100", "SXM4", "SXM", "80GB"}


# --- GPU model names (real names from the captures under tests/fixtures/real and shared/) ---
REAL_NAMES = {
    "a100_80": ("NVIDIA A100-SXM4-80GB", 81920),
    "a100_40": ("NVIDIA A100-SXM4-40GB", 40960),
    "h100": ("NVIDIA H100 80GB HBM3", 81559),
    "h200": ("NVIDIA H200", 143771),
    "rtx4090": ("NVIDIA GeForce RTX 4090", 24564),
    "rtx6000ada_table": ("NVIDIA RTX 6000 Ada Gene...", 49140),
    "rtx4000sff": ("NVIDIA RTX 4000 SFF Ada Generation", 20475),
    "t4": ("Tesla T4", 15360),
    "p100": ("Tesla P100-PCIE-16GB", 16280),
    "l40s": ("NVIDIA L40S", 46068),
    "a10": ("NVIDIA A10", 23028),
    "rtx3090": ("NVIDIA GeForce RTX 3090", 24576),
}


def test_real_names_table_is_from_the_captures() -> None:
    texts = "".join(
        p.read_text(errors="replace") for p in (FIX / "real").iterdir() if p.name.startswith("nvidia-smi")
    )
    for name, _ in REAL_NAMES.values():
        assert name in texts, name


@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        # correct boxes named differently from the order (defect 3)
        ("H100 80GB SXM", REAL_NAMES["h100"], True),
        ("H100 SXM5 80GB", REAL_NAMES["h100"], True),
        ("H200 SXM 141GB", REAL_NAMES["h200"], True),
        ("H200 141GB", REAL_NAMES["h200"], True),
        ("A100 80G SXM4", REAL_NAMES["a100_80"], True),
        ("A100 SXM 80GB", REAL_NAMES["a100_80"], True),
        ("RTX4090", REAL_NAMES["rtx4090"], True),
        ("RTX 4090 24GB", REAL_NAMES["rtx4090"], True),
        ("RTX 6000 Ada Generation", REAL_NAMES["rtx6000ada_table"], True),
        ("RTX 6000 Ada 48GB", REAL_NAMES["rtx6000ada_table"], True),
        ("RTX 4000 SFF Ada", REAL_NAMES["rtx4000sff"], True),
        ("T4 16GB", REAL_NAMES["t4"], True),
        ("P100 PCIe 16GB", REAL_NAMES["p100"], True),
        ("L40S PCIe 48GB", REAL_NAMES["l40s"], True),
        ("A10 24GB", REAL_NAMES["a10"], True),
        # wrong boxes
        ("H100 80GB PCIe", REAL_NAMES["h100"], False),
        ("H200 NVL", REAL_NAMES["h200"], False),
        ("A100 80G SXM4", REAL_NAMES["a100_40"], False),
        ("A100 SXM5", REAL_NAMES["a100_80"], False),
        ("RTX 4090 D", REAL_NAMES["rtx4090"], False),
        ("RTX 3090 Ti", REAL_NAMES["rtx3090"], False),
        ("RTX 6000 Ada 24GB", REAL_NAMES["rtx6000ada_table"], False),
        ("Quadro RTX 6000", REAL_NAMES["rtx6000ada_table"], False),
        ("RTX 4000 Ada", REAL_NAMES["rtx6000ada_table"], False),
        ("P100 SXM2", REAL_NAMES["p100"], False),
        ("A100 80GB", REAL_NAMES["h100"], False),
    ],
)
def test_model_matching_real_names(ordered: str, delivered: tuple[str, int], ok: bool) -> None:
    name, vram_mib = delivered
    assert model_matches(ordered, name, vram_mib) is ok


# Names of other products that carry the ordered model's words plus a word that makes them
# another card (NVIDIA's product names as nvidia-smi prints them).
@pytest.mark.parametrize(
    ("ordered", "delivered"),
    [
        ("RTX 4090", "NVIDIA GeForce RTX 4090 D"),
        ("RTX 4090", "NVIDIA GeForce RTX 4090 Laptop GPU"),
        ("RTX 4090", "NVIDIA GeForce RTX 4090 Lap..."),
        ("RTX 4080", "NVIDIA GeForce RTX 4080 SUPER"),
        ("RTX 3080", "NVIDIA GeForce RTX 3080 Ti"),
        ("RTX 3080", "NVIDIA GeForce RTX 3080 Ti Laptop GPU"),
        ("RTX 2080", "NVIDIA GeForce RTX 2080 with Max-Q Design"),
        ("H100", "NVIDIA H100 NVL"),
        ("H100", "NVIDIA H100 PCIe"),
        ("H100 80GB", "NVIDIA H100 80GB HBM3 MIG 1g.10gb"),
        ("H200", "NVIDIA H200 NVL"),
        ("H200 SXM", "NVIDIA H200 NVL"),
        ("RTX 6000", "Quadro RTX 6000"),
        ("RTX 5000", "NVIDIA RTX 5000 Ada Generation Laptop GPU"),
        ("GTX 1650", "NVIDIA GeForce GTX 1650 Mobile"),
    ],
)
def test_another_products_extra_word_fails_unless_ordered(ordered: str, delivered: str) -> None:
    assert not model_matches(ordered, delivered)
    named = delivered.replace("NVIDIA ", "").replace("GeForce ", "").replace("...", "")
    if "MIG" not in delivered and not delivered.endswith("..."):
        assert model_matches(named, delivered)  # ordering exactly that card matches it


# --- QA round 3: GPU model names. The names are nvidia-smi's, from the captures here or from
# public nvidia-smi outputs (GitHub: "NVIDIA GeForce RTX 4090 D" 24564 MiB, "NVIDIA H800" 700 W
# and "NVIDIA H800 PCIe", old driver <= 525 tables "NVIDIA A100-SXM...", new tables
# "NVIDIA GeForce RTX 4080 ..." for a 4080 SUPER, "NVIDIA GH200 480GB" with ~97.8 GB VRAM). ---
RTX4090D = ("NVIDIA GeForce RTX 4090 D", 24564)


@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        # a suffix joined to the number is the spaced word (defect 1)
        ("RTX 4090D", RTX4090D, True),
        ("4090D", RTX4090D, True),
        ("RTX4090D", RTX4090D, True),
        ("RTX-4090D", RTX4090D, True),
        ("GeForce RTX 4090D", RTX4090D, True),
        ("RTX 3090Ti", ("NVIDIA GeForce RTX 3090 Ti", 24564), True),
        ("RTX 2080Ti", ("NVIDIA GeForce RTX 2080 Ti", 11264), True),
        ("4090", REAL_NAMES["rtx4090"], True),  # a bare number: the model word holding it
        ("4090 24G", REAL_NAMES["rtx4090"], True),
        ("4090", RTX4090D, False),  # D still marks another product
        ("RTX 4090D", REAL_NAMES["rtx4090"], False),
        ("A10", ("NVIDIA A10G", 23028), False),
        # H800 and H20 without PCIe/NVL are SXM parts (defect 2)
        ("H800 SXM", ("NVIDIA H800", 81559), True),
        ("H800 SXM5 80GB", ("NVIDIA H800", 81559), True),
        ("H800 PCIe", ("NVIDIA H800", 81559), False),
        ("H800 PCIe", ("NVIDIA H800 PCIe", 81559), True),
        ("H800 SXM", ("NVIDIA H800 PCIe", 81559), False),
        ("H20 SXM", ("NVIDIA H20", 97871), True),
        ("H20 PCIe", ("NVIDIA H20", 97871), False),
        # an old table's visible SXM fragment is information (defect 3)
        ("A100 80GB SXM", ("NVIDIA A100-SXM...", 81920), True),
        ("A100-SXM4-80GB", ("NVIDIA A100-SXM...", 81920), True),
        ("A100 80GB PCIe", ("NVIDIA A100-SXM...", 81920), False),
        ("V100 PCIe", ("Tesla V100-SXM2...", 32768), False),
        ("V100 SXM2 32GB", ("Tesla V100-SXM2...", 32768), True),
        # a new table's name cut at a space: the visible words decide (defect 4)
        ("RTX 4080 SUPER", ("NVIDIA GeForce RTX 4080 ...", 16376), True),
        ("A100", ("NVIDIA H100 ...", 81559), False),  # a visible model number still counts
        ("RTX 4080 Ti", ("NVIDIA GeForce RTX 4070 ...", 12282), False),
        # vendor-quote spellings (defect 5)
        ("8x A100 80G", REAL_NAMES["a100_80"], True),
        ("4x A100 80G SXM4", REAL_NAMES["a100_80"], True),
        ("A100*8", REAL_NAMES["a100_80"], True),
        ("8 x A100 80GB", REAL_NAMES["a100_80"], True),
        ("A100 80GB NVLink", REAL_NAMES["a100_80"], True),
        ("A100 40GB PCI-E", ("NVIDIA A100-PCIE-40GB", 40960), True),
        ("A100 PCI-e 40GB", ("NVIDIA A100-PCIE-40GB", 40960), True),
        ("GTX 1080", ("NVIDIA GeForce GTX 1080", 8192), True),  # 'X 1080' is no count
        # GH200's name holds CPU + GPU memory (defect 6)
        ("GH200 96GB", ("NVIDIA GH200 480GB", 97871), True),
        ("GH200 480GB", ("NVIDIA GH200 480GB", 97871), True),
        ("GH200 144GB", ("NVIDIA GH200 480GB", 97871), False),
        # SFF is another card (defect 7)
        ("RTX 4000 Ada", REAL_NAMES["rtx4000sff"], False),
        ("RTX 4000 Ada", ("NVIDIA RTX 4000 SFF Ada ...", 20475), False),
    ],
)
def test_model_matching_qa_round_3(ordered: str, delivered: tuple[str, int], ok: bool) -> None:
    name, vram_mib = delivered
    assert model_matches(ordered, name, vram_mib) is ok


# --- a word joined after the model number, as marketplaces list names: Vast.ai's gpu_name
# values 'RTX 6000Ada', 'RTX 5880Ada', 'RTX 5000Ada', 'RTX 4500Ada', 'RTX 4000Ada', 'RTX 2000Ada'
# (its canonical GPU names as two public repositories copy them: search index files 62641522001
# and 70673470121). The names are NVIDIA's (data/gpu_pci_ids.yml, the driver's README), the table's
# cut one from tests/fixtures/real/nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt. ---
@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        ("RTX 6000Ada", ("NVIDIA RTX 6000 Ada Generation", 49140), True),
        ("RTX 6000Ada", REAL_NAMES["rtx6000ada_table"], True),
        ("RTX6000Ada", ("NVIDIA RTX 6000 Ada Generation", 49140), True),
        ("RTX 5880Ada", ("NVIDIA RTX 5880 Ada Generation", 49140), True),
        ("RTX 4500Ada", ("NVIDIA RTX 4500 Ada Generation", 24570), True),
        ("RTX 2000Ada", ("NVIDIA RTX 2000 Ada Generation", 16380), True),
        ("A100SXM4 80GB", REAL_NAMES["a100_80"], True),
        # the word still counts: another card, another model number, a marker not ordered
        ("RTX 6000Ada", ("Quadro RTX 6000", 24576), False),
        ("RTX 6000Ada", ("NVIDIA RTX A6000", 49140), False),
        ("RTX 5000Ada", ("NVIDIA RTX 6000 Ada Generation", 49140), False),
        ("RTX 4000Ada", REAL_NAMES["rtx4000sff"], False),
        ("RTX 5000Ada", ("NVIDIA RTX 5000 Ada Generation Laptop GPU", 16376), False),
        ("A100SXM4 80GB", ("NVIDIA A100 80GB PCIe", 81920), False),
        # a memory size joined after the number stays a size
        ("A100 80GB", REAL_NAMES["a100_40"], False),
    ],
)
def test_model_matching_word_joined_after_the_number(
    ordered: str, delivered: tuple[str, int], ok: bool
) -> None:
    name, vram_mib = delivered
    assert model_matches(ordered, name, vram_mib) is ok


# --- a marketplace's short word for words of a name (data/gpu_name_markers.yml `abbreviations`):
# Vast.ai lists 'RTX PRO 6000 WS', 'RTX PRO 6000 S' and 'RTX PRO 6000 Max-Q' (search index file
# 62641522001); the names are NVIDIA's (data/gpu_pci_ids.yml 2BB1, 2BB4, 2BB5; the Max-Q's from
# tests/fixtures/real/nvidia-smi-q-x__rtx-pro-6000-blackwell-max-q__1gpu__driver590.44.01__telegraf.xml). ---
PRO6000_WS = ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887)
PRO6000_SE = ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887)
PRO6000_MAXQ = ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 97887)


@pytest.mark.parametrize(
    ("ordered", "delivered", "ok"),
    [
        ("RTX PRO 6000 WS", PRO6000_WS, True),
        ("RTX PRO 6000 S", PRO6000_SE, True),
        ("RTX PRO 6000 Max-Q", PRO6000_MAXQ, True),
        ("2x RTX PRO 6000 WS 96GB", PRO6000_WS, True),
        # the edition ordered is demanded: another edition, the Max-Q (not ordered), the China part
        ("RTX PRO 6000 WS", PRO6000_SE, False),
        ("RTX PRO 6000 WS", PRO6000_MAXQ, False),
        ("RTX PRO 6000 S", PRO6000_WS, False),
        ("RTX PRO 6000 S", PRO6000_MAXQ, False),
        ("RTX PRO 6000 WS", ("NVIDIA RTX PRO 6000D Blackwell Workstation Edition", 97887), False),
        # the short word is read so only beside its model
        ("RTX 4090 S", REAL_NAMES["rtx4090"], False),
        # Vast.ai's 'Q_RTX_6000' / 'Q RTX 6000' (search index files 13980951571, 31885922036) is the
        # Quadro (the name and MiB of akash-network/provider-configs issue #81), not the RTX 6000 Ada
        ("Q RTX 6000", ("Quadro RTX 6000", 24576), True),
        ("Q_RTX_6000", ("Quadro RTX 6000", 24576), True),
        ("Q RTX 6000", ("NVIDIA RTX 6000 Ada Generation", 49140), False),
        ("Q RTX 4000", REAL_NAMES["rtx4000sff"], False),
        # Vast.ai's 'GH200_SXM' (search index file 13980951571): every GH200 is a superchip module,
        # none a PCIe card (data/gpu_name_markers.yml `sxm_only`); the name and MiB of
        # tests/fixtures/real/nvidia-smi__gh200-480gb__1gpu__driver550.127.05__gls.txt
        ("GH200_SXM", ("NVIDIA GH200 480GB", 97871), True),
        ("GH200 PCIe", ("NVIDIA GH200 480GB", 97871), False),
        ("GH200_SXM", ("NVIDIA H100 80GB HBM3", 81559), False),
    ],
)
def test_model_matching_marketplace_short_words(ordered: str, delivered: tuple[str, int], ok: bool) -> None:
    name, vram_mib = delivered
    assert model_matches(ordered, name, vram_mib) is ok


def test_abbreviations_rows_spell_out_a_name_nvidia_gives_their_model() -> None:
    from gpuonboard.model_names import _name_tokens
    from gpuonboard.steps.checks.gpu_markers import abbreviations

    names = (FIX.parents[1] / "src/gpuonboard/data/gpu_pci_ids.yml").read_text()
    known = [_name_tokens(n).tokens for n in set(re.findall(r'name: "([^"]+)"', names))]
    assert abbreviations()
    for model, _word, means in abbreviations():
        assert any(model <= set(n) and set(means) <= set(n) for n in known), (model, means)


# --- an order naming the architecture (AWS's 'NVIDIA B200 Blackwell', 'NVIDIA GB200 Grace
# Blackwell': tsaol/aws-gpu data/all_gpu_instances.js) or NVIDIA's page words ('Tensor Core GPU'):
# the words no driver name holds are judged by the GPU's family (data/gpu_architectures.yml, or
# `-q`'s Product Architecture, given as `family`). ---
@pytest.mark.parametrize(
    ("ordered", "delivered", "family", "verdict"),
    [
        ("NVIDIA B200 Blackwell", "NVIDIA B200", None, "pass"),
        ("NVIDIA GB200 Grace Blackwell", "NVIDIA GB200", None, "pass"),
        ("GH200 Grace Hopper", "NVIDIA GH200 480GB", None, "pass"),
        # round 25: 'Superchip' is a product-page word; the only Grace Hopper is the GH200
        ("GH200 Grace Hopper Superchip", "NVIDIA GH200 480GB", None, "pass"),
        ("GB200 Grace Blackwell Superchip", "NVIDIA GB200", None, "pass"),
        ("Grace Hopper", "NVIDIA GH200 480GB", None, "pass"),
        ("Grace Hopper", "NVIDIA H100 80GB HBM3", None, "fail"),
        ("H100 Grace Hopper", "NVIDIA GH200 480GB", None, "fail"),
        ("NVIDIA H100 Tensor Core GPU", "NVIDIA H100 80GB HBM3", None, "pass"),
        ("L40S Ada Lovelace", "NVIDIA L40S", None, "pass"),
        ("RTX 6000 Ada", "NVIDIA RTX 6000 Ada Generation", None, "pass"),
        ("B200 Hopper", "NVIDIA B200", None, "fail"),
        ("RTX 6000 Ada", "Quadro RTX 6000", None, "fail"),
        ("A100 Hopper", "NVIDIA A100-SXM4-80GB", None, "fail"),
        ("NVIDIA GB200 Grace Blackwell", "NVIDIA B200", None, "fail"),
        # the family the box said (-q) counts; none known: unverified; a cut name: warned
        ("H200 Blackwell", "NVIDIA H200", "Hopper", "fail"),
        ("X9 Hopper", "NVIDIA X9", None, "unverified"),
        ("X9 Hopper", "NVIDIA X9", "Hopper", "pass"),
        ("H100 Grace", "NVIDIA H100 ...", None, "warn"),
        # 'GPU' is no word of a model: the Laptop word of a laptop GPU still counts
        ("RTX 4090 Laptop GPU", "NVIDIA GeForce RTX 4090 Laptop GPU", None, "pass"),
        ("RTX 4090 GPU", "NVIDIA GeForce RTX 4090 Laptop GPU", None, "fail"),
    ],
)
def test_model_matching_architecture_words(
    ordered: str, delivered: str, family: str | None, verdict: str
) -> None:
    from gpuonboard.steps.checks.model_match import match_model

    assert match_model(ordered, delivered, None, None, family).verdict == verdict


@pytest.mark.parametrize(
    ("ordered", "name", "family", "verdict", "said"),
    [
        # the name holds its family's word, where no pattern of data/gpu_architectures.yml read it
        (
            "RTX PRO 6000D Ada",
            "NVIDIA RTX PRO 6000D Blackwell Workstation Edition",
            None,
            "fail",
            "is Blackwell",
        ),
        # names the table of patterns missed (each family from NVIDIA's own tables)
        ("A100X Hopper", "NVIDIA A100X", None, "fail", "this GPU is Ampere"),
        ("T550 Laptop Ampere", "NVIDIA T550 Laptop GPU", None, "fail", "this GPU is Turing"),
        ("RTX A4000H Ada", "NVIDIA RTX A4000H", None, "fail", "this GPU is Ampere"),
        # -q's Product Architecture against the family the name says: they disagree, neither wins
        ("RTX 6000 Blackwell", "NVIDIA RTX 6000 Ada Generation", "Blackwell", "unverified", "they disagree"),
        # round 25: an ordered family that is neither of the two fails on both (was unverified);
        # the disagreement names the ordered words (was "'Ada' ordered")
        (
            "H100 Blackwell",
            "NVIDIA H100 80GB HBM3",
            "Ampere",
            "fail",
            "'Blackwell' ordered, this GPU is Ampere",
        ),
        (
            "L40S Ada Lovelace",
            "NVIDIA L40S",
            "Hopper",
            "unverified",
            "'Ada Lovelace' ordered, and the output says the GPU's architecture is Hopper",
        ),
        # one sentence for a family named in two words
        (
            "RTX PRO 6000 Ada Lovelace",
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            None,
            "fail",
            "'Ada Lovelace' ordered, this GPU is Blackwell",
        ),
    ],
)
def test_the_family_an_order_names_against_the_one_the_name_tells(
    ordered: str, name: str, family: str | None, verdict: str, said: str
) -> None:
    got = match_model(ordered, name, None, family=family)
    assert got.verdict == verdict and said in got.why, got


def test_a_size_glued_to_its_memory_type_is_a_size() -> None:
    """'RTX 4090 24GDDR6X', as marketplaces list it: 24 GB of GDDR6X, checked against the VRAM
    (was: "'24' ... not checked", warn)."""
    assert match_model("RTX 4090 24GDDR6X", "NVIDIA GeForce RTX 4090", 24564).verdict == "pass"
    got = match_model("RTX 4090 48GDDR6X", "NVIDIA GeForce RTX 4090", 24564)
    assert got.verdict == "fail" and "'48GB' ordered, the GPU has 24564 MiB" in got.why


def test_a_cut_name_shows_the_short_word_the_order_wrote() -> None:
    """The table's 'NVIDIA RTX PRO 6000 Blac...' (tests/fixtures/real/nvidia-smi__rtx-pro-6000-
    blackwell__4gpu-1-lost__driver610.57.04.txt) against Vast.ai's 'RTX PRO 6000 S': the cut
    tail may hold it, and the note names 'S' as ordered, not the words it stands for ('SERVER,
    EDITION')."""
    got = match_model("RTX PRO 6000 S", "NVIDIA RTX PRO 6000 Blac...", None)
    assert (
        got.verdict == "warn"
        and "the ordered 'S' not in the part shown;" in got.why
        and "SERVER" not in got.why
    ), got


def test_a_series_word_joined_to_its_number_is_in_the_name() -> None:
    """An order 'RTX PRO 6000' against the RTX 6000 Ada (the whole name nvidia-smi -q prints for
    it, thamada/gls' real 8 x RTX 6000 Ada capture among them) fails for the 'PRO 6000' the name
    lacks; before, it also said "'RTX' ordered, the name says 'RTX6000', another model", as if
    the name lacked 'RTX' and the RTX 6000 Ada were another model of it."""
    name, mib = _rtx_6000_ada()
    got = match_model("RTX PRO 6000", name, mib)
    assert got.verdict == "fail", got
    assert got.why == "'PRO 6000' not in the name", got
    # a model number inside a longer one is still another model: 'B200' of 'GB200', 'H20' of 'H200'
    gb200 = match_model("B200", "NVIDIA GB200", 189471)
    assert gb200.why == "'B200' ordered, the name says 'GB200', another model", gb200
    h200 = match_model("H20", "NVIDIA H200", 143771)
    assert h200.verdict == "fail" and "the name says 'H200', another model" in h200.why, h200


# --- a memory size that only the marked product is sold with names it (data/gpu_name_markers.yml
# `with_gb` / `without_gb`): Lambda rents the Quadro RTX 6000 as "RTX 6000 (24 GB)"; the RTX 6000
# Ada has 48 GB. The names and sizes are real outputs' own.
def _quadro_rtx_6000() -> tuple[str, int]:
    """The name and MiB a real 2 x Quadro RTX 6000 node printed (`nvidia-smi
    --query-gpu=name,memory.total,driver_version,pci.device_id --format=csv,noheader`, driver
    570.211.01: "Quadro RTX 6000, 24576 MiB, ..."; akash-network/provider-configs issue #81)."""
    return "Quadro RTX 6000", 24576


def _rtx_6000_ada() -> tuple[str, int]:
    """The whole name and MiB of the RTX 6000 Ada capture's first GPU (`nvidia-smi -q`'s name)."""
    text = (FIX / "real/nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt").read_text()
    mib = re.search(r"/\s*(\d+)MiB", text)
    assert mib
    return "NVIDIA RTX 6000 Ada Generation", int(mib[1])


@pytest.mark.parametrize(
    ("ordered", "ada", "verdict"),
    [
        ("RTX 6000 (24 GB)", False, "pass"),  # Lambda's instance name
        ("RTX 6000 24GB", False, "pass"),
        ("Quadro RTX 6000 24GB", False, "pass"),
        ("RTX 6000 (24 GB)", True, "fail"),  # the 48 GB Ada card does not pass it
        ("RTX 6000 48GB", False, "fail"),  # a size of the Ada card: Quadro still not ordered
        ("RTX 6000 48GB", True, "pass"),
        ("RTX 6000", False, "fail"),  # no size: "RTX 6000" is the Ada card too
    ],
)
def test_model_size_only_the_marked_product_has_names_it(ordered: str, ada: bool, verdict: str) -> None:
    name, mib = _rtx_6000_ada() if ada else _quadro_rtx_6000()
    assert match_model(ordered, name, mib).verdict == verdict, match_model(ordered, name, mib)


@pytest.mark.parametrize(
    ("vram_gib", "ada", "verdict"),
    [
        (24.0, False, "pass"),  # `gpu_model: RTX 6000` + `vram: 24GB`: the Quadro, as 'RTX 6000 24GB'
        (48.0, False, "fail"),  # a size of the Ada card: Quadro still not ordered
        (48.0, True, "pass"),
        (24.0, True, "pass"),  # `vram` is a floor the 48 GB card meets (the vram rule judges it)
    ],
)
def test_model_size_given_as_vram_names_the_marked_product(vram_gib: float, ada: bool, verdict: str) -> None:
    """The size only the marked product is sold with names it wherever the order writes it: in
    gpu_model ('RTX 6000 24GB') or as its `vram` beside a bare 'RTX 6000'."""
    name, mib = _rtx_6000_ada() if ada else _quadro_rtx_6000()
    got = match_model("RTX 6000", name, mib, vram_gib)
    assert got.verdict == verdict, got


def test_a_superchip_is_named_as_it_is_written() -> None:
    """An ordered GH200 on an H200 box (tests/fixtures/real/nvidia-smi__h200__8gpu__driver570.158.01.txt's
    name) fails naming 'GH200', not 'GH 200' (the split of a series word from its number)."""
    got = match_model("GH200", "NVIDIA H200", 143771)
    assert got.verdict == "fail" and got.why == "'GH200' not in the name"
