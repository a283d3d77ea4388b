"""Outputs of tools this tool does not read offline, refused by name in one sentence saying what
they show and what to save instead (never the generic "not a recognised command output", whose
list of the outputs read never names them): DCGM's `dcgmi` (its diagnostics as a text table or
as `-j` JSON, its `discovery -l` / `group -l` / `health -c` tables), Hugging Face's `accelerate
env` report, procps top's memory summary in its graph mode (`GiB Mem : 28.2/7.8 [ ... ]`)
where its total could not be read, a gpu_burn run (its `nvidia-smi -L` lines, then its progress
lines), and the host error counts of rasdaemon's `ras-mc-ctl`, `edac-util` and `mcelog --client`."""

from __future__ import annotations

import re

from gpuonboard.facts import dcgm
from gpuonboard.once import lazy_re

__all__ = ["named_output"]

# a copied `dcgmi` command (`$ dcgmi diag -r 2 -g 7`, `:dcgmi discovery -l --host ...`)
_DCGMI_COMMAND = lazy_re(r"(?:^|[\s:$#>/])dcgmi[ \t]+([a-z]+)\b([^\n]*)", re.M)
# `dcgmi discovery -l`'s count line and its table's header
_FOUND = lazy_re(r"^[ \t]*(\d+) GPUs? found\.?[ \t]*$", re.M)
_DISCOVERY_HEADER = lazy_re(r"^[ \t]*\|[ \t]*GPU ID[ \t]*\|[ \t]*Device Information[ \t]*\|", re.M)
_DISCOVERY_NAME = lazy_re(r"^[ \t]*\|[ \t]*\d+[ \t]*\|[ \t]*Name:[ \t]*(.*?)[ \t]*\|?[ \t]*$", re.M)
# `dcgmi diag -r N`'s text table: its header, its Metadata rows, a test's row and its result
_DIAG_HEADER = lazy_re(r"^[ \t]*\|[ \t]*Diagnostic[ \t]*\|[ \t]*Result[ \t]*\|", re.M)
_DIAG_SIGN = lazy_re(
    r"^Successfully ran diagnostic for group\.|^[ \t]*\|-+[ \t]*Metadata[ \t]*-*\+|"
    r"^[ \t]*\|[ \t]*DCGM Version[ \t]*\|",
    re.M,
)
_DIAG_VALUE = lazy_re(r"^[ \t]*\|[ \t]*(DCGM Version|Driver Version Detected)[ \t]*\|[ \t]*([^|\s]+)", re.M)
_DIAG_ROW = lazy_re(
    r"^[ \t]*\|[ \t]*([A-Za-z][^|\n]*?)[ \t]*\|[ \t]*((?:Pass|Fail|Warn|Skip)\b[^|\n]*?)[ \t]*\|?[ \t]*$",
    re.M,
)
_BORDER = lazy_re(r"^[ \t]*\+[-=+]+\+[ \t]*$")
# `dcgmi diag -j`'s document (DCGM 2.x/3.x `"DCGM GPU Diagnostic"`, 4.x `"DCGM Diagnostic"`)
_DIAG_JSON = lazy_re(r"\{\s*\"DCGM (?:GPU )?Diagnostic\"\s*:")
# Hugging Face's environment reports (`accelerate env`, `transformers env`, `diffusers-cli env`):
# their first line, `- `Accelerate` version: 0.29.0` (`- 🤗 Diffusers version:`), with `- Platform:`
# and `- Python version:` lines, under `Copy-and-paste the text below in your GitHub issue`
_HF_VERSION = lazy_re(r"^[ \t]*- (?:🤗 )?`?([A-Za-z][\w-]*)`? version: ", re.M)
_HF_SIGNS = lazy_re(r"^[ \t]*- Platform: .*\n(?:.*\n)*?[ \t]*- Python version: ", re.M)
_HF_SAYS = lazy_re(r"^[ \t]*- (System RAM|GPU type|Accelerator): *(.+?)[ \t]*$", re.M)
# procps top's memory summary in graph mode (key `m`): `GiB Mem : 28.2/7.8      [|||  ]`
_TOP_GRAPH = lazy_re(r"^[ \t]*([KMGTPE]iB) Mem[ \t]*:[ \t]*(\d+(?:\.\d+)?)/(\S+)[ \t]*\[", re.M)

_SAVE_SMI = "save `nvidia-smi -q` (or its table) of the box"

