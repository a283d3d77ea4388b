"""`nvidia_driver` (steps/checks/gpu_rules.py `rule_driver`) where nvidia-smi says it found no CUDA
driver: the table's `CUDA Version: N/A` (a904055262/PVE-manager-status#14: a vGPU host's 550.54.10
driver; shkhln/libc6-shim#14: a FreeBSD host, tests/fixtures/edited), `-q`'s and `-q -x`'s `Not
Found` (tests/fixtures/real/nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt; the
R580 host of bigstack-oss/cubecos#312), and a container started without the `compute` driver
capability (weaviate/weaviate-helm#101). Each test takes a whole real capture of a working box and
changes its CUDA version to those words, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import InventoryError
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks import driver_compat
from gpuonboard.steps.checks.ngc import load_releases

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
TABLE = "nvidia-smi__a10__1gpu__driver550.90.12.txt"
TEXT_Q = "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
XML = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
# (capture, its CUDA version as printed, the same place saying no CUDA driver)
NO_CUDA = [
    (TABLE, "CUDA Version: 12.4     |", "CUDA Version: N/A      |"),
    (TEXT_Q, ": 13.0\n", ": Not Found\n"),
    (XML, "<cuda_version>13.0</cuda_version>", "<cuda_version>Not Found</cuda_version>"),
    # each format with the other format's words: each reader dropped N/A as no value before
    # reading the CUDA version (passed, "CUDA unknown"), and the table's `Not Found` read "CUDA Not"
    (TABLE, "CUDA Version: 12.4     |", "CUDA Version: Not Found|"),
    (TEXT_Q, ": 13.0\n", ": N/A\n"),
    (XML, "<cuda_version>13.0</cuda_version>", "<cuda_version>N/A</cuda_version>"),
]


def _edited(name: str, said: str, instead: str) -> str:
    text = (REAL / name).read_text(encoding="utf-8")
    assert text.count(said) == 1, name
    return text.replace(said, instead)


@pytest.mark.parametrize(
    ("name", "said", "instead"),
    NO_CUDA,
    ids=["table", "-q", "-q -x", "table Not Found", "-q N/A", "-q -x N/A"],
)
def test_nvidia_smi_finding_no_cuda_driver_fails_the_driver(
    tmp_path: Path, name: str, said: str, instead: str
) -> None:
    """A box whose nvidia-smi says it found no CUDA driver passed `nvidia_driver` (a GO), though no
    CUDA program can start where it ran: the table's `N/A` was read as no value at all."""
    text = _edited(name, said, instead)
    verdict, actual = verdicts(tmp_path, name, text)["nvidia_driver"]
    assert verdict == "fail", actual
    assert actual.endswith(f"CUDA {'N/A' if 'N/A' in instead else 'Not Found'}"), actual
    detail = details(tmp_path, name, text)["nvidia_driver"]
    assert "found no CUDA driver" in detail and "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in detail


R610_Q = "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt"


@pytest.mark.parametrize("word", ["N/A", "Not Found"])
def test_r610_no_cuda_driver_with_its_deprecation_note_fails_the_driver(tmp_path: Path, word: str) -> None:
    """The real R610 `-q` (its `CUDA Version : 13.3 [Deprecated; will be removed in CUDA 14.0. Use
    CUDA UMD Version instead]`) with 13.3 edited to N/A (Not Found) and its `CUDA UMD Version`
    line dropped (review R of round 24): the note kept the word from being read as no CUDA
    driver, and nvidia_driver passed "CUDA N/A [Deprecated; ...]"."""
    lines = (REAL / R610_Q).read_text(encoding="utf-8").split("\n")
    lines = [line for line in lines if not line.startswith("CUDA UMD Version")]
    text = "\n".join(lines).replace(
        "CUDA Version                                           : 13.3 [", f"CUDA Version : {word} ["
    )
    assert f": {word} [Deprecated" in text
    verdict, actual = verdicts(tmp_path, R610_Q, text)["nvidia_driver"]
    assert verdict == "fail", actual
    assert actual.endswith(f"CUDA {word}"), actual


@pytest.mark.parametrize("name", [TABLE, TEXT_Q, XML])
def test_a_box_whose_cuda_version_is_read_still_passes(tmp_path: Path, name: str) -> None:
    verdict, actual = verdicts(tmp_path, name, (REAL / name).read_text(encoding="utf-8"))["nvidia_driver"]
    assert verdict == "pass" and "CUDA 1" in actual, actual


CUT_NO_CUDA = [
    ("edited", "nvidia-smi__geforce-rtx-5070__1gpu__driver575.64.03__cuda-na__cut-both-ends__edited.txt"),
    ("real", "nvidia-smi__a100-80gb-pcie__1gpu__driver550.90.05__cuda-na__vgpu-host__mig-section-cut.txt"),
]


