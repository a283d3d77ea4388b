"""Order values refused in round 17, as the command line says them: exit 2 and one whole sentence
naming the file, the line and the field (a value that used to check nothing or the wrong thing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"


@pytest.mark.parametrize(
    ("order", "sentence"),
    [
        (
            'min_driver: "12.8"',
            "field 'min_driver' must be a driver version like \"570.26\", not '12.8', which is numbered"
            " like a CUDA version: write the driver that CUDA version needs (NVIDIA's CUDA release notes"
            " name it).",
        ),
        (
            'vram: "80"',
            "field 'vram' needs a unit, like 80GB or 80GiB (a bare number would mean bytes).",
        ),
        (
            'rdma: "3x50GB/s"',
            "field 'rdma' is '3x50GB/s': a rate in bytes (GB/s); port rates are sold in bits: write"
            ' "3x400G" if 50 GB/s a port was meant, or "3x50G" for 50 Gb/s.',
        ),
        (
            'data_disk: "/data 600"',
            "field 'data_disk' must be a mount point, or a mount point and a size with its unit"
            " ('/data 500GB'), not '/data 600': write `{mount: /data, min_size: 500GB}`.",
        ),
        (  # (round 31: the sentence said "the order file order data_disk ...", "order" twice)
            "data_disk: {mount: /}",
            "data_disk 'mount' must not be '/' (the system disk); give the data disk's own mount point,"
            " like /data.",
        ),
        ("gpu_cnt: 8", "has an unknown key 'gpu_cnt'; did you mean 'gpu_count'?"),
    ],
)
def test_an_order_value_that_checks_the_wrong_thing_is_refused(
    tmp_path: Path, order: str, sentence: str
) -> None:
    path = tmp_path / "order.yml"
    path.write_text(order + "\n")
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "facts",
        str(TABLE),
        "--order",
        str(path),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and not r.stdout, (r.returncode, r.stdout)
    assert " ".join(r.stderr.split()) == f"error: {path}, line 1: the order file {sentence}"


@pytest.mark.parametrize("name", ["order-box-1", "gpu-1"])
def test_a_hosts_order_error_says_order_whatever_the_hosts_name(tmp_path: Path, name: str) -> None:
    """Review revE F6: a host named `order-box-1` with a bad key in its order: the sentence names
    the host's order (`host 'order-box-1' order has ...`) as for any other name; only the order
    file's own label (`the order file`) says "order" already (before: "host 'order-box-1' has
    an unknown key", the word in the host's name taken for it)."""
    path = tmp_path / "inventory.yml"
    path.write_text(f"hosts:\n  {name}:\n    address: 10.0.0.1\n    order:\n      gpu_cnt: 8\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "inventory", "-i", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and not r.stdout, (r.returncode, r.stdout)
    assert " ".join(r.stderr.split()) == (
        f"error: {path}, line 5: host '{name}' order has an unknown key 'gpu_cnt'; did you mean 'gpu_count'?"
    )
