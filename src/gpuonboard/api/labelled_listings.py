"""Several `nvidia-smi -L` listings in one text, each below a line of a name alone (a pod's or a
container's: the output of a loop, `for i in 1 2 3; do echo pod-$i; kubectl logs pod-$i; done`):
each is that container's view of the GPUs it was given, never the box's set, and the names tell
which. Refused in one sentence saying what was seen (it was refused as "not a recognised command
output")."""

from __future__ import annotations

import re

_GPU = re.compile(r"^GPU \d+: .*\(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG \S+\s+Device\s+\d+: \(UUID: MIG-[0-9a-fA-F-]+\)\s*$")
_NAME = re.compile(r"^[A-Za-z0-9][\w.:/-]*$")


def labelled_listings(text: str) -> str:
    """Why `text`, two or more `nvidia-smi -L` listings each below a name line, is not read as
    the box's GPUs (one sentence); "" for any other text."""
    names: list[str] = []
    uuids: set[str] = set()
    listed = False  # (the current name's listing has a GPU line)
    for line in (raw.rstrip() for raw in text.splitlines()):
        if not line.strip():
            continue
        if m := _GPU.match(line):
            if not names:
                return ""
            uuids.add(m.group(1))
            listed = True
        elif _MIG.match(line):
            if not listed:
                return ""
        elif _NAME.match(line) and (not names or listed):
            names.append(line.strip())
            listed = False
        else:
            return ""
    if len(names) < 2 or not listed:
        return ""
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (", ..." if len(names) > 3 else "")
    one = f", all of one GPU (`{next(iter(uuids))}`)" if len(uuids) == 1 else ""
    return (
        f"{len(names)} `nvidia-smi -L` listings, each below a name line ({shown}){one}: the output of a"
        " loop over pods or containers (`kubectl logs POD` of each), each listing that container's view"
        " of the GPUs it was given, never the box's set, so no GPU count or model is read from it: save"
        " `nvidia-smi -L` run on the box itself (`nvidia-smi -L > gpus.txt`)."
    )
