"""The command a copied command line really runs, read the one way for every saved output
(api/narrowed.py, api/kernel_command.py): which part of the box its output shows is said by the
words of that command, not by the words of what wraps it.

- A list is cut at each `;`, `&&`, `||`, `&`, `(`, `)` and line end outside quotes, and a pipeline
  at each `|` / `|&` (`journalctl -g 'Xid|NVRM'` is one command; `2>&1`, `&>` are redirections);
  a `#` that starts a word begins a comment, to the line's end (`journalctl -k # -b -1`).
- Of a list, every command that runs one of the output's tools is one the saved text may come
  from (runs): a tool whose output went to a file (`dmesg > d.txt && grep NVRM d.txt`) shaped
  what the next one read; one whose output went to /dev/null, nothing.
  The command whose output is the text (run) is the first of them that
  prints to the terminal (`cd /var/log && cat kern.log.1`: the cat; `journalctl -k ; echo done`:
  the journalctl; `dmesg > d.txt; cat d.txt | grep -i nvrm`: the cat and its grep), else the
  first of them (`journalctl -k > k.txt`: the file saved), else the list's first command.
- Redirections (`2>/dev/null`, `> k.txt`, `&> k.txt`, `2>&1`) are no words of the command; one of
  its standard output to a file (`>`, `>>`, `1>`, `&>`, `>|`; not `>&2`, `2>...`) is `to_file`.
- A wrapper is unwrapped to the command it runs: `VAR=x`, `sudo [options]`, `doas`, `env [options]
  VAR=x`, `time`, `nice`, `nohup`, `stdbuf`, `timeout DURATION`; a container engine's command
  that runs one in a container, noted in Run.container: `docker|podman|nerdctl|nvidia-docker
  [container] run|exec [options] IMAGE|CONTAINER`, containerd's `ctr [-n NS] run [options] IMAGE
  ID` and `ctr task exec [options] CONTAINER`, `docker compose|docker-compose|podman-compose
  run|exec [options] SERVICE`, `kubectl|oc|k exec|run ... --` (`k`: kubectl's documented alias;
  `microk8s|k3s kubectl`, `minikube kubectl --` are kubectl), `crictl exec [options] CONTAINER`,
  `lxc|incus exec [options] INSTANCE [--]`, Proxmox's `pct exec VMID [--]`, LXC's `lxc-attach
  [-n NAME] [options] [--]` (Run.inside: how many stages of the pipeline ran there, the first
  only where a `|` follows the engine's command: `docker exec app true | free -h` runs free on
  the box); and to the command line it hands a shell, which is
  read again from its start: `ssh [options] HOST 'remote'` (the words after the host, joined by
  blanks as ssh does), `sh|bash|zsh|dash|ksh [options] -c 'command'` (`-euxo pipefail -c`), `su|
  runuser [options] [USER] -c 'command'`, `watch [options] command`; behind a wrapper not known
  (`chroot DIR`, `nsenter -t 1 -m`), a shell given `-c`.
  So `ssh box 'dmesg | grep -i nvrm'` is dmesg's output kept by grep, and `sudo bash -c
  'journalctl -k -b -1'` is journalctl's `-b -1`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gpuonboard.masking import command_said

__all__ = [
    "CONTAINER_CLIS",
    "LAUNCHERS",
    "ENGINES_UNREAD",
    "Grammar",
    "container_log",
    "Option",
    "Run",
    "commands",
    "elsewhere",
    "every_run",
    "options",
    "or_taken",
    "pipeline",
    "run",
    "runs",
    "tool_name",
]

_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*", re.S)
# a redirection word: `>`, `>>`, `2>`, `2>&1`, `&>`, `&>>`, `<`, `>|` (its target joined or next)
_REDIRECT = re.compile(r"(?P<fd>\d+|\{\w+\})?(?P<op>&>>?|>>?&?|>\||<&|<>|<)(?P<target>.*)", re.S)
# a Windows drive's path (`C:\\Windows\\System32\\nvidia-smi.exe`)
_DRIVE = re.compile(r"(?<![\w\\])[A-Za-z]:\\")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})


def _cut(command: str, pipes: bool) -> list[str]:
    """`command` cut at each separator outside quotes: at `|` / `|&` (`pipes`), else at the
    list's `;`, `&&`, `||`, `&`, `(`, `)` and line ends; the text of each part kept as written,
    a comment (a `#` that starts a word, to the line's end) left out."""
    return [part for _, part in _cut_at(command, pipes)]


def _cut_at(command: str, pipes: bool) -> list[tuple[str, str]]:
    """_cut's parts, each with the separator before it ("" for the first)."""
    parts: list[tuple[str, str]] = []
    start, quote, at, inside, before = 0, "", 0, 0, ""
    while at < len(command):
        char, two = command[at], command[at : at + 2]
        if char == "\\" and quote != "'":
            at += 2
            continue
        if quote or char in "'\"":
            quote = "" if char == quote else quote or char
        elif char == "#" and (at == 0 or command[at - 1] in " \t\n;&|()"):
            end = command.find("\n", at)
            command = command[:at] + (command[end:] if end >= 0 else "")
            continue
        elif char in "()" and (inside or (char == "(" and command[at - 1 : at] in ("$", "<", ">"))):
            inside += 1 if char == "(" else -1  # (`$(...)`, `<(dmesg)`: a word of the command)
        elif char in "|;&\n()" and not inside and not _redirection(command, at):
            sep = two if two in ("||", "&&", "|&") else char
            if (sep in ("|", "|&")) == pipes:
                parts.append((before, command[start:at]))
                start, before = at + len(sep), sep
            at += len(sep)
            continue
        at += 1
    return [*parts, (before, command[start:])]


def _redirection(command: str, at: int) -> bool:
    """Whether the `&` or `|` at `at` is part of a redirection (`2>&1`, `&>`, `>&`, `>|`)."""
    before = command[at - 1] if at else ""
    return (command[at] == "&" and (before in "<>" and before != "" or command[at + 1 : at + 2] == ">")) or (
        command[at] == "|" and before == ">"
    )


def commands(command: str) -> list[str]:
    """The commands of a list (each a pipeline), cut at `;`, `&&`, `||`, `&` and line ends outside
    quotes; those that are blank left out."""
    return [part for part in _cut(command, pipes=False) if part.strip()] or [command]


def pipeline(command: str) -> list[str]:
    """The commands of the first pipeline of `command`, split at each `|` / `|&` outside quotes
    (`journalctl -g 'Xid|NVRM' -b -1 | less` is two); the text of each kept as written."""
    return _cut(commands(command)[0], pipes=True)


def _words(text: str) -> list[str]:
    """The words of a command as the shell splits them (by blanks where its quotes do not close),
    without its redirections (`2>/dev/null`, `> k.txt`, `2>&1`)."""
    if _DRIVE.search(text):  # (a Windows path's `\\` is no shell escape: `C:\\...\\nvidia-smi.exe`)
        text = text.replace("\\", "/")
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif m := _REDIRECT.fullmatch(word):
            skip = m.group("target") == ""
        else:
            out.append(word)
    return out


@dataclass(frozen=True)
class Run:
    """The command a copied line runs: `said`, its text as written (of a list, the command
    judged); `stages`, the words of each command of the pipeline it runs, wrappers unwrapped;
    `to_file`, the file its standard output went to (`> k.txt`), "" for the terminal;
    `container`, the words that ran it inside a container (`docker run --gpus all IMAGE`,
    `kubectl exec -it POD --`, an `NV_GPU=0` before them kept), () where it ran on the box;
    `inside`, how many of the stages (the first) ran in that container: `docker exec app true |
    free -h` ran only `true` there, `docker exec app sh -c 'echo | free -h'` both."""

    said: str
    stages: list[list[str]]
    to_file: str = ""
    container: tuple[str, ...] = ()
    inside: int = 0

    @property
    def head(self) -> list[str]:
        return self.stages[0]

    @property
    def started(self) -> bool:
        """Whether the engine's words (`container`) start a new container (`docker run`, `compose
        run`, `kubectl run`) rather than enter a running one (`exec`, `lxc exec`)."""
        words = self.container
        return "run" in words and ("exec" not in words or words.index("run") < words.index("exec"))


def or_taken(command: str, failed: Callable[[str], bool]) -> str:
    """`command` with each `a || b` of its list read as the side that printed: `b` where
    `failed(a)` (the saved text carries a's failure: a printed only that), else `a` (b never ran)."""
    kept: list[tuple[str, str]] = []
    for sep, part in _cut_at(command, pipes=False):
        if sep == "||" and kept and failed(kept[-1][1]):
            kept[-1] = (kept[-1][0], part)  # (a failed: b ran after it)
        elif sep != "||" or not kept:
            kept.append((sep, part))
    return "".join(f"{sep}{part}" for sep, part in kept).strip()


def runs(command: str, tools: Collection[str] = ()) -> list[Run]:
    """The commands of the list `command` that run one of `tools` (by name), in their order (a
    shell's or ssh's command line read as a list of its own): those the saved text may come from
    (module doc); the list's first command where none does. Of `a || b`, a alone (b runs only
    where a failed: or_taken reads which from the saved text)."""
    told = every_run(command, tools)
    return [r for r in told if r.to_file != "/dev/null"] or told or _every(command, tools)[:1]


def every_run(command: str, tools: Collection[str]) -> list[Run]:
    """Every command of the list `command` that runs one of `tools`, in order, those whose output
    went to /dev/null too (`dmesg -c > /dev/null; dmesg`: what ran before the log was read)."""
    return [r for r in _every(command, tools) if _runs_tool(r.head, tools)]


def _every(command: str, tools: Collection[str]) -> list[Run]:
    listed = [part for sep, part in _cut_at(command, pipes=False) if sep != "||" and part.strip()]
    return [ran for text in listed or [command] for ran in _runs_of(text, tools)]


def run(command: str, tools: Collection[str] = ()) -> Run:
    """What the copied `command` runs (module doc); of a list, the first command that runs one
    of `tools` and prints to the terminal, else the first that runs one, else the first."""
    found = runs(command, tools)
    return next((r for r in found if not r.to_file), found[0])


def tool_name(word: str) -> str:
    """The name of the tool a command's word runs: its path (`/usr/bin/`, Windows'
    `C:\\Windows\\System32\\`) and Windows' `.exe` left off (`nvidia-smi` of `nvidia-smi.exe`)."""
    name = word.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _runs_tool(words: list[str], tools: Collection[str]) -> bool:
    return any(tool_name(word) in tools for word in words)


def _runs_of(text: str, tools: Collection[str]) -> list[Run]:
    """The pipeline `text` (one command of a list) runs: its first command unwrapped (each
    wrapper consumes its own word, so this ends); of a command line a shell reads, each command
    of its list."""
    cut = _cut(text, pipes=True)
    head, *rest = (_words(stage) for stage in cut)
    to_file = _to_file(cut[-1])
    words, assigned = head, list[str]()
    entered: tuple[str, ...] = ()
    while words:
        while words and _ASSIGNMENT.fullmatch(words[0]):
            assigned, words = [*assigned, words[0]], words[1:]
        name = tool_name(words[0]) if words else ""
        if name in _ENGINES and name not in tools and (found := _in_container(name, words[1:], tools)):
            entered = entered or (*assigned, name, *found[0])
            words = found[1]
            continue
        unwrap = _WRAPPERS.get(name) if name not in tools else None
        inner = unwrap(words[1:]) if unwrap is not None else None
        if unwrap is None and name not in tools and not _runs_tool(words, tools):
            inner = _shell_among(words[1:])  # (a wrapper not known that runs a shell)
        if inner is None:
            break
        if isinstance(inner, str):  # (a command line another shell reads: from its start)
            said = command_said(text.strip())  # (a password in it masked: masking.PASSWORD_OPTIONS)
            return [
                Run(
                    said,
                    [*r.stages, *rest],
                    to_file or r.to_file,
                    entered or r.container,
                    len(r.stages) if entered else r.inside,
                )
                for r in runs(inner, tools)
            ]
        words = inner
    return [Run(command_said(text.strip()), [words, *rest], to_file, entered, 1 if entered else 0)]


def _to_file(text: str) -> str:
    """The file the command `text` sends its standard output to: `> k.txt`, `>>k.txt`, `1> k.txt`,
    `&> k.txt`, `>| k.txt`, `>& k.txt`; "" for none, `>&2` (to the terminal still), `2> err`."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    for at, word in enumerate(words):
        if (m := _REDIRECT.fullmatch(word)) is None or "<" in m.group("op"):
            continue
        target = m.group("target") or (words[at + 1] if at + 1 < len(words) else "")
        if m.group("op").startswith("&>"):
            return target or "-"
        if m.group("fd") in (None, "1") and not (m.group("op") == ">&" and re.fullmatch(r"\d+-?|-", target)):
            return target or "-"
    return ""


Option = tuple[str, str | None]


@dataclass(frozen=True)
class Grammar:
    """A tool's options as its getopt_long reads them: `short`, the getopt string (`x:` takes a
    value, `x::` one joined to it only); the long options that take a value (`valued`) or may
    (`optional`: `--boot=-1`); `aliases`, a long option's short one; `lookahead`, the options
    whose missing value the tool takes from the next word where it parses (journalctl's)."""

    short: str
    valued: frozenset[str]
    optional: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)
    lookahead: Mapping[str, Callable[[str], bool]] = field(default_factory=dict)

    def takes(self, flag: str) -> str:
        """ "" (no value), ":" (a value), "::" (an optional one) for short option `flag`."""
        at = self.short.find(flag)
        if at < 0 or flag == ":":
            return ""
        colons = self.short[at + 1 : at + 3]
        return "::" if colons == "::" else ":" if colons.startswith(":") else ""


