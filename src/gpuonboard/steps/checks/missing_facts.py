"""What an acceptance rule says when its facts are missing, refused, cut short or unreadable.

Owns the shared wording of the `acceptance` rules for facts that do not allow a verdict: an
output not given (`not_judged`), nvidia-smi absent, failed, hung or answering without GPUs
(`no_gpu_actual`), a format the provider refuses (`refused_said`), an output cut short
(`incomplete_said`, `attached_gap`, `RERUN_ADVICE`) and a GPU nvidia-smi lists but cannot read
(`unreadable_gpu`, `fault_advice`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from gpuonboard.connection.gather import Facts
from gpuonboard.connection.probe_commands import NVIDIA_SMI_TIMEOUT, TIMED_OUT
from gpuonboard.facts.driver_module import MODULE_FILE, MODULE_PROBE, module_file_version
from gpuonboard.facts.gpu_agree import field_whole
from gpuonboard.facts.gpu_information import GPU_INFO_PROBE, information_said
from gpuonboard.facts.gpu_views import ASKED_FOR, IN_RUNNING_CONTAINER, RUNTIME_GIVEN
from gpuonboard.facts.nvidia_smi.sniff import UNRECOGNISED, VERSION_ONLY
from gpuonboard.facts.nvidia_smi.table import TABLE_ROW_BEGUN
from gpuonboard.facts.nvidia_smi_failure import (
    NOT_FOUND_ADVICE,
    answered_unread,
    nvidia_smi_failure,
    stopped_said,
)
from gpuonboard.facts.topo import rows_read as topo_rows_read
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check, Verdict

if TYPE_CHECKING:
    from gpuonboard.facts.nvidia_smi import GpuInfo, GpuReport
    from gpuonboard.facts.probe import ProbeOutput


def gpu_not_given(facts: Facts) -> bool:
    """No nvidia-smi output of any format was given (`invoke facts` without one)."""
    from gpuonboard.facts.gpu_probes import GPU_PROBES

    return not any(facts.given(name) for name in GPU_PROBES)


def topo_alone(facts: Facts) -> str:
    """Where the only nvidia-smi output given is `topo -m` (its matrix names the GPUs, not their
    model, memory, driver or health: no GPU listing), what it shows; "" otherwise (m32b 13: the
    rows said "no nvidia-smi output was given" beside an 8 x H100 topo -m)."""
    topology = facts.topology
    if not (gpu_not_given(facts) and facts.gpu is None and topology is not None and topology.gpus):
        return ""
    # (the header names every GPU, a matrix cut inside its rows too: its rows read are said apart)
    names = topology.gpu_columns or topology.gpus
    span = names[0] if len(names) == 1 else f"{names[0]}-{names[-1]}"
    rows = len(topo_rows_read(topology))
    read = f"; {rows} of their rows read" if not topology.complete and rows < len(names) else ""
    return (
        f"only `nvidia-smi topo -m` was given, whose matrix names {len(names)} GPU(s) ({span}{read})"
        " but not their model, memory, driver or health"
    )


def driver_not_given(facts: Facts, expected: str) -> Check:
    """nvidia_driver where no nvidia-smi GPU listing was given: not judged, saying what was
    given where a `topo -m` was (topo_alone)."""
    if topo := topo_alone(facts):
        actual = "not judged: no nvidia-smi GPU listing was given (only its `topo -m`)"
        advice = f"{topo}: add the saved `nvidia-smi -q -x` output to judge it"
        return Check("nvidia_driver", expected, actual, "unverified", advice)
    check = not_judged("nvidia_driver", expected, "nvidia-smi", "nvidia-smi -q -x")
    if said := driver_loaded_said(facts):  # (the module loaded, but whether it reads the GPUs: not known)
        return replace(check, actual=f"{check.actual} ({said}; whether it reports the GPUs is not known)")
    return check


def loaded_module_said(facts: Facts) -> str:
    """ "the loaded kernel module is 535.104.05 (/proc/driver/nvidia/version)" where that file
    was given (facts/driver_module.py), else ""."""
    out = facts.raw.get(MODULE_PROBE)
    module = module_file_version(out.stdout) if out is not None and out.exit_code == 0 else None
    return f"the loaded kernel module is {module.version} ({MODULE_FILE})" if module else ""


def driver_loaded_said(facts: Facts) -> str:
    """What given says the NVIDIA kernel driver is loaded (a GPU's
    /proc/driver/nvidia/gpus/<bus>/information, /proc/driver/nvidia/version), "" where none does."""
    out = facts.raw.get(GPU_INFO_PROBE)
    if out is not None and out.exit_code == 0 and (said := information_said(out.stdout)):
        return f"the NVIDIA kernel driver is loaded ({said})"
    return loaded_module_said(facts)


def not_found_said(facts: Facts) -> tuple[str, str]:
    """(actual, advice) where nvidia-smi is not on the login's PATH: with a loaded driver's file
    given beside it, its utilities are what is missing (a container without the driver's
    `utility` capability), never the driver (measure40d 09); else NOT_FOUND_ADVICE's."""
    if not (loaded := driver_loaded_said(facts)):
        return "nvidia-smi not found", NOT_FOUND_ADVICE
    return (
        f"nvidia-smi not found, though {loaded}",
        "the NVIDIA kernel driver is loaded and drives the GPU, but its utilities are missing here:"
        " nvidia-smi is not on the login user's PATH (a container given the GPU without the"
        " driver's `utility` capability, NVIDIA_DRIVER_CAPABILITIES, or the driver's utilities"
        " package, nvidia-utils-<branch>, not installed); ask the vendor to provide nvidia-smi"
        " there and run the check again",
    )


