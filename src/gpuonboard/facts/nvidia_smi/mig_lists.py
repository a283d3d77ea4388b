"""`nvidia-smi mig -lgip` / `-lcip` (the MIG profiles a GPU offers) and `mig -lgi` / `-lci` (the
GPU and compute instances made) a user saved: a table headed `GPU instance profiles:`,
`Compute instance profiles:`, `GPU instances:` or `Compute instances:`, one row (or two) per
profile or instance with the GPU's index. None names the GPU's model, its memory total, the
driver or how many GPUs the box has, so none is read as a GPU listing; `mig_list_refusal` names
which it is and the GPUs its rows show, for the offline reader's refusal, as the dmon / pmon
samples are named (facts/nvidia_smi/monitor.py). Real shapes: NVIDIA/mig-parted issue #227 (a
GB200's `mig -lgip`), pull request #166 (a B200's)."""

from __future__ import annotations

import re

# each list's title row (`| GPU instance profiles: |`) and the command that prints it
_TITLES = {
    "gpu instance profiles": ("mig -lgip", "the GPU instance profiles"),
    "compute instance profiles": ("mig -lcip", "the compute instance profiles"),
    "gpu instances": ("mig -lgi", "the GPU instances"),
    "compute instances": ("mig -lci", "the compute instances"),
}
_TITLE = re.compile(
    r"^[ \t]*\|\s*(GPU instance profiles|Compute instance profiles|GPU instances|Compute instances):\s*\|",
    re.I | re.M,
)
# a row's GPU index and the profile it names (`|   0  MIG 1g.23gb   19   7/7 ...`)
# (its index in the first columns: a profile's second row, `|      2     1     0 |`, is none)
_ROW = re.compile(r"^[ \t]*\|[ \t]{1,4}(\d+)[ \t]+(MIG[ \t]+\S+)?", re.M)


def mig_list_refusal(text: str) -> str | None:
    """The sentence refusing a saved `nvidia-smi mig -lgip` (`-lcip`, `-lgi`, `-lci`) list,
    naming the GPUs and profiles its rows show; None for other text."""
    title = _TITLE.search(text[:4000])
    if title is None:
        return None
    command, what = _TITLES[title.group(1).lower()]
    rows = [(int(m.group(1)), m.group(2)) for m in _ROW.finditer(text[title.end() :])]
    gpus = sorted({gpu for gpu, _ in rows})
    profiles = list(dict.fromkeys(" ".join(p.split()) for _, p in rows if p))
    named = f": {', '.join(profiles[:4])}{', ...' if len(profiles) > 4 else ''}" if profiles else ""
    on = f" of GPU {', '.join(map(str, gpus))}" if gpus else ""
    return (
        f"an `nvidia-smi {command}` list of {what}{on}{named}, which names no GPU model, memory"
        " total or driver, so no GPU can be judged from it: save `nvidia-smi -q` (or the plain"
        " `nvidia-smi`) of the box."
    )
