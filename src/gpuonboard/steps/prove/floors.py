"""The `gpu_perf` judging (issue 29), pure: the per-model floors table
(`data/gpu_perf_floors.yml`: loaded, validated, matched to a GPU name), a host's
`vars.perf_floors` overrides, and the rules over a `gpu_perf.py` result: each figure against
its floor (by the floor's kind: a measured or host floor PASSes at >= 1.10 x floor, WARNs from
the floor up and FAILs below; a production pass line passes from it and fails below; an
estimate from a datasheet share passes from it and is `unverified` below: no hardware claim),
the GPU more than a margin below the median of its peers (a straggler), host<->device copies
against the PCIe link and GPU-to-GPU copies against the topology (the sustained-load window's
checks: steps/prove/sustained.py)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.resources import DATA_DIR
from gpuonboard.steps.base import Check, StepArgsError, Verdict
from gpuonboard.steps.prove.references import mig_note, name_has, row_matches_name, variant_note
from gpuonboard.steps.prove.sustained import partly_sampled, sustained_check, temp_spread_check
from gpuonboard.units import finite_number
from gpuonboard.yamlload import load_yaml, where

FLOORS_FILE = DATA_DIR / "gpu_perf_floors.yml"
MATMUL = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
}
METRICS = (*MATMUL.values(), "membw_gbps", "h2d_gbps", "d2h_gbps", "p2p_nvlink_gbps", "power_w")
# per-GPU figures compared with the GPU's peers (membw_triad_gbps has no floor of its own)
# the figures judged by a floor alone (h2d/d2h are judged against the PCIe link as well, NVLink
# pairs by p2p_check): measured on a GPU whose floors lack one, the figure is `unverified`
FLOORED = (*MATMUL.values(), "membw_gbps", "power_w")
PEER_METRICS = (*MATMUL.values(), "membw_gbps", "membw_triad_gbps", "h2d_gbps", "d2h_gbps")
WARN_BAND = 1.10
# a PCIe x16 link's host<->device copy, GB/s (each generation doubles the per-lane rate)
PCIE_X16_GBPS = {1: 3.0, 2: 6.0, 3: 12.0, 4: 25.0, 5: 50.0, 6: 100.0}
LINK_SHARE = 0.7  # below this share of the link's figure: the link is not what the card has


# a floor's kind (data/gpu_perf_floors.yml `kind`; without it: measured when verified, else an
# estimate): measured (a real measurement of the model backs it: the warn band, fails below),
# pass_line (a production pass/fail threshold, Azure's health checks: no warn band, fails below),
# estimate (a share of a datasheet peak: no warn band; below it is `unverified`, never a
# failure: the share is ours, not the hardware's); a host's vars.perf_floors are `host` (the
# band, fails below: the buyer's own line)
KINDS = ("measured", "pass_line", "estimate")
BANDED = ("measured", "host")


@dataclass(frozen=True)
class Floor:
    """One metric's floor: its value, where it comes from, whether a real measurement backs it,
    and its kind (KINDS, or `host`)."""

    value: float
    source: str
    verified: bool
    kind: str = "measured"


def unit(metric: str) -> str:
    """The unit of a metric's figures."""
    return "TFLOPS" if metric.endswith("_tflops") else "W" if metric == "power_w" else "GB/s"


# --------------------------------------------------------------------------- the table


