"""A saved environment report of PyTorch (`python -m torch.utils.collect_env`), vLLM's or
ScaleLLM's collect_env.py (the same report with lines of their own) and SGLang's
`python -m sglang.check_env`: the report issue threads ask for, pasted whole.

Real shapes (tests/fixtures/real/collect_env__*, check_env__*):

    Is CUDA available: True
    GPU models and configuration:
    GPU 0: NVIDIA H20                       (or inline: `... configuration: GPU 0: NVIDIA A100 ...`)
    Nvidia driver version: 550.144.03
    CPU:
    Architecture:                         x86_64     (lscpu's output, up to a blank line)

    CUDA available: True                    (check_env)
    GPU 0,1,2,3,4,5,6,7: NVIDIA B200        (one line for the GPUs of one name)
    GPU 0: NVIDIA L40 (x8)                  (vLLM's sectioned report: a run of 8 GPUs of one name)
    CUDA Driver Version: 590.48.01
    NVIDIA Topology:                        (`nvidia-smi topo -m`'s matrix; collect_env's `GPU topology:`)

The report is read as the outputs it holds: its GPU lines as a listing without UUIDs (model and
count; no memory), its lscpu block, its topology matrix, SGLang's `NVCC:` line. collect_env's GPU
lines are `nvidia-smi -L`'s with the UUIDs taken out (torch/utils/collect_env.py get_gpu_info):
every GPU of the box, a MIG box's indented `  MIG 3g.40gb     Device  0:` lines kept under their
GPU (MIG enabled). check_env's are torch's view (`torch.cuda.device_count()`), which
CUDA_VISIBLE_DEVICES narrows: that listing is read as a view of some GPUs (`ProbeOutput.partial`:
fewer GPUs than ordered are unverified, never missing), told by the report's own lines
(`CUDA available:`, `GPU 0,1:`), never by a line's place; torch's name of a MIG slice
(`NVIDIA A100-SXM4-80GB MIG 3g.40gb`) is read as the GPU's name with a MIG device under it. A
collect_env run in a container given some GPUs (vLLM's env section prints
`NVIDIA_VISIBLE_DEVICES=` other than `all`) lists only those: partial too. A report that lists
no GPU (`Is CUDA available: False`, `Could not collect`) says nothing of the box's GPUs. The driver version it
torch's (vLLM's) collect_env reads its `Nvidia driver version` from the box's `nvidia-smi` (the
table banner's value): beside its GPU lines it is read as the box's driver answer (the format
"env", compared with any other nvidia-smi output given); so is SGLang's `CUDA Driver Version`, the
value of the box's `nvidia-smi --query-gpu=driver_version` (round 33). A driver line of a report
that lists no GPU, or one that is no version, is said in a note (the rules do not judge it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.api.transcript import command_of
from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.gpu_probes import ENV_DRIVER_PROBE, ENV_PLATFORM_PROBE
from gpuonboard.once import lazy_re

# a line only these reports print (torch's collect_env and its copies; sglang's check_env)
# (vLLM's newer report pads its labels: `Is CUDA available            : True`)
_SIGNS = re.compile(
    r"^(?:PyTorch version\s*: |Is CUDA available\s*: |GPU models and configuration\s*:"
    r"|Nvidia driver version\s*: |CUDA_MODULE_LOADING set to\s*: |CUDA Driver Version: "
    r"|CUDA available: (?:True|False)\s*$|PyTorch: \S|sglang: \S|CUDA_HOME: "
    r"|Collecting environment information\.\.\.$)",  # (its first line: a report cut before the GPUs)
    re.M,
)
_GPUS_LABEL = re.compile(r"^GPU models and configuration\s*:[ \t]*(.*)$")
# `GPU 0: NVIDIA H20`; check_env's `GPU 0,1,2,3: NVIDIA B200` (its `... Compute Capability: 10.0` not)
_GPU_LINE = re.compile(r"^GPU (\d+(?:,\d+)*): (.+?)\s*$")
# a MIG device under a GPU line (collect_env's -L lines keep them, UUIDs taken out; its indent
# may be lost in a paste)
_MIG_LINE = re.compile(r"^\s*MIG\s+\S+\s+Device\s+\d+:")
# torch's device name of a MIG slice (check_env): `NVIDIA A100-SXM4-80GB MIG 3g.40gb`
_MIG_NAME = re.compile(r"^(.+?)\s+MIG\s+(\d+(?:c\.\d+)?g\.\d+gb\S*)$")
# vLLM's newer report writes a run of GPUs of one name on one line: `GPU 0: NVIDIA L40 (x8)` is
# eight L40s from GPU 0 on (never a name: no GPU's name ends in a count)
_RUN_OF = lazy_re(r"^(.+?)\s*\(x(\d{1,3})\)$")
# check_env's own lines: torch's view of the GPUs, whatever their position in the report
_CHECK_ENV = re.compile(r"^(?:CUDA available: (?:True|False)\s*$|GPU \d+(?:,\d+)+: )", re.M)
_DRIVER = re.compile(r"^(?:Nvidia driver version|CUDA Driver Versions?)\s*:[ \t]*(\S.*?)\s*$", re.M)
# torch's line (vLLM's too), the value torch/utils/collect_env.py get_nvidia_driver_version reads
# from the box's `nvidia-smi` banner (`Driver Version: (.*?) `): an NVIDIA driver's version, its
# line ended (a text that ends inside the line was cut there: `550.9` of 550.90.07 is no version)
# SGLang's check_env prints `CUDA Driver Version: 575.57.08`, the one value of the box's `nvidia-smi
# --query-gpu=driver_version` (sglang/check_env.py _get_cuda_driver_version; `CUDA Driver Versions:
# a, b` where the GPUs answer several, `Not Available` where nvidia-smi failed: neither read)
_SMI_DRIVER = re.compile(
    r"^(Nvidia driver version\s*|CUDA Driver Version):[ \t]*(\d{3,}\.\d+(?:\.\d+)?)[ \t\r]*\n", re.M
)
# lscpu's first line (below collect_env's `CPU:`, or vLLM's `==== CPU Info ====` banner)
_LSCPU_FIRST = re.compile(r"^Architecture\s*:")
# collect_env on Windows prints Win32_Processor's fields under `CPU:` (`Name: 12th Gen Intel(R) ...`,
# `Manufacturer:`, `Family: 198`, `Architecture: 9`, `ProcessorType: 3`, ...), no lscpu: its
# Architecture a number (lscpu's is a name, `x86_64`); the block starts below the `CPU:` label
_WINDOWS_ARCHITECTURE = lazy_re(r"Architecture\s*:\s*\d+\s*")
WINDOWS_CPU = "Windows CPU fields (Win32_Processor)"
_TOPO_LABEL = re.compile(r"^(?:GPU topology|NVIDIA Topology)\s*:[ \t]*(.*)$")
# an unindented `Label: value` line: the report's next field (a matrix row, `Legend:` are not)
_FIELD = re.compile(r"^(?!GPU\d|NIC\d|Legend:|NIC Legend:)[A-Za-z][^:\n]*:(?:\s+\S|\s*$)")
_NVCC = re.compile(r"^NVCC: (Cuda compilation tools, release .*)$", re.M)
_NO_CUDA = re.compile(r"^(?:Is CUDA available|CUDA available)\s*: False\s*$", re.M)

# why check_env's GPU lines are a view of some GPUs (ProbeOutput.partial)
VISIBLE = (
    "sglang's check_env lists the GPUs torch sees, which CUDA_VISIBLE_DEVICES narrows: the box may"
    " have others"
)

# a container's GPUs (vLLM's report prints the NVIDIA_* variables): a value but `all` names some
_CONTAINER_GPUS = re.compile(r"^NVIDIA_VISIBLE_DEVICES=(.*?)[ \t]*$", re.M)


# a container shares its host's kernel: a report whose userland (`OS: Ubuntu 22.04.3 LTS`) is of
# another distribution than the one its kernel was built for (`Python platform:
# Linux-5.14.0-284.59.1.el9_2.x86_64-...`: RHEL 9's) ran in a container, given some GPUs or all
_PLATFORM_KERNEL = re.compile(
    r"^Python platform\s*:\s*Linux-(\S+?)-(?:x86_64|aarch64|ppc64le|s390x)-with", re.M
)
_OS_LINE = re.compile(r"^OS\s*:\s*(.+?)\s*$", re.M)
# (a distribution, the tag of its kernels' release, the words of its OS line)
_DISTRIBUTIONS = (
    ("rhel", re.compile(r"\.el\d"), re.compile(r"Red Hat|CentOS|Rocky|AlmaLinux|Oracle Linux", re.I)),
    ("fedora", re.compile(r"\.fc\d"), re.compile(r"Fedora", re.I)),
    ("amazon", re.compile(r"\.amzn\d"), re.compile(r"Amazon Linux", re.I)),
    (
        "ubuntu",
        re.compile(r"^\d+\.\d+\.\d+-\d+-(?:generic|aws|azure|gcp|gke|oracle|nvidia|kvm|lowlatency|ibm)"),
        re.compile(r"Ubuntu", re.I),
    ),
    ("debian", re.compile(r"^\d+\.\d+\.\d+-\d+-(?:cloud-)?(?:amd64|arm64)$"), re.compile(r"Debian", re.I)),
)


def _other_kernel(text: str) -> str:
    """Why the report ran in a container, told by its OS line and its kernel's release being of
    two distributions (`OS: Ubuntu 22.04.3 LTS` on `5.14.0-284.59.1.el9_2.x86_64`); "" where they
    agree or either is not known."""
    kernel, os_line = _PLATFORM_KERNEL.search(text), _OS_LINE.search(text)
    if kernel is None or os_line is None:
        return ""
    built = next((name for name, tag, _ in _DISTRIBUTIONS if tag.search(kernel.group(1))), None)
    runs = next((name for name, _, words in _DISTRIBUTIONS if words.search(os_line.group(1))), None)
    if built is None or runs is None or built == runs:
        return ""
    return (
        f"the report's OS ({os_line.group(1)}) is not of the distribution its kernel"
        f" ({kernel.group(1)}) was built for: it ran in a container, and nvidia-smi -L there lists"
        " only the GPUs given to it"
    )


def _container(value: str) -> str:
    """Why a listing run in a container given some GPUs (`NVIDIA_VISIBLE_DEVICES`) is partial."""
    return (
        f"the report's NVIDIA_VISIBLE_DEVICES={value} gives its container some GPUs of the box, and"
        " nvidia-smi -L there lists only those"
    )


@dataclass(frozen=True)
class EnvPart:
    """One output the report holds: the probe kind it is read as, its text, what it is, and why
    it shows only part of the box ("" when whole)."""

    kind: str
    text: str
    what: str
    partial: str = ""


def copied_command(text: str) -> str:
    """The command copied above a report (`kubectl exec -it pod -- python collect_env.py` of `$
    kubectl exec ...`, or the command alone naming collect_env or check_env), "" for none."""
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    command = command_of(first)
    if command != first or re.search(r"\b(?:collect_env|check_env)\b", first):
        return command
    return ""


def looks_like_collect_env(text: str) -> bool:
    """Two or more lines only these reports print (one could be quoted in any page)."""
    return len({m.group(0) for m in _SIGNS.finditer(text[:20000])}) >= 2


def _gpu_lines(lines: list[str]) -> list[str]:
    """The report's GPU lines as `nvidia-smi -L`'s without UUIDs, one per GPU index, each with
    the indented MIG lines under it (`  MIG 3g.40gb     Device  0:`); a name torch gives a MIG
    slice (`NVIDIA A100-SXM4-80GB MIG 3g.40gb`) is the GPU's name with a MIG line of that profile."""
    gpus: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in lines:
        if label := _GPUS_LABEL.match(line):
            line = label.group(1)
        if last is not None and _MIG_LINE.match(line):
            last.append(line.rstrip())
            continue
        last = None
        if (m := _GPU_LINE.match(line.strip())) and "Compute Capability" not in line:
            name, indices = _named_run(m.group(1), m.group(2))
            mig = _MIG_NAME.match(name)
            under = [f"  MIG {mig.group(2)}     Device  0:"] if mig else []
            for i in indices:
                last = gpus.setdefault(f"GPU {i}: {mig.group(1) if mig else name}", list(under))
    return [line for gpu, migs in gpus.items() for line in (gpu, *migs)]