@pytest.mark.parametrize(("folder", "name"), CUT_NO_CUDA, ids=["freebsd-cut-both-ends", "vgpu-host-mig-cut"])
def test_a_cut_table_whose_whole_banner_says_no_cuda_fails_the_driver(
    tmp_path: Path, folder: str, name: str
) -> None:
    """A table cut short whose banner reads `CUDA Version: N/A` whole (the FreeBSD host's excerpt
    cut at both ends, tests/fixtures/edited/README.md; the vGPU host's table cut in its MIG
    section): the no-CUDA driver was read before the cut, a fault, so `nvidia_driver` fails as
    `ngc_driver` does, the cut still said (it was `unverified`, while `ngc_driver` failed), unless
    the cut is below every GPU row (the FreeBSD excerpt, cut inside its Processes table: whole in
    its GPU facts since round 26, no cut to say)."""
    text = (REAL.parent / folder / name).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, name, text)["nvidia_driver"]
    below_rows = "Processes:" in text
    said = "driver 575.64.03, CUDA N/A" if below_rows else "CUDA N/A; incomplete probe"
    assert verdict == "fail" and (actual == said if below_rows else said in actual), actual
    facts = parse_facts(offline.load_outputs([str(REAL.parent / folder / name)]))
    ngc = driver_compat.evaluate(facts, "nvcr.io/nvidia/pytorch:24.08-py3", load_releases())
    assert [(c.name, c.verdict) for c in ngc] == [("ngc_driver", "fail")], ngc
    assert "found no CUDA driver" in details(tmp_path, name, text)["nvidia_driver"]


def test_a_banner_cut_inside_its_cuda_version_stays_an_incomplete_probe(tmp_path: Path) -> None:
    """The vGPU host's real table cut in-test inside its banner, after `CUDA Version: N`: no word
    of nvidia-smi's was read whole, so no claim (`unverified`)."""
    name = CUT_NO_CUDA[1][1]
    text = (REAL / name).read_text(encoding="utf-8")
    text = text[: text.index("CUDA Version: N") + len("CUDA Version: N")]
    verdict, actual = verdicts(tmp_path, name, text)["nvidia_driver"]
    assert verdict == "unverified", actual


WSL_CUDA_ERR = (
    "nvidia-smi__geforce-rtx-3060-name-cut__1gpu__driver546.80__wsl2__cuda-err__cut-in-gpu-row__wsl-11589.txt"
)
# (capture, its CUDA version as printed, the same place holding nvidia-smi's fault marker as the
# real WSL2 table of microsoft/WSL#11589 prints it: `CUDA Version: ERR!`)
CUDA_ERR = [
    (TABLE, "CUDA Version: 12.4     |", "CUDA Version: ERR!     |"),
    (TEXT_Q, ": 13.0\n", ": ERR!\n"),
    (XML, "<cuda_version>13.0</cuda_version>", "<cuda_version>ERR!</cuda_version>"),
    (TEXT_Q, ": 13.0\n", ": Unknown Error\n"),
    # (a marker of several words, as the table prints NVML's errors in its cells: `[Unknown Error]`;
    # it passed "CUDA [Unknown", read up to its space)
    (TABLE, "CUDA Version: 12.4     |", "CUDA Version: [Unknown Error]     |"),
    (TABLE, "CUDA Version: 12.4     |", "CUDA Version: Unknown Error     |"),
]


@pytest.mark.parametrize(
    ("name", "said", "instead"),
    CUDA_ERR,
    ids=["table", "-q", "-q -x", "-q Unknown Error", "table [Unknown Error]", "table Unknown Error"],
)
def test_a_cuda_version_nvidia_smi_could_not_read_is_no_pass(
    tmp_path: Path, name: str, said: str, instead: str
) -> None:
    """A whole real capture of a working box with its CUDA version edited to the fault marker
    the real WSL2 table of microsoft/WSL#11589 prints there (`CUDA Version: ERR!`; in `-q` also
    NVML's `Unknown Error`): nvidia-smi could not read the CUDA driver's version, and
    `nvidia_driver` passed "CUDA unknown", the marker dropped as no value. It is a fact not read:
    `unverified`, naming the marker, never a pass (and no claim that there is no CUDA driver)."""
    text = _edited(name, said, instead)
    verdict, actual = verdicts(tmp_path, name, text)["nvidia_driver"]
    marker = instead.split(":")[-1].strip(" |\n") if "cuda_version" not in instead else "ERR!"
    assert verdict == "unverified" and actual.endswith(f"CUDA {marker}"), actual
    detail = details(tmp_path, name, text)["nvidia_driver"]
    assert "could not read the CUDA version" in detail and "found no CUDA driver" not in detail, detail


