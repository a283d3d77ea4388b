"""The monitor's table (rich): one row per GPU, its columns fitted to the terminal (optional
columns dropped first, then the alerts go below the table), and the alerts above a table
taller than the terminal. Every host's text passes termtext.for_terminal.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpuonboard import termtext
from gpuonboard.watch.samples import GpuSample, HostState

COLUMNS: tuple[str, ...] = (
    "host",
    "gpu",
    "util",
    "memory",
    "temp",
    "power",
    "throttle",
    "top process",
    "alerts",
)
# Dropped in this order when the table is wider than the terminal (the throttle reasons that
# matter are alerts too); the alerts then go below the table, where they are never cut off.
OPTIONAL_COLUMNS: tuple[str, ...] = ("top process", "throttle")
_WRAPPING = frozenset({"host", "gpu", "memory", "top process", "alerts"})  # util, temp, power stay whole
TABLE_LINES = 5  # a table's lines besides its rows: title, top border, header, its rule, bottom border


def short_gpu_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3' (every GPU here is an NVIDIA one)."""
    return name[len("NVIDIA ") :] if name.startswith("NVIDIA ") and len(name) > len("NVIDIA ") else name


def _host_alert(st: HostState) -> str:
    stale = st.status != "live"  # (the error is the host's own words: no escape sequence passes)
    return termtext.for_terminal(
        "; ".join(x for x in ((st.error if stale else None), *st.alerts) if x), keep=""
    )


def alert_lines(states: Sequence[HostState], per_alert: bool = False) -> list[str]:
    """Every alert as one line (`host: ...`, `host gpu N: ...`): below a table too narrow for
    them. `per_alert`: one line per host and alert text instead, naming its GPUs (`host gpu
    0,3: ...`), above a table taller than the terminal (8 GPUs idle: one line, not 8)."""
    out: list[str] = []
    for st in states:
        host_alert = _host_alert(st)
        if host_alert:
            out.append(f"{st.name}: {host_alert}")
        if not per_alert:
            out += [
                f"{st.name} gpu {i}: {'; '.join(s.alerts)}" for i, s in sorted(st.gpus.items()) if s.alerts
            ]
            continue
        gpus: dict[str, list[str]] = {}
        for i, s in sorted(st.gpus.items()):
            for alert in s.alerts:
                gpus.setdefault(alert, []).append(str(i))
        out += [f"{st.name} gpu {','.join(idx)}: {alert}" for alert, idx in gpus.items()]
    return out


def _gpu_cells(s: GpuSample) -> dict[str, str]:
    used = "?" if s.mem_used_mib is None else s.mem_used_mib  # ([N/A] is not 0 MiB used)
    mem = f"{used}/{s.mem_total_mib or '?'} MiB"
    if s.mem_pct is not None:
        mem += f" ({s.mem_pct:.0f}%)"
    power = (
        f"{s.power_w:.0f}/{s.power_limit_w:.0f} W"
        if s.power_w is not None and s.power_limit_w
        else (f"{s.power_w:.0f} W" if s.power_w is not None else "-")
    )
    cells = {
        "gpu": f"{s.index} {short_gpu_name(s.name)}",
        "util": "-" if s.util_pct is None else f"{s.util_pct}%",
        "memory": mem,
        "temp": "-" if s.temp_c is None else f"{s.temp_c}C",
        "power": power,
        "throttle": ",".join(r for r in s.throttle if r != "gpu_idle") or "-",
        "top process": s.top_process or "-",
    }
    # (a process name on a shared box is anyone's text: an ESC in it must not reach the terminal)
    return {col: termtext.for_terminal(text, keep="") for col, text in cells.items()}


def _rows(states: Sequence[HostState], now: float) -> list[dict[str, Any]]:
    """The table's cells, every column of COLUMNS, as rich Text: one row per GPU (one per
    host without GPUs yet)."""
    from rich.text import Text

    rows: list[dict[str, Any]] = []
    for st in states:
        stale = st.status != "live"
        if stale:
            wait = f", retry in {max(0.0, st.retry_at - now):.0f}s" if st.retry_at else ""
            label = Text(f"{st.name} {st.status.upper()}{wait}", style="bold magenta")
        else:
            label = Text(st.name)
        host_alert = _host_alert(st)
        if not st.gpus:
            cells = {c: Text("-") for c in COLUMNS}
            cells.update(host=label, alerts=Text(host_alert, style="red"))
            rows.append(cells)
            continue
        style = "dim" if stale else ""
        for i, (_, s) in enumerate(sorted(st.gpus.items())):
            alerts = "; ".join(s.alerts + ((host_alert,) if host_alert and i == 0 else ()))
            cells = {c: Text(v, style=style) for c, v in _gpu_cells(s).items()}
            cells.update(
                host=label if i == 0 else Text(""), alerts=Text(alerts, style="bold red" if alerts else "")
            )
            rows.append(cells)
    return rows