def options(args: list[str], grammar: Grammar, stop: bool = False) -> list[Option]:
    """(option, its value or None) of each option among `args` as the tool's getopt_long reads
    them (`--boot=-1`, `--boot -1`, `-kb-1`, `-b -1`), a long option named by its short alias;
    ("", word) for an operand. `stop`: the first operand ends the options (ssh's host)."""
    out: list[Option] = []
    at = 0
    while at < len(args):
        arg, at = args[at], at + 1
        if stop and out and out[-1][0] == "":  # (the words after the first operand, `--` too)
            out.extend(("", word) for word in args[at - 1 :])
            break
        if arg == "--":
            out.extend(("", word) for word in args[at:])
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            long, takes = name[2:], ":" if name[2:] in grammar.valued else ""
            takes = "::" if long in grammar.optional else takes
            name = grammar.aliases.get(long, name)
            if not eq and takes == ":" and at < len(args):
                value, at, eq = args[at], at + 1, "="
            at = _value(out, name, value if eq else None, args, at, grammar)
            continue
        if not arg.startswith("-") or arg == "-":
            out.append(("", arg))
            continue
        for i, flag in enumerate(arg[1:], 1):
            takes, rest = grammar.takes(flag), arg[i + 1 :]
            if not takes:
                out.append((f"-{flag}", None))
                continue
            if not rest and takes == ":" and at < len(args):
                rest, at = args[at], at + 1
            at = _value(out, f"-{flag}", rest or None, args, at, grammar)
            break
    return out