def no_gpu_detail(facts: Facts) -> str:
    """The advice of a GPU rule judged without GPU facts (no_gpu_actual's case)."""
    if topo := topo_alone(facts):
        return f"{topo}: save `nvidia-smi -q` (or `-q -x`, or its table) of the box"
    if gpu_not_given(facts) and facts.gpu is None:
        return "no nvidia-smi output was given: save `nvidia-smi -q` (or `-q -x`, or its table) of the box"
    return "nvidia-smi gave no GPU to judge this by: the nvidia_driver row says why, and what to do"


# why each nvidia-smi format given named no driver version (GpuReport.source's labels)
_NO_VERSION_WHY = {
    "xml": "-q -x gives no driver_version",
    "text": "-q gives no Driver Version line",
    "csv": "the CSV query gives no driver_version field",
    "csv2": "the second CSV query gives no driver_version field",
    "table": "the table gives no banner with it",
    "list": "`nvidia-smi -L` prints none",
    "nvlink": "`nvidia-smi nvlink -s` prints none",
    "nvlink_e": "`nvidia-smi nvlink -e` prints none",
}


def no_version_said(facts: Facts) -> str:
    """What to save where the outputs given name no driver version, saying why of each format
    given (`-L` prints none; a CSV query without the field; a `-q -x` its contributor trimmed),
    never of a format that was not given."""
    labels = facts.gpu.source.split("+") if facts.gpu is not None else []
    why = "; ".join(_NO_VERSION_WHY[label] for label in labels if label in _NO_VERSION_WHY)
    return (
        f"the outputs given name no driver version{f' ({why})' if why else ''}: save `nvidia-smi`"
        " (its table's header) or `nvidia-smi -q` of the box"
    )


NVLINK_VIEW_ADVICE = "save `nvidia-smi -L` (or `nvidia-smi`) of the box to count its GPUs"


def nvlink_view(facts: Facts) -> str:
    """Why the GPUs listed are no count of the box where only `nvlink -s` (or `-e`) listed them:
    its listing of some GPUs (`nvlink -s -i 0` saved without its command) looks as whole as the
    box's, so fewer GPUs than ordered is no missing GPU; '' where another format listed them, or
    where its command was saved with it and names no `-i` (a listing of every GPU: m35e 14)."""
    from gpuonboard.facts.gpu_agree import NVLINK_LISTINGS, format_call

    source = facts.gpu.source if facts.gpu is not None else ""
    if source not in NVLINK_LISTINGS or facts.gpu is None:
        return ""
    if len(whole_topo(facts)) == len(facts.gpu.gpus):  # (a whole `topo -m` lists the same GPUs)
        return ""
    if any(out.nvlink_whole for out in facts.raw.values()):  # (its command saved, with no `-i`)
        return ""
    return (
        f"only {format_call(source)} lists them whole, and a view of some GPUs (`nvlink -s -i 0`)"
        " saved without its command looks whole too"
    )


def whole_topo(facts: Facts) -> tuple[str, ...]:
    """The GPUs a whole `nvidia-smi topo -m` names (every GPU its header names has its row and
    every pair its link), () where none was given or its rows were cut. `topo -m` has no `-i`: its
    matrix is every GPU nvidia-smi sees on the box, a listing of them as `nvidia-smi -L` is (m34c
    32: an 8-GPU HGX B300's whole matrix and its `nvlink -s` both name GPU0-GPU6). Not where
    the matrix is a view (run in a container, a pod, a batch job's allocation: its output's
    `partial` or `in_container` says so): it names that view's GPUs only (review revM)."""
    t = facts.topology
    out = facts.raw.get("nvidia_topo")
    viewed = out is not None and bool(out.partial or out.in_container)
    return t.gpus if t is not None and t.complete and t.gpus and not viewed else ()


# the views of a collect_env / check_env report run on the box (api/collect_env.py: VISIBLE, and
# a container's `the report's NVIDIA_VISIBLE_DEVICES=...` / `the report's OS (...)`); never a log
# (`kubectl logs`, `docker logs`, a job's .out), which may be of a pod or job on another node
REPORT_VIEWS = ("sglang's check_env lists the GPUs torch sees", "the report's ")


