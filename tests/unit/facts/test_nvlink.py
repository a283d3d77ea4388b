"""nvidia-smi nvlink -s parser on real captures (tests/fixtures/real/nvidia-smi-nvlink-s__*)."""

from pathlib import Path

from gpuonboard.facts.nvlink import (
    ALL_INACTIVE,
    MIG_MODE,
    UNSUPPORTED,
    parse_nvlink_errors,
    parse_nvlink_status,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_a100_8gpu_all_12_links_up() -> None:
    status = parse_nvlink_status(read("nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt"))
    assert status.warnings == ()
    assert [g.index for g in status.gpus] == list(range(8))
    assert all(g.active_links == 12 and g.total_links == 12 and g.speeds == (25.0,) for g in status.gpus)
    assert status.gpus[7].name == "NVIDIA A100-SXM4-80GB"


def test_h100_18_links_tab_indented() -> None:
    (gpu,) = parse_nvlink_status(read("nvidia-smi-nvlink-s__h100-80gb-hbm3__1gpu__driver590.48.01.txt")).gpus
    assert (gpu.active_links, gpu.total_links, gpu.speeds) == (18, 18, (26.562,))


def test_v100_two_inactive_links() -> None:
    (gpu,) = parse_nvlink_status(read("nvidia-smi-nvlink-s__v100-sxm2-32gb__1of-n-gpu__2-inactive.txt")).gpus
    assert gpu.index == 3
    assert (gpu.active_links, gpu.total_links) == (4, 6)
    assert [link.link for link in gpu.links if not link.active] == [3, 5]
    assert gpu.uuid == "..."  # masked by the poster


def test_pcie_card_says_no_nvlink() -> None:
    (gpu,) = parse_nvlink_status(read("nvidia-smi-nvlink-s__l40s__no-nvlink__driver595.80.txt")).gpus
    assert (gpu.note, gpu.total_links) == (UNSUPPORTED, 0)


def test_mig_mode_refuses_nvlink_queries() -> None:
    (gpu,) = parse_nvlink_status(
        read("nvidia-smi-nvlink-s__h100-mig__not-supported__driver590.48.01.txt")
    ).gpus
    assert gpu.note == MIG_MODE
    assert gpu.note_text == "Nvlink queries are not supported for Devices in MIG mode"


def test_unknown_link_word_is_not_counted_active_and_capability_lines_skipped() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n"
        "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n\t Link 2: Unknown\n"
        "\t Link 0, P2P is supported: true\n"
        "GPU 1: Quadro RTX 5000 (UUID: GPU-y) NVML: Unable to retrieve Nvlink"
        " information as all links are inActive\n"
    )
    status = parse_nvlink_status(text)
    # "Unknown" is no word on the link either way: not counted (nor down), and said
    assert (status.gpus[0].active_links, status.gpus[0].total_links) == (1, 2)
    assert status.gpus[1].note == ALL_INACTIVE
    assert status.warnings == ("nvidia-smi nvlink -s: link line not read 'Link 2: Unknown'",)


def test_a_remote_device_listing_is_no_link_down() -> None:
    """`nvidia-smi nvlink -R` (each link's remote end) of a healthy 2 x H100 PCIe box: every link
    line was read as inactive; they say nothing of the link's state, so none is counted."""
    status = parse_nvlink_status(read("nvidia-smi-nvlink-R__h100-pcie__2gpu-12links__hpe-dl380a.txt"))
    assert [g.total_links for g in status.gpus] == [0, 0] and len(status.warnings) == 24


# nvidia-smi nvlink -e parser on real captures (tests/fixtures/real/nvidia-smi-nvlink-e__*).

H100 = "nvidia-smi-nvlink-e__h100-80gb-hbm3__1gpu__driver-unknown__elided.txt"
CLASSIC = {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}


def test_h100_nine_space_indent_and_pasted_elision() -> None:
    errors = parse_nvlink_errors(read(H100))
    (gpu,) = errors.gpus
    assert (gpu.index, gpu.name, gpu.uuid) == (
        0,
        "NVIDIA H100 80GB HBM3",
        "GPU-abcdefab-cdef-abdc-abcd-abababababab",
    )
    assert sorted(gpu.links) == [0, 1, 17]
    assert gpu.counter(17, "crc errors") == 0 and gpu.counter(17, "Symbol Errors") is None
    assert errors.warnings == ("nvidia-smi nvlink -e: unexpected line '[...]'",)


