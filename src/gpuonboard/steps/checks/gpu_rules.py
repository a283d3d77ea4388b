"""The GPU rules of the `acceptance` step: driver, GPU model and count, VRAM (the interconnect:
steps/checks/interconnect_rule.py; the minimum driver version: steps/checks/driver_min.py).
Pure functions of the order and the facts, each returning a Check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from gpuonboard.connection.gather import Facts
from gpuonboard.connection.probe_commands import NVIDIA_SMI_TIMEOUT, TIMED_OUT
from gpuonboard.facts.gpu_merge import VIEW_COUNTED
from gpuonboard.facts.kernel_log import sandbox_of
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.query_csv import NO_NAME
from gpuonboard.facts.nvidia_smi.values import cuda_unread, no_cuda
from gpuonboard.facts.nvidia_smi_failure import (
    HUNG_ADVICE,
    NO_DEVICES_ADVICE,
    NOT_LOADED_ADVICE,
    UNKNOWN_CAUSE_ADVICE,
    nvidia_smi_failure,
)
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.driver_banner import mixed_packages
from gpuonboard.steps.checks.gpu_family import family_of
from gpuonboard.steps.checks.gpu_identity import disagreements, named_by_id, placeholder_text
from gpuonboard.steps.checks.gpu_share import share_advice
from gpuonboard.steps.checks.mig_memory import MIG_CUT_ADVICE, mig_vram, slices_cut_said
from gpuonboard.steps.checks.missing_facts import (
    ELSEWHERE_ADVICE,
    NVLINK_VIEW_ADVICE,
    RERUN_ADVICE,
    attached_below,
    attached_gap,
    cuda_in_container,
    disputed_said,
    driver_not_given,
    driver_unread,
    fault_advice,
    gpu_not_given,
    incomplete_said,
    incomplete_said_for,
    loaded_module_said,
    no_gpu_actual,
    no_gpu_detail,
    no_version_said,
    not_found_said,
    nvlink_view,
    refused_said,
    row_begun,
    rows_before_cut,
    topo_alone,
    unjudged_verdict,
    unreadable_gpu,
    view_floor,
    whole_topo,
)
from gpuonboard.steps.checks.model_match import (
    SHARED_CAP,
    ModelMatch,
    is_placeholder_name,
    match_model,
    split_count,
)
from gpuonboard.steps.checks.unified_memory import unified_vram
from gpuonboard.steps.checks.vgpu_name import is_vgpu
from gpuonboard.units import format_bytes

# the advice of failures that name no cause of their own, which a sandbox not passing the GPU on
# explains as well ("No devices were found", "couldn't communicate with the NVIDIA driver", a
# line of no known cause)
_SANDBOX_MAY_CAUSE = frozenset({"", UNKNOWN_CAUSE_ADVICE, NO_DEVICES_ADVICE, NOT_LOADED_ADVICE})


def _driver_failed(facts: Facts, expected: str, problem: str) -> Check:
    """`nvidia_driver` failed where nvidia-smi read no GPU (`problem`), with the advice its
    failure names (a hang's, or the unknown cause's where none is named)."""
    raw = facts.gpu_raw
    _line, advice = nvidia_smi_failure(raw.stdout, raw.stderr)
    if raw.exit_code == TIMED_OUT:
        advice = HUNG_ADVICE
    elif not advice and problem.startswith("unknown: nvidia-smi failed"):
        advice = UNKNOWN_CAUSE_ADVICE  # a failure of no cause named: never a bare "fail"
    sandbox = sandbox_of(facts.raw) if raw.exit_code != TIMED_OUT and advice in _SANDBOX_MAY_CAUSE else None
    if sandbox:
        # (the box's driver is out of this login's sight: the sandbox may not pass the GPU on; a
        # cause nvidia-smi names, a GPU lost, a version mismatch, NVML's own "blocked by the
        # operating system", keeps its own advice)
        advice = (
            f"this login is inside a sandbox or guest (its kernel log's first line {sandbox!r}),"
            " whose nvidia-smi reaches the host's driver only through it, so this failure may be"
            " the sandbox's (gVisor run without its GPU proxy, nvproxy; a pod or guest given no"
            " GPU), not the box's driver: ask the vendor to give this instance its GPUs, or for"
            " the host's own `nvidia-smi`"
        )
    actual = problem.removeprefix("unknown: ")
    if module := loaded_module_said(facts):  # (the driver's own version file beside the failure)
        actual += f"; {module}"
    return Check("nvidia_driver", expected, actual, "fail", advice)


def _driver_hung(facts: Facts, expected: str, actual: str) -> Check | None:
    """`nvidia_driver` where a format hung though another listed the GPUs, else None."""
    assert facts.gpu is not None
    if hung := _hung_formats(facts):
        # another format listed the GPUs (-L asks the driver little), this one hung on one of them;
        # without persistence mode every call initialises every GPU (30 s on an 8 x A100 VM, with
        # nine calls at once): slow, not yet hung, until a rerun with it on says so
        persistent = any(g.persistence_mode == "Enabled" for g in facts.gpu.gpus)
        return Check(
            "nvidia_driver",
            expected,
            f"{actual}; {hung} did not answer within {NVIDIA_SMI_TIMEOUT} s (stopped)",
            "fail" if persistent else "warn",
            HUNG_ADVICE if persistent else _SLOW_ADVICE,
        )
    return None


def rule_driver(facts: Facts) -> Check:
    """The NVIDIA driver answers: nvidia-smi exists and reports GPUs. A format the provider
    refuses is said, never taken for a broken driver; a cut-off output is unverified."""
    expected = "nvidia-smi reports the GPUs"
    if gpu_not_given(facts) and facts.gpu is None:
        return driver_not_given(facts, expected)
    if not facts.nvidia_smi_present:
        actual, advice = not_found_said(facts)
        return Check("nvidia_driver", "NVIDIA driver installed (nvidia-smi)", actual, "fail", advice)
    refused = refused_said(facts)
    problem = no_gpu_actual(facts, "driver")
    unread = facts.unread_not_a_fault() if problem else ""
    if unread:
        check = driver_unread(expected, (problem or "").removeprefix("unknown: "), unread, refused)
        elsewhere = facts.gpu_raw.ran_elsewhere
        own = elsewhere and elsewhere in unread  # (that call's own failure: what to save instead)
        return dataclasses.replace(check, detail=ELSEWHERE_ADVICE) if own else check
    if problem:
        return _driver_failed(facts, expected, problem)
    assert facts.gpu is not None
    actual = f"driver {facts.gpu.driver_version or 'unknown'}, CUDA {facts.gpu.cuda_version or 'unknown'}"
    if (hung := _driver_hung(facts, expected, actual)) is not None:
        return hung
    notes = [refused] if refused else []
    if failed := _failed_formats(facts):
        # (said, never silent: the rules' "not reported" came from a format that failed here)
        answered = ", ".join(facts.gpu_evidence.answered) if facts.gpu_evidence else "-"
        notes.append(f"{failed}; the facts come from the formats that answered ({answered})")
    if facts.gpu.disagreements:
        # two answers of nvidia-smi about one box: never one of them chosen, never a pass
        return Check(
            "nvidia_driver", expected, f"{actual}; {incomplete_said(facts)}", "fail", DISAGREE_ADVICE
        )
    incomplete = incomplete_said_for(facts)  # (the driver answered for every GPU of a whole set)
    exec_cuda = cuda_in_container(facts)  # (the banner of an exec'd nvidia-smi, not another's)
    if facts.gpu.driver_version and no_cuda(facts.gpu.cuda_version) and exec_cuda:
        # (a container entered by exec, the GPU Operator's driver container: its CUDA, not the box's)
        return Check(
            "nvidia_driver",
            expected,
            f"{actual}; {incomplete or exec_cuda}",
            "unverified",
            "; ".join([EXEC_NO_CUDA, *notes]),
        )
    if facts.gpu.driver_version and no_cuda(facts.gpu.cuda_version) and incomplete:
        # the banner said, whole, that there is no CUDA driver: a fault read before the cut
        # (a banner cut inside it, `CUDA Version: N`, reads no such word and stays unverified)
        return Check(
            "nvidia_driver", expected, f"{actual}; {incomplete}", "fail", "; ".join([NO_CUDA_ADVICE, *notes])
        )
    if incomplete and not (rows := rows_before_cut(facts)):
        return Check(
            "nvidia_driver",
            expected,
            f"{actual}; {incomplete}",
            "unverified",
            "; ".join([RERUN_ADVICE, *notes]),
        )
    actual += f" ({rows}; {incomplete})" if incomplete else ""  # (a later cut undoes no answer)
    if refused:
        notes.append(
            "the provider blocks these formats by policy; the facts come from the formats that"
            f" answered ({', '.join(facts.gpu_evidence.answered) if facts.gpu_evidence else '-'})"
        )
    if facts.gpu.driver_version and no_cuda(facts.gpu.cuda_version):
        return Check("nvidia_driver", expected, actual, "fail", "; ".join([NO_CUDA_ADVICE, *notes]))
    if cuda_unread(facts.gpu.cuda_version):
        return Check("nvidia_driver", expected, actual, "unverified", "; ".join([CUDA_UNREAD_ADVICE, *notes]))
    verdict: Verdict = "pass" if facts.gpu.driver_version else "unverified"
    if not facts.gpu.driver_version:
        notes.insert(0, no_version_said(facts))
    if verdict == "pass" and (mixed := mixed_packages(facts.gpu_raw.stdout)) is not None:
        # (nvidia-smi of another release than the driver: measure37e 09, 580.95.05 over 590.48.01)
        actual += f"; nvidia-smi {mixed[0]} of another release than the driver {mixed[1]}"
        verdict = "warn"
        notes.insert(0, MIXED_PACKAGES_ADVICE)
    return Check("nvidia_driver", expected, actual, verdict, "; ".join(notes))


# NVIDIA's nvidia-docker wiki: "the user-level driver libraries are tied to the version of the
# kernel module ... had to match exactly", else NVML refuses ("Driver/library version mismatch")
MIXED_PACKAGES_ADVICE = (
    "the banner names two driver releases: this nvidia-smi is of another driver package than the"
    " kernel module (an upgrade half done, or a container's own nvidia-smi); NVIDIA's user-level"
    " driver libraries must match the kernel module's version exactly, so ask the vendor to install"
    " one driver release whole (or reboot after an upgrade) and check `cat /proc/driver/nvidia/version`"
)


# where nvidia-smi says it found no CUDA driver (CUDA Version: N/A, Not Found; values.no_cuda)
NO_CUDA_ADVICE = (
    "nvidia-smi found no CUDA driver where it ran, so no CUDA program can start there: a vGPU"
    " host's (hypervisor's) driver has none, and a container started without the `compute` driver"
    " capability (NVIDIA_DRIVER_CAPABILITIES=utility) is given none; ask the vendor for the"
    " compute driver on the box (its libcuda), or a container started with"
    " NVIDIA_DRIVER_CAPABILITIES=compute,utility"
)


# where nvidia-smi found no CUDA driver in a container its copied command entered (`oc exec
# nvidia-driver-daemonset-... -- nvidia-smi`: the GPU Operator's driver container reads N/A)
EXEC_NO_CUDA = (
    "nvidia-smi ran in a container already running, and found no CUDA driver there: that"
    " container was given no `compute` driver capability (the GPU Operator's driver container"
    " reads N/A), which says nothing of the box's CUDA driver; save `nvidia-smi` run on the box,"
    " or in the container your jobs run in"
)


# where nvidia-smi printed a fault marker as the CUDA version (values.cuda_unread)
CUDA_UNREAD_ADVICE = (
    "nvidia-smi could not read the CUDA version (it printed a fault marker there), so whether a"
    " CUDA program can start is not known: run one on the box (`python3 -c 'import torch;"
    " print(torch.cuda.is_available())'`), and on WSL2 or in a container check that the driver's"
    " libcuda is the one loaded (`ldconfig -p | grep libcuda`); then save `nvidia-smi` again"
)


# what to do where nvidia-smi's formats disagree about the box (facts/gpu_agree.py)
DISAGREE_ADVICE = (
    "nvidia-smi's outputs name another driver, GPU set or GPU identity each (the values and"
    " formats above): rerun `invoke check` (offline: save every output of one box at one time);"
    " if they still disagree, the box changes between calls: ask the vendor to check `dmesg` for"
    " NVIDIA Xid errors (79: a GPU fallen off the bus) and whether the driver was reloaded"
)


def _model_matches(
    read: Iterable[GpuInfo], model: str, vram_gib: float | None
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Each GPU name read matched against the ordered model: the reasons of the names that fail,
    warn, and cannot be judged (an ordered memory size with nothing to check it against), each
    reason once per name; alike GPUs (name, memory, family) are compared once."""
    fails: dict[str, list[str]] = {}
    warns: dict[str, list[str]] = {}
    unknown: dict[str, list[str]] = {}
    matched: dict[tuple[str, int | None, str | None, float | None], ModelMatch] = {}
    for g in read:
        # (the highest power limit read: a limit is lowered below the card's maximum, never raised above)
        limits = [w for w in (g.power_limit_w, g.default_power_limit_w, g.max_power_limit_w) if w]
        key = (g.name, g.memory_total_mib, family_of(g), max(limits) if limits else None)
        if key not in matched:
            matched[key] = match_model(model, g.name, g.memory_total_mib, vram_gib, key[2], key[3])
        result = matched[key]
        into = {"fail": fails, "warn": warns, "unverified": unknown}.get(result.verdict)
        if into is not None and result.why not in into.setdefault(g.name, []):
            into[g.name].append(result.why)
    return fails, warns, unknown


