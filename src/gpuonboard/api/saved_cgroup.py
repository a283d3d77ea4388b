"""A saved listing of cgroup limit files (`grep . /sys/fs/cgroup/...`, `head` of them) read as the
live probe's `cgroup_limits` output (offline): the files that probe reads, the rest of the tree
skipped, and a listing of several containers' folders refused."""

from __future__ import annotations

import re

# a saved `grep . /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max` (each line `FILE:VALUE`) or
# `head` of them (`==> FILE <==` above each value): the files the live probe's cgroup walk reads,
# and the ones it reads first of whether the login is in a container (PID 1's name and cgroups,
# the container type systemd saw: steps/checks/slice_view.py)
_CGROUP_FILE = (
    r"(?:/sys/fs/cgroup/\S*(?:memory\.max|memory\.limit_in_bytes|cpu\.max|cpu\.cfs_quota_us|cpu\.cfs_period_us"
    r"|cpuset\.cpus\.effective|cpuset\.effective_cpus|cpuset\.cpus)"
    r"|/proc/1/comm|/proc/1/cgroup|/run/systemd/container|/run/host/container-manager)"
)
_CGROUP_KNOWN = re.compile(_CGROUP_FILE)
# any file of the cgroup tree (`grep . /sys/fs/cgroup/memory.* /sys/fs/cgroup/cpu*` lists
# memory.current, memory.stat's lines, cpu.weight ... beside the limits): the listing is read
# for the files above, the others skipped
_ANY_FILE = rf"(?:/sys/fs/cgroup/[^\s:]+|{_CGROUP_FILE})"
_CGROUP_GREP = re.compile(rf"({_ANY_FILE}):(.*)")
_ANY_FILE_RE = re.compile(_ANY_FILE)
_CGROUP_HEAD = re.compile(rf"==> ({_ANY_FILE}) <==")


# a file at the root of the cgroup tree a login sees (v2's `/sys/fs/cgroup/memory.max`, a v1
# controller's `/sys/fs/cgroup/memory/memory.limit_in_bytes`): in a container, its own cgroup's
_ROOT_FILE = re.compile(r"/sys/fs/cgroup/(?:(?:cpu|cpuacct|cpuset|memory)(?:,\w+)*/)?[\w.]+")


def cat_listing(command: str, text: str) -> str | None:
    """A session's `cat FILE...` of cgroup files at the root of the tree the login sees (`cat
    /sys/fs/cgroup/memory/memory.limit_in_bytes` / `14881390592`) as `grep .`'s `FILE:VALUE` lines,
    each file's one line in order; None for any other command, a file deeper in the tree (a host's
    `cat /sys/fs/cgroup/system.slice/docker-....scope/memory.max` is another cgroup's limit, never
    the login's: review revN), or a count of lines other than the files' (a file of several
    lines, a value left out)."""
    words = command.split()
    if len(words) < 2 or words[0] != "cat" or not all(_ROOT_FILE.fullmatch(word) for word in words[1:]):
        return None
    values = [line.strip() for line in text.splitlines() if line.strip()]
    if len(values) != len(words) - 1:
        return None
    return "".join(f"{path}:{value}\n" for path, value in zip(words[1:], values, strict=True))


# each limit file's own form, as the kernel prints it (a number, `max`, v1's -1, a CPU list), and
# its words: a value not in it was edited by hand (`131_072_000 # ie, 131 MB`: measure38d 19)
# (patterns matched by re's own cache: a value is checked only where a listing was given)
_CPU_LIST = r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*"
_FORMS = {
    "memory.max": (r"\d+|max", "a number or `max`", "the cgroup memory limit"),
    "memory.limit_in_bytes": (r"-?\d+", "a number", "the cgroup memory limit"),
    "cpu.max": (r"(?:\d+|max)(?: \d+)?", "a quota or `max`, then a period", "the cgroup CPU quota"),
    "cpu.cfs_quota_us": (r"-?\d+", "a number", "the cgroup CPU quota"),
    "cpu.cfs_period_us": (r"\d+", "a number", "the cgroup CPU period"),
    **dict.fromkeys(
        ("cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"),
        (_CPU_LIST, "a CPU list, `0-7,16`", "the cgroup CPU set"),
    ),
}


def _known(path: str) -> bool:
    """Whether a listed file is one the live probe reads (_CGROUP_FILE)."""
    return _CGROUP_KNOWN.fullmatch(path) is not None


