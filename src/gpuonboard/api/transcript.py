"""A saved terminal session: several commands, each under its prompt line, in one file.

The page of commands a renter types on a new box (`nvidia-smi`, `lscpu`, `free -h`, `df -h`) is
often saved as it scrolled by, in one file. Such a file is read as the outputs it holds, each
under its own prompt line, each judged as if saved alone: before, only the first output's kind
was detected, the rest was read as part of it, and the rules said "no lscpu output was given" of
a file that held one.

A line splits the session where it is a prompt:
- `user@host:~$ CMD`, `(base) user@host:/data# CMD`, `user@host ~ % CMD`, `[root@gpu01 ~]# CMD`,
  `PS C:\\> CMD` or `$ CMD`, with any command or none (a bare prompt ends the output above it);
- `# CMD`, `% CMD`, `> CMD`, `host$ CMD`, `➜  ~ CMD` only where CMD is a command whose output is
  read (`nvidia-smi`, `lscpu`, `sudo dmesg`, `/usr/bin/free -h` ...): such a line may be output.

One file, one box: commands whose prompts (or `ssh HOST CMD`) name two hosts are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NoReturn, TypeVar

from gpuonboard.api import glued, numbered_steps, part_reasons, shell_opened
from gpuonboard.api.command_line import CONTAINER_CLIS, ENGINES_UNREAD, LAUNCHERS, run, tool_name
from gpuonboard.api.kind_names import kind_name
from gpuonboard.api.lost_heads import lost_head_queries
from gpuonboard.api.other_forms import named_form
from gpuonboard.api.unjudged import UnjudgedOutput
from gpuonboard.api.unread import disagreement, gives_way, joined_said
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput, first_line
from gpuonboard.masking import command_said

if TYPE_CHECKING:
    from gpuonboard.api.state_change import KeptApart

T = TypeVar("T")
UNRECOGNISED = "not a recognised command output"  # (how a file of no known output is refused)

# the commands whose saved output is judged (and `cat`, `ssh`, `sudo` in front of them): a first
# line `root@gpu-01:~# nvidia-smi -q -x`, `[root@gpu01 ~]# lscpu`, `$ ssh box df -h` or
# `PS C:\\> ssh box free -m` is the terminal's prompt and command, copied with the output; a kernel
# log's filters as the command (`grep NVRM /var/log/kern.log`, `zcat kern.log.2.gz`)
COMMANDS = (
    r"(?:nvidia-smi|lscpu|free|df|lsblk|cat|nvcc|nproc|dmesg|journalctl|ibv_devinfo|ibstatus|ibstat|iperf3|numactl|ibdev2netdev|head|tail"
    r"|systemctl|e?grep|fgrep|z[ef]?grep|xzgrep|bzgrep|zcat|xzcat|bzcat|rg"
    # (the container and Kubernetes CLIs: `kubectl logs POD`, `crictl exec CTR nvidia-smi`, ...)
    rf"|{'|'.join(re.escape(cli) for cli in sorted(CONTAINER_CLIS, key=lambda cli: (-len(cli), cli)))})"
    r"(?:\.exe)?"  # (Windows' `nvidia-smi.exe`)
)
# the tool a command line runs, after a prompt's sign or a path (`$ df -h`, `/usr/bin/nvidia-smi`)
_TOOL = re.compile(rf"(?:^|[\s/\\$#%>('\"]){COMMANDS}(?=[\s|;&<>)'\"]|$)")
_READ_TOOL = re.compile(COMMANDS)  # (a program's name, its path left off: tool_name)
# an option that may take the next word as its value (`-m`, `--module`; not `-N1`, `--gres=gpu:1`)
_BARE_OPTION = re.compile(r"-[A-Za-z]|--[A-Za-z][\w-]*")


# a command of a tool whose output is read, typed alone (`nvidia-smi -L`, `sudo docker run ...
# nvidia-smi`, `/usr/bin/lscpu`)
_TYPED_READ = re.compile(rf"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?{COMMANDS}(?:\s.*)?")


def runs_read_tool(command: str) -> bool:
    """Whether `command` runs a tool whose output is read (_TYPED_READ)."""
    return _TYPED_READ.fullmatch(command) is not None


def names_tool(line: str) -> bool:
    """Whether `line` names a command whose output is read here (`sudo dmesg -T | grep NVRM`,
    `Output of lscpu`), not only words (`Click to expand`, `output`)."""
    return _TOOL.search(line) is not None


def tool_command(line: str) -> str:
    """The command from the tool whose output is read on (`df -h` of `ssh box df -h`, of
    `$ df -h`); the line itself when it names none."""
    found = _TOOL.search(line)
    return line[found.start() :].lstrip(" /\\$#%>('\"") if found else line


_HOST = r"[\w-]+(?:\.[\w-]+)*"
# in front of a prompt: a time stamp (`[12:01:33] `), a conda or venv environment (`(base) `,
# `(/opt/envs/torch) `)
_ENV = r"(?:\[[\d:/ -]{5,19}\]\s*)?(?:\([^()\s]+\)\s*)?"
# a user or host name masked: `***`, `xxx`, `<user>`
_MASK = r"(?:\*{3,}|[xX]{3,}|<[\w.-]+>)"
# a prompt that is one in any output: any command after it, or none
_PROMPT = re.compile(
    rf"{_ENV}(?:[\w.-]+@(?P<host>{_HOST})(?::\S*?|\s+\S+?)?(?:\s+\([^()\n]*\))?\s*[$#%]"  # me@gpu-1:~$
    rf"|\[[\w.-]+@(?P<host_>{_HOST})[^\]\n]*\]\s*[$#]"  # [root@gpu01 ~]#
    r"|\[[\w.-]+\s+[\w.~/-]+\]\s*[$#]"  # [root ~]# (a PS1 of `[\u \W]\$`: no host)
    # a login masked by its poster (`(base) ***:~$`, `xxx@***:~$`, `<user>@<host>:~$`): no host known
    rf"|(?:{_MASK}(?:@(?:{_MASK}|{_HOST}))?|[\w.-]+@{_MASK})(?::\S*?)?\s*[$#%]"
    r"|PS [A-Za-z]:[^>\n]*>"  # PS C:\>
    r"|-?(?:ba|z|k|da)?sh-\d+(?:\.\d+)*[$#]"  # bash-4.2$, sh-4.4# (a shell without a prompt set)
    r"|\$)"  # $
    r"(?:\s+(?P<command>\S.*?))?\s*"
)
# a two-line prompt's second line: its box-drawing corner and rule (`╰─`, `└──╼`, made `+-`, `+--+`
# by paste.normalise), then a prompt sign or a blank; the first line (`╭╴ at ~`, `┌──(kali㉿kali)-[~]`)
# starts with a corner too
_DRAWN = r"\+[-=+]*(?:\s*[$#%❯➜λ»>]|\s)"
_DRAWN_LINE = re.compile(_DRAWN)
_TABLE_BORDER = re.compile(r"\+[-=+]*\+")
# a prompt that could also be a line of output: only with a command whose output is read after it
# (a prompt's character after no digit: `5% /var/lib/docker` is df's; a command of ASCII words not
# ending in a colon: `# nvidia-smi 無法通訊`, `# nvidia-smi output:` are a page's comments)
_WEAK_PROMPT = re.compile(
    rf"{_ENV}(?:(?P<host__>[A-Za-z][\w-]*):\S*\s+[#>]"  # SUSE's gpu01:~ #
    r"|(?:[\w.@~:/-]+\s+){0,2}(?:\S*(?<![\d#])[$#%]|\S+(?<!\d)>)"
    r"|(?:\S+\s+)?➜\s+\S+(?:\s+git:\([^()\s]*\))?(?:\s+✗)?"  # oh-my-zsh
    r"|(?:[^\s❯λ»]+\s+){0,4}[❯λ»]+|In \[\d*\]:\s*!|!"  # starship (`~ via ml ❯`), a notebook cell
    # a two-line prompt's second line, its box-drawing corner made ASCII (paste.normalise):
    # powerlevel10k's and starship's `╰─ CMD`, Kali's `└─$ CMD`, Parrot's `└──╼ $CMD`
    rf"|{_DRAWN})\s*"
    rf"(?P<command>(?:sudo\s+)?(?:\S*/)?{COMMANDS}(?:\s[ -~]*?)?)(?<!:)\s*"
)
_SSH = rf"(?:^|\s)ssh\s+(?:-\S+\s+(?:\S+\s+)?)*?(?:[\w.-]+@)?(?P<host>{_HOST})"
_SSH_HOST = re.compile(rf"{_SSH}\s+\S")  # (`ssh box df -h`: the command runs on box)
# an interactive login to another machine: the commands after it run there, until `exit`
_SSH_LOGIN = re.compile(rf"{_SSH}\s*")
# a prompt line is short: a longer line is output (and no pattern is tried on it at length)
_LONGEST_PROMPT = 400
LONGEST_PROMPT = _LONGEST_PROMPT  # (api/typed_commands.py)


_NOT_READ = "is not an output this tool reads"
# what a command whose output this tool reads printed where it was not recognised as its output
_NOT_ITS = "this tool reads %s's output but could not read what it printed"
# the commands of COMMANDS that print another's output or a file's, not an answer of their own
_FILTERS = frozenset(
    [
        "cat",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "zegrep",
        "zfgrep",
        "xzgrep",
        "bzgrep",
        "zcat",
        "xzcat",
        "bzcat",
        "rg",
        "head",
        "tail",
        "docker",
        "podman",
        "systemctl",
    ]
)
# the commands that say where a program is (`which nvidia-smi` printing `/usr/lib/wsl/lib/nvidia-smi`),
# never what it prints: the program they name is no command run
_LOCATORS = frozenset(["which", "whereis", "type", "hash", "whence", "where", "readlink", "realpath"])
# the host of commands run before an interactive `ssh HOST` without a prompt naming theirs
_STARTED_ON = "the machine the session started on"
# Docker's default host name inside a container: the container ID's first 12 hex digits
_CONTAINER_ID = re.compile(r"[0-9a-f]{12}")


# a first line that is a typed command under a prompt this reading did not take as one (`# uname
# -a`, zsh's `~ sudo docker run ...` with its right prompt, `$python --version`): a prompt mark,
# then a command word; never a comment in words (`# 硬體看得到`) or a page's `($ lspci)`
_TYPED_FIRST = re.compile(r"^(?:\S+@[\w.-]+\S*\s*)?[#$%➜❯~]+\s*[a-z][\w.+-]*(?:\s|$)")


@dataclass(frozen=True)
class Section:
    """One command's output in a session: `line` is its prompt line's number (1-based; 0 for
    text above the first prompt), `text` the output below its prompt line; `what`: which output
    of a report its command printed it is (` (collect_env: GPU list)`), "" for the command's own."""

    line: int
    command: str
    host: str | None
    text: str
    what: str = ""
    # typed as a script's or a notebook's shell escape, `!nvidia-smi -L` at the line's start: the
    # script's line, not a terminal's, so no output below it is none saved, not none printed
    escape: bool = False

    @property
    def where(self) -> str:
        if self.line and not self.command:  # (a bare prompt, or a page's block with no command)
            return f"the text below line {self.line} (no command above it){self.what}"
        if self.line:
            return f"line {self.line} (`{command_said(self.command)}`){self.what}"
        first = first_line(self.text)
        shown = f"`{first[:60]}{'...' if len(first) > 60 else ''}`"
        if _TYPED_FIRST.match(first):
            # (a prompt line of a command not read, `# uname -a`: no text above a prompt, m32b 25, 29)
            return f"the output of {shown} (the text's first line, typed at a prompt){self.what}"
        return f"the text above its first prompt ({shown}){self.what}"

    @property
    def tool_command(self) -> str:
        """The command from the tool whose output is read on (`df -h` of `ssh box df -h`)."""
        return tool_command(self.command)

    @property
    def empty(self) -> bool:
        """Whether nothing is below its prompt line (a bare prompt, or a command that printed
        nothing: `dmesg | grep -i xid` of a log without one)."""
        return not self.text.strip()

    @property
    def reads(self) -> bool:
        """Whether its command is one whose output is read (not `cat`, nor another command)."""
        found = _TOOL.search(self.command)
        return found is not None and found.group().strip(" /$#%>") != "cat"