SECTIONS_VIEW_ADVICE = (
    "`nvidia-smi -q -d SECTION` prints only the sections asked for, never the GPU's name: save"
    " `nvidia-smi -L` (or the whole `nvidia-smi -q`) beside it"
)


def _sections_view_said(gpus: Iterable[GpuInfo]) -> str:
    """'a view of some sections of `nvidia-smi -q` (`-q -d ...`: Performance State, Clocks
    Throttle Reasons), which prints no GPU name' where every GPU whose name was not read was read
    by such a view (GpuInfo.sections_view), '' otherwise."""
    nameless = [g for g in gpus if not g.faults and not g.name.strip()]
    if not nameless or not all(g.sections_view for g in nameless):
        return ""
    shown = list(dict.fromkeys(s for g in nameless for s in g.sections_view))
    return (
        f"a view of some sections of `nvidia-smi -q` (`-q -d ...`: {', '.join(shown)}), which prints"
        " no GPU name"
    )


CSV_NO_NAME_ADVICE = (
    "a `--query-gpu` CSV prints only the fields its query asks for: add `name` (and"
    " `memory.total`) to the `--query-gpu` list, or save `nvidia-smi -L` beside it"
)


def _nameless_view(facts: Facts) -> tuple[str, str]:
    """(why, advice) where the GPUs whose names were not read were read by an output that
    prints no name, nothing cut: a `-q -d` view of some sections, or a `--query-gpu` CSV whose
    query has no `name` field (a monitoring script's: ksysguard's, an i3 bar's); ("", "")
    otherwise (an output cut short, whose rerun advice stands)."""
    if viewed := _sections_view_said(facts.gpu.gpus if facts.gpu else ()):
        return viewed, SECTIONS_VIEW_ADVICE
    gpu = facts.gpu
    if gpu is not None and gpu.source == "csv" and NO_NAME in gpu.warnings:
        return "the `--query-gpu` CSV has no name column (its query asks for no `name`)", CSV_NO_NAME_ADVICE
    return "", ""