def cgroup_limits(text: str) -> tuple[str, str] | None:
    """A saved listing of cgroup limit files as the live probe's `FILE<TAB>VALUE` lines (other
    files of the cgroup tree listed beside them skipped): (those lines, ""), or ("", why) where
    its limit files lie in folders off one chain from the root; None when the text is no such
    listing or lists none of them (edited_limit says where a value was edited)."""
    known = _known_pairs(text)
    if not known:
        return None
    if (apart := _siblings([path for path, _ in known])) is not None:
        return "", (
            f"a listing of cgroup limits from folders of the tree of which neither holds the other ({apart}),"
            " so which are the login's own cannot be told: save the probe's own folders,"
            " `grep . /sys/fs/cgroup/<the path in /proc/self/cgroup>/{memory.max,cpu.max,"
            "cpuset.cpus.effective}` and the same files of each folder above it."
        )
    return "".join(f"{path}\t{value.strip()}\n" for path, value in known), ""


def edited_limit(text: str) -> str | None:
    """Why a saved listing of cgroup limit files is not read, where a value in it is not its file's
    own form (`131_072_000 # ie, 131 MB`: digit separators, a `# note`, a unit added by hand;
    measure38d 19): one clause naming the file and what to save; None otherwise."""
    for path, value in _known_pairs(text):
        form = _FORMS.get(path.rsplit("/", 1)[-1])
        if form is not None and re.fullmatch(form[0], value.strip()) is None:
            return (
                f"{form[2]} `{path}` reads `{value.strip()}`, which is not the file's own form ({form[1]}),"
                f" so it is not read: save the file's own value (`cat {path}` as it prints it)"
            )
    return None


def _known_pairs(text: str) -> list[tuple[str, str]]:
    """The (file, value) pairs of a saved listing of cgroup files (`grep .`'s `FILE:VALUE` lines,
    `head`'s `==> FILE <==` above each value) whose file the live probe reads; [] for none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and all(_CGROUP_GREP.fullmatch(line) for line in lines):
        pairs = [m.groups() for line in lines if (m := _CGROUP_GREP.fullmatch(line))]
    elif lines and (head := _CGROUP_HEAD.fullmatch(lines[0])) is not None:
        pairs, path = [], head.group(1)
        for line in lines[1:]:
            if (m := _CGROUP_HEAD.fullmatch(line)) is not None:
                path = m.group(1)
            elif path:
                pairs.append((path, line))
                path = ""
    else:
        return []
    return [(path, value) for path, value in pairs if _known(path) and value.strip()]


# the root of the tree a cgroup file's folder is in: v2's one (`/sys/fs/cgroup/system.slice/x`:
# `system.slice/x`), a v1 controller's, a tree of its own (`/sys/fs/cgroup/memory/docker/x`:
# `docker/x` in `memory`'s)
_TREE_ROOT = re.compile(r"/sys/fs/cgroup(?:/(?:cpu|cpuacct|cpuset|memory)(?:,\w+)*(?=/|$))?")


def _siblings(paths: list[str]) -> str | None:
    """Two folders of one tree (v2's; each v1 controller's) of the listed cgroup limit files
    of which neither holds the other (a recursive `grep -r . /sys/fs/cgroup` lists every
    container's limits), `A and B`; None where each tree's lie on one chain from its root, the
    only ones the live probe's walk reads (a v1 login's memory and CPU folders may differ:
    Slurm's `memory/slurm/uid_1000/job_42` beside `cpu,cpuacct/system.slice/slurmd.service`)."""
    trees: dict[str, set[str]] = {}
    for path in paths:
        if path.startswith("/sys/") and (root := _TREE_ROOT.match(path)) is not None:
            folder = path[root.end() :].rpartition("/")[0].strip("/")
            trees.setdefault(root.group(), set()).add(folder)
    for folders in trees.values():
        # (each as `/a/b/`, the root `/`: a folder holds another whose path starts with its own)
        chain = {folder: f"/{folder}/".replace("//", "/") for folder in sorted(folders)}
        for deep, deep_chain in chain.items():
            for other, other_chain in chain.items():
                if not deep_chain.startswith(other_chain) and not other_chain.startswith(deep_chain):
                    return f"/{deep} and /{other}"
    return None