def view_floor(facts: Facts) -> str:
    """Why the GPUs listed are a view of some of the box's GPUs (the listing's own output told so:
    `ProbeOutput.partial`, "sglang's check_env lists the GPUs torch sees, which
    CUDA_VISIBLE_DEVICES narrows", a `-i 0`, a container's GPUs), where that is the only reason
    they are not known whole: a view hides GPUs, never makes them up, so the GPUs it lists, each
    one index, are on the box: a floor read whole (m34b 08). "" otherwise: rows that may be
    samples of one GPU, outputs that disagree, a GPU listed twice."""
    report = facts.gpu
    if report is None or not report.gap or report.disagreements:
        return ""
    # (a report's view, a `-i N` asked for, an HPC runtime's on the login's machine: the box's own
    # GPUs; a container's, a pod's, a job step's may be another node's, api/narrowed.py)
    if not report.gap.startswith(REPORT_VIEWS) and not report.gap.endswith((ASKED_FOR, RUNTIME_GIVEN)):
        return ""
    views = {o.partial for o in facts.raw.values()} | {
        b.partial for o in facts.raw.values() for b in o.beside
    }
    indices = [g.index for g in report.gpus]
    return report.gap if report.gap in views and len(set(indices)) == len(indices) else ""


def not_judged(name: str, expected: str, what: str, command: str) -> Check:
    """A rule whose input was not among the saved outputs: unverified, not a hardware failure."""
    return Check(
        name,
        expected,
        f"not judged: no {what} output was given",
        "unverified",
        f"add the saved `{command}` output to judge it",
    )


def docker_info_said(facts: Facts, field: str) -> str:
    """Where a `docker info` given says its `CPUs` (m36b 12) or `Total Memory` (m32b 31), the
    clause naming it for the cpu_cores or ram rule that judged nothing: the CPU threads or memory
    of the machine docker's daemon runs on, which may be a VM's (Docker Desktop's, a Kata VM's),
    so no core count or RAM of the box is judged by it; "" otherwise."""
    from gpuonboard.facts.container import docker_cpus, docker_total_memory
    from gpuonboard.facts.docker_memory import docker_native, docker_unproven

    read, what, unit = {
        "CPUs": (docker_cpus, "the CPU threads", " cores"),
        "Total Memory": (docker_total_memory, "the memory", ""),
    }[field]
    out = facts.raw.get("docker_info") if facts.given("docker_info") else None
    value = read(out.stdout) if out is not None else None
    if value is None:
        return ""
    if field == "CPUs" and docker_native(facts.raw) is not None:
        # (m37b 28: the daemon is the box's own, but `CPUs` counts threads, never cores)
        return (
            f" (the docker info given says `CPUs: {value}`: the CPU threads of this box, whose daemon"
            " runs natively on Linux, not its cores: a core runs 1 to 8 threads, by CPU)"
        )
    return (
        f" (the docker info given says `{field}: {value}`: {what} of the machine docker runs on,"
        f" {docker_unproven(facts.raw, unit)})"
    )


def unjudged_verdict(facts: Facts) -> Verdict:
    """The verdict of a GPU rule without GPU facts: unverified. Its cause (no driver, a hung or
    broken one) fails the nvidia_driver rule; this rule's fact could not be read."""
    return "unverified"


def refused_said(facts: Facts) -> str:
    """'the host refuses nvidia-smi -q -x: ERROR: ...; ...' for the formats refused on purpose."""
    ev = facts.gpu_evidence
    return "; ".join(r.sentence() for r in ev.refusals) if ev else ""


def row_begun(facts: Facts) -> int | None:
    """The index of a GPU whose table row the cut went through before its name was read
    (`| 6 NVIDIA GeForce RTX 4`): a GPU seen beyond those read; None where none."""
    if facts.gpu is None or not facts.gpu.gpus:
        return None
    said = (
        w[len(TABLE_ROW_BEGUN) :].split(" ", 1)[0]
        for w in facts.gpu.warnings
        if w.startswith(TABLE_ROW_BEGUN)
    )
    begun = next((int(n) for n in said if n.isdecimal()), None)
    # (beyond every GPU read: another format's listing of it, `-L`'s, counts it already)
    return begun if begun is not None and begun > max(g.index for g in facts.gpu.gpus) else None


def _begun_said(facts: Facts) -> str:
    """' inside the first row of GPU 6: at least 7 GPUs' where the cut went through a row."""
    if (begun := row_begun(facts)) is None or facts.gpu is None:
        return ""
    return f" inside the first row of GPU {begun}: at least {len(facts.gpu.gpus) + 1} GPUs"


