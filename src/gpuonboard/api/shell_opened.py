"""A saved session's command that opened a shell in a container (`kubectl exec -it POD -- sh`,
`docker exec -it app bash`, `docker run -it --gpus all IMAGE bash`, Ray's `ray attach
CLUSTER.yaml`) and the commands typed at that shell's prompt below it (`/ # nvidia-smi`,
`root@pod:/# nvidia-smi`): those ran in the container, as `kubectl exec POD -- nvidia-smi` does,
so each is read as that command (the container's view, a tool missing there the container's
answer), and the opener is said to have opened the shell, never to have "printed nothing". A
prompt of the box's own host again ends the shell (`exit`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuonboard.api.command_line import ENGINE_OWN_LINE, run, tool_name
from gpuonboard.api.part import Part
from gpuonboard.once import lazy_re

# the shells an interactive exec opens (by the name of the program it runs)
_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh", "fish"})
# the engines whose exec opens a terminal without being asked (LXD's, Incus', Proxmox's, LXC's);
# docker's, podman's, kubectl's, crictl's read no terminal without `-i` (`-it`, `--stdin`)
_INTERACTIVE = frozenset({"lxc", "incus", "pct", "lxc-attach"})
# an option asking for the terminal: `-i`, `-it`, `-ti`, `--stdin`, `--interactive`, `--tty`
_TERMINAL = lazy_re(r"-[a-z]*[it][a-z]*|--(?:stdin|interactive|tty)(?:=true)?")
# a shell's option that gives it a command (`bash -c CMD`, `sh -lc CMD`): no interactive shell
_GIVEN = lazy_re(r"-[a-z]*c[a-z]*")
# the commands that open a shell in a container with no shell named, each with the words that run
# one command there instead: Proxmox's `pct enter VMID` (`pct exec VMID --`), LXD's and Incus'
# `lxc|incus shell NAME` (`lxc exec NAME --`), OpenShift's `oc rsh POD` (`oc exec -it POD --`); and
# LXC's `lxc-attach [-n] NAME` given no command (command_line's grammar of it: its words, then `--`);
# Ray's `ray attach [OPTIONS] CLUSTER.yaml` (a shell on the cluster's head node, in Ray's container
# where the cluster's YAML names one, as `docker exec -it ray_container bash` opens: `ray exec
# CLUSTER.yaml --`), its options of no value (`--tmux`, `--screen`, `--no-config-cache`) or `-n NAME`
_NO_SHELL_NAMED = lazy_re(
    r"(?:sudo\s+)?(?:pct\s+enter\s+(?P<vmid>\d+)|(?P<lxd>lxc|incus)\s+shell\s+(?P<instance>[\w.:-]+)"
    r"|oc\s+rsh\s+(?P<pod>[\w.-]+)"
    r"|ray\s+attach(?:\s+(?:-n|--cluster-name)\s+\S+|\s+--?[a-z][\w-]*)*\s+(?P<cluster>\S+\.ya?ml)"
    r"(?:\s+(?:-n|--cluster-name)\s+\S+|\s+--?[a-z][\w-]*)*)"
)


def opened_shell(command: str) -> str:
    """The prefix that runs a command where `command` opened a shell (`kubectl exec -it POD --`
    of `kubectl exec -it POD -- sh`: a command typed at that shell's prompt ran as `kubectl exec
    -it POD -- nvidia-smi`); "" where `command` opens no shell in a container. What runs in a
    container is read as every command line is (command_line.run, Run.container): its command a
    shell given no command (`bash`, `/bin/bash -l`), or none where the engine opens one by itself
    (`lxc-attach -n c1`, `pct enter 101`, `lxc shell c1`, `oc rsh POD`)."""
    words = command.split()
    if not words or "|" in words:
        return ""
    if (bare := _NO_SHELL_NAMED.fullmatch(" ".join(words))) is not None:
        return _bare_prefix(bare)
    ran = run(command, _SHELLS)
    if len(ran.head) > 1 and tool_name(ran.head[0]) == "lxc-attach" and not ran.container:
        return f"{' '.join(ran.head)} --"  # (a shell of its own: no command after its options)
    if not ran.container or ran.inside < 1 or len(ran.stages) != 1:
        return ""
    shell = ran.head
    if tool_name(shell[0]) not in _SHELLS or any(
        not w.startswith("-") or _GIVEN.fullmatch(w) for w in shell[1:]
    ):
        return ""
    if tool_name(ran.container[0]) not in _INTERACTIVE and not any(
        _TERMINAL.fullmatch(w) for w in ran.container
    ):
        return ""  # (`docker run img bash` without a terminal runs a shell that reads nothing)
    return " ".join(ran.container)


def _bare_prefix(bare: re.Match[str]) -> str:
    """The words that run one command where an engine opened a shell with none named (_NO_SHELL_NAMED)."""
    if bare.group("vmid"):
        return f"pct exec {bare.group('vmid')} --"
    if bare.group("lxd"):
        return f"{bare.group('lxd')} exec {bare.group('instance')} --"
    if bare.group("cluster"):
        return f"ray exec {bare.group('cluster')} --"
    return f"oc exec -it {bare.group('pod')} --"


def inside(parts: Sequence[Part]) -> dict[int, str]:
    """Each part (by its prompt line) typed at the prompt of a shell an earlier part opened in a
    container -> that opener's prefix (opened_shell), and each opener -> "" (in the dict: said
    so); a part at a prompt of the opener's own host ends the shell, and so does one whose prompt
    cannot be told from it (neither names a host): only a prompt that names another host than the
    opener's (`root@POD:/#` below `$ kubectl exec ...`), or none below one that names its host
    (`/ #` below `root@ai18:~#`), is the shell's; `exit` typed there ends it."""
    found: dict[int, str] = {}
    prefix, host = "", None
    for part in parts:
        if prefix and part.host == host:
            prefix = ""  # (back at the box's prompt, or one not told from it: the shell was left)
        if prefix:
            found[part.line] = prefix
            if part.command.split()[:1] in (["exit"], ["logout"]):
                prefix = ""  # (the shell left: the next prompt is the box's, or another host's)
            continue
        if (opens := opened_shell(part.command)) and _engine_lines_only(part.text):
            prefix, host = opens, part.host
            found[part.line] = ""
    return found


# the lines an engine prints of its own before the shell it opened are command_line.ENGINE_OWN_LINE
# (docker's pull of the image, kubectl's `Defaulted container ...`), or a warning: a shell prints
# nothing of its own, so one there is its engine's (`WARNING: Current Kernel does not support
# memory swap, discard --memory-swap`, pouch's)
_WARNING_LINE = lazy_re(r"(?:WARNING|Warning|warning)\b.*")
# Ray's own lines as `ray attach` reaches the head node: its log lines (`2025-01-07 13:21:06,751
# INFO util.py:382 -- ...`), its provider cache's, `Fetched IP: 35.179.101.82`, ssh's own
_RAY_OWN_LINE = lazy_re(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:INFO|WARNING|WARN|DEBUG)\s+\S+:\d+ -- .*"
    r"|Loaded cached provider configuration|If you experience issues with the cloud provider, .*"
    r"|Fetched IP: \S+|Shared connection to \S+ closed\."
)