def _value(
    out: list[Option], name: str, value: str | None, args: list[str], at: int, grammar: Grammar
) -> int:
    """Adds option `name` with `value`; without one, the next word where the tool takes it
    (journalctl's `-b -1`). The index of the word after."""
    check = grammar.lookahead.get(name)
    if value is None and check is not None and at < len(args) and check(args[at]):
        value, at = args[at], at + 1
    out.append((name, value))
    return at


def _getopt(short: str, long: Collection[str] = ()) -> Callable[[list[str]], list[str]]:
    """The words after a command's options (its getopt string `short`, `x:` taking a value, `x::`
    one joined to it only; the long options in `long` taking one): what the command runs."""
    grammar = Grammar(short, frozenset(long))

    def operands(words: list[str]) -> list[str]:
        return [word for name, word in options(words, grammar, stop=True) if not name and word is not None]

    return operands


def _command_of(
    short: str, long: Collection[str] = (), skip: int = 0
) -> Callable[[list[str]], list[str] | None]:
    """A wrapper that runs the words after its options (and `skip` operands: a duration, a host)."""
    after = _getopt(short, long)

    def unwrap(words: list[str]) -> list[str] | None:
        rest = after(words)[skip:]
        return rest or None

    return unwrap


def _ssh(words: list[str]) -> str | None:
    """The remote command of `ssh [options] HOST command...` (its words joined by blanks, as ssh
    sends them), None for a login."""
    rest = _getopt("B:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:")(words)[1:]
    return " ".join(rest) or None


