"""A saved listing of the RDMA ports' sysfs files, `grep . /sys/class/infiniband/*/ports/*/{state,
phys_state,rate,link_layer}` (`PATH:VALUE` lines) or `head` of them, read offline as the live probe
reads those files (api/ib_sysfs_files.py): it was refused as "not a recognised command output".
The capture: tests/fixtures/real/ib-sysfs-grep__hfi1-edr_plus_mlx4-qdr-2port_plus_mlx5-1x__procfs.txt
(prometheus/procfs's sysfs fixture files of those four ports, listed as `grep .` lists them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GREP = (REAL / "ib-sysfs-grep__hfi1-edr_plus_mlx4-qdr-2port_plus_mlx5-1x__procfs.txt").read_text()
ORDER = "gpu_model: A100\nrdma: 2x40G\n"


def test_a_grep_of_the_port_files_is_read_as_the_probes_listing(tmp_path: Path) -> None:
    """hfi1_0 at 100 Gb/s EDR, mlx4_0's two ports at 40 Gb/s QDR, mlx5_0 at 25 Gb/s (1X): three
    ports at 40 Gb/s or more, read from the files the probe reads."""
    verdict, actual = verdicts(tmp_path, "ib-ports.txt", GREP, ORDER)["rdma_ports"]
    assert (verdict, actual) == ("pass", "3 of 4 port(s) ACTIVE at >= 40 Gb/s")


def test_heads_of_the_port_files_are_read_as_their_grep(tmp_path: Path) -> None:
    """`head /sys/class/infiniband/*/ports/*/{state,rate}`: each file's `==> PATH <==` and its
    value (edit: the capture's state and rate lines in that form)."""
    pairs = [line.split(":", 1) for line in GREP.splitlines() if "/state:" in line or "/rate:" in line]
    text = "\n".join(f"==> {path} <==\n{value}\n" for path, value in pairs)
    assert verdicts(tmp_path, "ib-ports.txt", text, ORDER)["rdma_ports"][0] == "pass"


def test_a_grep_of_the_state_files_alone_leaves_the_rate_unknown(tmp_path: Path) -> None:
    """Only the `state` files (edit: the capture's other lines dropped): four ports up, no rate
    read, so the order's speed is unverified, never failed."""
    text = "".join(line + "\n" for line in GREP.splitlines() if "/state:" in line)
    verdict, actual = verdicts(tmp_path, "ib-ports.txt", text, ORDER)["rdma_ports"]
    assert verdict == "unverified"
    assert "4 active with no rate reported" in actual


def test_a_port_listed_without_its_state_file_is_refused(tmp_path: Path) -> None:
    """mlx4_0 port 2's `state` line dropped (edit): whether that port is up was not read, so the
    listing is refused (exit 2) naming the port, never judged as a port down."""
    text = "".join(line + "\n" for line in GREP.splitlines() if "mlx4_0/ports/2/state" not in line)
    with pytest.raises(UsageError, match=r"without the `state` file of mlx4_0 port 2"):
        verdicts(tmp_path, "ib-ports.txt", text, ORDER)


def test_a_listing_cut_inside_its_last_line_does_not_read_that_port(tmp_path: Path) -> None:
    """The last line, mlx5_0's state, cut to `4: ACT` with no newline (edit): that port is not
    read (its line is cut short), the ports read whole still count."""
    text = GREP.rstrip("\n").removesuffix("IVE")
    verdict, actual = verdicts(tmp_path, "ib-ports.txt", text, ORDER)["rdma_ports"]
    assert (verdict, actual) == ("pass", "3 of 3 port(s) ACTIVE at >= 40 Gb/s")


def test_a_grep_of_other_sysfs_files_is_no_port_listing(tmp_path: Path) -> None:
    """Only the ports' counters (no state, rate, phys_state or link_layer file): no port listing,
    refused as a text of no known kind, as before."""
    text = "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:0\n"
    with pytest.raises(UsageError, match="not a recognised command output"):
        verdicts(tmp_path, "ib-counters.txt", text, ORDER)