def incomplete_said(facts: Facts) -> str:
    """'nvidia-smi says 8 GPUs attached but its output lists 1 (cut off)' when no format listed
    every GPU nvidia-smi says is there: an incomplete probe to rerun, never missing hardware."""
    if facts.gpu is None or (facts.gpu.complete and not attached_gap(facts)):
        return ""
    attached, why = attached_gap(facts), facts.gpu.gap or facts.gpu.cut_said
    gap = (
        f"{attached} ({why})" if attached and why else attached or why
    ) or f"nvidia-smi's output lists {len(facts.gpu.gpus)} GPU(s) and was cut off" + _begun_said(facts)
    # (outputs that disagree are whole: what they say otherwise is the sentence, no cut)
    return gap if facts.gpu.disagreements else f"incomplete probe: {gap}"


def incomplete_said_for(facts: Facts, *fields: str) -> str:
    """`incomplete_said`, but '' where the outputs were cut inside a GPU's record while the GPU set
    is known whole (`GpuReport.set_whole`: a whole `-L`, `Attached GPUs`) and each of `fields` of
    every GPU was read by a whole record (gpu_agree.field_whole): a rule reading only those
    (the names and count: gpu_model; the driver's answer: nvidia_driver) judges them whole. A
    field the cut took (GPU 1's memory total of a table cut in its row) keeps the cut."""
    report = facts.gpu
    whole = report is not None and report.set_whole and not attached_gap(facts)
    if whole and report is not None and all(field_whole(g, f) for g in report.gpus for f in fields):
        return ""
    # (a -q text of one GPU's record that lost its indentation: its name, the count and the
    # driver cannot be another section's; any other field can: `gap_spares_names`)
    if report is not None and report.gap_spares_names and set(fields) <= {"name"} and not attached_gap(facts):
        return ""
    return incomplete_said(facts)


def disputed_said(facts: Facts, *fields: str) -> str:
    """The formats' disagreement sentence (as `incomplete_said` says it) where it is about one of
    `fields` (facts/gpu_agree.py: "name", "memory_total_mib", "driver_version", "gpus"), ''
    otherwise: a rule reading such a field has two answers and judges neither, its fail or pass
    unverified, never a hardware claim from the one the merge kept."""
    if facts.gpu is None or not set(fields) & set(facts.gpu.disputed):
        return ""
    return incomplete_said(facts)


# where the only nvidia-smi failure given ran in a container, through a launcher or as another user
ELSEWHERE_ADVICE = (
    "that call's own devices, rights and GPUs (a container's, a job step's, another user's) are not"
    " the box's, so its failure says nothing certain of the box's driver: save `nvidia-smi` run in"
    " the box's own shell"
)


def cuda_in_container(facts: Facts) -> str:
    """Why the CUDA version kept is a container's, not the box's: every output that gave it ran
    nvidia-smi in a container already running (its ProbeOutput.partial, IN_RUNNING_CONTAINER);
    "" where an output of the box gave it (another command's exec is no reading of this banner)."""
    told = facts.gpu.cuda_told_by if facts.gpu is not None else ()
    return told[0] if told and all(IN_RUNNING_CONTAINER in why for why in told) else ""


# how a row that its output's cut made unverified says so itself (gpu_health/usage.py CUT_LIST)
CUT_SAID = "(the output was cut short"

RERUN_ADVICE = (
    "an output cut short or narrowed (a dropped session, a capture cut off, a GPU left out of a"
    " listing, a view of some GPUs or sections: `-i N`, `-d ECC`), or outputs that disagree (two"
    " boxes' files, a box that changed between them), is no evidence about the"
    " hardware: rerun `invoke check` (offline: save the whole `nvidia-smi -q`); if it stays so, run"
    " `nvidia-smi -L` on the host and check `dmesg` for NVIDIA Xid errors"
)


_OF_READ = "(of what was read; "


def of_those_read(check: Check, gap: str) -> Check:
    """A pass over the GPUs (and sections) an output cut short let be read is no pass of the
    box: unverified, saying so. A fault seen on what was read stays a fault, its actual saying
    it is of what was read (`Disabled on all 2 GPUs` of a table cut after its second GPU counts
    the GPUs read, not the box's); a row already unverified says the cut too (`not reported for
    GPU 4` of a -q cut inside GPU 4's record is the cut's, not an N/A of the GPU's), unless it
    says the cut already (`(the output was cut short: ...)`, foreign_processes): once is enough."""
    if gap in check.actual or check.verdict not in ("fail", "warn", "unverified", "pass"):
        return check
    if check.verdict == "unverified" and CUT_SAID in check.actual:
        return check
    # (a row that already says what was read, an unread cell's: one parenthesis, the gap first)
    actual = (
        check.actual.replace(_OF_READ, f"{_OF_READ}{gap}; ", 1)
        if _OF_READ in check.actual
        else f"{check.actual} {_OF_READ}{gap})"
    )
    if check.verdict != "pass":
        return replace(check, actual=actual)
    return replace(check, actual=actual, verdict="unverified", detail=RERUN_ADVICE)


