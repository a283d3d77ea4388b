"""nvidia-smi's refusals of what it was asked (an operation other than its query, its command
line, a command the GPU does not support, a command line the terminal wrapped) and the other
saved outputs that say nothing of the box (a copied command with no output, a tool's own message
alone, an empty file), each said in one sentence naming the file (from api/saved_forms.py)."""

from __future__ import annotations

import re

from gpuonboard.api.shell_traces import without_wrap_traces
from gpuonboard.masking import command_said

# nvidia-smi's refusal of an operation other than the query of the GPUs, NVML's error after it:
# `nvidia-smi mig -lci`'s "Failed to display compute instances: Insufficient Permissions", `-pm
# 1`'s "Unable to set persistence mode for GPU ...: Insufficient Permissions", `mig -cgi`'s
# "Unable to create a GPU instance ...", NVML's "Failed to properly shut down NVML: ..." below its
# init failure: none says the query read no GPU (the plain nvidia-smi of a login that may not
# list or change MIG instances reads them), so none is nvidia-smi's failure; its query's own
# words are "Failed to initialize NVML: ..." and "Unable to determine the device handle ..."
# (nvidia-smi's "Terminating early due to previous errors." follows such a refusal). Only NVML's
# refusals of that operation (Insufficient Permissions, No permission, Not Supported, In use by
# another client, Not Found, Invalid Argument): a state error it prints (GPU is lost, GPU
# requires reset, Driver Not Loaded, Unknown Error, Timeout, GPU access blocked) is the box's,
# which the query meets too: a failed nvidia-smi, its line quoted
OTHER_OPERATION = re.compile(
    r"(?:Failed|Unable) to (?!initialize NVML\b|(?:determine|detect) the device handle\b).*:\s*"
    r"(?:Insufficient"
    r" Permissions|Not Supported|Not Found|In use by another client|Invalid Argument|No permission)"
    r"\.?$|Terminating early due to previous errors\.?$",
    re.I,
)
# NVML's state error after any operation's words: the box's (the query meets it too)
STATE_ERROR = re.compile(
    r"(?:Failed|Unable) to .*:\s*(?:Unknown Error|Driver Not Loaded|GPU is lost|GPU requires reset"
    r"|Timeout|GPU access blocked by the operating system)\.?$",
    re.I,
)


# nvidia-smi's refusal of its own command line, before it reads a GPU: a field this driver does
# not know (`Field "cuda_version" is not a valid field to query.`), an option it does not take
# (Windows' nvidia-smi has no `topo`: `ERROR: Option -m is missing its value. Please run
# 'nvidia-smi -h' for help.`), options it cannot combine
USAGE_ERROR = re.compile(
    r"Field \"[^\"]+\" is not a valid field to query\.?|.*\bPlease run 'nvidia-smi (?:-h|--help[\w-]*)'"
    r" for help\.?|(?:ERROR: )?Invalid combination of input arguments\.?"
    # an option that needs another (`The -i command line argument must be used in conjunction
    # with -n or -p.`: `topo -i`), or a value (`Option "-i" requires an argument`)
    r"|(?P<needs>The -{1,2}[\w-]+) command line argument must be used in conjunction with .*"
    r"|(?:ERROR: )?Option \"?-{1,2}[\w-]+\"? requires .*"
    # the line nvidia-smi ends each refusal of its command line with, after the reason
    r"|Failed to process command line\.?"
)
# nvidia-smi's refusal of a command the GPU or driver does not support (`nvidia-smi dmon` of a GeForce
# GT 640 under driver 415: `Not supported on the device(s)`, then `Failed to process command line`)
NOT_ON_DEVICE = re.compile(r"Not supported on the device\(s\)\.?", re.I)


# a shell comment of a few words a poster put under the command (`# output`, `# Output:`)
_COMMENT = re.compile(r"#+\s*\w[\w ]{0,30}:?")