def _shell(words: list[str]) -> str | None:
    """The command string of `bash [options] -c 'command'` (`-lc`, `-o pipefail -c`), None for a
    script or an interactive shell."""
    at, given = 0, False
    while at < len(words) and words[at][:1] in "-+" and words[at] not in ("-", "--", "+"):
        word, at = words[at], at + 1
        if word.startswith("--"):
            continue
        given = given or "c" in word[1:]
        at += word[-1] in "oO"  # (`-o pipefail`, `-euxo pipefail`: a value)
    return words[at] if given and at < len(words) else None


def _su(words: list[str]) -> str | None:
    """The command string of `su [options] [USER] -c 'command'` (`--command=...`, `-lc`), and of
    util-linux's `runuser`; None for a login shell."""
    for at, word in enumerate(words):
        if word.startswith("--command"):
            return word.partition("=")[2] or (words[at + 1] if at + 1 < len(words) else None)
        if re.fullmatch(r"-[lmpf]*c", word) and at + 1 < len(words):
            return words[at + 1]
    return None


def _shell_among(words: list[str]) -> str | None:
    """The command string of a shell given `-c` among the words of a command not known
    (`crictl exec -it CTR sh -c '...'`, `chroot /host bash -c '...'`, `nsenter -t 1 -m sh -c`)."""
    for at, word in enumerate(words):
        if tool_name(word) in _SHELLS and (inner := _shell(words[at + 1 :])) is not None:
            return inner
    return None