def rule_gpu_model(order: OrderSpec, facts: Facts) -> Check:
    """Every GPU is the ordered model (names normalised); a failure names the word(s) that did
    not match or that mark another product; a name nvidia-smi's table cut warns. A GPU count
    written into the model ('8x A100 80G') is checked against the GPUs delivered."""
    expected = order.gpu_model or ""
    problem = no_gpu_actual(facts)
    if problem:
        return Check("gpu_model", expected, problem, unjudged_verdict(facts), no_gpu_detail(facts))
    assert facts.gpu is not None
    # a GPU nvidia-smi cannot read is a fault, never a wrong model: its name may read "ERR!"
    # a GPU whose name was not read (an output cut inside its record) is unread, not another model
    # a placeholder the driver prints for a card it has no name for ("Graphics Device") is no
    # model: unverified, never a wrong model, unless its PCI device id names the card (gpu_identity)
    placeholder = [
        g for g in facts.gpu.gpus if not g.faults and g.name.strip() and is_placeholder_name(g.name)
    ]
    by_id = {g.index: n for g in placeholder if (n := named_by_id(g)) is not None}
    read = [g for g in facts.gpu.gpus if not g.faults and g.name.strip() and g not in placeholder]
    faulty = [g for g in facts.gpu.gpus if g.faults]
    nameless = len(facts.gpu.gpus) - len(read) - len(faulty) - len(placeholder)
    names = [g.name for g in read]
    shown = [
        _count_names(names),
        *map(unreadable_gpu, faulty),
        *(placeholder_text(g, by_id.get(g.index)) for g in placeholder),
    ]
    read += by_id.values()
    placeholder = [g for g in placeholder if g.index not in by_id]
    names += [g.name for g in by_id.values()]
    # GPUs listed with no name read (a --query-gpu CSV without `name`): listed, never "no GPU"
    actual = ", ".join(filter(None, shown)) or (f"{nameless} GPU(s) listed" if nameless else "no GPU")
    model, count = split_count(expected)
    vram_gib = order.vram_bytes / 2**30 if order.vram_bytes else None  # (a reworked board ordered so)
    fails, warns, unknown = _model_matches(read, model, vram_gib)
    notes = [f"{n}: {'; '.join(w)}" for n, w in fails.items()]
    # a name that is another card than its PCI device id: neither is trusted silently
    disagree = disagreements(g for g in read if g.index not in by_id)
    if faulty:
        notes.append("a GPU fault, not another model: " + fault_advice(g.index for g in faulty))
    verdict: Verdict = (
        "fail" if fails or faulty or not names else "unverified" if unknown else "warn" if warns else "pass"
    )
    if placeholder and not fails and not faulty and not incomplete_said_for(facts, "name") and not nameless:
        return Check("gpu_model", expected, actual, "unverified", PLACEHOLDER_ADVICE)
    if (disputed := disputed_said(facts, "name", "memory_total_mib")) and not faulty:
        # two names or sizes of one GPU: neither is judged (a fault read stays one)
        return Check("gpu_model", expected, f"{actual}; {disputed}", "unverified", DISAGREE_ADVICE)
    # (each GPU's name read by a whole record of a whole GPU set: judged, whatever else was cut)
    named = incomplete_said_for(facts, "name")
    incomplete = named or (f"the name of {nameless} GPU(s) was not read" if nameless else "")
    viewed, advice = _nameless_view(facts) if nameless and not named else ("", "")
    if viewed and (verdict != "fail" or not (fails or faulty)):
        # (a `-q -d SECTION` view, or a CSV query without `name`, prints no name: nothing cut or
        # refused, the view is the answer)
        return Check("gpu_model", expected, f"{actual}; {incomplete}: {viewed}", "unverified", advice)
    if incomplete and (verdict != "fail" or ((nameless or placeholder) and not fails and not faulty)):
        # the GPUs read are the ordered model; those the output left out could not be judged
        return Check("gpu_model", expected, f"{actual}; {incomplete}", "unverified", RERUN_ADVICE)
    if incomplete:  # (a fault read stays one; its count is of the GPUs read, not the box's)
        actual = f"{actual}; {incomplete}"
    # (fewer GPUs than the model's count in an output cut short is no count of the box's)
    if count is not None and len(facts.gpu.gpus) < count and not incomplete:
        notes.append(f"the order's model says {count} x, {len(facts.gpu.gpus)} delivered")
        verdict = "fail"
    elif count is not None and order.gpu_count is not None and order.gpu_count != count:
        notes.append(
            f"the order's model says {count} x but gpu_count is {order.gpu_count}: correct the order"
        )
        verdict = "warn" if verdict == "pass" else verdict
    if verdict != "fail":
        notes += [f"{n}: {'; '.join(w)}" for n, w in (unknown | warns).items()]
    if disagree:
        notes.append(disagree)
        verdict = "warn" if verdict == "pass" else verdict
    return Check("gpu_model", expected, actual, verdict, "; ".join(notes))


