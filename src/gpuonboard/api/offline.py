"""`invoke facts FILE...`: judge saved command outputs offline (no SSH).

A renter can check the outputs a vendor mails before delivery; a support engineer can replay
a customer's. Each file's kind is detected from its content and read as the live probe would
have read it (api/saved_probe.py), the same pure parsers as a live run turn them into facts, and
with an order the same acceptance and health rules apply.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path

from gpuonboard.api import (
    bug_report,
    collect_env,
    exit_labelled,
    kernel_run,
    output_runs,
    paste,
    saved_file,
    saved_forms,
    script_blocks,
    transcript,
    typed_commands,
    unjudged,
)
from gpuonboard.api.csv_among import csv_above_table
from gpuonboard.api.failure_record import unmarked_failure
from gpuonboard.api.heading_above import below_heading, csv_among_prose
from gpuonboard.api.job_step import job_step_over_login
from gpuonboard.api.journal_refusal import journal_without_kernel
from gpuonboard.api.kind_names import SHOWN_KINDS
from gpuonboard.api.labelled_listings import labelled_listings
from gpuonboard.api.listed_first import listed_first
from gpuonboard.api.narrowed import (
    container_prompt_view,
    klog_container_log,
    narrowed,
    report_filtered,
    report_in_container,
    shown_faults,
)
from gpuonboard.api.offline_output import facts_json, print_facts
from gpuonboard.api.offline_output import load_order as load_order  # (re-exported: cli, tests)
from gpuonboard.api.offline_output import summary as summary
from gpuonboard.api.refused_files import note_or_refuse
from gpuonboard.api.run_folder import expand_marked, raw_dir_manifest, skipped_note
from gpuonboard.api.saved_kinds import (
    detect_kind,
    log_line,
    recorded_failure,
    unstamped_kinds,
)
from gpuonboard.api.saved_probe import gpu_format, named_file, probe_form, read_as, run_output
from gpuonboard.api.saved_retired import retired_pages
from gpuonboard.api.saved_text import (
    copied_command,
    copied_host,
    decode_saved,
    prompt_command,
    strip_prompt,
    uncommented,
    unglued,
    unquote,
)
from gpuonboard.api.shown import shown
from gpuonboard.api.state_change import joined_after_change
from gpuonboard.api.unread import joined, keeps_first, output_cut, unread
from gpuonboard.api.unread_files import unread_rows
from gpuonboard.api.unreadable import (
    vgpu_apart,
)
from gpuonboard.api.viewer_lines import unviewed
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.connection.probe_commands import CORE_NAMES
from gpuonboard.errors import OtherOutputError, UsageError
from gpuonboard.facts.driver_module import MODULE_PROBE
from gpuonboard.facts.extra_probes import KERNEL_LOG_REFUSED, SAVE_AGAIN
from gpuonboard.facts.gpu_failed import failed_as_a_whole
from gpuonboard.facts.gpu_list import ends_at_name, parse_gpu_list
from gpuonboard.facts.gpu_probes import ENV_DRIVER_PROBE, ENV_PLATFORM_PROBE
from gpuonboard.facts.gpu_retired import RETIRED_PROBE
from gpuonboard.facts.joined_log import glued_to_log, unjoined
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.query_csv import other_query_refusal
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.stderr_lines import split_stderr_lines
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import acceptance, gpu_health

KINDS = ("nvidia_smi", "nvidia_topo", "lscpu", "free", "df", "lsblk", "mounts", "os_release", "nvcc")
# saved outputs of the fabric probes (facts/extra_probes.py): kind = the live probe's name
FABRIC_KINDS = (
    "kernel_log",
    "nvidia_nvlink",
    "nvidia_nvlink_errors",
    "nvidia_smi_list",
    "rdma_ports",
    "fabric_manager",
)
# the largest saved output read: an 8-GPU `nvidia-smi -q -x` is ~0.3 MB; a dataset or a log that
# landed in the vendor's folder is not read into memory whole only to be refused. One bound for
# the text, however it came: a plain nvidia-bug-report.log and the text its .gz expands to (a box
# with many GPUs, its nvidia-debugdump in base64: tens of MiB)
MAX_OUTPUT_BYTES = saved_file.MAX_OUTPUT_BYTES
# the probes of a run's raw/<host>/ folder that are read (by the name its summary.json records,
# with the recorded exit code, as the live run read them): what parse_facts reads, nvcc, and the
# module file the table probe read after nvidia-smi failed (connection/probe_commands.py MODULE_READ)
RAW_DIR_PROBES = frozenset({*CORE_NAMES, "nvcc", *FABRIC_KINDS, MODULE_PROBE})


def _recorded_outputs(
    path: Path, data: bytes, notes: list[str], cut: str = ""
) -> list[tuple[str, ProbeOutput, str]]:
    """_saved_outputs, each output a harness's record gave a non-zero status (`nvidia-smi -L
    returncode=255; stdout=...`: exit_labelled) read with that status as its exit code, as a live
    probe's is; a record of no output refused naming its status."""
    codes = exit_labelled.recorded_codes(unquote(decode_saved(data)))
    try:
        return exit_labelled.with_codes(_saved_outputs(path, data, notes, cut), codes)
    except UsageError as why:
        if (said := exit_labelled.no_output_said(str(why), codes)) != str(why):
            raise UsageError(said) from None
        raise


def _saved_outputs(
    path: Path, data: bytes, notes: list[str], cut: str = ""
) -> list[tuple[str, ProbeOutput, str]]:
    """A user's saved file: (kind, output, where: the file, or the file and a command's line in a
    saved terminal session) for each output it holds; a session's command whose output is not
    read (`ls`, `cat notes.txt`) is skipped with a note. `cut`: why the file's text is cut short
    (a gzip file cut short): the output it ends inside is incomplete, the last section of a bug
    report (bug_report.outputs: no `End of ...` line) or the last command of a session, never
    the whole ones before it."""
    raw = unquote(decode_saved(data))
    if said := paste.typography_note(raw):  # (a quoted line shows the ASCII: said, m31d 24)
        notes.append(f"{path}: {said}.")
    pasted = unviewed(paste.normalise(raw))  # (a CI log view's gutter dropped)
    if paste.quoted(pasted.split("\n")):
        pasted = unquote(pasted)  # (a quote under stamps or `cat -n` numbers, undone with them)
    parts = transcript.sections(pasted)  # (first: a session may show part of a bug report among its commands)
    if parts is None and (typed := _typed_session(pasted)) is not None:
        pasted, parts = typed  # (commands typed without prompts, each above its output)
    if parts is None and (listed := listed_first(pasted)) is not None:
        pasted, parts = listed, transcript.sections(listed)  # (commands first, their outputs after)
    # (a bug report a command of the session printed, `head -12 nvidia-bug-report.log`: a command
    # naming the log; a line of a whole log that reads as a prompt, a config file's `# comment`
    # or dmidecode's `# dmidecode 3.5`, splits no log)
    reports = [
        p
        for p in parts or ()
        if bug_report.printed_by(p.command) and bug_report.looks_like_bug_report(p.text)
    ]
    if not reports and bug_report.looks_like_bug_report(pasted):  # (its sections, each read as that output)
        return _bug_report_outputs(path, str(path), pasted, notes)
    if parts is not None and reports:
        # (a command's output that is a bug report, `cat`/`head` of the log: its sections read as
        # the log's; the other commands read as a session's)
        found = [
            out for p in reports for out in _bug_report_outputs(path, f"{path} {p.where}", p.text, notes)
        ]
        rest = [p for p in parts if p not in reports]
        last = cut if rest and rest[-1] is parts[-1] else ""
        try:
            return found + (
                _session_outputs(path, rest, notes, last) if any(not p.empty for p in rest) else []
            )
        except UsageError as none:  # (its other commands read nothing, noted: the bug report is judged)
            if not found or "holding no output this tool reads" not in str(none):
                raise
            return found
    if parts is None and _env_report(pasted):
        # (a report pasted with nvidia-smi's own output is read as that output, as before)
        return _all_cut(_env_outputs(path, pasted, notes, collect_env.copied_command(pasted)), cut)
    if parts is None and (pieces := kernel_run.split(pasted, log_line, detect_kind)) is not None:
        return _all_cut(_pieces_outputs(path, pieces, notes), cut)
    if parts is None and (blocks := script_blocks.output_then_matrix(pasted, detect_kind)) is not None:
        return _all_cut(_block_outputs(path, blocks, notes), cut)  # (a table, then its `topo -m`)
    if parts is None and (blocks := script_blocks.split(pasted, detect_kind)) is not None:
        return _all_cut(_block_outputs(path, blocks, notes), cut)  # (`--- CPU ---` between tools)
    if parts is None and (blocks := script_blocks.glued(pasted, detect_kind)) is not None:
        return _all_cut(_block_outputs(path, blocks, notes), cut)  # (lscpu, then free's header)
    if parts is None and (stacked := csv_above_table(pasted)) is not None:
        pasted, left = stacked  # (the table read from its own first line; the CSV said, not read)
        notes.append(f"{path}: {left}.")
    if parts is None:
        pasted = vgpu_apart(str(path), pasted, notes)  # (a host's -q, then its vGPU listing)
    if parts is None and (headed := below_heading(pasted)) is not None:
        pasted, left = headed  # (a heading above a CSV, XML or -L: said, the output read from its top)
        notes.append(f"{path}: {left}.")
    elif parts is None and not parse_any(pasted).gpus and (prose := csv_among_prose(pasted)):
        pasted, left, quoted = prose  # (a CSV among a README's prose: the CSV read, the prose said)
        notes.append(f"{path}: {left}.")
        cut = cut or quoted  # (no copied command above it: maybe a document's, capped as a view)
    if parts is None:
        try:
            return _all_cut([(*_saved_output(path, str(path), pasted), str(path))], cut)
        except unjudged.UnjudgedOutput as why:  # (read, nothing judged: named, the rest judged)
            notes.append(str(why))
            return []
        except UsageError as why:
            raise _journal_refusal(path, raw, why) from None
    return _session_outputs(path, parts, notes, cut)