def load_floors(path: Path = FLOORS_FILE) -> dict[str, Any]:
    """The floors table, validated: every row names a GPU and every floor has a positive value,
    a source and a verified flag (UsageError naming the file, line and row otherwise)."""
    data = load_yaml(path, UsageError, "GPU performance floors")
    if not isinstance(data, dict) or not isinstance(data.get("floors"), list):
        raise UsageError(f"{path}: needs a 'floors:' list")
    band = data.get("warn_band", WARN_BAND)
    if finite_number(band) is None or band < 1:
        raise UsageError(f"{where(path, data, 'warn_band')}: warn_band must be a number >= 1")
    for row in data["floors"]:
        if not isinstance(row, dict) or not row.get("id") or not row.get("gpu"):
            raise UsageError(f"{where(path, row)}: every row needs an id and a gpu")
        floors = row.get("floors")
        if not isinstance(floors, dict) or not floors:
            raise UsageError(f"{where(path, row, 'floors')}: row {row['id']}: needs a 'floors:' mapping")
        if row.get("memory_gb") is not None and (finite_number(row["memory_gb"]) or 0) <= 0:
            raise UsageError(
                f"{where(path, row, 'memory_gb')}: row {row['id']}: memory_gb must be a positive number"
            )
        for metric, floor in floors.items():
            at = f"{where(path, floors, metric)}: row {row['id']}, {metric}"
            if metric not in METRICS:
                raise UsageError(f"{at}: unknown metric (known: {', '.join(METRICS)})")
            if not isinstance(floor, dict) or (finite_number(floor.get("value")) or 0) <= 0:
                raise UsageError(f"{at}: needs a positive 'value'")
            if not str(floor.get("source") or "").strip():
                raise UsageError(f"{at}: needs a 'source'")
            if not isinstance(floor.get("verified"), bool):
                raise UsageError(f"{at}: needs 'verified: true' or 'verified: false'")
            kind = floor.get("kind")
            if kind is not None and kind not in KINDS:
                raise UsageError(f"{at}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
            if (kind == "measured" and not floor["verified"]) or (kind == "estimate" and floor["verified"]):
                raise UsageError(
                    f"{at}: kind {kind} contradicts 'verified: {str(floor['verified']).lower()}'"
                )
    return data


def _memory_matches(row: Mapping[str, Any], gpu_name: str, memory_mib: int | None) -> bool:
    want = row.get("memory_gb")
    if want is None:
        return True
    if memory_mib:
        return abs(memory_mib / 1024 - float(want)) <= 0.15 * float(want)
    return name_has(gpu_name, f"{int(want)}GB", model=False)


def match_floor_row(
    table: Mapping[str, Any], gpu_name: str, memory_mib: int | None = None
) -> dict[str, Any] | None:
    """The first row whose gpu / form / exclude name the GPU (references.row_matches_name) and,
    with `memory_gb`, whose memory size matches nvidia-smi's total (else "<N>GB" in the name)."""
    for row in table["floors"]:
        if row_matches_name(row, gpu_name) and _memory_matches(row, gpu_name, memory_mib):
            return dict(row)
    return None


def parse_overrides(value: Any) -> dict[str, float]:
    """`vars.perf_floors`: a mapping metric -> positive number (StepArgsError otherwise)."""
    if value is None or value == "":
        return {}
    if not isinstance(value, Mapping):
        raise StepArgsError(f"vars.perf_floors must be a mapping of metric to number, not {value!r}")
    out: dict[str, float] = {}
    for metric, number in value.items():
        if metric not in METRICS:
            raise StepArgsError(f"vars.perf_floors: unknown metric {metric!r} (known: {', '.join(METRICS)})")
        try:  # a number, or its text (a templated value renders as text)
            figure = finite_number(float(number) if isinstance(number, str) else number)
        except ValueError:
            figure = None
        if figure is None or figure <= 0:
            raise StepArgsError(f"vars.perf_floors: {metric} must be a positive number, not {number!r}")
        out[str(metric)] = figure
    return out


def floors_for(row: Mapping[str, Any] | None, overrides: Mapping[str, float]) -> dict[str, Floor]:
    """A GPU's floors: its row's, each replaced by the host's `vars.perf_floors` where given."""
    out = {
        m: Floor(float(f["value"]), str(f["source"]), bool(f["verified"]), kind_of(f))
        for m, f in ((row or {}).get("floors") or {}).items()
    }
    for metric, value in overrides.items():
        out[metric] = Floor(value, "vars.perf_floors", False, "host")
    return out


def kind_of(floor: Mapping[str, Any]) -> str:
    """A table floor's kind: its `kind`, else measured when verified, else an estimate."""
    return str(floor.get("kind") or ("measured" if floor.get("verified") else "estimate"))


def verdict_for(value: float, floor: float, band: float = WARN_BAND) -> Verdict:
    """PASS at >= band x floor, WARN from the floor up to it, FAIL below the floor."""
    return "pass" if value >= round(band * floor, 9) else "warn" if value >= floor else "fail"


def judge(value: float, floor: Floor) -> Verdict:
    """A figure against a floor of its kind: the warn band only on a measured or host floor; below
    an estimate `unverified` (no hardware claim), below any other floor a failure."""
    if value < floor.value:
        return "unverified" if floor.kind == "estimate" else "fail"
    return verdict_for(value, floor.value) if floor.kind in BANDED else "pass"


# --------------------------------------------------------------------------- per GPU


def gpu_metrics(g: Mapping[str, Any], sustained: Mapping[str, Any] | None = None) -> dict[str, float]:
    """One GPU's figures by metric name (absent and null figures left out)."""
    out: dict[str, float] = {}
    for dtype, value in (g.get("matmul_tflops") or {}).items():
        if dtype in MATMUL and (v := finite_number(value)) is not None:
            out[MATMUL[dtype]] = v
    membw = g.get("membw_gbps") or {}
    for key, metric in (("copy", "membw_gbps"), ("triad", "membw_triad_gbps")):
        if (v := finite_number(membw.get(key))) is not None:
            out[metric] = v
    for metric in ("h2d_gbps", "d2h_gbps"):
        if (v := finite_number(g.get(metric))) is not None:
            out[metric] = v
    if sustained and (v := finite_number(sustained.get("power_median_w"))) is not None:
        out["power_w"] = v
    return out


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def floor_check(
    idx: int, name: str, metric: str, value: float, floor: Floor, row_id: str, causes: Callable[[], str]
) -> Check:
    """`perf_<metric>_gpu<N>`: one figure against its floor."""
    u = unit(metric)
    verdict = judge(value, floor)
    where_from = "vars.perf_floors" if floor.kind == "host" else f"{row_id} floor"
    detail = ""
    if verdict == "unverified":
        detail = (
            f"below an estimated floor ({floor.source}): no measurement of this model backs it, so"
            " this is no hardware claim; if the GPU is slow, likely causes: "
            f"{causes()}; measure a box you trust (bench/device/run.sh) for this model's row, or"
            " set vars.perf_floors"
        )
    elif verdict != "pass":
        said = "within 10 % above the floor" if verdict == "warn" else "below the floor"
        detail = f"{said}; likely causes: {causes()}; floor source: {floor.source}"
        detail += "" if floor.verified else " (not verified)"
    how = {
        "pass_line": "a pass line: no warn band",
        "estimate": "an estimate: below it is not judged",
    }.get(floor.kind, f"PASS from {_fmt(WARN_BAND * floor.value)}")
    return Check(
        f"perf_{metric}_gpu{idx}",
        f">= {_fmt(floor.value)} {u} ({where_from}; {how})",
        f"GPU {idx} {name}: {_fmt(value)} {u} ({value / floor.value * 100:.0f} % of the floor)",
        verdict,
        detail,
    )


def straggler_checks(per_gpu: Mapping[int, Mapping[str, float]], margin: float) -> list[Check]:
    """`perf_straggler_<metric>_gpu<N>` for each GPU more than `margin` below the median of its
    peers on a metric (with >= 2 GPUs measured), and one `perf_stragglers` pass when none is."""
    checks: list[Check] = []
    compared = 0
    for metric in PEER_METRICS:
        values = {i: m[metric] for i, m in per_gpu.items() if metric in m}
        if len(values) < 2:
            continue
        compared += 1
        for idx, value in sorted(values.items()):
            median = statistics.median(v for i, v in values.items() if i != idx)
            if median > 0 and value < (1 - margin) * median:
                u = unit(metric)
                checks.append(
                    Check(
                        f"perf_straggler_{metric}_gpu{idx}",
                        f"within {margin * 100:.0f} % of the median of the other {len(values) - 1} GPU(s)",
                        f"GPU {idx}: {_fmt(value)} {u} vs median {_fmt(median)} {u}"
                        f" ({(value / median - 1) * 100:+.0f} %)",
                        "fail",
                        f"GPU {idx} is slower than its peers on {metric}: the slowest GPU sets the pace"
                        " of every step of a multi-GPU job; look at its clocks, power, temperature and"
                        " PCIe link (gpu_health) and ask the vendor to check or replace it",
                    )
                )
    if compared and not checks:
        checks.append(
            Check(
                "perf_stragglers",
                f"no GPU more than {margin * 100:.0f} % below the median of its peers",
                f"none of {len(per_gpu)} GPUs on {compared} metric(s)",
                "pass",
            )
        )
    return checks


def _link_name(gen: int, width: int) -> str:
    return f"Gen{gen} x{width}"


def _link_gbps(gen: int, width: int) -> float:
    return PCIE_X16_GBPS.get(gen, PCIE_X16_GBPS[6]) * width / 16


def _figure_of(measured: float, card_gen: int) -> str:
    """The link whose host<->device figure a measurement matches, x16 first ("a Gen3 x16
    figure"), up to the card's generation."""
    for width in (16, 8, 4, 2, 1):
        for gen in sorted((g for g in PCIE_X16_GBPS if g <= card_gen), reverse=True):
            if measured >= LINK_SHARE * _link_gbps(gen, width):
                return f"a {_link_name(gen, width)} figure"
    return "below a Gen1 x1 figure"


def link_check(idx: int, g: Mapping[str, Any], info: GpuInfo | None) -> Check | None:
    """`perf_h2d_gpu<N>`: host<->device copies against the link the facts saw (the link's max)
    and the one the sampler saw under load; None when the GPU measured neither direction."""
    figures = {d: v for d in ("h2d", "d2h") if (v := finite_number(g.get(f"{d}_gbps"))) is not None}
    if not figures:
        return None
    name = f"perf_h2d_gpu{idx}"
    card = None
    if info and info.pcie_gen_max and info.pcie_width_max:
        card = (info.pcie_gen_max, info.pcie_width_max)
    raw = g.get("pcie")
    pcie: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    seen = (int(pcie["gen"]), int(pcie["width"])) if pcie.get("gen") and pcie.get("width") else None
    link = card or seen
    direction, low = min(figures.items(), key=lambda kv: kv[1])
    said = " / ".join(
        f"{v:.1f} GB/s {'host->device' if d == 'h2d' else 'device->host'}" for d, v in figures.items()
    )
    if link is None:
        return Check(
            name,
            "the PCIe link's copy rate",
            f"GPU {idx}: {said}",
            "unverified",
            "nvidia-smi reported no PCIe link generation or width, so the copy rate could not be judged",
        )
    expected = _link_gbps(*link)
    under_load = f"; the link ran at {_link_name(*seen)} under load" if seen and card and seen < card else ""
    want = (
        f">= {LINK_SHARE * expected:.1f} GB/s each way"
        f" ({LINK_SHARE * 100:.0f} % of ~{expected:.0f} GB/s, {_link_name(*link)})"
    )
    if low < LINK_SHARE * expected:
        way = "host->device" if direction == "h2d" else "device->host"
        return Check(
            name,
            want,
            f"GPU {idx}: {said}",
            "fail",
            f"GPU {idx}: {low:.1f} GB/s {way}, {_figure_of(low, link[0])} on a {_link_name(*link)}"
            f" card: riser or slot{under_load}; ask the vendor to reseat the card or check the slot"
            " and riser",
        )
    if under_load:
        return Check(
            name,
            want,
            f"GPU {idx}: {said}{under_load}",
            "warn",
            "the link trained below the card's own under load: a riser, slot or BIOS setting; ask the vendor",
        )
    return Check(name, want, f"GPU {idx}: {said} on {_link_name(*link)}", "pass")


# --------------------------------------------------------------------------- between GPUs


def _pair_groups(p2p: Mapping[str, Any], n: int) -> dict[str, list[tuple[int, int, float]]]:
    """The measured ordered pairs by their `topo -m` label (all in "any" without a topology)."""
    gbps = p2p.get("gbps") or []
    topo = p2p.get("topology") if isinstance(p2p.get("topology"), Mapping) else None
    groups: dict[str, list[tuple[int, int, float]]] = {}
    for i in range(n):
        for j in range(n):
            value = finite_number(gbps[i][j]) if i != j and i < len(gbps) and j < len(gbps[i]) else None
            if value is None:
                continue
            label = str(topo.get(f"{min(i, j)}-{max(i, j)}", "?")) if topo else "any"
            groups.setdefault(label, []).append((i, j, value))
    return groups


def p2p_check(p2p: Mapping[str, Any] | None, floor: Floor | None, margin: float) -> Check | None:
    """`perf_p2p`: NVLink pairs against `p2p_nvlink_gbps`, every pair against the pairs of its
    own kind (NV18 with NV18, SYS with SYS), and a warning naming the pairs without peer access."""
    if not p2p:
        return None
    access = p2p.get("access") or []
    n = len(access)
    no_peer = sorted(
        {(min(i, j), max(i, j)) for i in range(n) for j in range(n) if i != j and access[i][j] is False}
    )
    groups = _pair_groups(p2p, n)
    fails: list[str] = []  # (below an estimated floor: `unverified`, no hardware claim)
    warns: list[str] = []
    parts: list[str] = []
    banded = floor is not None and floor.kind in BANDED
    for label, pairs in sorted(groups.items()):
        values = [v for _, _, v in pairs]
        median = statistics.median(values)
        parts.append(f"{label}: {len(pairs)} pairs, min {min(values):,.0f} / median {median:,.0f} GB/s")
        nvlink = label.upper().startswith("NV")
        for i, j, v in pairs:
            if nvlink and floor and v < floor.value:
                fails.append(f"{i}->{j} {v:,.0f} GB/s")
            elif nvlink and floor and banded and v < WARN_BAND * floor.value:
                warns.append(f"{i}->{j} {v:,.0f} GB/s (within 10 % above the floor)")
            elif len(pairs) > 1 and v < (1 - margin) * median:
                warns.append(f"{i}->{j} {v:,.0f} GB/s vs {median:,.0f} for {label}")
    details: list[str] = []
    estimate = floor is not None and floor.kind == "estimate"
    if fails and floor:
        details.append(
            f"NVLink pairs below {floor.value:,.0f} GB/s: {', '.join(fails)}: "
            + (
                f"that floor is an estimate ({floor.source}), not a hardware claim; see fabric_health"
                " and nvlink_errors"
                if estimate
                else "a degraded NVLink or NVSwitch (see fabric_health and nvlink_errors); ask the vendor"
            )
        )
    if warns:
        details.append(f"slow pairs: {', '.join(warns)}")
    if no_peer:
        named = ", ".join(f"{i}-{j}" for i, j in no_peer)
        details.append(
            f"no peer access between GPUs {named}: all-reduce runs without P2P there (through host"
            " memory, slower); common on consumer cards and some virtual machines"
        )
    # pairs of no known kind: no `topo -m` was read ("any") or it lacks the pair ("?")
    unread = sum(len(pairs) for label, pairs in groups.items() if label in ("any", "?"))
    if floor and unread:
        details.append(
            f"the kind of {unread} pair(s) is unknown (`nvidia-smi topo -m` was not read or lacks"
            f" them): the NVLink floor {floor.value:,.0f} GB/s could not be applied to them; run"
            " `nvidia-smi topo -m` on the box to see why"
        )
    elif floor and not any(label.upper().startswith("NV") for label in groups):
        details.append(
            f"no pair is NVLink in `nvidia-smi topo -m`: the NVLink floor {floor.value:,.0f} GB/s"
            " was not applied"
        )
    verdict: Verdict = (
        "fail"
        if fails and not estimate
        else "warn"
        if (warns or no_peer)
        else "unverified"
        if fails or (floor and unread)
        else "pass"
    )
    expected = "peer access on every pair; pairs within 10 % of their own kind"
    if floor:
        expected = f">= {floor.value:,.0f} GB/s per NVLink pair; " + expected
    return Check("perf_p2p", expected, "; ".join(parts) or "no pair measured", verdict, "; ".join(details))


# --------------------------------------------------------------------------- the whole result


def floor_known_check(
    rows: Mapping[str, str | None],
    overrides: Mapping[str, float],
    notes: Mapping[str, str] | None = None,
    figures: str = "",
) -> Check:
    """`perf_floor_known`: which row judged each model; a model with none gets only the relative
    checks, which is `unverified` (could not be judged), never a pass. `notes`: why a GPU name
    matched no row (a variant of a model with a row, a MIG slice); `figures`: what such GPUs
    measured that no floor judges (`rowless_figures`), said in the detail."""
    notes = notes or {}
    unknown = sorted(name for name, row in rows.items() if row is None)
    known = ", ".join(f"{name}: {row}" for name, row in sorted(rows.items()) if row)
    if overrides:
        known = (known + "; " if known else "") + f"vars.perf_floors ({', '.join(sorted(overrides))})"
    if unknown and not overrides:
        return Check(
            "perf_floor_known",
            "a floors row for every GPU model",
            f"no floor is known for {', '.join(unknown)}" + (f" (judged: {known})" if known else ""),
            "unverified",
            "".join(f"{notes[n]}; " for n in unknown if n in notes)
            + "only relative checks ran (stragglers, temperature spread, PCIe link, GPU-to-GPU pairs);"
            " add a row to data/gpu_perf_floors.yml, or set vars.perf_floors for this host or its vendor"
            + (f"; {figures}" if figures else ""),
        )
    return Check("perf_floor_known", "a floors row for every GPU model", known, "pass", figures)


def where_of(row: Mapping[str, Any] | None, overrides: Mapping[str, float]) -> str:
    """Where a GPU's floors come from: its row ("row h800-sxm"), the host's vars.perf_floors, or both."""
    said = [f"row {row['id']}"] if row else []
    return " and ".join([*said, *(["vars.perf_floors"] if overrides else [])])


def _gpu_list(indices: Sequence[int]) -> str:
    """GPU indices as runs: [0, 1, 2, 3, 5] -> "0-3, 5"."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _figures(values: Mapping[int, float], u: str) -> str:
    """GPUs' figures of one metric: their median, min and max, or the one figure."""
    figs = list(values.values())
    if len(figs) == 1:
        return f"{_fmt(figs[0])} {u}"
    return f"median {_fmt(statistics.median(figs))} {u} (min {_fmt(min(figs))}, max {_fmt(max(figs))})"


def rowless_figures(rowless: Mapping[str, Mapping[int, Mapping[str, float]]]) -> str:
    """What GPUs of a model without a floors row measured that no floor judges at all (the
    triad, host<->device copies): `name`: {index: {metric: value}} said per metric, as
    information ('' where none)."""
    said = []
    for name, per_gpu in rowless.items():
        for metric in (m for m in PEER_METRICS if m not in FLOORED):
            values = {i: f[metric] for i, f in per_gpu.items() if metric in f}
            if values:
                said.append(f"{metric} GPU {_gpu_list(list(values))} {name} {_figures(values, unit(metric))}")
    return f"measured without a floor (information): {'; '.join(said)}" if said else ""


def unfloored_checks(unfloored: Sequence[tuple[int, str, str, float, str]]) -> list[Check]:
    """`perf_<metric>_unfloored`: ONE check per metric measured on GPUs whose floors (their row,
    the host's vars.perf_floors) give none for it, a model without a row included: `unverified`,
    never a pass (nothing judged the figures themselves; perf_stragglers compares the peers),
    with each model's GPUs and their median, min and max."""
    by_metric: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    for idx, name, metric, value, source in unfloored:
        by_metric.setdefault(metric, {}).setdefault((source, name), {})[idx] = value
    checks: list[Check] = []
    for metric in (m for m in FLOORED if m in by_metric):
        u = unit(metric)
        said = []
        for (source, name), values in by_metric[metric].items():
            none = f"none in {source}" if source else "no floors row"
            said.append(f"{none}: GPU {_gpu_list(list(values))} {name} {_figures(values, u)}")
        checks.append(
            Check(
                f"perf_{metric}_unfloored",
                f"a floor for {metric} on every GPU that measured it",
                "; ".join(said),
                "unverified",
                f"no {metric} floor, so these figures were compared with their peers only"
                " (perf_stragglers), never with what a healthy card of the model reaches: no claim"
                " either way; add the floor to data/gpu_perf_floors.yml or set vars.perf_floors",
            )
        )
    return checks


def pair_facts(result: Mapping[str, Any], gpus: Sequence[GpuInfo]) -> dict[int, GpuInfo]:
    """nvidia-smi's facts for each CUDA device of a gpu_perf result, by index. CUDA numbers
    devices fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID (and CUDA_VISIBLE_DEVICES renumbers
    them), so a device whose PCI address the result gives is paired by that address (none where
    no listed GPU has it: another GPU's facts are no claim about it); by index only without one."""
    by_bus = {k: g for g in gpus if (k := bus_key(g.pci_bus_id)) is not None}
    by_index = {g.index: g for g in gpus}
    out: dict[int, GpuInfo] = {}
    for entry in result.get("gpus") or []:
        idx = int(entry.get("index", 0))
        key = bus_key(str(entry.get("pci_bus_id") or ""))
        info = by_bus.get(key) if key is not None and by_bus else by_index.get(idx)
        if info is not None:
            out[idx] = info
    return out


def perf_checks(
    result: Mapping[str, Any],
    table: Mapping[str, Any],
    gpus: Sequence[GpuInfo],
    overrides: Mapping[str, float] | None = None,
    straggler_margin: float = 0.10,
    causes: Callable[[int], str] | None = None,
) -> list[Check]:
    """Rules over a CUDA gpu_perf.py result (pure): floors, stragglers, PCIe link, pairs,
    sustained window. `causes(index)` names the likely causes of a low figure for a GPU."""
    overrides = dict(overrides or {})
    facts = pair_facts(result, gpus)
    sustained = (result.get("sustained") or {}).get("per_gpu") or {}
    checks: list[Check] = []
    rows: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    per_gpu: dict[int, dict[str, float]] = {}
    unfloored: list[tuple[int, str, str, float, str]] = []
    rowless: dict[str, dict[int, dict[str, float]]] = {}  # model without a row -> its GPUs' figures
    nvlink_floor: Floor | None = None
    for g in result.get("gpus") or []:
        idx = int(g.get("index", 0))
        info = facts.get(idx)
        name = str(g.get("name") or (info.name if info else "?"))
        mig = mig_note(idx, name, info)
        row = None if mig else match_floor_row(table, name, info.memory_total_mib if info else None)
        rows[name] = row["id"] if row else None
        if not row and (note := mig or variant_note(name)):
            notes[name] = note
        floors = floors_for(row, overrides)
        nvlink_floor = nvlink_floor or floors.get("p2p_nvlink_gbps")
        metrics = gpu_metrics(g, sustained.get(str(idx)))
        per_gpu[idx] = metrics
        if row is None:
            rowless.setdefault(name, {})[idx] = metrics

        def why(i: int = idx) -> str:
            return causes(i) if causes else "none found"

        for metric in METRICS:
            if metric not in floors or metric == "p2p_nvlink_gbps":
                continue
            if metric in metrics:
                check = floor_check(
                    idx, name, metric, metrics[metric], floors[metric], str(row["id"] if row else ""), why
                )
                checks.append(
                    partly_sampled(check, sustained.get(str(idx))) if metric == "power_w" else check
                )
            elif metric.endswith("_tflops") and (skip := (g.get("skipped") or {}).get(metric.split("_")[0])):
                checks.append(
                    Check(
                        f"perf_{metric}_gpu{idx}",
                        f">= {_fmt(floors[metric].value)} TFLOPS",
                        f"GPU {idx} {name}: not measured ({skip})",
                        "unverified",
                        "the floor could not be judged: use a PyTorch that runs this dtype here",
                    )
                )
        unfloored += [
            (idx, name, m, metrics[m], where_of(row, overrides))
            for m in FLOORED
            if m in metrics and m not in floors
        ]
        link = link_check(idx, g, info)
        if link is not None:
            checks.append(link)
    checks.insert(0, floor_known_check(rows, overrides, notes, rowless_figures(rowless)))
    checks += unfloored_checks(unfloored)
    checks += straggler_checks(per_gpu, straggler_margin)
    pairs = p2p_check(result.get("p2p"), nvlink_floor, straggler_margin)
    if pairs is not None:
        checks.append(pairs)
    for key, s in sorted(sustained.items(), key=lambda kv: int(kv[0])):
        checks.append(sustained_check(int(key), s))
    spread = temp_spread_check(sustained)
    if spread is not None:
        checks.append(spread)
    return checks