def _prompt(line: str) -> tuple[str, str | None] | None:
    """(the command, the host) of a prompt line; None when the line is not one."""
    stripped = line.strip()
    if len(stripped) > _LONGEST_PROMPT:
        return None
    found = _PROMPT.fullmatch(stripped) or _WEAK_PROMPT.fullmatch(stripped)
    if found is None:
        return None
    command = found.group("command") or ""
    ssh = _SSH_HOST.search(command)
    named = found.groupdict()
    host = ssh.group("host") if ssh else named.get("host") or named.get("host_") or named.get("host__")
    return command, host


def is_prompt(line: str) -> bool:
    """Whether `line` is a prompt line (any command after it, or none)."""
    return _prompt(line) is not None


def command_of(line: str) -> str:
    """The command of a prompt line (`docker exec gpu nvidia-smi` of `root@box:~# docker exec gpu
    nvidia-smi`); the line itself where it is no prompt this module knows (a command alone)."""
    found = _prompt(line)
    return found[0] if found is not None else line.strip()


def _head(line: str) -> tuple[str, str | None, str | None] | None:
    """(the command, the host, the output a paste glued onto the line or None) of a prompt line;
    None when the line is not one. The output of a line holding several commands' outputs
    (glued.SEVERAL) is the whole line, so that its reading refuses it."""
    for found in glued.header_starts(line[:_LONGEST_PROMPT]):
        head = _prompt(line[:found])
        if head is None:
            continue
        split = glued.split(line, tool_command(head[0]))
        if split is not None:  # (several commands' outputs: the line is read, and refused, whole)
            return (head[0], head[1], split[1] if isinstance(split, tuple) else line)
    found_ = _prompt(line)
    return None if found_ is None else (*found_, None)