# What to do about a GPU nvidia-smi lists but cannot read (GpuInfo.faults); a hung driver: HUNG_ADVICE
def fault_advice(indexes: Iterable[int]) -> str:
    """One sentence: what to ask the vendor about the unreadable GPUs numbered `indexes`."""
    return (
        "nvidia-smi cannot read the GPU(s) named (fallen off the bus, needing a reset, or a hung"
        " driver/GSP), so no other check covers them; ask the vendor to check `dmesg` for NVIDIA Xid"
        " errors (79: fallen off the bus; 119/120: GSP timeout), to reset the GPU"
        f" (`sudo nvidia-smi -i N -r`, N in {', '.join(str(i) for i in indexes)}) or reboot, and to"
        " replace it if it stays so"
    )


def no_gpu_actual(facts: Facts, about: str = "gpus") -> str | None:
    """Why no GPU can be judged ("unknown: ..."), None where GPUs were read. `about` names the
    rule's field where nvidia-smi's banner was read but no GPU row: "gpus" (the count, model,
    memory: the GPUs are what is not known), "driver" (the banner's versions are the answer, the
    rows the gap) or "min_driver" (the version is not judged)."""
    if topo_alone(facts):
        return "not judged: no nvidia-smi GPU listing was given (only its `topo -m`)"
    if gpu_not_given(facts) and facts.gpu is None:
        return "not judged: no nvidia-smi output was given"
    if not facts.nvidia_smi_present:
        return "unknown: nvidia-smi not found"
    if facts.gpu is None or not facts.gpu.gpus:
        raw = facts.gpu_raw
        if raw.exit_code == TIMED_OUT:
            return f"unknown: nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT} s (stopped)"
        line, advice = nvidia_smi_failure(raw.stdout, raw.stderr)
        failed_words = bool(advice) or "NVIDIA-SMI has failed" in raw.stdout
        if raw.exit_code == 0 and failed_words and answered_unread(raw.stdout) is not None:
            return f"unknown: {facts.unread_not_a_fault()}"  # (a lost GPU's line; its rows unread)
        if raw.exit_code == 0 and facts.gpu is not None and not failed_words:
            # (how a version of the banner was read: a note after it, or a cut that took it)
            notes = [w for w in facts.gpu.warnings if _VERSION_NOTE in w or _BANNER_CUT in w]
            if (facts.gpu.driver_version or notes) and not facts.gpu.complete:
                # a banner read, its GPU rows cut away or mangled: an incomplete probe, never
                # "listed no GPU" (nvidia-smi draws no table of no GPU); a version read with a
                # note, or not read, said with it, never stated bare as the box's
                cuda = facts.gpu.cuda_version or "unknown"
                said = f"driver {facts.gpu.driver_version or 'unreadable'}, CUDA {cuda}"
                said += f" ({'; '.join(notes)[:240]})" if notes else ""
                if kept := filtered_rows(raw):  # (`nvidia-smi | grep Driver`: no cut, a filter)
                    return f"unknown: {_rows_filtered(said, about, kept)}"
                begun = next((w for w in facts.gpu.warnings if w.startswith(TABLE_ROW_BEGUN)), "")
                return f"unknown: {_rows_unread(said, about, whole=not notes, begun=begun)}"
            if VERSION_ONLY in facts.gpu.warnings:  # (`--version`: versions, never a GPU list)
                cuda = facts.gpu.cuda_version or "unknown"
                return f"unknown: {VERSION_ONLY} (driver {facts.gpu.driver_version}, CUDA {cuda})"
            if UNRECOGNISED in facts.gpu.warnings:  # (a text of no form: never "nvidia-smi answered")
                return f"unknown: no GPU read: {UNRECOGNISED}"
            # it answered, but no GPU could be read from what it printed
            why = "; ".join(facts.gpu.warnings[:2])
            return "unknown: nvidia-smi answered but listed no GPU" + (f" ({why[:160]})" if why else "")
        if stopped := stopped_said(raw.exit_code):  # (a signal, not the probe's timeout: no hang)
            return f"unknown: nvidia-smi {stopped} before it answered"
        return "unknown: nvidia-smi failed" + (f" ({line[:160]})" if line else "")
    return None


# the warnings of a version read with a note after it (values._version) or left unread as cut
# (the table's banner: table._table_versions)
_VERSION_NOTE = " version reads "
_BANNER_CUT = "banner line is cut short"


