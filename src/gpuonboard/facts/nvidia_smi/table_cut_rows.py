"""The cells of a GPU's table rows where the output's cut went through them: a cell closed by
its `|` before the cut is read, the cell the cut went through is not (nvidia-smi/table.py)."""

from __future__ import annotations

from gpuonboard.once import lazy_re


def closed_cells(cells: list[str], line: str, at_end: bool) -> list[str]:
    """`cells`, its last cell blank where `line` ends the output without its closing `|`: a
    cell the cut went through (`59%      Def` of `Default`) is not read, but for the utilisation
    ahead of it in the GPU-Util cell, whole where blanks part it from the compute mode cut
    (`      8%      De`: 8 % read, the compute mode not)."""
    if not at_end or not cells or line.rstrip().endswith("|"):
        return cells
    whole = _UTIL_BEFORE_CUT.match(cells[-1]) if len(cells) == 3 else None
    return [*cells[:-1], whole.group(1) if whole else ""]


# the GPU-Util cell's utilisation, blanks after it and a word begun (the compute mode, cut)
_UTIL_BEFORE_CUT = lazy_re(r"^(\s*\d{1,3}%)\s+\S+$")


def second_row(cells: list[str], at_end: bool) -> list[str]:
    """A GPU's second row's three cells (fan / temperature / P-state / power, memory, GPU-Util):
    where the cut went through it (the output's last line), the cells closed by a `|` before
    the cut, the rest blank (`| 72%   67C    P2   378W /  390W |   23422MiB`: the sensors read,
    the memory cell cut is not; before, the whole row was dropped); a row of other than three
    cells that is no cut is none."""
    if len(cells) == 3:
        return cells
    return [*cells, "", ""][:3] if at_end and 1 <= len(cells) < 3 else ["", "", ""]
