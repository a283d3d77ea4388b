"""NVLink rules: every link of an NVLink-board GPU up (`nvlink_links`) and its error counters
clean (`nvlink_errors`), from `nvidia-smi nvlink -s` / `-e`, against the links per GPU model
(data/nvlink_links.yml: NVIDIA datasheets and real captures) and the counters' thresholds
(data/nvlink_errors.yml: NVIDIA DCGM's NVLink health watch). Pure functions from parsed facts to
one `Check` each (or None where a rule does not apply: a PCIe card has no NVLink row).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuonboard.facts.nvlink import (
    ALL_INACTIVE,
    MIG_MODE,
    UNSUPPORTED,
    GpuNvlink,
    GpuNvlinkErrors,
    NvlinkErrors,
    NvlinkStatus,
)
from gpuonboard.once import lazy_re
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.model_match import form_unread, variant_words
from gpuonboard.steps.checks.once import loaded_once

DATA = DATA_DIR
NVLINK_FILE = DATA / "nvlink_links.yml"
NVLINK_ERRORS_FILE = DATA / "nvlink_errors.yml"
NVSWITCH_MIN_GPUS = 8  # HGX 8-GPU boards link through NVSwitch; 4-GPU HGX boards link directly


@dataclass(frozen=True)
class ModelLinks:
    """One row of data/nvlink_links.yml."""

    match: str
    links: int | None
    nvswitch: bool
    source: str
    verified: bool


@dataclass(frozen=True)
class ErrorThreshold:
    """One row of data/nvlink_errors.yml: when a counter's count warns or fails."""

    name: str
    warn_at: int | None
    fail_at: int | None
    source: str
    verified: bool


@loaded_once
def load_nvlink_models(path: Path = NVLINK_FILE) -> tuple[ModelLinks, ...]:
    """The rows of data/nvlink_links.yml in order (first match wins)."""
    rows = []
    for row in table_rows(path, "models"):
        links = row.get("links")
        if not isinstance(row.get("match"), str) or not (links is None or isinstance(links, int)):
            raise ValueError(f"{path}: models row {row!r}: needs match (text) and links (number or null)")
        rows.append(
            ModelLinks(
                row["match"],
                links,
                bool(row.get("nvswitch")),
                str(row.get("source", "")),
                bool(row.get("verified")),
            )
        )
    return tuple(rows)


@loaded_once
def load_nvlink_error_thresholds(path: Path = NVLINK_ERRORS_FILE) -> tuple[ErrorThreshold, ...]:
    """The rows of data/nvlink_errors.yml (ValueError on a bad or duplicate row)."""
    rows: list[ErrorThreshold] = []
    for row in table_rows(path, "counters"):
        name, warn, fail = row.get("name"), row.get("warn_at"), row.get("fail_at")
        limits_ok = all(v is None or (isinstance(v, int) and v >= 1) for v in (warn, fail))
        if not isinstance(name, str) or not limits_ok or (warn is None and fail is None):
            raise ValueError(f"{path}: counters row {row!r}: needs name and warn_at / fail_at (>= 1 or null)")
        if any(r.name.lower() == name.lower() for r in rows):
            raise ValueError(f"{path}: counter {name!r} listed twice")
        rows.append(ErrorThreshold(name, warn, fail, str(row.get("source", "")), bool(row.get("verified"))))
    return tuple(rows)