def _watch(words: list[str]) -> str | None:
    """The command watch runs (`watch -n 5 'dmesg | tail'`: its words joined, read by `sh -c`)."""
    rest = _getopt("d::hn:pq:i:", {"interval", "differences", "equexit", "queue"})(words)
    return " ".join(rest) or None


# Kubernetes' command-line tools of kubectl's grammar: kubectl, OpenShift's `oc`, and `k`, the
# alias kubectl's own documentation sets up (`alias k=kubectl`)
KUBE_CLIS = frozenset({"kubectl", "oc", "k", "microk8s.kubectl"})  # (the last: the snap's own name)
# engines that only enter a running container (`crictl exec CTR cmd`, LXD's and Incus's `lxc|incus
# exec CTR -- cmd`, Proxmox's `pct exec 101 -- cmd`, LXC's own `lxc-attach -n c1 -- cmd`, which
# names no verb), Ray's `ray exec CLUSTER.yaml -- cmd` (on the cluster's head node, in Ray's
# container where the cluster's YAML names one: the words `ray attach CLUSTER.yaml`'s shell runs a
# command with, api/shell_opened.py): their `run` (crictl's from config files) or `launch` shows no command
_EXEC_ONLY = frozenset({"crictl", "lxc", "incus", "pct", "lxc-attach", "ray"})
# container engines: their `run` starts a container for the command after the image, their `exec`
# runs it in one already running (`kubectl run|exec ... -- command`); compose's name a service
_ENGINES = frozenset(
    {
        "docker",
        "podman",
        "nerdctl",
        "nvidia-docker",
        "pouch",  # (Alibaba's PouchContainer: docker's grammar, `pouch run -it -m 123m IMAGE sh`)
        "ctr",
        "docker-compose",
        "podman-compose",
        *KUBE_CLIS,
        *_EXEC_ONLY,
    }
)
# the engines whose exec takes the command after `--` (`lxc exec c1 -- free -h`)
_DASHED = KUBE_CLIS | {"lxc", "incus", "pct", "lxc-attach", "ray"}
# the options before the verb that take a value (`kubectl -n NS exec`, `docker -H HOST exec`,
# `docker-compose -f FILE run`)
_GLOBAL_VALUED = frozenset(
    {
        *("-n", "--namespace", "--context", "-H", "--host", "-c", "--config", "--kubeconfig", "-l"),
        *("--log-level", "-f", "--file", "-p", "--project-name", "--profile", "--project-directory"),
        "--env-file",
    }
)
# crictl's own (`crictl -r unix:///run/containerd/containerd.sock exec ...`)
_CRICTL_VALUED = frozenset({"-r", "--runtime-endpoint", "-i", "--image-endpoint", "-t", "--timeout"})
# containerd's `ctr` (`ctr -a /run/containerd/containerd.sock -n k8s.io run ...`)
_CTR_VALUED = frozenset({"-a", "--address", "--timeout", "--connect-timeout"})
_ENGINE_VALUED = {"crictl": _CRICTL_VALUED, "ctr": _CTR_VALUED}
# `ctr run [options] IMAGE ID [command]`'s options that take a value (its others are flags)
_CTR_RUN = _getopt(
    "c:u:",
    {
        *("snapshotter", "snapshotter-label", "config", "cwd", "env", "env-file", "label", "mount"),
        *("runtime", "runtime-config-path", "runtime-root", "sandbox", "memory-limit", "cpus"),
        *("cpu-shares", "cpu-quota", "cpu-period", "device", "gpus", "user", "platform", "hostname"),
        *("seccomp-profile", "apparmor-default-profile", "apparmor-profile", "blockio-config-file"),
        *("blockio-class", "rdt-class", "cgroup", "with-ns", "pid-file", "fifo-dir", "log-uri"),
        *("uidmap", "gidmap", "annotation", "cap-add", "cap-drop", "runc-binary", "runc-root"),
    },
)
# `ctr task exec [options] CONTAINER [command]`'s (its `--exec-id` names the process)
_CTR_EXEC = _getopt("u:", {"exec-id", "cwd", "env", "user", "fifo-dir", "log-uri"})
# `docker run`'s (podman's, nerdctl's, compose's) options that take a value
_RUN_OPTIONS = _getopt(
    "a:c:de:h:il:m:p:Ptu:v:w:T",
    {
        *("add-host", "annotation", "attach", "blkio-weight", "cap-add", "cap-drop", "cgroup-parent"),
        *("cgroupns", "cidfile", "cpu-period", "cpu-quota", "cpu-shares", "cpus", "cpuset-cpus"),
        *("cpuset-mems", "detach-keys", "device", "device-cgroup-rule", "dns", "dns-option"),
        *("dns-search", "domainname", "entrypoint", "env", "env-file", "expose", "gpus", "group-add"),
        *("health-cmd", "health-interval", "health-retries", "health-timeout", "hostname", "init-path"),
        *("ip", "ip6", "ipc", "isolation", "label", "label-file", "link", "log-driver", "log-opt"),
        *("mac-address", "memory", "memory-reservation", "memory-swap", "mount", "name", "network"),
        *("network-alias", "oom-score-adj", "pid", "pids-limit", "platform", "publish", "pull"),
        *("restart", "runtime", "security-opt", "shm-size", "stop-signal", "stop-timeout", "storage-opt"),
        *("sysctl", "tmpfs", "ulimit", "user", "userns", "uts", "volume", "volumes-from", "workdir"),
        *("hooks-dir", "index", "cdi-spec-dir", "gpus-count"),
    },
)
_EXEC_OPTIONS = _getopt("de:itu:w:T", {"env", "env-file", "user", "workdir", "detach-keys", "index"})
_KUBECTL_EXEC = _getopt("c:n:f:", {"container", "namespace", "filename"})
# `lxc exec` / `incus exec`'s options that take a value
_LXC_EXEC = _getopt("", {"env", "user", "group", "cwd", "mode", "project"})
# `lxc-attach`'s options that take a value (its container: `-n NAME`, or its first operand)
_LXC_ATTACH = _getopt(
    "n:a:s:v:u:g:P:o:l:f:c:eRL",
    {"name", "arch", "namespaces", "set-var", "uid", "gid", "lxcpath", "logfile", "logpriority"}
    | {"rcfile", "context", "keep-var", "pty-log"},
)