def _journal_refusal(path: Path, raw: str, why: UsageError) -> UsageError:
    """The refusal of a file read as no output: said as a journal of other programs' lines
    (api/journal_refusal.py) where the text as given is one. A syslog or journal of one program
    (`Mar 15 20:43:23 host nvidia-persistenced: Started (721)`, with or without its `[pid]`) is
    read as that program's output without its line heads (paste._unstamped: a unit that printed
    nvidia-smi's table); where that output is none this tool reads, the daemon's own log, the
    refusal names what the file is, never "not a recognised command output" (measure38c 13)."""
    if not str(why).startswith(f"{path}: {transcript.UNRECOGNISED} (expected "):
        return why
    said = journal_without_kernel(raw)
    return why if said is None else UsageError(f"{path}: {said}")


def _klog_quoted(
    data: bytes, found: list[tuple[str, ProbeOutput, str]]
) -> list[tuple[str, ProbeOutput, str]]:
    """`found`, its nvidia-smi outputs a container's view where the file's text is a Kubernetes
    component's klog record quoting a container's log (`"Fetched tail of log of instance" ... tail=<`:
    paste_frames.klog_quoter), as `kubectl logs` is (api/narrowed.klog_container_log)."""
    quoter = paste.klog_quoter(unquote(decode_saved(data))) if b"=<" in data else ""
    if not quoter:
        return found
    said = klog_container_log(quoter)
    return [
        (k, dataclasses.replace(o, partial=o.partial or said) if k.startswith("nvidia_smi") else o, w)
        for k, o, w in found
    ]