@functools.cache
def _model_pattern(match: str) -> re.Pattern[str]:
    """`match` as whole tokens: not inside a longer letter/digit run ("H200" is not in "GH200",
    "B200" not in "GB200", "H20" not in "H200"); "-" and spaces separate tokens."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(match.lower())}(?![a-z0-9])")


@functools.lru_cache(maxsize=256)  # (pure over the shipped table, its value immutable: ~24 calls a host)
def nvlink_model(gpu_name: str) -> ModelLinks | None:
    """The nvlink_links.yml row of a GPU name as nvidia-smi prints it (None: unknown model).
    A row's `match` must stand as whole tokens in the name (case-insensitive), first row wins;
    a name with a variant word the row does not name (NVL, D, Ti, SUPER, MIG ...:
    model_match.variant_words, as the prove steps' reference tables read it) is another product
    than the row's: "NVIDIA H800 NVL", a PCIe card, is not judged by the H800 SXM's row. A name
    nvidia-smi's table cut before it says SXM ('NVIDIA H100 P...', 'NVIDIA H100 ...') gets no
    row: its cut tail may hold such a word (model_match.form_unread)."""
    if form_unread(gpu_name):
        return None
    low = gpu_name.lower()
    variants = variant_words(gpu_name)
    return next(
        (
            m
            for m in load_nvlink_models()
            if _model_pattern(m.match).search(low) and variants <= variant_words(m.match)
        ),
        None,
    )


_CUT_TAIL = lazy_re(r"\s*\S*\.\.\.\s*$")  # the word nvidia-smi's table cut: 'P...', '80G...'


def _cut_form_models(gpu_models: Sequence[str] | Mapping[int, str]) -> dict[int, tuple[str, ModelLinks]]:
    """GPUs whose name the table cut before it says SXM or PCIe (nvlink_model gives them no row)
    while the words shown name a model with NVLink links ('NVIDIA H800 80G...'): that SXM part, or
    its PCIe / NVL card. Index -> (name, the SXM part's row)."""
    cut: dict[int, tuple[str, ModelLinks]] = {}
    for index, name in _indexed(gpu_models).items():
        if form_unread(name) and (m := nvlink_model(_CUT_TAIL.sub("", name))) and m.links:
            cut[index] = (name, m)
    return cut


def _indexed(gpu_models: Sequence[str] | Mapping[int, str]) -> dict[int, str]:
    """GPU index -> model name: a mapping as given (the GPU numbers nvidia-smi printed), a list
    as GPUs 0, 1, 2 ..."""
    return dict(gpu_models) if isinstance(gpu_models, Mapping) else dict(enumerate(gpu_models))


def _links_counted(block: GpuNvlink, links: int) -> str:
    """'4 of 6 links active'; of a block that lists fewer links than the model has (a listing cut
    at a line end inside it: the links after the cut are not known) '3 of the 4 links listed
    active (6 on this model)'."""
    if block.total_links >= links:
        return f"{block.active_links} of {links} links active"
    return f"{block.active_links} of the {block.total_links} links listed active ({links} on this model)"


def _links_down(
    expected_links: Mapping[int, ModelLinks], nvlink_status: NvlinkStatus, cut: int | None, unread: list[str]
) -> list[str]:
    """rule_nvlink's GPUs with fewer active links than their model has ("GPU 0: 0 of 18 links
    active ..."); the GPUs whose links cannot be read are added to `unread`."""
    short: list[str] = []
    for index, model in sorted(expected_links.items()):
        block = nvlink_status.by_index(index)
        if index == cut:
            unread.append(f"GPU {index} (listing cut short)")
            continue
        if block is not None and block.note == ALL_INACTIVE and not any(link.active for link in block.links):
            # NVML's "Unable to retrieve Nvlink information as all links are inActive": the model
            # has NVLink links and none is up (Azure/azurehpc-health-checks azure_gpu_nvlink.nhc
            # fails the node on this sentence: "GPU N has all nvlinks inactive").
            short.append(f"GPU {index}: 0 of {model.links} links active (all links inactive)")
            continue
        if block is None or block.note == MIG_MODE or (not block.links and block.note != UNSUPPORTED):
            why = "MIG mode" if block is not None and block.note == MIG_MODE else "not listed"
            unread.append(f"GPU {index} ({why})")
            continue
        assert model.links is not None
        if block.active_links < model.links:
            down = [str(link.link) for link in block.links if not link.active]
            if not down and block.total_links < model.links:
                # every link printed is up, the others are not printed at all: the listing was
                # cut short (a paste elided with `...`), which is no evidence of a link down
                by_hand = (
                    f"; the others left out by hand: `{nvlink_status.elided}`" if nvlink_status.elided else ""
                )
                unread.append(
                    f"GPU {index} ({block.total_links} of {model.links} links listed, all up{by_hand})"
                )
                continue
            detail = f", inactive link(s) {', '.join(down)}" if down else ""
            short.append(f"GPU {index}: {_links_counted(block, model.links)}{detail}")
    return short


def rule_nvlink(
    gpu_models: Sequence[str] | Mapping[int, str], nvlink_status: NvlinkStatus | None
) -> Check | None:
    """Active NVLink links per GPU vs data/nvlink_links.yml on NVLink-board (SXM) models.

    None when no GPU is an NVLink-board model (PCIe cards: not applicable). Fewer links than the
    model has = fail naming the GPUs and counts (NVML's "all links are inActive" = 0 active:
    fail); no nvlink output, or MIG mode (the driver refuses NVLink queries) = unverified; a
    listing that ends inside a GPU's block (`cut_gpu`) is unverified for that GPU, never a pass."""
    expected_links = {
        i: m for i, name in _indexed(gpu_models).items() if (m := nvlink_model(name)) and m.links
    }
    cut_form = _cut_form_models(gpu_models)
    if not expected_links and not cut_form:
        return None
    counts = sorted(
        {m.links for m in [*expected_links.values(), *(m for _, m in cut_form.values())] if m.links}
    )
    judged = len(expected_links) + len(cut_form)
    expected = f"{'/'.join(map(str, counts))} active NVLink links on each of {judged} GPU(s)"
    if nvlink_status is None or not nvlink_status.gpus:
        return Check(
            "nvlink_links",
            expected,
            "no `nvidia-smi nvlink -s` output",
            "unverified",
            "nvidia-smi nvlink -s gave nothing to read; run it on the box (as root) to see each GPU's links.",
        )
    if nvlink_status.capabilities_only:  # (`nvlink -c` alone: what links support, no state)
        cut_in = (
            f"; cut short in GPU {nvlink_status.cut_gpu}'s block" if nvlink_status.cut_gpu is not None else ""
        )
        return Check(
            "nvlink_links",
            expected,
            f"an `nvidia-smi nvlink -c` (capabilities) listing of {len(nvlink_status.gpus)} GPU(s){cut_in}:"
            " no link's state",
            "unverified",
            "`nvidia-smi nvlink -c` shows what each link supports, never whether it is up: run"
            " `nvidia-smi nvlink -s` on the box and save its whole output.",
        )
    cut = nvlink_status.cut_gpu  # the GPU whose block the listing ends inside: never a pass
    # (or the next GPU's header cut before its index: the GPUs after the last read not known)
    where = nvlink_status.cut_where
    unread = [where] if where and cut not in expected_links else []
    short = _links_down(expected_links, nvlink_status, cut, unread)
    for index, (name, model) in sorted(cut_form.items()):  # (all up: the SXM part, judged so)
        block = nvlink_status.by_index(index)
        active = block.active_links if block is not None and index != cut else 0
        if model.links is not None and active < model.links:
            unread.append(
                f"GPU {index} ({active} of {model.links} links active, and its name '{name}' is cut"
                " before it says SXM, which has them, or PCIe / NVL, which need not)"
            )
    if short:
        also = f"; links not readable for {', '.join(unread)}" if unread else ""
        return Check(
            "nvlink_links",
            expected,
            "; ".join(short) + also,
            "fail",
            "NVLink links are down: GPU-to-GPU traffic falls back to slower paths; ask the vendor to"
            " reseat / repair the baseboard (or reset the GPUs) and show `nvidia-smi nvlink"
            " -s` with all links up.",
        )
    if unread:
        return Check(
            "nvlink_links",
            expected,
            f"links not readable for {', '.join(unread)}",
            "unverified",
            "NVLink status could not be read for these GPUs (in MIG mode the driver refuses NVLink"
            " queries; a listing cut short names only some links): run `nvidia-smi nvlink -s` on the"
            " box and save its whole output.",
        )
    speeds = sorted({s for g in nvlink_status.gpus for s in g.speeds})
    at = f" at {'/'.join(f'{s:g}' for s in speeds)} GB/s" if speeds else ""
    return Check("nvlink_links", expected, f"all links active on {judged} GPU(s){at}", "pass")


def _nvlink_unread_why(block: GpuNvlinkErrors | None) -> str:
    """Why a GPU's NVLink error counters were not read: MIG mode, not listed, no counters, or the
    driver's own sentence."""
    why = "MIG mode" if block is not None and block.note == MIG_MODE else "not listed"
    if block is not None and block.note not in (None, MIG_MODE):
        why = block.note_text or str(block.note)
    elif block is not None and block.note is None:
        why = "no counters printed"
    return why


@dataclass
class _NvlinkTally:
    """The NVLink error counters read: hits that fail or warn, GPUs not read, links and counters
    seen."""

    failing: list[str] = field(default_factory=list)
    warning: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    links: int = 0
    judged: int = 0


def _tally_nvlink_errors(expected: Mapping[int, ModelLinks], errors: NvlinkErrors) -> _NvlinkTally:
    """Each expected GPU's links' counters against data/nvlink_errors.yml (counters it does not
    list are not judged)."""
    limits = {t.name.lower(): t for t in load_nvlink_error_thresholds()}
    tally = _NvlinkTally()
    cut = errors.cut_gpu  # the GPU whose block the listing ends inside (or the next one's header)
    if errors.cut_where and cut not in expected:
        tally.unread.append(errors.cut_where)
    for index in sorted(expected):
        block = errors.by_index(index)
        if index == cut:
            tally.unread.append(f"GPU {index} (listing cut short)")
            continue
        if block is None or block.note is not None or not block.links:
            tally.unread.append(f"GPU {index} ({_nvlink_unread_why(block)})")
            continue
        model_links = expected[index].links
        if model_links and len(block.links) < model_links:
            # a listing cut short (`[...]`): the links it leaves out may hold the errors
            tally.unread.append(f"GPU {index} ({len(block.links)} of {model_links} links listed)")
        for link, printed in sorted(block.unread.items()):
            # a judged counter printed N/A / ERR! on a link: no zero, that link's counts unread
            named = [f"{name} printed {value}" for name, value in printed.items() if name.lower() in limits]
            if named:
                tally.unread.append(f"GPU {index} link {link} ({', '.join(named)})")
        for link, counters in sorted(block.links.items()):
            tally.links += 1
            for name, count in counters.items():
                limit = limits.get(name.lower())
                if limit is None:
                    continue
                tally.judged += 1
                hit = f"GPU {index} link {link}: {name} {count}"
                if limit.fail_at is not None and count >= limit.fail_at:
                    tally.failing.append(hit)
                elif limit.warn_at is not None and count >= limit.warn_at:
                    tally.warning.append(hit)
    return tally


def _nvlink_errors_check(want: str, tally: _NvlinkTally, gpu_count: int) -> Check:
    """The `nvlink_errors` row from the tally: fail, warn, unverified (unread / nothing judged) or
    pass, in that order."""
    read = f" (links of {', '.join(tally.unread)} not read)" if tally.unread else ""
    if tally.failing:
        return Check(
            "nvlink_errors",
            want,
            "; ".join(tally.failing + tally.warning) + read,
            "fail",
            "NVLink links are retrying / retraining (NVIDIA DCGM counts any replay or recovery error as a"
            " failure): ask the vendor to reseat or replace the NVLink bridge / board (or the GPU) and show"
            " `nvidia-smi nvlink -e` with these counters at zero after a clean run.",
        )
    if tally.warning:
        return Check(
            "nvlink_errors",
            want,
            "; ".join(tally.warning) + read,
            "warn",
            "CRC errors, or link recoveries that succeeded (the link retrained and came back), on these"
            " links since the driver loaded (NVIDIA DCGM warns on either; it fails CRC errors only at 100+"
            " per second and a recovery only when it failed): read `nvidia-smi nvlink -e` again after a"
            " load test, and ask the vendor to reseat or replace the NVLink bridge / board if the counts"
            " keep rising.",
        )
    if tally.unread:
        return Check(
            "nvlink_errors",
            want,
            f"counters not readable for {', '.join(tally.unread)}",
            "unverified",
            "NVLink error counters could not be read for these GPUs (in MIG mode the driver refuses NVLink"
            " queries; a listing cut short or trimmed names only some links; a counter printed N/A or"
            " ERR! is no zero): run `nvidia-smi nvlink -e` on the box and save its whole output.",
        )
    if not tally.judged:
        return Check(
            "nvlink_errors",
            want,
            f"{tally.links} link(s) listed, none with a counter gpuonboard knows",
            "unverified",
            "nvidia-smi nvlink -e printed no replay / recovery / CRC (or newer-driver error) counters;"
            " the counters could not be judged.",
        )
    return Check(
        "nvlink_errors",
        want,
        f"all NVLink error counters zero on {tally.links} link(s) of {gpu_count} GPU(s)",
        "pass",
    )


def rule_nvlink_errors(
    gpu_models: Sequence[str] | Mapping[int, str], errors: NvlinkErrors | None
) -> Check | None:
    """NVLink error counters (`nvidia-smi nvlink -e`) per GPU and link vs data/nvlink_errors.yml
    (NVIDIA DCGM's NVLink health watch) on NVLink-board (SXM) models.

    None when no GPU is an NVLink-board model. A recovery or replay error (or, on newer drivers,
    a symbol / malformed-packet / integrity ... error) = fail naming GPU, link and counter; CRC
    errors = warn (DCGM fails them only by rate, which one reading cannot give); all zero = pass;
    no output, MIG mode, or a GPU not listed = unverified. Counters the data file does not
    list (traffic counts, FEC histograms, BER figures) are not judged."""
    expected = {i: m for i, name in _indexed(gpu_models).items() if (m := nvlink_model(name)) and m.links}
    if not expected:
        return None
    want = f"no NVLink replay / recovery errors and no CRC errors on each of {len(expected)} GPU(s)"
    if errors is None or not errors.gpus:
        return Check(
            "nvlink_errors",
            want,
            "no `nvidia-smi nvlink -e` output",
            "unverified",
            "nvidia-smi nvlink -e gave nothing to read; run it on the box to see each link's error counters.",
        )
    return _nvlink_errors_check(want, _tally_nvlink_errors(expected, errors), len(expected))
