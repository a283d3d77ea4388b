"""nvidia-smi nvlink -e parser on real captures (tests/fixtures/real/nvidia-smi-nvlink-e__*)."""

from pathlib import Path

from gpuonboard.facts.nvlink import MIG_MODE, parse_nvlink_errors

REAL = Path(__file__).parents[1] / "fixtures" / "real"
H100 = "nvidia-smi-nvlink-e__h100-80gb-hbm3__1gpu__driver-unknown__elided.txt"
CLASSIC = {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}


def read(name: str) -> str:
    return (REAL / name).read_text()


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