def _block_outputs(
    path: Path, blocks: list[script_blocks.Block], notes: list[str]
) -> list[tuple[str, ProbeOutput, str]]:
    """The outputs of a script's block of several tools' outputs under its own headings
    (api/script_blocks.py), each read as a file of its own; one that is no output, noted."""
    found: list[tuple[str, ProbeOutput, str]] = []
    unread: list[str] = []
    for block in blocks:
        where = script_blocks.where(str(path), block)
        try:
            found.append((*_saved_output(path, where, block.text), where))
        except UsageError:
            unread.append(where.removeprefix(f"{path} "))
    how = {
        script_blocks.UNHEADED: "between blank lines",
        script_blocks.GLUED: "one right under another (no blank line, heading or prompt between)",
    }.get(blocks[0].heading, "under its own headings")
    notes.append(
        f"{path}: a script's output of several tools {how}, each read as an output of its own"
        + (f"; not read: {', '.join(unread)} (not an output this tool reads)" if unread else "")
        + "."
    )
    return found


def _pieces_outputs(
    path: Path, pieces: list[kernel_run.Piece], notes: list[str]
) -> list[tuple[str, ProbeOutput, str]]:
    """The outputs of a file holding a kernel log's lines and another output with no prompt
    between them (api/kernel_run.py), each read as a file of its own, noted; the last one keeps
    the file's cut (`_all_cut`). A piece that is refused is a note beside the other, read (m35e
    16: a `-q` and `nvidia-smi vgpu`'s listing, refused, ended the run; the log was never read);
    where both are, the first refusal stands."""
    found: list[tuple[str, ProbeOutput, str]] = []
    refused: list[UsageError] = []
    for piece in pieces:
        where = kernel_run.where(str(path), piece)
        try:
            found.append((*_saved_output(path, where, vgpu_apart(where, piece.text, notes)), where))
        except UsageError as why:
            refused.append(why)
    if not found:
        raise refused[0]
    notes.append(kernel_run.note(str(path), pieces))
    notes += [f"{why} Not read: the other output of the file is judged." for why in refused]
    return found