def _engine_lines_only(text: str) -> bool:
    """Whether an opener's `text` holds nothing, or only its engine's own lines (ENGINE_OWN_LINE, a
    warning): the shell opened, nothing of a command printed (measure38d 15, review S F2)."""
    return all(
        ENGINE_OWN_LINE.fullmatch(line.strip())
        or _WARNING_LINE.fullmatch(line.strip())
        or _RAY_OWN_LINE.fullmatch(line.strip())
        for line in text.splitlines()
        if line.strip()
    )


def opener_said(where: str) -> str:
    """What a part that opened a shell in a container did, for a session's note."""
    return (
        f"{where} opened a shell in the container (it printed nothing but its engine's own lines, if"
        " any; the commands typed at that shell's prompt below it ran in the container, not on the box)"
    )


# a shell's bare prompt line, nothing typed after it (`/ # `, `root@pod:/# `), below a command's output
_BARE_PROMPT = re.compile(r"^[ \t]*\S*[ \t]*[#$%>][ \t]*$")


def without_bare_prompts(text: str) -> str:
    """`text` without the bare prompt lines at its end (the shell's prompt after the output)."""
    lines = text.rstrip("\n").split("\n")
    while lines and (not lines[-1].strip() or _BARE_PROMPT.match(lines[-1])):
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""