def sections(text: str) -> list[Section] | None:
    """The outputs of a saved session, in order; None when the text holds one output (at most
    one command's output, under a prompt line or not)."""
    lines = text.split("\n")
    found = [(i, head) for i, line in enumerate(lines) if (head := _head(line)) is not None]
    found = sorted(found + _glued_sign_heads(lines, {i for i, _ in found}))
    # (a copied `--query-gpu` line whose start a copy lost, `gpu=memory.total,... --format=csv`)
    found = sorted(found + lost_head_queries(lines, {i for i, _ in found}, _LONGEST_PROMPT))
    # (an issue's numbered steps, `2. nvidia-smi -L` above its GPU line: each step's number its prompt)
    found = sorted(
        found + numbered_steps.step_heads(lines, {i for i, _ in found}, runs_read_tool, _LONGEST_PROMPT)
    )
    heads = [(i, (command, host)) for i, (command, host, _) in found]
    lines = _first_prompt_lines_dropped(lines, [i for i, _ in heads])
    on_line = {i: top for i, (_, _, top) in found if top is not None}  # (outputs glued onto prompt lines)
    above = "\n".join(lines[: heads[0][0]]) + "\n" if heads else ""  # (text above the first prompt)
    if not heads or (len(heads) == 1 and not above.strip()):
        return None
    out: list[Section] = [Section(0, "", None, above)] if above.strip() else []
    login: str | None = None  # (the machine an interactive `ssh HOST` logged in to)
    for n, (i, (command, host)) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        start = i + 1
        while command.endswith("\\") and start < end:  # (a command continued, `> ` shell's PS2)
            command = f"{command[:-1].rstrip()} {lines[start].strip().removeprefix('> ')}".strip()
            start += 1
        body = "\n".join([*([on_line[i]] if i in on_line else []), *lines[start:end]])
        body += "\n" if end < len(lines) else ""  # (a next prompt: it ended)
        out.append(Section(i + 1, command, host or login, body, escape=lines[i].lstrip().startswith("!")))
        if (ssh := _SSH_LOGIN.fullmatch(command)) is not None:
            # the commands before it ran on the machine the session started on
            out = [replace(p, host=p.host or _STARTED_ON) for p in out]
            login = ssh.group("host")
        elif command.strip() in ("exit", "logout"):
            login = _STARTED_ON if login else None
    out = _late_outputs_moved_up(out)
    read = [part for part in out if not part.empty]
    # (one command typed at the prompt of a shell a command above opened in a container, `kubectl
    # exec -it POD -- bash` then `root@POD:/# nvidia-smi`, is a session too: the prompt changed
    # says where it ran; before, it was read as the box's bare output, m38e 03)
    return out if len(read) > 1 or any(shell_opened.inside(out).values()) else None