def _in_container(name: str, words: list[str], tools: Collection[str]) -> tuple[list[str], list[str]] | None:
    """The words of a container engine's command (`words`: those after its name) that put a
    command in a container (`run --rm --gpus all IMAGE`, `compose exec app`, `exec -it POD --`),
    and the command; None where it runs none (`docker logs`, `docker ps`)."""
    if name == "lxc-attach":  # (no verb: its options, then the command)
        return _attached(words, tools)
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 1 + (words[at] in _GLOBAL_VALUED or words[at] in _ENGINE_VALUED.get(name, ()))
    at += words[at : at + 1] in (["container"], ["compose"])
    at += name == "ctr" and words[at : at + 2] in (["task", "exec"], ["tasks", "exec"], ["t", "exec"])
    verb, rest = (words[at], words[at + 1 :]) if at < len(words) else ("", [])
    if name == "oc" and verb == "rsh":
        verb = "exec"  # (OpenShift's `oc rsh POD cmd`: exec's, a shell by default)
    if verb not in ("run", "exec") or (name in _EXEC_ONLY and verb != "exec"):
        return None
    if name in _DASHED and "--" in rest:
        command = rest[rest.index("--") + 1 :]  # (`kubectl exec POD -- cmd`, `kubectl run t ... -- cmd`)
    elif name in KUBE_CLIS and verb == "run":
        command = []
    elif name == "ctr":  # (`ctr run IMAGE ID cmd`, `ctr task exec --exec-id X ID cmd`)
        command = _CTR_RUN(rest)[2:] if verb == "run" else _CTR_EXEC(rest)[1:]
    elif verb == "run":
        command = _RUN_OPTIONS(rest)[1:]
        entry = next((w.partition("=")[2] or "" for w in rest if w.startswith("--entrypoint=")), "")
        if "--entrypoint" in rest[:-1]:
            entry = rest[rest.index("--entrypoint") + 1]
        command = [entry, *command] if tool_name(entry) in tools else command
    elif name in ("lxc", "incus", "pct"):
        command = _LXC_EXEC(rest)[1:]  # (`lxc exec c1 free -h`: its instance, then the command)
    else:
        operands = (_KUBECTL_EXEC if name in KUBE_CLIS else _EXEC_OPTIONS)(rest)
        latest = any(w in ("-l", "--latest") for w in rest[: len(rest) - len(operands)])
        command = operands[0 if latest else 1 :]  # (podman's --latest: no CONTAINER)
    if tools and not (command and tool_name(command[0]) in {*tools, *_SHELLS}):
        found = next((i for i, w in enumerate(rest) if tool_name(w) in tools), None)
        command = rest[found:] if found is not None else command
    return (words[: len(words) - len(command)], command) if command else None