def _typed_session(text: str) -> tuple[str, list[transcript.Section]] | None:
    """A page of commands typed without prompts (or named by a poster's label line, `Command:
    lscpu`), each above its output, as a saved session (its text with a prompt before each
    command, and its sections), where the text read as one output would hold two of one kind
    (refused: "one pasted twice, or two boxes' in one file"): the login's `nvidia-smi` and `sudo
    docker exec -it app nvidia-smi`, one box and a container on it (m31c crackq#43); or where each
    command's text is an output of a known kind and none is above the first. None otherwise."""
    kind = detect_kind(text)
    typed = typed_commands.prompted(text)
    parts = transcript.sections(typed) if typed is not None else None
    if typed is None or parts is None:
        return None
    if (
        kind is not None
        and output_runs.outputs_in(gpu_format(text) if kind == "nvidia_smi" else kind, text)[1] >= 2
    ):
        return typed, parts
    # (outputs of several kinds, each below its typed command or label: `nvidia-smi`, a blank,
    # its table, then `lscpu` and its lines, which were left unread inside the table's text; or
    # beside another tool's, `ibdev2netdev` then `rdma link`, said as not read: m36b 25)
    said = [p for p in parts if not p.empty]
    known = [p for p in said if p.line and detect_kind(p.text) is not None]
    others = [p for p in said if p.line and typed_commands.other_section(p.command, p.text, detect_kind)]
    if known and len(known) + len(others) == len(said) and (kind is not None or others):
        return typed, parts
    return None


def _all_cut(found: list[tuple[str, ProbeOutput, str]], cut: str) -> list[tuple[str, ProbeOutput, str]]:
    """`found` each incomplete where its file's text is cut short (`cut`: why)."""
    return (
        [(kind, dataclasses.replace(out, partial=out.partial or cut), w) for kind, out, w in found]
        if cut
        else found
    )


def _bug_report_outputs(
    path: Path, name: str, text: str, notes: list[str]
) -> list[tuple[str, ProbeOutput, str]]:
    """The outputs of a bug report (`name`: the file, or the file and the session's command that
    printed it), each read as that output."""
    return bug_report.outputs(name, text, lambda _, *a: read_as(path, *a), detect_kind, notes)


def _session_outputs(
    path: Path, parts: list[transcript.Section], notes: list[str], cut: str = ""
) -> list[tuple[str, ProbeOutput, str]]:
    """The outputs of a saved session's commands, each read as a saved file of its own (a
    collect_env report a command printed, `python -m torch.utils.collect_env`: as the outputs it
    holds, each checked as a command's own); the last command's incomplete where the file is cut
    short (`cut`: why)."""
    last = f"{path} {parts[-1].where}" if cut and parts else None

    def read_one(where: str, text: str, command: str) -> transcript.Reading[ProbeOutput]:
        why = cut if where == last else ""
        if _env_report(text):
            got = _env_outputs(path, text, notes, command, where)
            return [
                (k, dataclasses.replace(o, partial=o.partial or why), w.removeprefix(where))
                for k, o, w in got
            ]
        text = uncommented(
            text
        )  # (its lines commented out, `% Driver Version : ...`: as in a file of its own)
        if (stacked := csv_above_table(text)) is not None:  # (as in a file of its own)
            text, left = stacked
            notes.append(f"{where}: {left}.")
        if (headed := below_heading(text)) is not None:  # (as in a file of its own)
            text, left = headed
            notes.append(f"{where}: {left}.")
        kind, out = _saved_output(path, where, text, command)
        part = next((p for p in parts if f"{path} {p.where}" == where), None)
        if part is not None and transcript.container_shell(part.host) and not out.in_container:
            # (typed in a container's shell: its free, lscpu or df is that container's view, its
            # nvlink -s a listing of that container's GPUs only)
            out = dataclasses.replace(
                out,
                in_container=container_prompt_view(kind, part.host or "", command, out.stdout),
                nvlink_whole=False,
            )
        if kind == "nvidia_smi_list" and where == f"{path} {parts[-1].where}":
            why = why or ends_at_name(out.stdout)  # (a typed -L the session ends inside)
        return (kind, dataclasses.replace(out, partial=out.partial or why)) if why else (kind, out)

    # (a container's, a launcher's or another user's nvidia-smi shows less than the box: of the
    # same failure twice, the login's own is judged)
    found = transcript.read(
        str(path),
        parts,
        read_one,
        notes,
        unread,
        lambda kind, first, then: joined(kind, first, then, one_file=True),  # (one session's)
        lambda out: bool(out.in_container or out.partial or out.ran_elsewhere),
        lambda out: failed_as_a_whole(f"{out.stdout}\n{out.stderr}"),
        output_cut,
        joined_after_change,
        # (a whole answer elsewhere: a container's view of some GPUs, `--gpus 1`, or a log, stays a
        # rival of the box's own, joined where its GPUs match, else refused)
        lambda out: "" if out.partial else (out.ran_elsewhere or out.in_container),
        shown_faults,  # (a fault a container shows that the login's does not: refused, never dropped)
    )
    found = job_step_over_login(str(path), parts, found, notes)
    return _own_failure_over_elsewhere(str(path), found, notes)