# a command word and its arguments after a prompt's sign (`ibswitches -C mlx5_0`, `rdma link`)
_COMMAND_WORDS = r"(?P<command>[a-z][\w.-]*(?:[ \t]+[ -~]*?)?)[ \t]*"
# a prompt's sign alone, which a comment line shows too (`# see below`, `> quoted`): never taken
# from a command read here to the lines of other commands
_BARE_SIGN = re.compile(r"[#>%][ \t]+")


def _glued_sign_heads(
    lines: list[str], known: set[int]
) -> list[tuple[int, tuple[str, str | None, str | None]]]:
    """Where a session shows a command read here after a prompt that could be a line of output
    (_WEAK_PROMPT: `#ibdev2netdev` with its `#` glued on, `~# ibstat`), its other commands shown
    after the same prompt at a paragraph's start (`#ibswitches -C mlx5_0`, `~# rdma link`, tools
    whose output is not read), as prompt lines too: their output was read as the first command's
    and the whole file refused, or left unnamed (m35b 35, m36b 06). A prompt that is a sign and
    a blank alone (`# `) is a comment's too: taken from no command."""
    signs = set()
    for i in known:
        line = lines[i].strip()
        if _PROMPT.fullmatch(line) is None and (weak := _WEAK_PROMPT.fullmatch(line)) is not None:
            sign = line[: weak.start("command")]
            if sign and not _BARE_SIGN.fullmatch(sign):
                signs.add(sign)
    if not signs:
        return []
    same = re.compile(rf"(?:{'|'.join(re.escape(sign) for sign in sorted(signs))}){_COMMAND_WORDS}")
    return [
        (i, (match.group("command").strip(), None, None))
        for i, line in enumerate(lines)
        if i not in known
        and (i == 0 or not lines[i - 1].strip())
        and len(line) < _LONGEST_PROMPT
        and (match := same.fullmatch(line.strip())) is not None
    ]


# the first line of an output, never of a command: a capital, a digit or a table's border first
# (nvidia-smi's `Sun Apr 18 12:26:51 2021`, `GPU 00000000:01:00.0`, `+----`, `|`)
_OUTPUT_FIRST = re.compile(r"^[A-Z0-9+|=]")


def _late_outputs_moved_up(parts: list[Section]) -> list[Section]:
    """The parts with an output printed after the next prompt given back to its command: a
    wrapper that returns before the program it started prints (`vgpu_unlock nvidia-smi`:
    `root@pve:~# Sun Apr 18 12:26:51 2021` and the table below it) left its command empty and
    the output read under a 'command' that is its first line. Moved where the command is one
    whose output is read, it printed nothing, the next prompt is the very next line, of the same
    host, and what follows that prompt starts as an output does (`_OUTPUT_FIRST`), is no command
    whose output is read, and is the whole output up to the prompt after it."""
    out: list[Section] = []
    for part in parts:
        last = out[-1] if out else None
        if (
            last is not None
            and last.empty
            and last.reads
            and part.line == last.line + 1
            and part.host == last.host
            and _OUTPUT_FIRST.match(part.command)
            and not part.reads
        ):
            out[-1] = replace(last, text=f"{part.command}\n{part.text}")
            continue
        out.append(part)
    return out


def _first_prompt_lines_dropped(lines: list[str], heads: list[int]) -> list[str]:
    """`lines` with the first line of each two-line prompt blank (`╭╴ at ~` above `╰─ nvcc
    --version`, `┌──(kali㉿kali)-[~]` above `└─$ nvidia-smi`): a line starting with a corner just
    above a prompt line starting with one, no table border (`+----+`). Before, it was read as the
    last line of the output above it, or as a text above the first prompt."""
    out = list(lines)
    for i in heads:
        before = lines[i - 1].strip() if i else ""
        if (
            _DRAWN_LINE.match(lines[i].strip())
            and before.startswith("+")
            and not _TABLE_BORDER.fullmatch(before)
        ):
            out[i - 1] = ""
    return out