# gpu_burn's progress line (`11.7%  proc'd: 2947 (7124 Gflop/s) - 2664 (6963 Gflop/s)   errors: 0
# - 0   temps: 56 C - 73 C`: one `proc'd` pair per GPU), and the `nvidia-smi -L` lines it prints first
_BURN_PROGRESS = lazy_re(r"^[ \t]*\d+(?:\.\d+)?%[ \t]+proc'd:[^\n]*?errors:[ \t]*([^\n]*?)[ \t]+temps:", re.M)
_BURN_LISTED = lazy_re(r"^[ \t]*GPU \d+: (.+?) \(UUID: GPU-", re.M)
# rasdaemon's `ras-mc-ctl --summary` / `--errors` (`No Memory errors.`, `MCE records summary:`,
# `PCIe AER events summary:`), its `--error-count` table (`Label  CE  UE`), `edac-util -v`
# (`mc0: csrow0: ch0: 0 Corrected Errors`, `edac-util: No errors to report.`), and `mcelog
# --client`'s records (`Hardware event. This is not a software error.`)
_RAS_SIGN = lazy_re(
    r"^[ \t]*(?:No (?:Memory|PCIe AER|ARM processor|Extlog|devlink|disk|MCE) errors\."
    r"|(?:MCE records|Memory controller events|PCIe AER events|Extlog records|ARM processor events)"
    r"(?: summary)?:"
    r"|Label[ \t]+CE[ \t]+UE"
    r"|mc\d+: (?:csrow\d+: )?(?:ch\d+: )?\d+ (?:Un)?[Cc]orrected Errors"
    r"|edac-util: No errors to report\."
    r"|Hardware event\. This is not a software error\.)",
    re.M,
)
_RAS_NONE = lazy_re(r"No (.+) errors\.")
_RAS_COMMAND = lazy_re(r"(?:^|[\s$#>])((?:ras-mc-ctl|edac-util|mcelog)(?:[ \t]+-[^\n]*?)?)[ \t]*$", re.M)


def named_output(text: str) -> str:
    """The sentence refusing an output of a tool this tool does not read offline (dcgmi's,
    `accelerate env`'s, top's graph mode), naming what it shows and what to save; "" for any
    other text."""
    return (
        _dcgmi_sentence(text)
        or _accelerate_sentence(text)
        or _top_graph_sentence(text)
        or _gpu_burn_sentence(text)
        or _ras_sentence(text)
    )


def _gpu_burn_sentence(text: str) -> str:
    """gpu_burn's run (`./gpu_burn 60`, `docker run ... gpu_burn`): the `nvidia-smi -L` lines it
    prints first named, its progress lines (errors, temperatures) not read."""
    progress = _BURN_PROGRESS.findall(text)
    if not progress:
        return ""
    listed = _BURN_LISTED.findall(text)
    names = sorted(set(listed))
    gpus = f"{len(listed)} x {names[0]}" if len(names) == 1 else ", ".join(listed)
    begun = f", begun by the `nvidia-smi -L` lines it prints ({gpus})" if listed else ""
    return (
        f"gpu_burn's own output{begun}: its progress lines (`NN.N%  proc'd: ... errors: ...  temps:"
        f" ...`; the last read says errors {progress[-1].strip()}) are a burn-in run's, which this tool"
        " does not read: save `nvidia-smi -L` and `nvidia-smi -q` (or its table) of the box, and"
        " `sudo dmesg -T` for the Xid errors a burn-in may raise."
    )


def _ras_sentence(text: str) -> str:
    """rasdaemon's `ras-mc-ctl`, `edac-util`'s or `mcelog --client`'s host error summary: what
    it says (its `No ... errors.` and summary lines), not read."""
    if not _RAS_SIGN.search(text):
        return ""
    command = _RAS_COMMAND.search(text)
    what = f"`{command.group(1).strip()}`" if command else "a host error summary"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _RAS_COMMAND.search(ln)]
    nones = [
        ln.removeprefix("No ").removesuffix(" errors.") for ln in lines if re.fullmatch(r"No .+ errors\.", ln)
    ]
    said = [ln for ln in lines if not re.fullmatch(r"No .+ errors\.", ln) and not ln.endswith(":")][:2]
    shows = "; ".join(([f"no {', '.join(nones)} errors"] if nones else []) + [f"`{ln[:80]}`" for ln in said])
    return (
        f"{what} output (rasdaemon's, EDAC's or mcelog's count of the host's hardware errors"
        f"{f': {shows}' if shows else ''}), which this tool does not read: host_hw_errors reads"
        " the machine-check, EDAC and PCIe AER errors from the kernel log: save `sudo dmesg -T`"
        " (or `journalctl -k -b`) of the box."
    )