def _own_failure_over_elsewhere(
    name: str, found: list[tuple[str, ProbeOutput, str]], notes: list[str]
) -> list[tuple[str, ProbeOutput, str]]:
    """The session's outputs, where it holds the login's own nvidia-smi failing as a whole and an
    nvidia-smi answer printed elsewhere (`docker run --gpus all ... nvidia-smi`, `srun ...
    nvidia-smi`), without that answer: the login's own failure is judged (nvidia_driver fails
    naming it), and a note says the other call's answer is not the box's (it never supersedes
    the box's own; every other output of the session is judged as given)."""
    smi = [(out, where) for kind, out, where in found if kind.startswith("nvidia_smi")]
    failed = [(out, where) for out, where in smi if failed_as_a_whole(f"{out.stdout}\n{out.stderr}")]
    own = next((where for out, where in failed if not out.ran_elsewhere), None)
    other = [(out, w) for out, w in smi if out.ran_elsewhere and (out, w) not in failed]
    if own is None or not other:
        return found
    left = {id(out) for out, _ in other}
    notes.append(
        f"{name}: {own.removeprefix(name).strip()} is the login's own nvidia-smi failing, which is"
        f" judged; {other[0][1].removeprefix(name).strip()} answered elsewhere (in a container,"
        " through a launcher or as another user): its answer is not the box's and is left out."
    )
    return [(kind, out, where) for kind, out, where in found if id(out) not in left]


# nvidia-smi's own output in a text: its table's banner, its -q header
_NVIDIA_SMI_BANNER = re.compile(r"NVIDIA-SMI \d|==+NVSMI LOG==+")


def _env_report(text: str) -> bool:
    """Whether `text` is a collect_env (check_env) report, read as the outputs it holds; one
    pasted with nvidia-smi's own output is read as that output."""
    return collect_env.looks_like_collect_env(text) and not _NVIDIA_SMI_BANNER.search(text)


def _env_outputs(
    path: Path, text: str, notes: list[str], command: str = "", name: str = ""
) -> list[tuple[str, ProbeOutput, str]]:
    """A saved collect_env (check_env) report: the outputs it holds, each read as the live
    probe's (its GPU lines as a view of the GPUs torch sees), and a note of what is not read.
    `command`: the command that printed it, where copied: one run in a container
    (narrowed.report_in_container) makes its GPU list a view of that container's GPUs, one whose
    output a filter kept part of (`| head -21`) makes each output it holds part of the report's;
    `name`: where it is (the file, or the file and the session's command that printed it)."""
    found, said = collect_env.parts(text)
    out: list[tuple[str, ProbeOutput, str]] = []
    name = name or str(path)
    inside, filtered = report_in_container(command), report_filtered(command)
    for part in found:
        where = f"{name} (collect_env: {part.what})"
        if part.kind in (ENV_DRIVER_PROBE, ENV_PLATFORM_PROBE):  # (a version, no output of its own)
            out.append((part.kind, ProbeOutput(part.text, "", 0), where))
            continue
        kind, probe = read_as(path, where, part.kind, part.text, "", "", "")
        if partial := part.partial or filtered or (inside if part.kind.startswith("nvidia_smi") else ""):
            probe = dataclasses.replace(probe, partial=probe.partial or partial)
        out.append((kind, probe, where))
    if not found:  # (said in a note where other outputs are judged beside it)
        raise unjudged.UnjudgedOutput(
            f"{name}: this collect_env report holds no output that is judged ({'; '.join(said)})."
        )
    read = ", ".join(part.what for part in found)
    notes.append(f"{name}: a collect_env report, read as its {read}" + "".join(f"; {s}" for s in said) + ".")
    return out