# the driver's version line as nvidia-smi prints it, at the start of its own line: the table's
# banner (`| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05 ...`) or -q's `Driver Version : ...`;
# one after another program's head (`[  12.3] `, `kernel: `, a log's stamp) is quoted, not the output;
# or a table pasted on one line (a chat joined its lines): the banner right after the table's top
# border, whole up to its closing `|` (`+----+ | NVIDIA-SMI 470.82.01 Driver Version: 470.82.01 CUDA
# Version: 11.4 |`), the border at the line's start (after nothing, nvidia-smi's date line or a
# prompt with its `nvidia-smi` command: never after a sentence's words), the table going on after
# the banner on the same line (its column rule `|----+----+`, its `GPU  Name` header): a banner
# quoted in prose ("the image ships with: +---+ | NVIDIA-SMI ... | but I have not run it") is not
_JOINED_BEFORE = (
    r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"  # Mon Jan 20 10:18:26 2025
    r"|[^\s+]*[$#%>](?:[ \t]+(?:[^\s+]+[ \t]+){0,3}?\S*nvidia-smi[^\s+]*(?:[ \t]+-[^\s+]*){0,6})?"
)
_OWN_DRIVER_LINE = lazy_re(
    r"^\s*(?:(?:\|\s*)?NVIDIA-SMI\s+[\w.-]+\s+Driver Version:\s*(?P<table>[\d.]+)\s"
    r"|Driver Version\s*:\s*(?P<q>[\d.]+)\s*$)"
    rf"|^[ \t]*(?:(?:{_JOINED_BEFORE})[ \t]+)?"
    r"\+-{20,}\+[ \t]*\|[ \t]*NVIDIA-SMI[ \t]+[\w.-]+[ \t]+Driver Version:[ \t]*(?P<joined>[\d.]+)"
    r"[ \t]+CUDA Version:[ \t]*[\w./]+[ \t]*\|[ \t]*(?:\|[ \t]*-{10,}\+|[^\n]*?\bGPU[ \t]+Name\b)",
    re.M,
)


def driver_above_cut(facts: Facts) -> str | None:
    """The driver version of an nvidia-smi output that answered (exit 0, no failure's words), whose
    banner or header was read whole (no note on its versions, no cut through them: the line ends
    after it) and none of whose GPU rows could be (cut short above them): the version, judged
    as read (min_driver); None otherwise, or where the version line is no line of the output's
    own (a banner quoted after a log's head)."""
    gpu, raw = facts.gpu, facts.gpu_raw
    if gpu is None or gpu.gpus or gpu.complete or not gpu.driver_version or raw.exit_code != 0:
        return None
    if nvidia_smi_failure(raw.stdout, raw.stderr)[1] or "NVIDIA-SMI has failed" in raw.stdout:
        return None
    if any(_VERSION_NOTE in w or _BANNER_CUT in w for w in gpu.warnings):
        return None
    found = list(_OWN_DRIVER_LINE.finditer(raw.stdout))
    own = {m.group("table") or m.group("q") or m.group("joined") for m in found}
    # (a banner pasted on one line comes right after the table's top border: its own shape)
    joined = any(m.group("joined") for m in found)
    # (a container image's start-up banner above, `docker run IMAGE nvidia-smi`'s, is the image's
    # words: the table under it is the host's kernel driver's answer, its version the box's)
    own_text = _without_image_banner(raw.stdout)
    shaped = joined or _TABLE_HEAD.match(own_text) or _Q_HEAD.search(own_text) or _under_output(own_text)
    shaped = shaped or bool(filtered_rows(raw) and _OWN_DRIVER_LINE.match(raw.stdout.lstrip("\n")))
    return gpu.driver_version if own == {gpu.driver_version} and shaped else None


def filtered_rows(raw: ProbeOutput) -> str:
    """Why an nvidia-smi output holds no GPU row where its copied command filtered its lines
    (`nvidia-smi | grep Driver` keeps the banner alone): that clause (api/narrowed.py), a filter's
    choice and not a cut nor a mangling; "" otherwise."""
    return raw.partial if raw.partial.endswith(" let through") else ""


_OUTPUT_START = lazy_re(
    r"[ \t]*(?:\+-{20,}\+|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})[ \t]*$"
)


def _without_image_banner(text: str) -> str:
    """`text` less a container image's start-up banner (facts/container_banner.py) above it."""
    from gpuonboard.facts.container_banner import banner_lines

    lines = text.split("\n")
    # (the banner's last paragraph runs on into the table where no blank line parts them: it
    # ends at nvidia-smi's date line or the table's top border)
    ends = next((i for i, line in enumerate(lines) if _OUTPUT_START.match(line)), len(lines))
    drop = {i for i in banner_lines(lines) if i < ends}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop) if drop else text