def _dcgmi_sentence(text: str) -> str:
    """A `dcgmi` output's sentence: its diagnostics (-j JSON or the text table) or a listing."""
    if _DIAG_JSON.search(text):
        return _diag_json_sentence(text)
    if _DIAG_HEADER.search(text) or _DIAG_SIGN.search(text):
        return _diag_table_sentence(text)
    found = _FOUND.search(text)
    if found and _DISCOVERY_HEADER.search(text):
        names = [m.group(1) for m in _DISCOVERY_NAME.finditer(text)]
        null = sum(1 for n in names if "NULL" in n)
        shown = f"; {len(names)} of them shown" if len(names) < int(found.group(1)) else ""
        said = (
            f", names not read by DCGM (`{names[0]}`){shown}"
            if null == len(names) and names
            else f" ({', '.join(dict.fromkeys(names))}{shown})"
            if names
            else ""
        )
        return (
            f"a `dcgmi discovery -l` listing of {found.group(1)} GPUs{said}: DCGM's view of the"
            f" GPUs, which this tool does not judge: {_SAVE_SMI}."
        )
    command = _DCGMI_COMMAND.search("\n".join(text.splitlines()[:3]))
    if command:
        return (
            f"a `dcgmi {command.group(1)}` output (DCGM's, not nvidia-smi's), which this tool does"
            f" not read: {_SAVE_SMI}."
        )
    return ""


def _diag_table_sentence(text: str) -> str:
    """`dcgmi diag -r N`'s text table: its DCGM version, driver, Fail/Warn rows, cut or whole."""
    command = _DCGMI_COMMAND.search(text)
    level = re.search(r"-r[ \t]*(\S+)", command.group(2)) if command else None
    named = f"`dcgmi diag -r {level.group(1)}`" if level else "`dcgmi diag`"
    values = dict(_DIAG_VALUE.findall(text))
    rows = _DIAG_ROW.findall(text)
    bad = [f"{name}: {result}" for name, result in rows if not result.startswith(("Pass", "Skip"))]
    lines = [line for line in text.splitlines() if line.strip()]
    whole = bool(lines) and _BORDER.match(lines[-1]) is not None
    said = [f"DCGM {values['DCGM Version']}"] if "DCGM Version" in values else []
    said += [f"driver {values['Driver Version Detected']}"] if "Driver Version Detected" in values else []
    said.append(f"{len(rows)} test rows read")
    said.append(f"its Fail/Warn rows: {'; '.join(bad)}" if bad else "none of them Fail or Warn")
    said.append("whole" if whole else "cut short before its closing border")
    return (
        f"a {named} table ({', '.join(said)}): DCGM's diagnostics, which `invoke facts` does not"
        " judge (`invoke prove` runs `dcgmi diag -j` on the box and judges it), nor does it name the"
        f" GPUs' model, count or driver for the order: {_SAVE_SMI}."
    )


def _diag_json_sentence(text: str) -> str:
    """`dcgmi diag -j`'s JSON: its DCGM version, driver, failing and warning tests, cut or whole."""
    diag = dcgm.parse(text)
    tests = diag.tests or diag.partial
    bad = [
        f"{t.name}: {t.raw_status}" + (f" on GPU {', '.join(t.gpus)}" if t.gpus else "")
        for t in tests
        if t.status in ("fail", "warn")
    ]
    said = [f"DCGM {diag.version}"] if diag.version else []
    said += [f"driver {diag.driver}"] if diag.driver else []
    said.append(f"{len(tests)} tests read")
    said.append(f"failing or warning: {'; '.join(bad)}" if bad else "none of them Fail or Warn")
    whole = "cut short" if diag.cut else "not whole" if diag.error or diag.partial else "whole"
    said.append(whole)
    return (
        f"a `dcgmi diag -j` document ({', '.join(said)}): DCGM's diagnostics, which `invoke facts`"
        " does not judge (`invoke prove` runs it on the box and judges it), nor does it name the"
        f" GPUs' model, count or driver for the order: {_SAVE_SMI}."
    )


def _accelerate_sentence(text: str) -> str:
    """Hugging Face's `accelerate env` (or `transformers env`, `diffusers-cli env`) report: its
    System RAM and GPU type said, not judged."""
    tool = _HF_VERSION.search(text)
    if tool is None or not _HF_SIGNS.search(text):
        return ""
    says = dict(_HF_SAYS.findall(text))
    shown = "; ".join(f"{k}: {v}" for k, v in says.items())
    name = tool.group(1).lower()
    return (
        f"{'an' if name[0] in 'aeiou' else 'a'} `{name} env` report{f' ({shown})' if shown else ''},"
        " Hugging Face's"
        " environment report: its GPU type is torch's name of one GPU (no count, no driver) and its"
        " System RAM psutil's total rounded to hundredths, which this tool does not read: save"
        " `nvidia-smi -q` and `free -k` of the box."
    )


def _top_graph_sentence(text: str) -> str:
    """procps top's graph-mode memory summary whose total could not be read (cut, or `+`)."""
    graph = _TOP_GRAPH.search(text)
    if graph is None:
        return ""
    return (
        f"top's memory summary in its graph mode (`{graph.group(1)} Mem : {graph.group(2)}/"
        f"{graph.group(3)}`, the percentage used over the total), whose total cannot be read here:"
        " save `top -b -n 1` or `free -k` of the box."
    )