def _kind_of(path: Path, command: str, text: str) -> str | None:
    """A saved output's kind: by its content, else by its file's name or the command a session's
    prompt line ran (`$ nproc` / `3`)."""
    return (
        detect_kind(text)
        or saved_forms.kind_by_name(path.name, text)
        or saved_forms.kind_by_name(command, text)
    )


def _joined_log(where: str, joined: int) -> str:
    """Why a kernel log whose lines a chat joined is not read (facts/joined_log.py)."""
    return (
        f"{where}: a kernel log with several messages on one line ({joined} such line"
        f"{'s' if joined > 1 else ''}: a chat or a page joined its lines), so which message each"
        f" continued line, PCI address or count belongs to cannot be told: {SAVE_AGAIN}"
        " (`sudo dmesg -T > dmesg.txt`) or paste it in a code block."
    )


def _saved_output(path: Path, where: str, pasted: str, copied: str | None = None) -> tuple[str, ProbeOutput]:
    """One saved output: its kind detected from its content (errors name `where`); `copied` is
    the command it is the output of, where a session's prompt line gave it."""
    # (nvidia-smi's infoROM warnings, beside any of its formats, and df's lines for a mount it
    # could not read go to the tool's stderr, as live)
    pasted = unglued(pasted, where)
    text, warned = split_stderr_lines(unmarked_failure(strip_prompt(pasted)))  # (`→ NVIDIA-SMI has failed`)
    if copied is None:  # (the copied command above it, "" if none)
        copied, command = copied_command(pasted), prompt_command(pasted)
    else:
        command = transcript.tool_command(copied)  # (from the tool on: `df -h` of `ssh box df -h`)
    if why := saved_forms.wrapped_refusal(where, text):  # (a wrapped command line's refusal)
        raise UsageError(why)
    # (known by its file's name, or by the command a session's prompt line ran: `$ nproc` / `3`)
    kind = _kind_of(path, command, text)
    log = unjoined(text) if kind in (None, "kernel_log") else None
    if log is not None and (kind or log.joined) and (why := glued_to_log(copied or command, text)):
        return "kernel_log", ProbeOutput("", f"{where}: {why}: {SAVE_AGAIN}.", KERNEL_LOG_REFUSED)
    if log is not None and log.joined:
        if log.text is None:  # (docs/guides/offline.md: a log whose lines a chat joined: not read
            # where they cannot be cut apart for certain; the kernel rules unverified naming it, as
            # a live probe that could read no log; the rest judged)
            return "kernel_log", ProbeOutput("", _joined_log(where, log.joined), KERNEL_LOG_REFUSED)
        text = log.text  # (each line on its own again: read as the log)
        kind = _kind_of(path, command, text)
        if log.part and kind != "kernel_log":  # (a log without stamps: its driver's lines only)
            return "kernel_log", ProbeOutput("", _joined_log(where, log.joined), KERNEL_LOG_REFUSED)
    if kind == "nvidia_smi_list" and (joined := parse_gpu_list(text).trailed):
        raise UsageError(  # (docs/guides/offline.md: an output whose lines a chat joined)
            f"{where}: `nvidia-smi -L`'s GPU line{'s' if joined > 1 else ''} with more text after the UUID"
            f" ({joined} such line{'s' if joined > 1 else ''}: a chat or a page joined another output's"
            " lines onto it, as `nvidia-smi nvlink -s`'s), so no GPU count can be read from it: save it"
            " again as the command printed it (`nvidia-smi -L > gpus.txt`) or paste it in a code block."
        )
    if kind in (None, "nvidia_smi") and (pages := retired_pages(text)) is not None:
        # (its pages counted on their GPUs: facts/gpu_retired.py; `-i 0`'s a view of some GPUs)
        return RETIRED_PROBE, ProbeOutput(pages, "", 0, narrowed("nvidia_smi_csv", copied or command))
    if (
        kind in (None, "nvidia_smi")
        and saved_forms.compute_apps(text) is None
        and (why := other_query_refusal(text))
    ):
        raise unjudged.UnjudgedOutput(f"{where}: {why}")  # (processes or retired pages, not GPUs)
    if kind == "nproc" and (why := saved_forms.nproc_refusal(path.name, copied or command)):
        raise UsageError(f"{where}: {why}")
    if kind is None and (probe := probe_form(where, text, command)) is not None:
        return probe
    if kind is None and (
        why := unjudged.one_field_csv(command, text)
        or recorded_failure(text)  # (a watchdog's log quoting nvidia-smi's failure: its record)
        or unjudged.container_cli_info(text)
        or unjudged.container_cli_cut(text)
    ):
        raise unjudged.UnjudgedOutput(f"{where}: {why}")
    if kind is None and (headed := saved_forms.with_query_header(command, text)):
        text, kind = headed, "nvidia_smi"  # (a noheader CSV: its fields named by its command)
    if kind is None and (headed := saved_forms.with_df_header(command, text)):
        text, kind = headed, "df"  # (`df -h | grep nvme`: grep dropped df's header)
    if kind is None and (kinds := unstamped_kinds(text)):
        named = ", ".join(f"`{k}`" for k in kinds[:4])
        raise UsageError(  # (docs/guides/offline.md: a log without stamps of too few kinds)
            f"{where}: kernel lines without their time stamps, of {len(kinds)}"
            f" kind{'s' if len(kinds) > 1 else ''} only ({named}), which cannot be told from a grep of"
            " the log (`dmesg -t | grep ...`): save `dmesg` with its stamps (`sudo dmesg -T`)."
        )
    if kind is None and (why := labelled_listings(text)):
        raise UsageError(f"{where}: {why}")  # (a loop's `kubectl logs` of several pods' `-L`)
    if kind is None:
        return saved_forms.without_kind(where, text, copied, warned)
    kind, out = read_as(path, where, kind, text, warned, copied, command)
    if (host := copied_host(pasted)) and not transcript.container_shell(host) and not out.host_name:
        out = dataclasses.replace(out, host_name=host)  # (the box's name its prompt shows: m37 revT F1)
    if transcript.container_shell(host) and not out.in_container:
        # (typed at a container's prompt, `root@3f4e5a6b7c8d:/# df -h`: that container's view)
        out = dataclasses.replace(
            out,
            in_container=container_prompt_view(kind, host or "", command, out.stdout),
            nvlink_whole=False,
        )
    if log is not None and log.part:  # (a log without stamps cut at its drivers' heads: no more)
        out = dataclasses.replace(out, partial=out.partial or log.part)
    return kind, out