def _named_run(indices: str, name: str) -> tuple[str, list[str]]:
    """The name and GPU indices of one GPU line: check_env's `GPU 0,1,2,3: NAME` the GPUs it names,
    vLLM's `GPU 0: NAME (x8)` eight GPUs of that name from GPU 0 on."""
    run = _RUN_OF.match(name)
    if run is None or "," in indices or int(run.group(2)) < 1:
        return name, indices.split(",")
    return run.group(1), [str(int(indices) + k) for k in range(int(run.group(2)))]


def _is_gpu_line(line: str) -> bool:
    """Whether `line` is one of the report's GPU lines (its label's line holding one too) or a
    MIG line under one."""
    if label := _GPUS_LABEL.match(line):
        line = label.group(1)
    return bool(_MIG_LINE.match(line) or (_GPU_LINE.match(line.strip()) and "Compute Capability" not in line))


def _list_cut(lines: list[str]) -> str:
    """Why the report's GPU lines are not all of them ("" where they are): the report prints its
    next field after them (`Nvidia driver version:`, check_env's `GPU 0 Compute Capability:`), so
    a list the text ends in (`| head -21`, a paste cut there), one followed by other text (`^C`),
    or one with a line a paste put for lines it left out (`...`) may lack GPUs."""
    at = [i for i, line in enumerate(lines) if _is_gpu_line(line)]
    for line in (*lines[at[0] : at[-1] + 1], *lines[at[-1] + 1 :]):
        if not line.strip() or _is_gpu_line(line):
            continue
        if ELISION.match(line):
            return (
                f"the report's GPU list holds `{line.strip()}`, lines left out by hand: other GPUs"
                " may be among them"
            )
        if _FIELD.match(line) or line.startswith("==="):  # (the report's next field: the list is whole)
            return ""
        return (
            f"the report's GPU list is followed by `{line.strip()[:40]}`, no line of the report (its"
            " output stopped there): other GPUs may follow"
        )
    return (
        "the report ends inside its GPU list (the lines it prints after it are not there): other"
        " GPUs may follow"
    )