def text_width(text: str) -> int:
    """Terminal cells of a cell's text when nothing limits it: its widest line (as rich
    measures a Text; wide characters count 2)."""
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def column_widths(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Each column's content width (header included, padding not): measured once per refresh."""
    widths = {c: text_width(c) for c in COLUMNS}
    for row in rows:
        for col, cell in row.items():
            w = text_width(cell.plain)
            if w > widths[col]:
                widths[col] = w
    return widths


def table_width(widths: Mapping[str, int], columns: Sequence[str]) -> int:
    """Terminal columns the table takes with these columns: each cell padded by one on both
    sides, a border on both edges and one between columns (rich's default box)."""
    return sum(widths[c] + 2 for c in columns) + 2 + len(columns) - 1


def fit_columns(widths: Mapping[str, int], width: int) -> tuple[list[str], bool]:
    """The columns to show on a terminal `width` wide, and whether the alerts go below the
    table: the optional columns are left out first, then the alerts column."""
    columns = list(COLUMNS)
    for drop in OPTIONAL_COLUMNS:
        if table_width(widths, columns) <= width:
            return columns, False
        columns.remove(drop)
    if table_width(widths, columns) <= width:
        return columns, False
    columns.remove("alerts")
    return columns, True


def _table(
    rows: Sequence[Mapping[str, Any]],
    interval: float,
    columns: Sequence[str],
    widths: Mapping[str, int] | None = None,
) -> Any:
    """The rich table of these rows and columns; `widths` fixes the columns' widths (rich then
    measures no cell again), only for a table known to fit the terminal."""
    from rich.table import Table

    every = f"every {interval:g}s; Ctrl-C to quit" if interval > 0 else "one sample"  # (--once: "every 0s")
    t = Table(title=f"GPU monitor ({every})", title_justify="left")
    for col in columns:
        t.add_column(col, no_wrap=col not in _WRAPPING, width=None if widths is None else widths[col])
    for cells in rows:
        t.add_row(*(cells[c] for c in columns))
    return t


def fit_alerts(lines: list[str], width: int, height: int) -> list[str]:
    """Pure: the alert lines that fit above a table on a `width` x `height` terminal, keeping
    the table's header and first row in view (TABLE_LINES + 1 lines); when some do not fit, the
    last line shown says how many more there are (the live view shows its top only: an alert
    past the bottom was never seen)."""
    room = max(height - TABLE_LINES - 1, 1)

    def used(line: str) -> int:  # (a line wider than the terminal wraps)
        return max(-(-len(line) // max(width, 1)), 1)

    if sum(used(line) for line in lines) <= room:
        return lines
    more = "... and {} more alert lines: `invoke monitor --once` prints every one"
    shown: list[str] = []
    taken = used(more.format(len(lines)))
    for line in lines:
        if taken + used(line) > room:
            break
        shown.append(line)
        taken += used(line)
    return [*shown, more.format(len(lines) - len(shown))]


def render_table(
    states: Sequence[HostState],
    interval: float,
    now: float | None = None,
    width: int | None = None,
    height: int | None = None,
) -> Any:
    """The rich table: one row per GPU (one per host without GPUs yet). Given the terminal's
    `width`, a table wider than it loses the optional columns, then its alerts column, whose
    alerts are printed below it instead: util, temp and the alerts are never squeezed away.
    Given its `height`, a table taller than it (the live view shows its top only) has every
    alert above it instead, one line per host and alert (`host gpu 0,3: ...`).

    The cells are measured once (column_widths) and the layout decided on those numbers
    (fit_columns): a refresh of 256 GPUs builds one table, not one per column tried."""
    now = time.monotonic() if now is None else now
    rows = _rows(states, now)
    if width is None:
        return _table(rows, interval, COLUMNS)
    widths = column_widths(rows)
    columns, alerts_below = fit_columns(widths, width)
    fits = table_width(widths, columns) <= width
    table = _table(rows, interval, columns, widths if fits else None)
    below = alert_lines(states) if alerts_below else []
    # (at least: a row that wraps takes more than one line)
    too_tall = height is not None and len(rows) + TABLE_LINES + len(below) > height
    if not (below or too_tall):
        return table
    from rich.console import Group
    from rich.text import Text

    if too_tall:
        assert height is not None
        lines = fit_alerts(alert_lines(states, per_alert=True), width, height)
        above = [Text(line, style="bold red") for line in lines]
        return Group(*above, table) if above else table
    return Group(table, *(Text(line, style="bold red") for line in below))