def given_gpu(facts: Facts) -> bool:
    """Some nvidia-smi output that lists GPUs was among the files."""
    from gpuonboard.facts.gpu_probes import GPU_PROBES

    return any(facts.given(name) for name in GPU_PROBES)


def load_outputs(
    paths: Sequence[str],
    notes: list[str] | None = None,
    unread: list[Path] | None = None,
    other: list[Path] | None = None,
    held: dict[Path, set[str]] | None = None,
) -> dict[str, ProbeOutput]:
    """Read files, detect kinds; errors name the file. In a host's folder of a gpuonboard run
    (raw/<host>/), each file is read as the probe its summary.json records; a probe offline
    judging does not read is skipped, and one line per such folder is added to `notes`; a
    folder's file that cannot be read is noted and added to `unread` (one read but of no output
    this tool knows, to `other` too; one refused among several, to `held` with its kinds)."""
    raw: dict[str, ProbeOutput] = {}
    origin: dict[str, str] = {}
    folder_of: dict[str, Path] = {}  # (a kind's file's folder: an unread output gives way within one)
    session_notes: list[str] = []
    manifests: dict[Path, dict[str, tuple[str, int]] | None] = {}
    skipped: dict[Path, list[str]] = {}
    refused: list[tuple[UsageError, Path, bytes]] = []  # (files of several refused: api/refused_files.py)
    marked = expand_marked(paths)
    for path, in_folder in marked:
        if path.parent not in manifests:
            manifests[path.parent] = raw_dir_manifest(path.parent)
        recorded = (manifests[path.parent] or {}).get(path.name)
        if recorded is not None and recorded[0] not in RAW_DIR_PROBES:
            skipped.setdefault(path.parent, []).append(recorded[0])
            continue
        try:
            data, cut = saved_file.read_saved(path, session_notes)
        except UsageError as why:
            if not in_folder:  # (a file the user named: a bad input, exit 2)
                raise
            session_notes.append(saved_file.unread_file_note(str(why)))
            if unread is not None:
                unread.append(path)
            continue
        if recorded is not None:
            found = [(recorded[0], run_output(path, data, *recorded), str(path))]
        else:
            try:
                found = _klog_quoted(data, _recorded_outputs(path, data, session_notes, cut))
            except OtherOutputError as other:  # (beside other files: noted, those judged)
                if not in_folder and len(marked) == 1:
                    raise
                session_notes.append(f"{other} Not read: the other files given are judged.")
                continue
            except UsageError as why:
                unknown = in_folder and str(why).startswith(f"{path}: {transcript.UNRECOGNISED} (")
                if not unknown and len(marked) == 1:
                    raise  # (the one file given: nothing else to judge)
                if not unknown:  # (one of several refused: the others judged, unless none is read)
                    refused.append((why, path, data))
                session_notes.append(saved_file.unread_file_note(str(why)))  # (one missing answer)
                if unread is not None:
                    unread.append(path)
                if other is not None and unknown:
                    other.append(path)
                continue
        if cut and recorded is not None:  # (a run's output cut short is incomplete: never judged as whole)
            found = _all_cut(found, cut)
        for kind, out, where in found:
            same = folder_of.get(kind, path.parent) == path.parent
            if (
                same
                and kind in raw
                and (kept := bug_report.saved_apart(kind, out, where, raw, origin)) is not None
            ):
                session_notes.append(kept[1])
                if kept[0] == where:
                    origin[kind], raw[kind] = where, out
                continue
            if keeps_first(kind, out, where, raw, origin, session_notes, same):
                continue
            out = named_file(kind, out, where)
            origin[kind], raw[kind], folder_of[kind] = where, out, path.parent
    note_or_refuse(refused, raw, skipped, held)  # (refused: none other read, or one of its kinds)
    if notes is not None:
        notes += [skipped_note(folder, probes) for folder, probes in skipped.items()]
        notes += session_notes
    if set(raw) == {RETIRED_PROBE} and not skipped:  # (pages, and no GPU list to count them on)
        raise UsageError(
            f"{origin[RETIRED_PROBE]}: a --query-retired-pages CSV lists retired pages, not GPUs, so it"
            " tells no GPU count or model: save `nvidia-smi -q` of the box beside it (its pages are"
            " counted on its GPUs). No other output was given, so nothing is judged."
        )
    if not raw and not skipped and session_notes:  # (only outputs read that hold nothing judged)
        raise UsageError(" ".join(session_notes) + " No other output was given, so nothing is judged.")
    if not raw:
        raise UsageError(
            f"{', '.join(str(f) for f in skipped)}: none of these saved outputs of a gpuonboard run is"
            " one offline judging reads (nvidia-smi, topo -m, lscpu, free, df, lsblk, os-release, nvcc,"
            " nproc, ...)."
        )
    return raw