def test_counts_are_read_not_defaulted() -> None:
    """A real capture with one count changed (derived): the count lands on its GPU, link, name."""
    text = read(H100).replace("Link 1: Replay Errors: 0", "Link 1: Replay Errors: 17", 1)
    errors = parse_nvlink_errors(text)
    gpu = errors.by_index(0)
    assert gpu is not None and gpu.links[1]["Replay Errors"] == 17
    assert gpu.links[0]["Replay Errors"] == 0 and gpu.links[17]["Replay Errors"] == 0


def test_newer_names_kept_and_non_counts_skipped() -> None:
    """Derived from the H100 capture's line shape with counter names newer drivers print
    (named in NVIDIA DCGM's NVLink 5 fields); N/A and a BER figure are not counts."""
    head = read(H100).splitlines()[0]
    text = "\n".join(
        [
            head,
            "         Link 0: Malformed packet Errors: 0",
            "         Link 0: Rx remote Errors: 3",
            "         Link 0: Effective BER: 1.5e-15",
            "         Link 0: FEC Errors - 3: 175",
            "         Link 1: Symbol Errors: N/A",
        ]
    )
    (gpu,) = parse_nvlink_errors(text).gpus
    assert gpu.links == {
        0: {"Malformed packet Errors": 0, "Rx remote Errors": 3, "FEC Errors - 3": 175},
        1: {},
    }


def test_mig_and_empty_output() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n"
        "Nvlink queries are not supported for Devices in MIG mode\n"
    )
    (gpu,) = parse_nvlink_errors(text).gpus
    assert (gpu.note, gpu.links) == (MIG_MODE, {})
    assert parse_nvlink_errors("").gpus == ()


def _variants(text: str) -> list[str]:
    """A listing as captured, and with its link lines re-spaced and re-cased as pastes and other
    builds print them: tab indent, trailing blanks, `gb/s`, no blank before the unit."""
    return [
        text,
        text.replace("         Link", "\t Link").replace(" GB/s", " GB/s  "),
        text.replace("GB/s", "gb/s").replace(" gb/s", "gb/s"),
        text.replace("Link", "link"),
    ]


def test_a_link_line_with_a_speed_is_read_as_the_link_and_speed_patterns_read_it() -> None:
    """parse_nvlink_status reads a link line with a speed in one match (_LINK_SPEED): for every
    real `nvlink -s` capture and its re-spaced / re-cased copies, each GPU's links are what
    _LINK then _SPEED read of its link lines (number, speed, text as printed), and a line
    before any GPU line, or `link` in lower case, is still a warning, not a link."""
    import re

    from gpuonboard.facts.nvlink import _CAPABILITY, _GPU, _LINK, _SPEED, NvlinkLink

    for path in sorted(REAL.glob("nvidia-smi-nvlink-s__*")):
        for text in _variants(path.read_text()):
            expected: list[list[NvlinkLink]] = []
            for line in text.splitlines():
                if _GPU.match(line) or re.match(r"^GPU\s+\d+:", line):
                    expected.append([])
                elif expected and not _CAPABILITY.match(line) and (m := _LINK.match(line)):
                    speed = _SPEED.match(m.group(2))
                    if speed or "inactive" in m.group(2).lower():
                        gbps = float(speed.group(1)) if speed else None
                        expected[-1].append(NvlinkLink(int(m.group(1)), gbps, m.group(2)))
            got = parse_nvlink_status(text)
            assert [list(g.links) for g in got.gpus] == expected, path.name
    cases = {
        "Link 0: 25 GB/s\nGPU 0: NVIDIA A100 (UUID: GPU-1)\n\tLink 1:  26.562 gb/s \n": (
            [[NvlinkLink(1, 26.562, "26.562 gb/s")]],
            ("nvidia-smi nvlink -s: unexpected line 'Link 0: 25 GB/s'",),
        ),
        "GPU 0: NVIDIA A100 (UUID: GPU-1)\n link 0: 25 GB/s\n Link 1: 25 GB/s x\n Link 2: 25GB/s\n": (
            [[NvlinkLink(2, 25.0, "25GB/s")]],
            (
                "nvidia-smi nvlink -s: unexpected line 'link 0: 25 GB/s'",
                "nvidia-smi nvlink -s: link line not read 'Link 1: 25 GB/s x'",
            ),
        ),
    }
    for text, (links, warnings) in cases.items():
        got = parse_nvlink_status(text)
        assert ([list(g.links) for g in got.gpus], got.warnings) == (links, warnings)
