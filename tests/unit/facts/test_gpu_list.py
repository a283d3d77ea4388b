"""nvidia-smi -L parser on real captures (tests/fixtures/real/nvidia-smi-L__*)."""

from pathlib import Path

from gpuonboard.facts.gpu_list import parse_gpu_list, parse_gpu_list_tuples

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_h100_with_four_mig_devices() -> None:
    listing = parse_gpu_list(read("nvidia-smi-L__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01.txt"))
    assert listing.warnings == ()
    (gpu,) = listing.gpus
    assert (gpu.index, gpu.name, gpu.uuid) == (
        0,
        "NVIDIA H100 80GB HBM3",
        "GPU-00000000-0000-0000-0000-000000000000",
    )
    assert [m.profile for m in gpu.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert [m.index for m in gpu.mig_devices] == [0, 1, 2, 3]
    assert gpu.mig_devices[3].uuid == "MIG-00000003-0000-0000-0000-000000000003"


def test_h200_compute_instance_profiles_are_kept_whole() -> None:
    (gpu,) = parse_gpu_list(read("nvidia-smi-L__h200-mig__1gpu-5mig__driver590.48.01.txt")).gpus
    assert gpu.name == "NVIDIA H200"
    assert [m.profile for m in gpu.mig_devices] == [
        "1c.3g.71gb",
        "2c.3g.71gb",
        "2g.35gb",
        "1g.18gb",
        "1g.18gb",
    ]


def test_plain_gpu_and_tuple_shape_for_gpu_merge() -> None:
    text = read("nvidia-smi-L__l40s__1gpu__driver595.80.txt")
    assert parse_gpu_list(text).gpus[0].mig_devices == ()
    assert parse_gpu_list_tuples(text) == [(0, "NVIDIA L40S", "GPU-00000000-0000-0000-0000-000000000000")]


def test_driver_failure_is_a_warning_not_a_gpu() -> None:
    listing = parse_gpu_list(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    assert listing.gpus == ()
    assert len(listing.warnings) == 1


def test_old_driver_serial_instead_of_uuid() -> None:
    (gpu,) = parse_gpu_list("GPU 0: Tesla K80 (S/N: 0324516113871)\n").gpus
    assert (gpu.name, gpu.uuid) == ("Tesla K80", None)
