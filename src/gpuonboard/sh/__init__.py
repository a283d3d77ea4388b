"""The shell scripts gpuonboard runs on hosts, one `.sh` file each (checked by shellcheck in
`make lint`), and `load`, which reads one once per process.

A file starts with a shebang (the dialect shellcheck checks: POSIX sh, what `sh -c` runs on the
host) and a comment block saying what the script does and which module runs it; that header
stays here: `load` returns the text after it, what the host runs. A script takes its values as
positional arguments (`sh -c SCRIPT sh ARG...`, quoted by shell.join) or in variables its
module sets before it, never spliced into its text.
"""

from __future__ import annotations

from importlib import resources

from gpuonboard.once import loaded_once


@loaded_once
def load(name: str) -> str:
    """The script `name` (a file `<name>.sh` beside this module) without its header: the
    shebang and the comment lines after it, up to and including the first blank line."""
    text = resources.files(__package__).joinpath(f"{name}.sh").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    if i < len(lines) and not lines[i].strip():
        i += 1
    return "".join(lines[i:])
