"""A file refused among several given files (two `nvidia-smi -L` of one session, a `-q` part): a
note, the others judged, only where nothing it holds is of a kind another given file gives; else
the refusal stands (review revP F1: a session holding a GPU's fault, `-L` with 4 then 3 GPUs and
an Xid 79, beside a healthy table and a clean dmesg passed gpu_count and gpu_xid on the others).
Where it is a note, the rules its kinds feed are unverified (api/unread_files.py), so the note's
"what it would have shown is unverified" is true."""

from __future__ import annotations

from collections.abc import Collection, Mapping, MutableMapping, Sequence
from pathlib import Path

from gpuonboard.api import paste, transcript, typed_commands
from gpuonboard.api.kind_names import kind_name
from gpuonboard.api.listed_first import listed_first
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.api.saved_text import decode_saved, unquote
from gpuonboard.api.viewer_lines import unviewed
from gpuonboard.errors import UsageError
from gpuonboard.facts.gpu_probes import GPU_PROBES

# the kinds a refusal is read for by the name it says (`two `nvidia-smi -L` outputs`): the
# GPU outputs' and the listings' own names, never "kernel log", which many refusals name in
# their advice
_NAMED_KINDS = (*GPU_PROBES, "nvidia_topo", "nvidia_nvlink", "nvidia_nvlink_errors")


def family(kind: str) -> str:
    """The facts a kind gives: every nvidia-smi GPU output (`-q -x`, `-q`, CSV, table, `-L`) the
    GPUs' list, one family; any other kind its own."""
    return "nvidia_smi" if kind in GPU_PROBES or kind == "nvidia_smi" else kind


def held_kinds(data: bytes, why: str) -> set[str]:
    """The kinds of output a refused file holds: its text's, each command's of a session (with
    prompts, typed without them, or listed first), and the kinds its refusal names."""
    text = unviewed(paste.normalise(unquote(decode_saved(data))))
    texts = [text]
    for candidate in (text, typed_commands.prompted(text), listed_first(text)):
        parts = transcript.sections(candidate) if candidate is not None else None
        texts += [p.text for p in parts or ()]
    kinds = {kind for t in texts if (kind := detect_kind(t)) is not None}
    return kinds | {kind for kind in _NAMED_KINDS if kind_name(kind) in why}


def note_or_refuse(
    refused: Sequence[tuple[UsageError, Path, bytes]],
    given: Collection[str],
    skipped: Collection[Path],
    held: MutableMapping[Path, set[str]] | None,
) -> None:
    """Raise the first refusal where no other file is read (`given`: the kinds read, `skipped`:
    a run folder's files not read), as for the file given alone; else the first whose file holds
    a kind of output `given` holds too: the refused file may show the box otherwise than those (a
    GPU gone since, an Xid), so judging them alone would pass what it fails. Else record each
    file's kinds in `held`."""
    if refused and not given and not skipped:
        raise refused[0][0]
    families = {family(kind) for kind in given}
    for why, path, data in refused:
        kinds = held_kinds(data, str(why))
        if {family(kind) for kind in kinds} & families:
            raise why  # (as for the file given alone: the others cannot be judged without it)
        if held is not None:
            held[path] = kinds


def could_hold(path: Path, kind: str, held: Mapping[Path, Collection[str]]) -> bool | None:
    """Whether a refused file may hold an output of `kind` (its kinds read: True or False; none
    read: any, True); None for a file that is no refused one (its name or start says)."""
    if path not in held:
        return None
    return not held[path] or kind in held[path]
