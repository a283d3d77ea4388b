"""api/saved_fragments.py: a saved fragment of a format this tool reads (its head cut off) is
refused by one sentence for every format, naming the format and what is lost, as `-q` text
fragments are: never "not a recognised command output". Real captures (tests/fixtures/real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XML_PART = "part-of-nvidia-smi-q-x__cut-both-ends__6gb-gpu__netdata-2922.xml"
TOPO_PART = "part-of-nvidia-smi-topo-m__header-and-gpu0-6-cut__nv18-many-nics__sglang-3538.txt"


def _refusal(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.write_text((REAL / name).read_text())
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    return str(err.value)


def test_a_q_x_fragment_cut_at_both_ends_is_named_so(tmp_path: Path) -> None:
    """netdata#2922's `-q -x` excerpt as stored (from inside `<pci_bridge_chip>` to inside
    `<fb_memory_usage>`): "elements of `nvidia-smi -q -x` from inside a GPU's record, without the
    `<nvidia_smi_log>` header ...". (Before: "not a recognised command output (expected ...)".)"""
    said = _refusal(tmp_path, XML_PART)
    assert "elements of `nvidia-smi -q -x` from inside a GPU's record, without the `<nvidia_smi_log>`" in said
    assert said.endswith("save the whole `nvidia-smi -q -x` output.")
    assert "not a recognised command output" not in said


def test_topo_m_rows_without_the_header_are_named_so(tmp_path: Path) -> None:
    """sglang#3538's `topo -m` excerpt as stored (GPU7's row and NIC0-2's, the header and GPU0-6
    cut above): "rows of `nvidia-smi topo -m`'s matrix, without its header line ...". (Before:
    "not a recognised command output (expected ...)".)"""
    said = _refusal(tmp_path, TOPO_PART)
    assert "rows of `nvidia-smi topo -m`'s matrix, without its header line" in said
    assert said.endswith("save the whole `nvidia-smi topo -m` output.")
    assert "not a recognised command output" not in said