def test_the_real_wsl_table_with_cuda_err_says_the_marker(tmp_path: Path) -> None:
    """The real WSL2 table itself (cut by the page inside its GPU's last row): unverified as any
    cut table, and its actual says `CUDA ERR!` (it said "CUDA unknown")."""
    text = (REAL / WSL_CUDA_ERR).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, WSL_CUDA_ERR, text)["nvidia_driver"]
    assert verdict == "unverified" and actual.startswith("driver 546.80, CUDA ERR!"), actual


# --- `gpu_model` (rule_gpu_model) with an order naming the GPU's architecture or NVIDIA's
# product-page words, as cloud listings name GPUs: AWS (instances.vantage.sh, as copied in
# tsaol/aws-gpu data/all_gpu_instances.js, commit 77fcd9fe1d0652fd07b830e5ed030d61da87923e) lists
# "NVIDIA B200 Blackwell", "NVIDIA GB200 Grace Blackwell"; NVIDIA's pages "NVIDIA H100 Tensor Core
# GPU". Whole real captures, unedited.
@pytest.mark.parametrize(
    ("capture", "order", "verdict"),
    [
        (
            "nvidia-smi__b200__8gpu__driver580.95.05__load__backslash-line-ends.txt",
            "8x NVIDIA B200 Blackwell",
            "pass",
        ),
        (
            "nvidia-smi__gb200__4gpu__driver580.126.09__openshift-blog.txt",
            "NVIDIA GB200 Grace Blackwell",
            "pass",
        ),
        ("nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt", "8x NVIDIA H100 Tensor Core GPU", "pass"),
        # -q says the family itself (Product Architecture: Hopper)
        (TEXT_Q, "NVIDIA H200 Hopper", "pass"),
        # the word still says something: another family, or no Grace superchip, fails
        ("nvidia-smi__b200__8gpu__driver580.95.05__load__backslash-line-ends.txt", "B200 Hopper", "fail"),
        (TEXT_Q, "H200 Blackwell", "fail"),
        ("nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt", "H100 Grace Hopper", "fail"),
    ],
)
def test_gpu_model_order_naming_the_architecture(
    tmp_path: Path, capture: str, order: str, verdict: str
) -> None:
    text = (REAL / capture).read_text()
    assert verdicts(tmp_path, capture, text, f"gpu_model: {order}\n")["gpu_model"][0] == verdict


# --- round 25 review: an order of no model word, only an architecture with a size, a form or a
# count, passed any GPU of that family (the architecture word was dropped before the order was
# asked for its model). Whole real captures, unedited.
@pytest.mark.parametrize(
    ("capture", "order"),
    [
        ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "Hopper 80GB"),
        ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "NVIDIA Hopper 80GB"),
        ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "8x Hopper 80GB"),
        ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "Hopper SXM"),
        ("nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt", "Ada 48GB"),
        ("nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt", "Ada Lovelace 48GB"),
    ],
)
def test_gpu_model_order_of_an_architecture_and_no_model_fails(
    tmp_path: Path, capture: str, order: str
) -> None:
    """Before: pass. An order file holding such a model is refused when loaded (inventory/order.py);
    an order built otherwise (the API's OrderSpec) fails the rule, naming why."""
    (tmp_path / capture).write_text((REAL / capture).read_text())
    facts = parse_facts(offline.load_outputs([str(tmp_path / capture)]))
    row = next(c for c in offline.judge(facts, OrderSpec(gpu_model=order)) if c.name == "gpu_model")
    assert row.verdict == "fail" and "no GPU model in the order" in row.detail, row
    (tmp_path / "order.yml").write_text(f"order:\n  gpu_model: {order}\n")
    with pytest.raises(InventoryError, match="names no GPU model"):
        offline.load_order(str(tmp_path / "order.yml"))


GH200_Q = "nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt"


@pytest.mark.parametrize("order", ["Grace Hopper 96GB", "Grace Hopper", "GH200 Grace Hopper Superchip"])
def test_gpu_model_grace_hopper_is_the_gh200(tmp_path: Path, order: str) -> None:
    """The real GH200 480GB `nvidia-smi -q` (unedited). The only Grace Hopper product is the
    GH200: before, 'Grace Hopper 96GB' and 'Grace Hopper' were refused when the order was loaded
    ("names no GPU model") and 'GH200 Grace Hopper Superchip' failed ("'SUPERCHIP' not in the
    name", a product-page word no driver prints); all load and pass."""
    (tmp_path / GH200_Q).write_text((REAL / GH200_Q).read_text())
    (tmp_path / "order.yml").write_text(f"order:\n  gpu_model: {order}\n")
    offline.load_order(str(tmp_path / "order.yml"))
    facts = parse_facts(offline.load_outputs([str(tmp_path / GH200_Q)]))
    row = next(c for c in offline.judge(facts, OrderSpec(gpu_model=order)) if c.name == "gpu_model")
    assert row.verdict == "pass", row