def prompt_host(line: str) -> str | None:
    """The host a prompt line names (`3f4e5a6b7c8d` of `root@3f4e5a6b7c8d:/# df -h`), None
    where the line is no prompt or names none."""
    found = _prompt(line)
    return found[1] if found is not None else None


def container_shell(host: str | None) -> bool:
    """Whether a prompt's host is a container's shell: Docker's default host name inside a
    container, the container ID's first 12 hex digits (`root@3f4e5a6b7c8d:/#`)."""
    return bool(_CONTAINER_ID.fullmatch((host or "").lower().split(".")[0]))


def hosts(parts: list[Section], reports: Sequence[Section] = ()) -> list[str]:
    """The hosts the commands read from a session ran on, as its prompts (or `ssh HOST`) name
    them, in order of first mention (a host's short name and its full one are one). `parts`: the
    ones whose output was read as a kind (a `grep -c . hosts.txt` on the laptop before `ssh gpu01`
    read nothing of a box); `reports`: those of them read as a report's several outputs
    (`python collect_env.py`), the box's answer though their command is no tool this module names."""
    seen: list[str] = []
    for part in parts:
        host = (part.host or "").lower()
        short = host if re.fullmatch(r"[\d.]+", host) else host.split(".")[0]  # (an IP address whole)
        if _CONTAINER_ID.fullmatch(short):
            continue  # a container's shell on the box (`docker run -it ... bash`): the same box
        if (part.reads or part in reports) and short and short not in seen:
            seen.append(short)
    return seen


# what a reader gives for one command's output: (kind, output), or a report's several outputs, each
# (kind, output, what: ` (collect_env: GPU list)`, said after the command's place)
Reading = tuple[str, T] | list[tuple[str, T, str]]


def _read_part(
    name: str, part: Section, read_one: Callable[[str, str, str], Reading[T]], shell: str | None = None
) -> list[tuple[str, T, str]] | str:
    """(kind, output, what) of each output of one part of a session (what: "" for the command's
    one output); else why it is not read ("" for nothing to say). `shell`: "" where the part
    opened a shell in a container, the command prefix that runs a command there where the part
    was typed at that shell's prompt (api/shell_opened.py), None otherwise."""
    if part.empty or shell == "":  # (an opener printed nothing, or its engine's own lines only)
        return (
            shell_opened.opener_said(part.where)
            if shell == ""
            else f"{part.where} has no output saved below it (a script's `!` shell-escape line)"
            if part.reads and part.escape
            else f"{part.where} printed nothing"
            if part.reads
            else ""
        )
    where = f"{name} {part.where}"
    text = shell_opened.without_bare_prompts(part.text) if shell else part.text
    try:
        got = read_one(where, text, f"{shell} {part.command}" if shell else part.command)
        return got if isinstance(got, list) else [(got[0], got[1], "")]
    except UnjudgedOutput as exc:  # (read, and nothing in it judged: said as its reader says it)
        return f"{part.where}: {str(exc).removeprefix(f'{where}: ').rstrip('.')}"
    except UsageError as exc:
        why = str(exc).removeprefix(f"{where}: ").rstrip(".")
        if said := part_reasons.engine_error(part):
            return said
        tool = _part_tool(part)
        if said := part_reasons.service_said(part, tool):
            return said
        if said := part_reasons.meminfo_cut(part):
            return said
        if tool in ("", *_FILTERS):
            # (an output of another form of a command read here, `lscpu -e`'s table under no
            # command: named as saved alone it is, measure39d 10)
            named = named_form(text)
            return f"{part.where}: {named.rstrip('.')}" if named else f"{part.where} {_NOT_READ}"
        # (a command whose output this tool reads is never called unread: what it printed was not
        # recognised as its output; a command of it whose output is of a format not read says so)
        # (nor one its reader names, a container's log: said as that reader says it)
        if not why.startswith(f"{UNRECOGNISED} (expected "):
            return f"{part.where}: {why}"
        smi_other = part_reasons.smi_format_not_read(part, tool)
        not_read = part_reasons.SMI_NOT_READ if smi_other else _NOT_ITS % tool
        return f"{part.where}: {not_read}"


# /proc/meminfo's lines cut short: a field's name and digits with no ` kB` after them (the kernel
# prints it after every size), at the end of the output (measure34b 16: `MemTotal:          33`)
def _part_tool(part: Section) -> str:
    """The tool a part's command ran, inside the container where an engine ran it (`nvidia-smi`
    of `docker exec -it trainer bash -c nvidia-smi`); "" where its output is not one read."""
    if not part.reads:
        return ""
    ran = run(part.command)
    words = ran.stages[0] if ran.stages and ran.stages[0] else [""]
    program = tool_name(words[0])
    located = program in _LOCATORS or (program == "command" and words[1:2] in (["-v"], ["-V"]))
    if located and not ran.container:
        return ""  # (`which nvidia-smi`: where it is, not its output)
    if program in ENGINES_UNREAD and not ran.container:
        return ""  # (`lxc list a1`: LXD's table of containers, no output read; measure38d 16)
    if ran.container or (program and program not in LAUNCHERS and not _READ_TOOL.fullmatch(program)):
        # (the program typed, inside its container or wrappers; a tool named among its arguments
        # is the command it runs (`vgpu_unlock nvidia-smi vgpu -s`, `mpirun -np 2 nvidia-smi`),
        # never an option's value: netdata's `go.d.plugin -d -m nvidia-smi` printed its own log)
        if _READ_TOOL.fullmatch(program):
            return program
        at = next((i for i, w in enumerate(words[1:], 1) if _READ_TOOL.fullmatch(tool_name(w))), 0)
        return tool_name(words[at]) if at and not _BARE_OPTION.fullmatch(words[at - 1]) else ""
    return part.tool_command.split()[0].rsplit("/", 1)[-1]