# the engines whose `logs` verb prints what a container's own command printed (`kubectl logs POD`,
# `docker logs CTR`, `crictl logs ID`, `docker compose logs SERVICE`); LXD's, Proxmox's and ctr's have none
_LOGGED = _ENGINES - {"lxc", "incus", "pct", "lxc-attach", "ctr", "ray"}
# LXD's, Incus' and Proxmox's CLIs, whose own output (`lxc list`'s table of containers, `lxc config
# get`, `pct status`) no reader reads: only a command they run in a container (`lxc exec c1 -- free -m`)
ENGINES_UNREAD = frozenset({"lxc", "incus", "pct", "lxc-attach"})
# every CLI that runs a command in a container or prints a container's log, with the Kubernetes
# distributions' own CLIs that run kubectl or crictl (api/transcript.py COMMANDS: a saved output
# is read after a line that runs one)
# (Ray's CLI not among them: its `ray status`, `ray up` print no container's output read)
CONTAINER_CLIS = (_ENGINES - {"ray"}) | {"microk8s", "k3s", "minikube"}

# the container engines' and kubectl's own lines, printed to stderr above a command's output (a
# terminal shows both): an image's pull (docker's, podman's, for `docker run IMAGE CMD`), kubectl's
# notices on an exec: the container it chose (`Defaulted container "x" out of: x, y (init)`, older
# kubectl's `Defaulting container name to x.` and its `Use 'kubectl describe pod/...'` line),
# `Unable to use a TTY ...` (`-t` without a terminal), the deprecated form's warning. The one
# list: an output under its command starts after them (api/saved_text.py strip_prompt), a shell an
# engine opened printed only them (api/shell_opened.py)
ENGINE_OWN_LINE = re.compile(
    r'Defaulted container "[^"]+" out of: .*|Defaulting container name to \S+\.?'
    r"|Use 'kubectl describe pod/\S+(?: -n \S+)?' to see all of the containers in this pod\.?"
    r"|Unable to use a TTY - input is not a terminal or the right kind of file"
    r"|kubectl exec \[POD\] \[COMMAND\] is DEPRECATED .*"
    r"|Unable to find image .+ locally|\S+: Pulling from \S+"
    r"|[0-9a-f]{12}: (?:Pull complete|Already exists|Pulling fs layer|Waiting|Verifying Checksum"
    r"|Download complete|Downloading|Extracting)\b.*"
    r"|Digest: sha256:[0-9a-f]+|Status: (?:Downloaded newer image|Image is up to date) for \S+"
    r"|Resolved \S+ as an alias .*|Trying to pull \S+|Getting image source signatures"
    r"|Copying (?:blob|config) \S+.*"
    r"|Writing manifest to image destination|Storing signatures"
)


# the launchers that run the command after them elsewhere than in the login's shell on the box,
# other than the container engines above (Run.container): a Slurm job step or allocation (`srun`,
# `salloc`: on a node and with the GPUs the allocation gives), HPC container runtimes
# (`apptainer|singularity exec --nv IMAGE`, `enroot start|exec`), a command run on many machines
# at once (`pdsh -w n[1-4]`, `clush`)
LAUNCHERS = frozenset({"srun", "salloc", "apptainer", "singularity", "enroot", "pdsh", "clush"})