# nvidia-smi's own shape around its driver line: the table's border right above its banner, with
# nothing above but blank lines, its date line (`Mon Jan 20 10:18:26 2025`) or watch's header;
# -q's `==============NVSMI LOG==============` above its `Driver Version`. A document's words above
# a quoted banner ("the host needs at least this driver:") are no output of the box.
_TABLE_HEAD = lazy_re(
    r"\A(?:[ \t]*\n|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}[ \t]*\n|Every .*\n)*"
    # (the top border optional: a poster's `nvidia-smi | head -8` with its borders left out, the
    # date line then the banner, measure37e 12: the banner is still the output's first line)
    # (and the banner's own borders optional: the one line pasted without them, `NVIDIA-SMI
    # 470.129.06   Driver Version: 470.129.06   CUDA Version: 11.4`, measure39e 19)
    r"(?:[ \t]*\+-+\+[ \t]*\n)?[ \t]*(?:\|\s*)?NVIDIA-SMI\s"
)
_Q_HEAD = lazy_re(r"^[^\S\n]*=+NVSMI LOG=+\s*\n(?:.*\n)*?[^\S\n]*Driver Version\s*:", re.M)
# the table's top border and banner at a line's start, anywhere in the text
_BORDER_BANNER = lazy_re(r"^[ \t]*\+-{20,}\+[ \t]*\n[ \t]*\|\s*NVIDIA-SMI\s", re.M)
# a line introducing what follows ("the host needs at least this driver:", "Expected output:")
# or a document's heading (`## Environment`), or a Markdown fence: a quote's words, not another
# program's output
_INTRODUCES = lazy_re(r"(?::|^#{1,6}[ \t].*|^(?:`{3,}|~{3,}).*)[ \t]*$")
# another program's own line: one starting with the program's path (`./gst capturing GPU
# information...`, `/usr/local/bin/burn ...`), as a tool prints its name first
_PROGRAM_LINE = lazy_re(r"^(?:\./|/(?:usr/|opt/|home/|root/)?[\w.-]+/)[\w./-]*[\w-]\s")


def _under_output(text: str) -> bool:
    """Whether the table's border and banner stand under another program's lines (a stress tool's
    `./gst capturing GPU information...`): the table is the box's output all the same, as it is
    under nothing. It takes a line that names a program by its path among them; a document's
    prose, a line right above that introduces the banner (ending in `:`), a heading or a fence
    is a document quoting a banner, no output of the box (review revM: "for example this one."
    above a quoted banner had passed min_driver)."""
    found = _BORDER_BANNER.search(text)
    if found is None:
        return False
    above = [line.strip() for line in text[: found.start()].split("\n") if line.strip()]
    return (
        bool(above)
        and any(_PROGRAM_LINE.match(line) for line in above)
        and not any(_INTRODUCES.search(line) for line in above[-1:])
    )


# what a table (or another format) says whose banner was read and none of whose GPU rows
# could be (docs/reference/rules.md, nvidia_driver)
NO_ROW_READ = "nvidia-smi answered, but no GPU row of its output could be read (cut short or mangled)"


def _rows_unread(said: str, about: str, whole: bool = False, begun: str = "") -> str:
    """The sentence of an nvidia-smi output whose banner (`said`: "driver 525.85.12, CUDA 12.0")
    was read and no GPU row, naming what the rule `about` does not know and why; `whole` where
    the banner's versions were read with no note and no cut (then not said "not whole");
    `begun`: the table's TABLE_ROW_BEGUN warning where the cut went through the first GPU's
    row, inside its name cell (then said so, never "before its GPU rows")."""
    if about == "driver":
        return f"{said}; incomplete probe: {NO_ROW_READ}"
    if about == "min_driver" and whole:
        return (
            f"the driver version is not judged: no GPU row read ({said} in its banner), so the"
            f" output is cut short or mangled; incomplete probe: {NO_ROW_READ}"
        )
    if about == "min_driver":
        return (
            f"the driver version is not judged ({said} as the banner reads it, not whole), because"
            f" the output is cut short or mangled; incomplete probe: {NO_ROW_READ}"
        )
    where = "is cut short or mangled before its GPU rows"
    if begun:  # ("... first row of GPU 0 (its index read; its name cell cut after 'GRID P40-24Q')")
        index, _, rest = begun[len(TABLE_ROW_BEGUN) :].partition(" ")
        cell = rest.partition("; ")[2].rstrip(")")
        where = f"is cut short inside the first row of GPU {index}" + (f", {cell}" if cell else "")
    return (
        "no GPU row could be read, so the GPUs (their count, model and memory) are not known: the"
        f" nvidia-smi output gives {said} in its banner, then {where}; incomplete probe"
    )


def _rows_filtered(said: str, about: str, kept: str) -> str:
    """The sentence of an nvidia-smi output whose copied command kept its banner (`said`) and
    none of its GPU rows (`kept`: the filter's clause), for the rule `about`."""
    if about in ("driver", "min_driver"):
        return f"{said}; no GPU row to judge the GPUs by"
    return (
        f"no GPU row was given, so the GPUs (their count, model and memory) are not known: {kept},"
        f" the banner ({said}) and no GPU row (a filter, not a cut); run nvidia-smi whole"
    )


def attached_gap(facts: Facts) -> str:
    """'nvidia-smi says 4 attached but lists 1' when its attached count differs from the GPUs
    its output describes; '' otherwise."""
    if facts.gpu is None or facts.gpu.attached_gpus is None:
        return ""
    n = len(facts.gpu.gpus)
    return (
        f"nvidia-smi says {facts.gpu.attached_gpus} attached but lists {n}"
        if facts.gpu.attached_gpus != n
        else ""
    )


def unreadable_gpu(g: GpuInfo) -> str:
    """'GPU 4 unreadable (nvidia-smi reads ERR!)': a GPU nvidia-smi lists but cannot read."""
    return f"{g.called()} unreadable (nvidia-smi reads {' / '.join(g.faults)})"