def _refuse_several_boxes(name: str, each: Sequence[tuple[Section, list[tuple[str, T, str]] | str]]) -> None:
    """Raise a UsageError where the session holds outputs of several boxes (glued, none read) or
    ran its read commands on more than one host (`each`: the parts typed at the box's own prompts;
    a shell a command opened in a container on it, `lxc-attach -n c1` then `[root@c1 ~]#`, is the
    same box, its outputs the container's view: api/shell_opened.py)."""
    if several := next((got for _, got in each if isinstance(got, str) and glued.SEVERAL in got), None):
        raise UsageError(f"{name}: {several}.")  # (outputs of the box on it, none of them read)
    read = [part for part, got in each if not isinstance(got, str) and got]
    reports = [part for part, got in each if not isinstance(got, str) and any(what for *_, what in got)]
    if len(named := hosts(read, reports)) > 1:
        raise UsageError(
            f"{name}: this saved terminal session ran commands on {len(named)} hosts ({', '.join(named)}),"
            " which cannot be judged as one box; save each box's outputs in a file of its own."
        )


def _refuse_reruns_answered_otherwise(
    name: str,
    each: Sequence[tuple[Section, list[tuple[str, T, str]] | str]],
    unread: Callable[[T], str],
    failed: Callable[[T], bool] = lambda _: False,
) -> None:
    """Raise a UsageError where one command line, run again later in the session, was answered
    in another form (a table, then a `-q` after an alias changed): two times of the box, which
    the reading by kind would merge as if one; neither may be dropped. A run that read nothing
    (`unread`: refused, its tool not found) is no rival; nor is one where the tool failed as a
    whole (`failed`: `Failed to initialize NVML: Unknown Error`, `No devices were found`), which
    the judging orders by line (facts/gpu_failed.py: a failure after the listing is the box now
    and fails `nvidia_driver`, one the session's later listing answered is a note)."""
    first_run: dict[str, tuple[Section, str]] = {}
    for part, got in each:
        said = " ".join(part.command.split())
        # (a report's several outputs are compared by kind, each with its own: read below)
        if isinstance(got, str) or len(got) != 1 or got[0][2] or not said or unread(got[0][1]):
            continue
        if failed(got[0][1]):
            continue
        first, kind = first_run.setdefault(said, (part, got[0][0]))
        if kind != got[0][0]:
            raise UsageError(
                f"{name}: {first.where} and {part.where} ran one command at two times and were"
                f" answered differently (an output read as {kind_name(kind)}, then one read as"
                f" {kind_name(got[0][0])}: the box changed between them), which cannot both be judged"
                " as the box: keep one of them in the file."
            )


def _note_skipped(name: str, skipped: list[tuple[int, str]], found: bool, notes: list[str]) -> None:
    """Note the outputs not read (with why, in line order); raise a UsageError where none was read."""
    if skipped:
        notes.append(
            f"{name}: a saved terminal session; not read: {'; '.join(why for _, why in sorted(skipped))}."
        )
    if not found:  # (each command named with why it is not read, as the note would)
        said = f" ({'; '.join(why for _, why in sorted(skipped))})" if skipped else ""
        raise UsageError(f"{name}: a saved terminal session holding no output this tool reads{said}.")