def _without_refused_option(copied: str, said: list[str]) -> str:
    """The copied command (`nvidia-smi topo -m -i 0`) without the option nvidia-smi's refusal
    names as needing another (`The -i command line argument must be used ...`) and its value:
    `nvidia-smi topo -m`; "" where no command was copied or no option is named."""
    found = next((m for line in said if (m := USAGE_ERROR.match(line)) and m.group("needs")), None)
    if found is None or not copied.strip():
        return ""
    option = found.group("needs").split()[-1]
    words = copied.split()
    if option not in words:
        return ""
    at = words.index(option)
    value = at + 1 < len(words) and not words[at + 1].startswith("-")
    return " ".join(words[:at] + words[at + 1 + value :])


# a copied nvidia-smi command's arguments (after a prompt, sudo or a path)
_SMI_ARGS = re.compile(r"\bnvidia-smi(?:\.exe)?[ \t]+(?P<args>[^|;&<>]+)")


def wrapped_refusal(where: str, text: str) -> str | None:
    """The sentence refusing nvidia-smi's refusal of a command line the terminal wrapped (its
    rest on the next line, which the shell ran as a command of its own and said it names none:
    api/shell_traces.py), or None where `text` holds no such traces or other lines than those and
    nvidia-smi's refusal (beszel#262: before, said as an output this tool could not read, or read
    as a CSV whose header was the command's rest)."""
    said = [line.strip() for line in text.splitlines() if line.strip()]
    refused, wrapped = without_wrap_traces(said)
    if not wrapped or not refused or not all(USAGE_ERROR.match(line) for line in refused):
        return None
    return (
        f"{where}: nvidia-smi's refusal of the command line it was given (`{refused[0]}`): the"
        f" terminal wrapped the command line, and the shell ran its rest (`{wrapped[:60]}`) as a"
        " command of its own; nothing was read of the box: save the command's output again with"
        " the whole command on one line."
    )


# `nvidia-smi --gpu-reset` (`-r`)'s refusal: its heading, a line a GPU with NVML's reason (a
# page may put a blank line between them), then its advice where a client holds the GPU (`1
# device is currently being used by one or more other processes (e.g., Fabric Manager, ...`,
# wrapped or not) and a poster's echo of the exit code (`RESET_RC=255`)
_RESET_HEAD = re.compile(r"The following GPUs could not be reset:")
_RESET_GPU = re.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]:\s*(?P<why>.+?)\.?")
_RESET_ADVICE = re.compile(r"\d+ devices? (?:is|are) currently being used by .*")
_EXIT_ECHO = re.compile(
    r"[A-Z_]*(?:RC|EXIT|STATUS|CODE)[A-Z_]*=\d+|Terminating early due to previous errors\.?"
)
# NVML's refusals of that reset (OTHER_OPERATION's): a state error (GPU is lost) is the box's
_REFUSED_WHY = re.compile(
    r"Insufficient Permissions|Not Supported|Not Found|In use by another client|Invalid Argument"
    r"|No permission",
    re.I,
)


def reset_refusal(where: str, text: str) -> str | None:
    """The sentence refusing nvidia-smi's refusal of a GPU reset (`nvidia-smi --gpu-reset -i 7`:
    `The following GPUs could not be reset:` / `GPU 00000000:CC:00.0: In use by another client`),
    an operation other than its query, where each GPU's reason is NVML's refusal of it; None
    otherwise (m36d 11: it was "not a recognised command output")."""
    said = [line.strip() for line in text.splitlines() if line.strip()]
    if not said or not _RESET_HEAD.fullmatch(said[0]):
        return None
    gpus: list[str] = []
    for at, line in enumerate(said[1:], 1):
        if _EXIT_ECHO.fullmatch(line):
            continue
        if _RESET_ADVICE.match(line):  # (its advice, to the end: wrapped over lines or not)
            if any(_RESET_GPU.fullmatch(rest) for rest in said[at:]):
                return None
            break
        found = _RESET_GPU.fullmatch(line)
        if found is None or not _REFUSED_WHY.fullmatch(found.group("why")):
            return None
        gpus.append(line)
    if not gpus:
        return None
    more = f", and {len(gpus) - 1} more GPU{'s' if len(gpus) > 2 else ''}" if len(gpus) > 1 else ""
    return (
        f"{where}: nvidia-smi's refusal of a GPU reset (`--gpu-reset`, `-r`: `{gpus[0]}`{more}), an"
        " operation other than its query of the GPUs, which does not say whether nvidia-smi reads"
        " them: save the plain `nvidia-smi` (or `nvidia-smi -q`) output of the box."
    )