def elsewhere(ran: Run, tools: Collection[str]) -> str:
    """The words that ran one of `tools` in `ran` elsewhere than in the login's own shell on the
    box: a container engine's (`podman run --rm --device nvidia.com/gpu=all ubuntu`, `kubectl
    exec -it POD --`: Run.container) or a launcher's up to the tool (`srun --gres=gpu:1`,
    `apptainer exec --nv img.sif`); "" where the login's shell ran it (wrappers unwrapped: `sudo`,
    `ssh HOST`, whose host is the box a saved session names). The one recognition of every rule
    that says a call's answer is that call's own, not the box's (api/narrowed.py ran_elsewhere)."""
    if ran.container:
        return " ".join(ran.container)
    head = ran.head
    if head and tool_name(head[0]) in LAUNCHERS:
        at = next((i for i, word in enumerate(head) if tool_name(word) in tools or word in tools), len(head))
        return " ".join(head[:at])
    return ""


def container_log(words: Sequence[str]) -> bool:
    """Whether the command `words` (unwrapped: Run.head) prints a container's log (`kubectl logs -n
    NS POD`, `docker container logs CTR`, `docker compose logs app`, `k3s kubectl logs ...` read as
    kubectl): what that container's own command printed, there and not on the box."""
    words = list(words)
    if words and tool_name(words[0]) in ("microk8s", "k3s", "minikube"):
        words = _bundled_kubectl(words[1:]) or []
    if not words or tool_name(words[0]) not in _LOGGED:
        return False
    at = 1
    for _ in range(2):  # (the engine's options, then compose's own: `docker compose -f a.yml logs app`)
        while at < len(words) and words[at].startswith("-"):
            at += 1 + (words[at] in _GLOBAL_VALUED or words[at] in _CRICTL_VALUED)
        if words[at : at + 1] not in (["container"], ["compose"]):
            break
        at += 1
    return words[at : at + 1] == ["logs"]


def _attached(words: list[str], tools: Collection[str]) -> tuple[list[str], list[str]] | None:
    """_in_container's answer for `lxc-attach [options] [--] command` (the container named by
    `-n NAME` or its first operand); None for a shell it opens (no command)."""
    if "--" in words:
        command = words[words.index("--") + 1 :]
    else:
        operands = _LXC_ATTACH(words)
        given = words[: len(words) - len(operands)]
        named = any(w == "--name" or w.startswith(("--name=", "-n")) for w in given)
        command = operands if named else operands[1:]
    if tools and not (command and tool_name(command[0]) in {*tools, *_SHELLS}):
        found = next((i for i, w in enumerate(words) if tool_name(w) in tools), None)
        command = words[found:] if found is not None else command
    return (words[: len(words) - len(command)], command) if command else None


def _bundled_kubectl(words: list[str]) -> list[str] | None:
    """The kubectl (or crictl) command a Kubernetes distribution's own CLI runs (`microk8s kubectl
    exec ...`, `k3s kubectl ...`, `k3s crictl exec ...`, `minikube kubectl -- exec ...`), else None."""
    if words[:1] == ["crictl"]:
        return words  # (`k3s crictl exec CTR cmd`)
    if words[:1] != ["kubectl"]:
        return None
    return ["kubectl", *words[2:]] if words[1:2] == ["--"] else words


_WRAPPERS: dict[str, Callable[[list[str]], list[str] | str | None]] = {
    **dict.fromkeys(("microk8s", "k3s", "minikube"), _bundled_kubectl),
    "sudo": _command_of("a:C:c:D:g:p:R:r:T:t:U:u:", {"user", "group", "chdir", "prompt", "chroot", "role"}),
    "doas": _command_of("a:C:u:"),
    "env": _command_of("u:C:S:P:", {"unset", "chdir"}),
    "time": _command_of("o:f:", {"output", "format"}),
    "nice": _command_of("n:", {"adjustment"}),
    "nohup": _command_of(""),
    "stdbuf": _command_of("i:o:e:", {"input", "output", "error"}),
    "timeout": _command_of("k:s:", {"kill-after", "signal"}, skip=1),
    "ssh": _ssh,
    "su": _su,
    "runuser": _su,
    "watch": _watch,
    **dict.fromkeys(_SHELLS, _shell),
}