# a format stopped where persistence mode is not known to be on
_SLOW_ADVICE = (
    "without persistence mode each nvidia-smi call initialises every GPU, which can take tens of"
    " seconds on a box of many GPUs: enable it (`sudo nvidia-smi -pm 1`, or nvidia-persistenced)"
    " and run the check again; if a format still does not answer, a GPU is stuck: " + HUNG_ADVICE
)


def _failed_formats(facts: Facts) -> str:
    """'`nvidia-smi -q -x` failed (exit 4: Insufficient Permissions)' for each format that failed
    with a message while others answered (not refused by policy, not hung, not missing)."""
    from gpuonboard.facts.gpu_merge import refusal_line
    from gpuonboard.facts.gpu_probes import GPU_SOURCES

    said = []
    for name, _, args in GPU_SOURCES:
        out = facts.raw.get(name)
        if out is None or out.exit_code in (0, TIMED_OUT, 127) or refusal_line(out) is not None:
            continue
        said.append(f"{_smi(args)} failed ({out.failure()})")
    return "; ".join(said)


def _hung_formats(facts: Facts) -> str:
    """The nvidia-smi formats the probe stopped after its timeout ('`nvidia-smi -q -x` and
    `nvidia-smi`'), '' for none."""
    from gpuonboard.facts.gpu_probes import GPU_SOURCES

    outs = [(args, facts.raw.get(name)) for name, _, args in GPU_SOURCES]
    stopped = [args for args, out in outs if out is not None and out.exit_code == TIMED_OUT]
    return " and ".join(map(_smi, stopped))


