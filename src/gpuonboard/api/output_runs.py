"""How many outputs of one kind a saved text holds (a file of two `nvidia-smi` tables, a `-L`
listing one GPU several times): offline reading refuses more than one output of a kind in one
file (api/offline.py), naming them."""

from __future__ import annotations

import re
from collections.abc import Callable


def _repeated_lines(pattern: str) -> Callable[[str], int]:
    """Counter of the lines a format prints once per run (its banner or header)."""
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda text: len(compiled.findall(text))


def _csv_headers(text: str) -> int:
    """How often the CSV's header row (its first line, when it is one: `noheader` rows of a
    looped log may repeat) is in it."""
    from gpuonboard.facts.nvidia_smi.query_csv import _header_names

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or _header_names([cell.strip() for cell in lines[0].split(",")]) is None:
        return 1
    return lines.count(lines[0])


def _listed_twice(text: str) -> int:
    """`nvidia-smi -L`: how many times its most listed GPU number, or GPU UUID (an all-zero
    redacted one aside), is listed: more than 1 is more than one output."""
    numbers = re.findall(r"^[^\S\n]*GPU (\d+):", text, re.MULTILINE)
    uuids = [u for u in re.findall(r"\(UUID: (GPU-[0-9a-fA-F-]+)\)", text) if u.strip("GPU-0")]
    return max([1, *(numbers.count(n) for n in numbers), *(uuids.count(u) for u in uuids)])


def repeated_gpu(text: str) -> str:
    """`nvidia-smi -L` listing one GPU several times with MIG devices of its own each time:
    'GPU 0 (GPU-717ef73c-...) is listed 5 times' (several pods' or containers' views of one GPU,
    each its own MIG device); '' where no GPU line repeats or no MIG device differs."""
    lines = re.findall(
        r"^[^\S\n]*(GPU \d+):.*?(?:\(UUID: (GPU-[0-9a-fA-F-]+)\))?[^\S\n]*$", text, re.MULTILINE
    )
    counts = {line: lines.count(line) for line in lines}
    (number, uuid), times = max(counts.items(), key=lambda kv: kv[1], default=(("", ""), 0))
    # (each view with its own MIG device: a listing pasted twice repeats its MIG devices too)
    migs = re.findall(r"^[^\S\n]*MIG .*\(UUID: (MIG-[^)\s]+)", text, re.MULTILINE)
    if times < 2 or len(set(migs)) < 2:
        return ""
    return f"{number}" + (f" ({uuid})" if uuid else "") + f" is listed {times} times"


_TABLE_BANNER = re.compile(r"^[^\S\n]*\|\s*NVIDIA-SMI\s+\S+", re.MULTILINE)


def _table_runs(text: str) -> int:
    """`nvidia-smi`'s tables: its banner lines, counted on the table's lines as its reader reads
    them (a page's copy with each table's lines joined into one, two tables on one line: each
    its own banner, two outputs as on lines of their own)."""
    from gpuonboard.facts.nvidia_smi.table_joined import rows_apart

    return len(_TABLE_BANNER.findall("\n".join(rows_apart(text.splitlines()))))


def _lscpu_runs(text: str) -> int:
    from gpuonboard.facts import cpu

    pairs = cpu._pairs(text)
    return 1 if isinstance(pairs, str) else sum(1 for field, _ in pairs if field == "Architecture")


def _free_runs(text: str) -> int:
    from gpuonboard.facts import memory

    return len(re.findall(r"^[^\S\n]*Mem:", memory.english_free(text), re.MULTILINE))


def _df_runs(text: str) -> int:
    from gpuonboard.facts import disks

    return sum(1 for line in text.splitlines() if line.strip() and disks.df_header(line) is not None)


# kind (the probe a saved output is read as) -> (what its output is called, its runs in a text)
_RUNS: dict[str, tuple[str, Callable[[str], int]]] = {
    "nvidia_smi": ("nvidia-smi -q -x", _repeated_lines(r"<nvidia_smi_log\b")),
    "nvidia_smi_q": ("nvidia-smi -q", _repeated_lines(r"^[^\S\n]*=+\s*NVSMI LOG\s*=+\s*$")),
    "nvidia_smi_table": ("nvidia-smi", _table_runs),
    "nvidia_smi_csv": ("nvidia-smi --query-gpu", _csv_headers),
    "nvidia_smi_list": ("nvidia-smi -L", _listed_twice),
    "lscpu": ("lscpu", _lscpu_runs),
    "free": ("free", _free_runs),
    "df": ("df", _df_runs),
}


def outputs_in(kind: str, text: str) -> tuple[str, int]:
    """(the output's name, how many outputs of that kind the text holds: 1 when it cannot
    tell). A looped `--query-gpu -l N` log prints its header once, so it counts as one."""
    name, runs = _RUNS.get(kind, (kind, lambda _text: 1))
    return name, runs(text)
