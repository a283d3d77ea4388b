"""A saved `nvidia-smi --query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause
--format=csv` (its header kept) as the rows facts/gpu_retired.py judges: each page placed on its
GPU by `gpu_uuid` or `gpu_bus_id`. One without either names no GPU: it stays a note (its rows
are pages, never GPUs), as before."""

from __future__ import annotations

import csv
import io

from gpuonboard.facts.csvtext import csv_rows

# `nvidia-smi --help-query-retired-pages`'s fields
_FIELDS = frozenset(
    {"timestamp", "gpu_name", "gpu_bus_id", "gpu_serial", "gpu_uuid", "retired_pages.address",
     "retired_pages.timestamp", "retired_pages.cause"}
)  # fmt: skip


# the fields of each row facts/gpu_retired.py reads, in its order
_ROW = ("gpu_uuid", "gpu_bus_id", "retired_pages.address", "retired_pages.cause")


def retired_pages(text: str) -> str | None:
    """A saved `--query-retired-pages` CSV with its header, its pages and the GPU of each
    (`gpu_uuid` or `gpu_bus_id`) among its fields, as `uuid,bus_id,address,cause` rows without
    header ("" for the header alone: no page retired); None for any other text."""
    lines = [line for line in text.splitlines() if line.strip()]
    head = [cell.strip().split(" [")[0] for cell in lines[0].split(",")] if lines else []
    if not {"retired_pages.address", "retired_pages.cause"} <= set(head) or not set(head) <= _FIELDS:
        return None
    if "gpu_uuid" not in head and "gpu_bus_id" not in head:
        return None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in csv_rows(lines[1:]) or []:
        cells = dict(zip(head, (cell.strip() for cell in row), strict=False))
        writer.writerow(
            [
                cells.get(f, "")
                for f in ("gpu_uuid", "gpu_bus_id", "retired_pages.address", "retired_pages.cause")
            ]
        )
    return out.getvalue()