def rows_before_cut(facts: Facts) -> str:
    """'nvidia-smi answered: its driver version and 3 GPUs read before the cut' where an output
    cut short (or one short of the GPUs nvidia-smi says are attached) printed its driver's version
    and at least one GPU's record whole (to its end, or to its readings: no fault marker): the
    driver answered for those GPUs, which no later cut undoes (nvidia_driver is judged on what was
    printed); ''
    otherwise (a banner alone, a row cut inside it, a GPU that reads ERR!: no answer to judge)."""
    gpu = facts.gpu
    if gpu is None or not gpu.driver_version:
        return ""
    # (a record cut below its readings, a table row whose border the cut took, a -q record cut
    # after its UUID, a table row whose first line was read whole (name, bus id, ECC cell: a lost
    # GPU reads ERR! there, the A30's and A40's real tables) with its readings line cut or left
    # out by hand, answers as far as the driver goes: each value read was printed whole, and a
    # lost GPU's fault markers stand in those readings; a row cut inside its first line, after
    # its name or bus id cell, may hide them, `ERR!` in the ECC cell: no answer)
    table = "table" in gpu.source.split("+")  # (a table row's whole first line answers: _answered)
    whole = [
        g for g in gpu.gpus if g.name.strip() and not g.faults and (not g.record_cut or _answered(g, table))
    ]
    # (GPUs missing before those read, a paste from the middle of the table: a lost GPU's row,
    # `ERR!` in it, may be in the part not shown: no answer)
    if not whole or sorted(g.index for g in gpu.gpus) != list(range(len(gpu.gpus))):
        return ""
    n = len(whole)
    return (
        f"nvidia-smi answered: its driver version and {n} GPU{'s' if n != 1 else ''} read{_before_cut(gpu)}"
    )


def _before_cut(gpu: GpuReport) -> str:
    """' before the cut' where the output was cut short; '' where it is not whole for another
    reason only: lines left out by hand (`...` in a quoted table), or a whole table of a view of
    some GPUs (a container's `kubectl logs`, whose gap the rules say)."""
    if gpu.cut_said.startswith("lines were left out"):
        return ""
    cut = any(g.record_cut for g in gpu.gpus) or any("cut short" in w for w in gpu.warnings)
    return "" if gpu.gap and not cut else " before the cut"


def _answered(g: GpuInfo, table: bool = False) -> bool:
    """Whether a GPU record cut short read one of the values a lost GPU prints a fault marker for
    (its UUID, memory, temperature, utilisation, power draw), or a table row's whole first line
    (its bus id and its ECC cell, which reads ERR! on a lost GPU)."""
    read = (g.uuid, g.memory_total_mib, g.temperature_c, g.utilization_gpu_pct, g.power_draw_w)
    first_line = (
        table
        and bool(g.pci_bus_id)
        and (g.ecc_na or g.ecc_mode is not None or g.ecc_volatile_uncorrectable is not None)
    )
    return first_line or any(v not in (None, "") for v in read)


def driver_unread(expected: str, actual: str, unread: str, refused: str) -> Check:
    """nvidia_driver where no GPU was read and that says nothing about the box (`unread`): the
    provider blocks the formats that list GPUs (`refused`), an output cut short, or text that is
    no nvidia-smi listing: no evidence either way."""
    if refused:
        return Check(
            "nvidia_driver",
            expected,
            f"{actual}; {refused}",
            "unverified",
            "the provider blocks the nvidia-smi formats that list the GPUs (a policy, not a broken"
            " driver): ask the provider which format they allow, or for the GPU list they delivered",
        )
    said = "incomplete probe" in actual or unread in actual or actual.startswith("nvidia-smi answered")
    if actual == "nvidia-smi failed" and unread.startswith("nvidia-smi answered"):
        actual, said = unread, True  # (it answered: no failure to speak of)
    actual += "" if said or VERSION_ONLY in actual else f" ({unread})"
    advice = VERSION_ADVICE if VERSION_ONLY in actual else RERUN_ADVICE
    return Check("nvidia_driver", expected, actual, "unverified", advice)


VERSION_ADVICE = (
    "`nvidia-smi --version` names the driver and lists no GPU: save the box's `nvidia-smi` (its"
    " table) or `nvidia-smi -q`, which list the GPUs"
)


def attached_below(facts: Facts, ordered: int) -> int | None:
    """nvidia-smi's own count of the GPUs attached (`-q`'s `Attached GPUs`, read whole above a
    cut) where it is below `ordered` and no GPU read says otherwise (no disagreement, no rows that
    may be samples, no more GPUs read than it counts): an exact count, the box short whatever the
    cut took (a GPU whose handle fails is still counted attached); None otherwise."""
    report = facts.gpu
    if report is None or report.attached_gpus is None or report.attached_gpus >= ordered:
        return None
    if report.disagreements or report.gap or len(report.gpus) > report.attached_gpus:
        return None
    return report.attached_gpus