def _matrix(lines: list[str], start: int, first: str) -> str:
    """The topology matrix from line `start` on (its header `first` where it is on the label's
    line), up to the report's next field (its legend's blank lines kept)."""
    kept = [first] if first.strip() else []
    for line in lines[start + 1 :]:
        if _FIELD.match(line):
            return "\n".join(kept).strip("\n") + "\n"
        kept.append(line)
    return _to_end(kept)


def _lscpu(lines: list[str], start: int) -> str:
    """lscpu's output from its first line `start`, up to a blank line or a banner's `===` line."""
    kept: list[str] = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("==="):
            return "\n".join(kept) + "\n"
        kept.append(line)
    return _to_end(kept)


def _to_end(kept: list[str]) -> str:
    """A block that runs to the text's end: ended inside its last line where the text has no
    final newline (the parsers read that cut), else whole lines."""
    text = "\n".join(kept)
    return text if kept and kept[-1].strip() else text.rstrip("\n") + "\n"


# a topology matrix's header: its GPU columns (`GPU0 GPU1`), then at least one column of another
# device or of the GPUs' affinities (`NIC0`, `mlx5_0`, `CPU Affinity`): a header cut after its
# GPUs (or inside them) proves nothing of how many the box has
_TOPO_HEADER = lazy_re(r"[ \t]*(?P<gpus>GPU0(?:[ \t]+GPU\d+)*)[ \t]+(?!GPU\d)\S.*")