def _smi(args: str) -> str:
    """The command of a GPU format (GPU_SOURCES' args): '`nvidia-smi -q -x`', the table's '`nvidia-smi`'."""
    return f"`nvidia-smi {args}`" if args.startswith("-") else "`nvidia-smi`"


PLACEHOLDER_ADVICE = (
    "the driver printed a placeholder, not the GPU's name (a driver older than the card): the model"
    " cannot be judged from it; `nvidia-smi --query-gpu=pci.device_id --format=csv` or"
    " `lspci -nn -d 10de:` gives the PCI device id to look up, and a driver that knows the card names it"
)


def _count_names(names: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{c} x {n}" for n, c in counts.items())


def _mig_said(gpus: Sequence[GpuInfo]) -> str:
    """The MIG slices beside a GPU count, never counted as GPUs: ' (MIG on: 7 slices)', ' (MIG on
    7 of 8: 1 slice)', ' (MIG on)' where no format read lists the slices; '' with MIG off."""
    on = [g for g in gpus if g.mig_mode == "Enabled" or g.mig_devices]
    if not on:
        return ""
    slices = sum(g.mig_devices or 0 for g in on)
    where = "" if len(on) == len(gpus) else f" {len(on)} of {len(gpus)}"
    listed = f": {slices} slice{'s' if slices != 1 else ''}" if slices else ""
    return f" (MIG on{where}{listed})"


def rule_gpu_count(order: OrderSpec, facts: Facts) -> Check:
    """As many GPUs as ordered (more is reported, not failed); the MIG slices of a GPU in MIG
    mode are named beside the count, never counted as GPUs."""
    check = _gpu_count(order, facts)
    mig = _mig_said(facts.gpu.gpus) if facts.gpu is not None else ""
    if not mig:
        return check
    head, sep, rest = check.actual.partition(";")  # ('1 listed (MIG on: 4 slices); incomplete ...')
    return dataclasses.replace(
        check, actual=f"{head}{mig}{sep}{rest}" if head[:1].isdecimal() else check.actual
    )


def _gpu_count(order: OrderSpec, facts: Facts) -> Check:
    """rule_gpu_count's verdict, its actual the count alone."""
    expected = str(order.gpu_count)
    problem = no_gpu_actual(facts)
    named = whole_topo(facts)
    if (
        problem
        and named
        and topo_alone(facts)
        and order.gpu_count is not None
        and len(named) < order.gpu_count
    ):
        # a whole `topo -m` alone lists every GPU nvidia-smi sees: fewer than ordered is short
        gone = f"{order.gpu_count - len(named)} of the {order.gpu_count} ordered GPUs missing"
        actual = f"{len(named)} (`nvidia-smi topo -m` names {named[0]}-{named[-1]}, its matrix whole)"
        return Check("gpu_count", expected, actual, "fail", f"{gone}; {_ASK_INSTALL}")
    if problem:
        return Check("gpu_count", expected, problem, unjudged_verdict(facts), no_gpu_detail(facts))
    assert facts.gpu is not None and order.gpu_count is not None
    n = len(facts.gpu.gpus)
    detail = attached_gap(facts)
    faulty = [g for g in facts.gpu.gpus if g.faults]
    incomplete = incomplete_said_for(facts)  # (a whole set's count: whole, whatever record was cut)
    if faulty and n >= order.gpu_count:
        # listed, but not all usable: a GPU nvidia-smi cannot read is no delivered GPU; an
        # output not read whole says nothing of how many readable GPUs there are beyond those
        # read (a table cut below `Unable to determine the device handle for GPU1` and GPU 0's
        # row, or between two GPU rows: the GPUs after the cut may be readable)
        usable = n - len(faulty)
        unread = "; ".join(map(unreadable_gpu, faulty))
        short = usable < order.gpu_count
        unknown = short and bool(incomplete)
        return Check(
            "gpu_count",
            expected,
            f"{n} ({len(faulty)} unreadable)" + (f"; {incomplete}" if unknown else ""),
            ("unverified" if unknown else "fail") if short else "pass",
            f"{unread}: {usable} of the {n} listed GPUs can be read"
            + (f", {order.gpu_count} ordered (see gpu_model)" if short else ""),
        )
    if incomplete and n < order.gpu_count and (attached := _attached_count(facts, order.gpu_count)):
        # `Attached GPUs : 8`, read above the cut, says the set is not short, never that it is
        # whole: nvidia-smi counts a GPU whose handle fails there, and that GPU's record (its
        # `Unable to determine the device handle`) may be in the part cut away: unverified until
        # every attached GPU was read (where the GPUs read meet the order, "1 listed; ...")
        actual = f"{attached} attached, {n} read; {incomplete}"
        return Check("gpu_count", expected, actual, "unverified", RERUN_ADVICE)
    if incomplete and (attached := attached_below(facts, order.gpu_count)) is not None:
        # nvidia-smi's own count, above the cut, is below the order: short, whatever the cut took
        gone = f"{order.gpu_count - attached} of the {order.gpu_count} ordered GPUs missing"
        actual = f"{attached} attached (nvidia-smi's count), {n} read; {incomplete}"
        return Check("gpu_count", expected, actual, "fail", f"{gone}; {_ask(facts, attached)}")
    seen = n + (row_begun(facts) is not None)  # (a GPU whose row the cut went through is seen)
    if seen < len(named) < order.gpu_count:
        # a whole `topo -m` lists every GPU nvidia-smi sees: fewer than ordered, whatever the
        # listing beside it left out (a view of some GPUs, an output cut short)
        gone = f"{order.gpu_count - len(named)} of the {order.gpu_count} ordered GPUs missing"
        span = f"{named[0]}-{named[-1]}"
        actual = f"{n} listed; `nvidia-smi topo -m` names {len(named)} ({span}), its matrix whole"
        return Check("gpu_count", expected, actual, "fail", f"{gone}; {_ask(facts, len(named))}")
    if incomplete and seen >= order.gpu_count and (floor := view_floor(facts)):
        # a view of some GPUs (CUDA_VISIBLE_DEVICES, `-i 0`) hides GPUs, never makes them up
        return Check("gpu_count", expected, f"{n} listed; at least {n} on the box: {floor}", "pass", detail)
    if incomplete and (seen < order.gpu_count or facts.gpu.gap):  # (gap: rows that may be samples)
        return Check("gpu_count", expected, f"{n} listed; {incomplete}", "unverified", RERUN_ADVICE)
    if n < order.gpu_count and (view := nvlink_view(facts)):
        return Check("gpu_count", expected, f"{n} listed; {view}", "unverified", NVLINK_VIEW_ADVICE)
    verdict: Verdict = "fail" if seen < order.gpu_count else "pass"
    if seen > order.gpu_count:
        detail = detail or "more GPUs than ordered"
    elif n < order.gpu_count:
        missing = f"{order.gpu_count - n} of the {order.gpu_count} ordered GPUs missing"
        detail = missing + (f" ({detail})" if detail else "") + f"; {_ask(facts, n)}"
    # (as many as ordered or more, of an output cut short: a pass, its count of the GPUs read;
    # a whole table of some GPUs beside a whole -L: counted by -L, the view said)
    view = next((w for w in facts.gpu.warnings if w.endswith(VIEW_COUNTED)), "")
    actual = f"{n} listed; {incomplete}" if incomplete else str(n) + (f"; {view}" if view else "")
    return Check("gpu_count", expected, actual, verdict, detail)


def _ask(facts: Facts, n: int) -> str:
    """What to ask of the vendor where `n` GPUs are fewer than ordered."""
    assert facts.gpu is not None
    return share_advice(facts.gpu.gpus, n) or _ASK_INSTALL


_ASK_INSTALL = "ask the vendor to install them or for the box that was ordered"


def _attached_count(facts: Facts, ordered: int) -> int | None:
    """nvidia-smi's own count of the GPUs attached (`-q`'s `Attached GPUs`, read above a cut), where
    it counts at least `ordered` and no GPU read says otherwise (none unreadable, no disagreement,
    no more read than it counts, no rows that may be samples); None otherwise."""
    report = facts.gpu
    if report is None or report.attached_gpus is None or report.attached_gpus < ordered:
        return None
    if report.disagreements or report.gap or len(report.gpus) > report.attached_gpus:
        return None
    return None if any(g.faults for g in report.gpus) else report.attached_gpus


# the nvidia-smi formats whose every whole GPU record gives its memory total (or says it is not
# supported): a GPU of one without it had its record cut. A --query-gpu CSV gives it only where
# memory.total was asked for; -L never
_MEMORY_FORMATS = frozenset({"xml", "text", "table"})


def _memory_cut(facts: Facts) -> bool:
    """A GPU read without its memory total by a format that reports it, nvidia-smi not saying
    the size is not supported (GB10's `Not Supported`): the cut took the total away, rather than
    the format giving none (a CSV of utilisation and power only)."""
    assert facts.gpu is not None
    for gpu in facts.gpu.gpus:
        if gpu.faults or gpu.memory_total_mib is not None or gpu.memory_unified:
            continue
        formats = {source for _, source in gpu.provenance} | {label for label, _ in gpu.readings}
        if (formats or set(facts.gpu.source.split("+"))) & _MEMORY_FORMATS:
            return True
    return False


def rule_vram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Each GPU has at least the ordered memory (minus the reserved-region gap)."""
    assert order.vram_bytes is not None
    expected = f">= {format_bytes(order.vram_bytes, binary=True)} per GPU"
    problem = no_gpu_actual(facts)
    if problem:
        return Check("vram", expected, problem, unjudged_verdict(facts), no_gpu_detail(facts))
    assert facts.gpu is not None
    # a GPU nvidia-smi cannot read gives no data, even where a memory size is printed for it
    faulty = [g for g in facts.gpu.gpus if g.faults]
    unread = "; ".join(map(unreadable_gpu, faulty))
    sizes = [g.memory_total_mib for g in facts.gpu.gpus if not g.faults]
    if not sizes:  # (every GPU listed unreadable: a fault; of an output cut short: no evidence)
        if incomplete := incomplete_said_for(facts, "memory_total_mib"):
            return Check("vram", expected, f"unknown: {unread}; {incomplete}", "unverified", RERUN_ADVICE)
        return Check(
            "vram",
            expected,
            f"unknown: no GPU could be read: {unread}",
            "fail",
            fault_advice(g.index for g in faulty),
        )
    read = [s for s in sizes if s is not None]
    if not read and (incomplete := incomplete_said_for(facts, "memory_total_mib")) and _memory_cut(facts):
        # (a -q cut before its first FB Memory Usage: the format reports it, the cut took it away)
        return Check(
            "vram",
            expected,
            f"unknown: no GPU's memory total in what was read; {incomplete}",
            "unverified",
            RERUN_ADVICE,
        )
    whole = [g for g in facts.gpu.gpus if not g.faults]
    if not read and (mig := mig_vram(expected, whole, order.vram_bytes * (1 - tolerance), unread)):
        # (MIG mode: the GPU's own row says N/A, its slices' rows give theirs; two sizes: neither)
        if disputed := disputed_said(facts, "memory_total_mib"):
            return Check("vram", expected, f"{mig.actual}; {disputed}", "unverified", DISAGREE_ADVICE)
        if mig.verdict == "pass" and (incomplete := incomplete_said_for(facts, "memory_total_mib")):
            return Check("vram", expected, f"{mig.actual}; {incomplete}", "unverified", RERUN_ADVICE)
        return mig
    if not read and (unified := unified_vram(expected, whole)):
        return unified  # (a Jetson's or the GB10's memory is the system's: `Not Supported`)
    if not read and (cut := slices_cut_said(whole, "memory")):
        incomplete = incomplete_said_for(facts, "memory_total_mib") or "incomplete probe"
        return Check("vram", expected, f"unknown: {cut}; {incomplete}", "unverified", MIG_CUT_ADVICE)
    if not read:
        refused = refused_said(facts)
        return Check(
            "vram",
            expected,
            "unknown: no nvidia-smi format that answered reports GPU memory"
            + (f" ({refused})" if refused else ""),
            "unverified",
            "the memory of the GPUs could not be read: run `nvidia-smi --query-gpu=name,memory.total"
            " --format=csv` on the host, or ask the provider to allow it",
        )
    smallest = min(read) * 1024 * 1024
    actual = f"{min(s for s in sizes if s is not None)} MiB ({format_bytes(smallest, binary=True)}) smallest"
    if faulty:
        actual += f" of the {len(sizes)} GPUs read; {unread}"
    if disputed := disputed_said(facts, "memory_total_mib"):  # (two sizes of one GPU: neither judged)
        return Check("vram", expected, f"{actual}; {disputed}", "unverified", DISAGREE_ADVICE)
    ok = smallest >= order.vram_bytes * (1 - tolerance)
    unsized = [g for g in whole if g.memory_total_mib is None]
    unread_sizes = [_at_bus(g) for g in unsized if not g.mig_slices_cut]
    sliced = slices_cut_said(unsized, "memory")
    said = [f"{sliced}; incomplete probe"] if sliced else []
    said += [f"{g}: memory total not reported" for g in unread_sizes]
    incomplete = incomplete_said_for(facts, "memory_total_mib") or "; ".join(said)
    if ok and incomplete:
        return Check("vram", expected, f"{actual} of the GPUs read; {incomplete}", "unverified", RERUN_ADVICE)
    if ok:
        return Check("vram", expected, actual, "pass")
    if reserve := _ecc_reserve_said(facts, order.vram_bytes * (1 - tolerance)):
        return Check("vram", expected, f"{actual}; {reserve}", "unverified", ECC_RESERVE_ADVICE)
    return Check(
        "vram", expected, actual, "fail", _vram_short_detail(facts, order.vram_bytes * (1 - tolerance))
    )


# A GDDR5 board of the Fermi era (drivers up to R390, Fermi's last branch) with ECC on gives an
# eighth of its memory to the check bits: a Tesla M2090's 6 GB reads `Total : 5375 Mb` (measure38b
# 15, review N F3); Kepler's and later GDDR boards give a sixteenth or less, within the tolerance
ECC_RESERVE_SHARE = 1 / 8
ECC_RESERVE_LAST_MAJOR = 390
ECC_RESERVE_ADVICE = (
    "run `nvidia-smi -q -d ECC,MEMORY` on the host: with ECC off (`nvidia-smi -e 0`, then a reboot) the"
    " total is the board's whole memory; or ask the vendor which card was installed"
)


def _ecc_reserve_said(facts: Facts, least_bytes: float) -> str:
    """Why a total short of the order is not known to be a smaller card: every GPU short of it
    has ECC on under a Fermi-era driver and is short by no more than the share ECC takes; ""."""
    assert facts.gpu is not None
    major = (facts.gpu.driver_version or "").split(".", 1)[0]
    if not major.isdecimal() or int(major) > ECC_RESERVE_LAST_MAJOR:
        return ""
    short = [
        g
        for g in facts.gpu.gpus
        if not g.faults and g.memory_total_mib is not None and g.memory_total_mib * 1024 * 1024 < least_bytes
    ]
    within = least_bytes * (1 - ECC_RESERVE_SHARE)
    if not short or any(
        g.ecc_mode != "Enabled" or (g.memory_total_mib or 0) * 1024 * 1024 < within for g in short
    ):
        return ""
    return (
        f"ECC is on (driver {facts.gpu.driver_version}): a board of that era gives up to an eighth of its"
        " memory to ECC, so the total read is not the board's size"
    )


def _vram_short_detail(facts: Facts, least_bytes: float) -> str:
    """Why the GPUs' memory is below the order: a vGPU profile's framebuffer where the GPUs
    short of it are vGPUs (a share of the board, not a smaller card), else a smaller model or
    MIG slices."""
    assert facts.gpu is not None
    short = [
        g
        for g in facts.gpu.gpus
        if not g.faults and g.memory_total_mib is not None and g.memory_total_mib * 1024 * 1024 < least_bytes
    ]
    profiles = sorted(
        {g.name.strip() for g in short if is_vgpu(g.name, g.product_brand, g.virtualization_mode)}
    )
    if profiles:
        return (
            f"GPU memory below what was ordered: a vGPU ({', '.join(profiles)}) has only its profile's"
            " share of the board's framebuffer, not the whole GPU's; ask the vendor for the GPU or the"
            " vGPU profile that was ordered"
        )
    return (
        "GPU memory below what was ordered: a smaller model of the card (a 40 GB A100 for an 80 GB"
        f" one), MIG slices given as GPUs, or {SHARED_CAP}; ask the vendor for the cards (whole GPUs)"
        " that were ordered"
    )


def _at_bus(g: GpuInfo) -> str:
    """`GPU 3 (00000000:9B:00.0)`: the GPU as its output calls it, with its PCI address when
    that is not already its name."""
    called = g.called()
    return f"{called} ({g.pci_bus_id})" if g.pci_bus_id and g.pci_bus_id not in called else called