def empty_or_refused(where: str, text: str, copied: str, warned: str = "") -> str | None:
    """The sentence refusing a saved output that is nvidia-smi's refusal of an operation or of
    its command line, a copied command with no output, a tool's own message alone (`warned`:
    the lines split off as its stderr, `lsblk: unknown column: TRAN`), or an empty file, or None."""
    from gpuonboard.api.nvml_refusal import nvml_refusal

    said = [line.strip() for line in text.splitlines() if line.strip()]
    if said and all(OTHER_OPERATION.match(line) for line in said) and not said[0].startswith("Term"):
        return (
            f"{where}: nvidia-smi's refusal of an operation other than its query of the GPUs"
            f" (`{said[0]}`), which does not say whether nvidia-smi reads them: save the plain"
            " `nvidia-smi` (or `nvidia-smi -q`) output of the box."
        )
    if (named := nvml_refusal(where, text, copied)) is not None:  # (`nvidia-smi nvlink -g 0`, its GPU line)
        return named
    # (a poster's comment between the command and its output, `# output`, is none of it)
    refused = [line for line in said if not _COMMENT.fullmatch(line)]
    unsupported = [line for line in refused if NOT_ON_DEVICE.fullmatch(line)]
    if unsupported and all(NOT_ON_DEVICE.fullmatch(line) or USAGE_ERROR.match(line) for line in refused):
        ran = _SMI_ARGS.search(copied or "")
        named = f"`nvidia-smi {' '.join(ran.group('args').split())}`" if ran else "the command it was given"
        return (
            f"{where}: nvidia-smi's refusal of {named} (`{unsupported[0]}`): this GPU or driver does"
            " not support that command, which read no GPU and says nothing of the box: save the"
            " plain `nvidia-smi` (or `nvidia-smi -q`) output of the box."
        )
    if refused and all(USAGE_ERROR.match(line) for line in refused):
        said, plain = refused, _without_refused_option(copied, refused)
        return (
            f"{where}: nvidia-smi's refusal of the command line it was given (`{said[0]}`), which"
            " read no GPU and says nothing of the box: save the command's output again with the"
            + (f" option it names left out (`{plain}`)." if plain else " options this driver takes")
            + ("" if plain else " (`nvidia-smi -h`, `nvidia-smi --help-query-gpu` list them).")
        )
    if not said and (told := [line.strip() for line in warned.splitlines() if line.strip()]):
        whose = f"a copied command line (`{copied[:57]}`) whose output is only" if copied else "only"
        return (
            f"{where}: {whose} the tool's own message (`{told[0][:100]}`), which lists nothing"
            " of the box (the command failed, or this version of the tool does not take what it was"
            " asked): save the command's output where it ran without that message."
        )
    if not said and copied:  # (the file's only line was the copied command, dropped as such)
        copied = command_said(copied)  # (a password it holds masked: masking.PASSWORD_OPTIONS)
        shown = copied if len(copied) <= 60 else copied[:57].rstrip() + "..."
        return (
            f"{where}: a copied command line (`{shown}`) with no output below it (a command that"
            " printed nothing, as `nvidia-smi nvlink -s` of GPUs without NVLink, or a page that lost the"
            " line ends and put the output on the command's line): leave it out, or save the output"
            " under its command."
        )
    if not said:
        return (
            f"{where}: an empty file, which holds no command output to read (an `nvidia-smi nvlink -s`"
            " of GPUs without NVLink prints nothing): leave it out, or save the command's output again."
        )
    return None