def judge(facts: Facts, order: OrderSpec | None) -> list[Check]:
    """Acceptance rules (when an order is given) and GPU health rules; without an order, a given
    nvidia-smi output is still judged by the order-free `nvidia_driver` rule, so an output from
    which no GPU can be read ("NVIDIA-SMI has failed ...") fails instead of passing with exit 0."""
    checks: list[Check] = []
    if order is not None:
        checks += acceptance.evaluate(order, facts)
    elif given_gpu(facts):
        checks.append(acceptance.rule_driver(facts))
    checks += gpu_health.evaluate(facts)
    return checks


def run(paths: Sequence[str], order: OrderSpec | None, as_json: bool) -> int:
    """Parse, print, and return the exit code (1 when any rule fails)."""
    if not paths:
        raise UsageError("give at least one saved command output file, e.g. nvidia-smi-q-x.xml.")
    notes: list[str] = []
    unread: list[Path] = []
    other: list[Path] = []  # (read, of no output this tool knows)
    held: dict[Path, set[str]] = {}  # (a refused file's kinds: its rules unverified)
    raw = load_outputs(paths, notes, unread, other, held)
    notes += [shown(kind, raw[kind].stdout) for kind in SHOWN_KINDS if kind in raw]
    if notes:
        from rich.markup import escape

        from gpuonboard.report.terminal import console

        for line in notes:  # on stderr: stdout stays the table, or JSON with --json
            console(stderr=True).print(f"note: {escape(line)}", soft_wrap=True)
    facts = parse_facts(raw)
    checks = judge(facts, order)
    # (a rule shown only where its output is given, that a folder's unread file could have answered)
    checks += unread_rows(unread, raw, {c.name for c in checks}, other, held)
    if as_json:
        doc = {
            "facts": facts_json(facts),
            "rules": [dataclasses.asdict(c) for c in checks],
            "notes": notes,
        }
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        print_facts(facts, checks, sorted(raw))
    # an unverified rule is counted, not failed (there is no --strict offline: a saved output
    # that lacks a fact is said so in the table)
    return 1 if any(c.verdict == "fail" for c in checks) else 0