def read(
    name: str,
    parts: list[Section],
    read_one: Callable[[str, str, str], Reading[T]],
    notes: list[str],
    unread: Callable[[T], str] = lambda _: "",
    join: Callable[[str, T, T], T | None] = lambda *_: None,
    narrow: Callable[[T], bool] = lambda _: False,
    failed_whole: Callable[[T], bool] = lambda _: False,
    cut_short: Callable[[str, T], str] = lambda *_: "",
    changed: Callable[[str, T, T, str], T | KeptApart | None] = lambda *_: None,
    elsewhere: Callable[[T], str] = lambda _: "",
    faults: Callable[[str, T], frozenset[str]] = lambda *_: frozenset(),
) -> list[tuple[str, T, str]]:
    """(kind, output, where) of each output of the session `name` that is read: `read_one(where,
    text, command)` reads one as a file of its own is read (`command`: its prompt line's whole
    command, `docker exec gpu nvidia-smi` too), or as a report's several outputs (a collect_env
    report `python collect_env.py` printed: each checked here as a command's own output, named by
    the command and what of the report it is). An output that cannot be read is said in one note
    with the commands not read, and the rest judged; the same output twice is read once, the
    later judged (the box now), but one that `narrow` says shows less than the box gives way to
    the other (`docker exec app free -h` prints the host's own `free -h` where no lxcfs serves
    the container); two
    different outputs of one kind are refused (a narrower view or a later state of the box:
    neither may be dropped). An output that read nothing of the box (`unread(output)`: why, as
    the box said it; "" for one that read something: a refusal, `dmesg: read kernel buffer
    failed`, or a tool not found) gives way to one of its kind that did
    (`sudo dmesg` after `dmesg`), noted: it is no rival view of the box; nor are two that `join`
    makes one (the kernel logs of two boots, RDMA listings in two formats); nor is one command's
    run cut short (`cut_short(kind, output)`: why, as its reader says it) whose lines are the
    other run's as far as they go: the whole run is judged, the cut one named in the note; nor two
    outputs of one box with a command that changes its state between them (`nvidia-smi -pm 1`:
    `changed(kind, earlier, later, command)` joins them, api/state_change.py): the later is judged,
    the earlier kept beside it for its faults, noted; nor an output the box's login printed and
    one of its kind printed elsewhere (`elsewhere(output)`: where, as a clause: `docker run
    --gpus all IMAGE nvidia-smi`, `kubectl exec POD -- free -h`): the login's own is judged, the
    other noted as not the box's (a container's answer never replaces the box's own), unless it
    shows a fault (`faults(kind, output)`) the login's does not: a view may hide GPUs, never
    invent a fault, so the two are refused as rivals."""
    opened = shell_opened.inside(parts)  # (`kubectl exec -it POD -- sh`, then `/ # nvidia-smi`)
    each = [(part, _read_part(name, part, read_one, opened.get(part.line))) for part in parts]
    _refuse_several_boxes(name, [(part, got) for part, got in each if not opened.get(part.line)])
    _refuse_reruns_answered_otherwise(name, each, unread, failed_whole)
    found: dict[str, tuple[Section, T, str]] = {}  # kind -> its output
    skipped: list[tuple[int, str]] = []  # (line, why its output is not read)
    for part, kind, out in _outputs(each, skipped):
        where = f"{name} {part.where}"
        if kind in found and found[kind][0].text.strip() == part.text.strip():
            first = found[kind][0]
            # (the box's own answer is judged; of the same answer twice, the later, the box now:
            # a failure printed before and after a listing is no failure the listing fixed)
            if not narrow(out):
                skipped.append(
                    (first.line, f"{first.where}: the same output as {part.where}, which is judged")
                )
                found[kind] = (part, out, where)
            else:
                skipped.append((part.line, f"{part.where}: the same output as {first.where}"))
            continue
        if kind in found and (pair := _cut_rerun(kind, found[kind], (part, out, where), cut_short)):
            skipped.append(pair[0])
            found[kind] = pair[1]
            continue
        if kind in found and (both := join(kind, found[kind][1], out)) is not None:
            first = found[kind][0]
            # (a container's view joined to the box's own answer after it: the box's is judged, named)
            if narrow(found[kind][1]) and not narrow(out):
                found[kind] = (part, both, where)
            else:
                found[kind] = (first, both, found[kind][2])
            notes.append(f"{name}: {first.where} and {part.where} are {joined_said(kind, both)}.")
            continue
        if (
            kind in found
            and (failed := gives_way(found[kind], (part, out, where), lambda read: unread(read[1])))
            is not None
        ):
            lost, kept = failed
            skipped.append(
                (lost[0].line, f"{lost[0].where} answered `{unread(lost[1])}`; {kept[0].where} is judged")
            )
            found[kind] = kept
            continue
        if kind in found and (after := _after_change(name, parts, kind, found[kind], (part, out), changed)):
            if isinstance(after, str):  # (a state change between them, yet not one box's: why)
                _refuse_two(name, kind, found[kind][0], found[kind][1], part, out, after)
            notes.append(after[1])
            found[kind] = (part, after[0], where)
            continue
        if kind in found and (
            own := _own_over_elsewhere(kind, found[kind], (part, out, where), elsewhere, faults)
        ):
            skipped.append(own[0])
            found[kind] = own[1]
            continue
        if kind in found:  # (a narrower view, or the box changed: neither may be dropped)
            _refuse_two(name, kind, found[kind][0], found[kind][1], part, out)
        found[kind] = (part, out, where)
    _note_skipped(name, skipped, bool(found), notes)
    return [(kind, out, where) for kind, (_, out, where) in found.items()]


def _after_change(
    name: str,
    parts: Sequence[Section],
    kind: str,
    first: tuple[Section, T, str],
    then: tuple[Section, T],
    changed: Callable[[str, T, T, str], T | KeptApart | None],
) -> tuple[T, str] | str | None:
    """(the later output with the earlier kept beside it, the note saying so) where a command that
    changes the GPUs' state ran between two outputs of one kind of one box; where one ran but they
    are not one box's before and after it, why (api/state_change.py KeptApart), as a clause;
    None where none ran between them (or they are two boxes' by their GPUs: the plain refusal)."""
    from gpuonboard.api.state_change import KeptApart, around_change

    changer = around_change(parts, first[0].line, then[0].line)
    if changer is None or isinstance(changer, KeptApart):
        return changer.why if changer else None
    both = changed(kind, first[1], then[1], changer.command.strip())
    if both is None or isinstance(both, KeptApart):
        return f"{changer.where} changes the GPUs' state, but {both.why}" if both else None
    return both, (
        f"{name}: {first[0].where} and {then[0].where} are {kind_name(kind)} outputs of the same GPUs"
        f" before and after {changer.where}, which changes their state: the later, the box now, is"
        " judged, and each GPU's faults in the earlier one are judged as its own"
    )