def test_gpu_model_grace_blackwell_names_no_model(tmp_path: Path) -> None:
    """'Grace Blackwell' is a GB200, a GB300 or a GB10: still refused when loaded."""
    (tmp_path / "order.yml").write_text("order:\n  gpu_model: Grace Blackwell\n")
    with pytest.raises(InventoryError, match="names no GPU model"):
        offline.load_order(str(tmp_path / "order.yml"))


def test_vram_of_a_q_cut_before_any_memory_total_says_the_cut(tmp_path: Path) -> None:
    """A real `nvidia-smi -q` of a GRID P40-24Q vGPU pasted cut after its `Minor Number` line
    (ollama issue #6364): `vram` said "unknown: no nvidia-smi format that answered reports GPU
    memory", advising to ask the provider to allow a format, though `-q` reports it and the cut
    took it away. It names the cut now, with the advice to rerun (unverified, as before)."""
    name = "nvidia-smi-q__grid-p40-24q-vgpu__1gpu__driver535.161.08__cut-after-minor-number__ollama-6364.txt"
    text = (REAL / name).read_text()
    verdict, actual = verdicts(tmp_path, "smi-q.txt", text, "gpu_model: P40-24Q\nvram: 24GB")["vram"]
    assert verdict == "unverified"
    assert actual.startswith("unknown: no GPU's memory total in what was read; incomplete probe: ")
    assert (
        "ask the provider"
        not in details(tmp_path, "smi-q.txt", text, "gpu_model: P40-24Q\nvram: 24GB")["vram"]
    )


# (real capture, the format's words in the detail) of outputs that name no driver version
NO_VERSION = [
    # influxdata/telegraf's gtx-1070-ti.xml: a `-q -x` its contributor trimmed to the fields read
    (
        "nvidia-smi-q-x__geforce-gtx-1070-ti__1gpu__driver-unknown__trimmed.xml",
        "-q -x gives no driver_version",
    ),
    # a --query-gpu CSV whose field list has no driver_version
    (
        "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
        "the CSV query gives no driver_version field",
    ),
]


@pytest.mark.parametrize(("capture", "words"), NO_VERSION)
def test_no_driver_version_says_why_of_the_format_given(tmp_path: Path, capture: str, words: str) -> None:
    """`nvidia_driver` and `min_driver` where the outputs given name no driver version: unverified,
    the detail saying why of the format that was given, never that `nvidia-smi -L` (not given)
    prints none, as it said of every output before."""
    text = (REAL / capture).read_text(encoding="utf-8")
    order = "gpu_model: A100\nmin_driver: '535.54'\n"
    assert verdicts(tmp_path, capture, text, order)["nvidia_driver"][0] == "unverified"
    said = details(tmp_path, capture, text, order)
    for rule in ("nvidia_driver", "min_driver"):
        assert f"name no driver version ({words})" in said[rule]
        assert "nvidia-smi -L" not in said[rule]


def test_no_driver_version_of_nvidia_smi_l_still_says_it_prints_none(tmp_path: Path) -> None:
    """`nvidia-smi -L` alone: it prints no driver version, and the detail still says so."""
    capture = "nvidia-smi-L__l40s__1gpu__driver595.80.txt"
    text = (REAL / capture).read_text(encoding="utf-8")
    said = details(tmp_path, capture, text, "gpu_model: L40S\n")["nvidia_driver"]
    assert "name no driver version (`nvidia-smi -L` prints none)" in said


@pytest.mark.parametrize(
    ("name", "saved", "cut"),
    [
        # the real GB10 table (memory "Not Supported") cut below its process list's header rule
        ("nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt", "smi.txt", "|====="),
        # the real util/power-only CSV cut inside its last value, `592.7` of `592.74 W`
        ("nvidia-smi-query-gpu__util-power-only__1gpu__k8s-pod-busy.csv", "smi.csv", "592.7"),
    ],
)
def test_vram_of_a_cut_format_that_gives_no_memory_total_names_no_cut(
    tmp_path: Path, name: str, saved: str, cut: str
) -> None:
    """Each real capture cut (the edit) just after the last occurrence of `cut`, no newline
    after it: the format itself gives no memory total (GB10's `Not Supported`, a CSV that did not
    ask for memory.total), yet vram said "no GPU's memory total in what was read; incomplete
    probe", as if the cut took it away. It says what the whole output says now."""
    text = (REAL / name).read_text()
    part = text[: text.rindex(cut) + len(cut)]
    order = "vram: 80GB"
    whole = verdicts(tmp_path, saved, text, order)["vram"]
    verdict, actual = verdicts(tmp_path, saved, part, order)["vram"]
    assert verdict == "unverified"
    assert "no GPU's memory total in what was read" not in actual, actual
    assert actual.startswith(whole[1]), (actual, whole)