def _topo_lists(lines: list[str], gpus: list[str]) -> bool:
    """Whether the report's topology matrix (`NVIDIA Topology:`, `nvidia-smi topo -m`'s, which
    CUDA_VISIBLE_DEVICES does not narrow) has a whole header line listing as many GPUs as torch's
    list, GPU0 to GPU(n-1): then torch saw every GPU of the box (measure39e 06, 07)."""
    listed = sum(1 for line in gpus if line.startswith("GPU "))
    for i, line in enumerate(lines):
        if (label := _TOPO_LABEL.match(line)) is None:
            continue
        at = (
            i
            if label.group(1).strip()
            else next((j for j in range(i + 1, len(lines)) if lines[j].strip()), -1)
        )
        header = label.group(1) if at == i else lines[at] if at >= 0 else ""
        whole = 0 <= at < len(lines) - 1  # (a line end after it: not cut inside)
        found = _TOPO_HEADER.fullmatch(header)
        if found and whole:
            return found.group("gpus").split() == [f"GPU{n}" for n in range(listed)]
    return False


def parts(text: str) -> tuple[list[EnvPart], list[str]]:
    """The outputs the report holds, and what of it is said, not read (notes' clauses)."""
    lines = text.split("\n")
    found: list[EnvPart] = []
    gpus = _gpu_lines(lines)
    if gpus:
        # (a last GPU line the text ends inside is kept open: -L's reader says a cut entry)
        tail = gpus[-1].strip().split(": ", 1)[-1]
        end = "" if text.rstrip(" \t").endswith(tail) and not text.endswith("\n") else "\n"
        view = VISIBLE if _CHECK_ENV.search(text) and not _topo_lists(lines, gpus) else ""
        if not view and (env := _CONTAINER_GPUS.search(text)) and env.group(1) != "all":
            view = _container(env.group(1))
        view = _list_cut(lines) or view or _other_kernel(text)
        found.append(EnvPart("nvidia_smi_list", "\n".join(gpus) + end, "GPU list", view))
    for i, line in enumerate(lines):
        if _LSCPU_FIRST.match(line) and not any(p.kind == "lscpu" for p in found):
            if _WINDOWS_ARCHITECTURE.fullmatch(line):  # (from below `CPU:`: its Name, Manufacturer ...)
                label = next((j for j in range(i - 1, -1, -1) if lines[j].strip() in ("CPU:", "")), i - 1)
                found.append(EnvPart("lscpu", _lscpu(lines, label + 1), WINDOWS_CPU))
            else:
                found.append(EnvPart("lscpu", _lscpu(lines, i), "lscpu"))
        elif m := _TOPO_LABEL.match(line):
            matrix = _matrix(lines, i, m.group(1))
            if "GPU0" in matrix:
                found.append(EnvPart("nvidia_topo", matrix, "topo -m"))
    if nvcc := _NVCC.search(text):
        found.append(EnvPart("nvcc", nvcc.group(1) + "\n", "nvcc"))
    said: list[str] = []
    if gpus and (smi := _SMI_DRIVER.search(text)):
        sglang = smi.group(1) == "CUDA Driver Version"
        origin = (
            "nvidia-smi --query-gpu=driver_version's, as check_env"
            if sglang
            else "nvidia-smi's, as collect_env"
        )
        found.append(EnvPart(ENV_DRIVER_PROBE, smi.group(2) + "\n", f"driver line ({origin} read it)"))
    elif (driver := _DRIVER.search(text)) and driver.end() == len(text.rstrip(" \t\r")):
        said.append(
            f"its driver line ({driver.group(0).strip()}) ends the text without a line end: cut"
            " short, not judged"
        )
    elif driver:
        said.append(
            f"its driver line ({driver.group(0).strip()}) is not judged: save `nvidia-smi` of the box"
            " to judge it"
        )
    if found and (platform := _PLATFORM_KERNEL.search(text)):
        # (Python's `platform.platform()` names uname's release: a WSL2 guest's kernel,
        # `5.15.153.1-microsoft-standard-WSL2`, says the GPU is the Windows host's)
        found.append(EnvPart(ENV_PLATFORM_PROBE, platform.group(1) + "\n", "platform line"))
    if not gpus:
        said.append(_no_gpu_lines(lines, text))
    return found, said


def _no_gpu_lines(lines: list[str], text: str) -> str:
    """What a report without `GPU N:` lines says of its GPUs: a value of another form (ROCm's
    or macOS's device name alone, `Could not collect`) is quoted, never read as a count."""
    value = next((m.group(1).strip() for line in lines if (m := _GPUS_LABEL.match(line))), "")
    shown = f" (`GPU models and configuration: {value}`)" if value else ""
    cuda = " and torch found no CUDA there" if _NO_CUDA.search(text) else ""
    return (
        f"it lists no GPU by index{shown}{cuda}, which says nothing of the box's GPUs: save"
        " `nvidia-smi -q` of the box"
    )