def _own_over_elsewhere(
    kind: str,
    first: tuple[Section, T, str],
    then: tuple[Section, T, str],
    elsewhere: Callable[[T], str],
    faults: Callable[[str, T], frozenset[str]],
) -> tuple[tuple[int, str], tuple[Section, T, str]] | None:
    """((the other's line, why it is not judged), the login's own output) where of two outputs of
    one kind exactly one was printed elsewhere than at the box's login (a container, a pod, a job
    step: `elsewhere` says where); None where both or neither were, or where the other shows a
    fault the login's does not (`faults`: a view hides GPUs, never invents a fault): rivals
    (review revP F3: a container's GPU ERR! beside the login's healthy table was dropped)."""
    said = [elsewhere(first[1]), elsewhere(then[1])]
    if bool(said[0]) == bool(said[1]):
        return None
    other, own = (first, then) if said[0] else (then, first)
    if faults(kind, other[1]) - faults(kind, own[1]):
        return None
    why = (
        f"{other[0].where}: printed elsewhere than at the box's login ({said[0] or said[1]}), not the"
        f" box's own answer, which it never replaces; {own[0].where}, the box's own, is judged"
    )
    return (other[0].line, why), own


def _cut_rerun(
    kind: str,
    first: tuple[Section, T, str],
    then: tuple[Section, T, str],
    cut_short: Callable[[str, T], str],
) -> tuple[tuple[int, str], tuple[Section, T, str]] | None:
    """((the cut run's line, why it is not read), the whole run) where two runs of one command are one
    whole and one cut short (its reader says so) whose lines are the whole one's as far as they
    go, its last line perhaps cut inside (m32b 04: network-operator#1646's `ibv_devinfo` run
    twice, the second cut after its `board_id`); None for any other two (two different answers:
    rivals)."""
    if " ".join(first[0].command.split()) != " ".join(then[0].command.split()) or not first[0].command:
        return None
    whys = [cut_short(kind, first[1]), cut_short(kind, then[1])]
    if bool(whys[0]) == bool(whys[1]):
        return None
    cut, whole = (then, first) if whys[1] else (first, then)
    short = [line.rstrip() for line in cut[0].text.splitlines() if line.strip()]
    full = [line.rstrip() for line in whole[0].text.splitlines() if line.strip()]
    if not short or len(short) > len(full) or short[:-1] != full[: len(short) - 1]:
        return None
    if not full[len(short) - 1].startswith(short[-1]):
        return None
    said = (
        f"{cut[0].where}: the same command as {whole[0].where}, its output cut short ({whys[0] or whys[1]}),"
        f" the same as that one's as far as it goes; {whole[0].where}, whole, is judged"
    )
    return (cut[0].line, said), whole


def _outputs(
    each: list[tuple[Section, list[tuple[str, T, str]] | str]], skipped: list[tuple[int, str]]
) -> list[tuple[Section, str, T]]:
    """(its command's part, named with what of it, kind, output) of each output read, in order;
    a part read as no output is added to `skipped` with why ('' : said nowhere)."""
    outputs: list[tuple[Section, str, T]] = []
    for part, got in each:
        if isinstance(got, str):
            skipped += [(part.line, got)] if got else []
            continue
        outputs += [(replace(part, what=what), kind, out) for kind, out, what in got]
    return outputs


def _refuse_two(
    name: str, kind: str, first: Section, before: T, part: Section, out: T, why: str = ""
) -> NoReturn:
    """Refuse two different outputs of one kind in the session `name` (a narrower view, or the
    box changed between them: neither may be dropped), saying how they differ; `why`: the reason
    two outputs around a state-changing command are not one box's (_after_change), said first."""
    if why:
        from gpuonboard.api.state_change import KEEP_APART_ADVICE

        raise UsageError(
            f"{name}: {first.where} and {part.where} are two {_outputs_said(kind, first, part)} that"
            " cannot be judged as one box before and after a change of its GPUs' state:"
            f" {why}; {KEEP_APART_ADVICE}."
        )
    # (how they differ, as a folder's refusal says it: api/unread.py disagreement)
    differ = (
        disagreement(kind, before, out)
        if isinstance(before, ProbeOutput) and isinstance(out, ProbeOutput)
        else ""
    )
    raise UsageError(
        f"{name}: {first.where} and {part.where} are two {_outputs_said(kind, first, part)}{differ},"
        " which cannot both be judged as the box (one may show part of it, or the box changed"
        " between them): keep one of them in the file."
    )


def _outputs_said(kind: str, *parts: Section) -> str:
    """What two outputs of `kind` are, by their commands: a `cat /proc/meminfo` is no `free`
    output, though read as one (measure38d 15)."""
    if kind == "free" and any("/proc/meminfo" in part.command for part in parts):
        return "memory outputs"  # (each named by its command: `cat /proc/meminfo`, `free -m`)
    return f"{kind_name(kind)} outputs"
