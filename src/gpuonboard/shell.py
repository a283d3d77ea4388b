"""The ONLY place that builds remote command strings: quoting, sudo, env, scripts.

Every value that reaches a remote shell goes through `quote` (via `join`), so host
names, paths or order fields holding `; rm -rf /`, `$(...)`, quotes or spaces stay
literal data. Secrets (`masking.Secret`) never enter a command line (they travel over stdin);
`masking.mask` scrubs them from any text we log; `termtext` cleans text for a terminal.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

from gpuonboard import sh
from gpuonboard.masking import Secret


def quote(value: object) -> str:
    """Quote one value for a POSIX shell; refuses secrets (they must go over stdin)."""
    if isinstance(value, Secret):
        raise TypeError("a Secret must never be put on a command line; send it over stdin")
    return shlex.quote(str(value))


def join(argv: Iterable[object]) -> str:
    """Build one command from an argument vector, every element quoted."""
    return " ".join(quote(a) for a in argv)


def with_env(command: str, env: Mapping[str, object]) -> str:
    """Prefix a built command with quoted `env NAME=value` assignments (no secrets)."""
    if not env:
        return command
    for name in env:
        # POSIX names only: str.isidentifier() would also pass non-ASCII letters like 'é'.
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"{name!r} is not a valid environment variable name")
    assignments = " ".join(f"{name}={quote(value)}" for name, value in env.items())
    return f"env {assignments} {command}"


def sudo(command: str, user: str | None = None) -> str:
    """Run a built command through `sudo -n` (never prompts; fails clearly instead)."""
    prefix = ["sudo", "-n"] + (["-u", user] if user else [])
    return f"{join(prefix)} sh -c {quote(command)}"


def sh_c(script: str) -> str:
    """Run a whole script text with `sh -c`, quoted as one argument."""
    return f"sh -c {quote(script)}"


# bytes a command keeps as they are in login_neutral's wrapper: printable ASCII but the quotes, the
# characters sh expands inside double quotes (`$`, `` ` ``, `\\`), printf's `%` and csh's `!`
_NEUTRAL_BYTES = frozenset(range(0x20, 0x7F)) - frozenset(b"'\"$`\\%!")
# every other byte is written as its octal escape: the bytes the command holds are found by one
# bytes.translate that deletes the kept ones, then each is replaced by one str.replace pass, the
# backslash first (the escapes hold backslashes). The ~16 KB batched probe, one byte in seven
# escaped, holds 7 different such bytes: ~0.1 ms of CPU a host (a regex pass calling a function
# per escaped byte: ~0.45 ms; a loop over the bytes: ~1 ms)
_NEUTRAL_KEPT = bytes(sorted(_NEUTRAL_BYTES))
# a command of these only reads alike in every login shell (sh, bash, zsh, fish, csh, tcsh)
_PLAIN_COMMAND = re.compile(r"[A-Za-z0-9 _./,:=@+-]*")
# login shells that run a POSIX command text as sh does: the wrapper hands the command to the login
# shell itself there, as sshd did (its own `echo`, its options), started as sshd starts it, so that
# it reads the rc files sshd's shell read (bash's ~/.bashrc when SSH_CLIENT is set and it counts
# itself top level: SHLVL, which bash's exec of sshd's one command lowered to 0; zsh's ~/.zshenv):
# the functions, aliases and options they define are the command's, as without the wrapper (a
# `conda activate` or an `module load` of a command step), at the cost of reading them a second
# time (sshd's shell read them for the wrapper: their time and any stdout noise twice). Not
# busybox: `/bin/busybox -c` is "applet not found" (its `ash`/`sh` links are listed by those names).
_POSIX_SHELLS = "bash|rbash|zsh|sh|dash|ash|ksh|ksh93|mksh|pdksh|yash|posh"
_RUNS = f'{_POSIX_SHELLS}) exec "$SHELL" -c "$__gpo_s" "${{SHELL##*/}}" "$@";;'
# the wrapper's text (its payload one argument of at most 128 KiB, Linux's MAX_ARG_STRLEN, with room)
_NEUTRAL_MAX = 120 * 1024


def login_neutral(command: str) -> str:
    """A built command as the text sent to sshd, which runs it with the login user's shell
    (`$SHELL -c TEXT`): a command of plain words as it is; any other in a wrapper every login
    shell (POSIX ones, fish, csh, tcsh) reads alike, `sh -c '...'` around a payload of printable
    characters and octal escapes (no quote, newline, `$`, `\\` or `!` a non-POSIX shell reads
    otherwise) that printf turns back into the command, which then runs in the login shell where
    it is a POSIX one (as before, with what its rc files define: see _POSIX_SHELLS), else in sh; in sh too
    where $SHELL names no executable file (an rc file exporting SHELL=/usr/local/bin/zsh where none
    is installed). A payload over _NEUTRAL_MAX goes as it is."""
    if _PLAIN_COMMAND.fullmatch(command):
        return command
    return _neutral(command) or command


def login_neutral_prefix(command: str) -> str:
    """login_neutral for a command text that another program completes with words of its own
    (rsync's --rsync-path, after which it puts ` --server ARGS . .`): always the wrapper, ending
    in a `$0` of its own, so the words put after it reach `command` as its "$@" (plain words:
    rsync's options and `.`, read alike by every login shell). ValueError: none fits."""
    wrapped = _neutral(command)
    if wrapped is None:
        raise ValueError("the command is too long for the login shell wrapper")
    return f"{wrapped} gpo"


def _neutral(command: str) -> str | None:
    """login_neutral's wrapper around `command` (which sees the wrapper's "$@"); None: over
    _NEUTRAL_MAX."""
    data = command.encode("utf-8", "surrogateescape")
    payload = data.decode("latin-1").replace("\\", "\\134")  # (each byte as one code point)
    for byte in set(data.translate(None, _NEUTRAL_KEPT)) - {ord("\\")}:
        payload = payload.replace(chr(byte), f"\\{byte:03o}")
    if len(payload) > _NEUTRAL_MAX:
        return None
    # (the `_` keeps the command's own trailing newlines from $(...), which strips them)
    return (
        f'sh -c \'__gpo_s=$(printf "{payload}_"); __gpo_s=${{__gpo_s%_}};'
        f' if [ -f "$SHELL" ] && [ -x "$SHELL" ]; then case ${{SHELL##*/}} in {_RUNS} esac; fi;'
        ' eval "$__gpo_s"\''
    )


def merge_stderr(command: str) -> str:
    """A built command with its stderr folded into stdout (one stream to watch live)."""
    return f"{command} 2>&1"


def curl_config(values: Mapping[str, str | Secret]) -> bytes:
    """A curl `-K -` config (sent over stdin, never argv): `name = "value"` lines, escaped."""
    lines = []
    for name, value in values.items():
        if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
            raise ValueError(f"{name!r} is not a curl option name")
        raw = value.reveal() if isinstance(value, Secret) else value
        escaped = raw.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append(f'{name} = "{escaped}"\n')
    return "".join(lines).encode()


def until_stdin_closes(command: str) -> str:
    """Run a built long-lived command so that it dies when our side closes the channel.

    sshd gives a command without a pty no signal when the client closes its channel, so a
    looping `nvidia-smi -l` would live on until its next write fails. Here a watcher reads
    the channel's stdin and kills the command at EOF (the client closing, or sending EOF);
    the exit status is the command's own, and the watcher is reaped when the command ends.
    """
    script = (
        "exec 3<&0\n"
        f"{command} &\n"
        "p=$!\n"
        "( while read -r _; do :; done; kill $p ) <&3 >/dev/null 2>&1 &\n"
        "w=$!\n"
        "exec 3<&-\n"
        "wait $p; s=$?\n"
        "kill $w 2>/dev/null\n"
        "exit $s\n"
    )
    return sh_c(script)


def background(command: str, log: str) -> str:
    """Start a built command detached (nohup, output to `log`, stdin from /dev/null) and
    print its PID; the SSH channel ends at once, the command keeps running."""
    return f"nohup {command} >{quote(log)} 2>&1 </dev/null & echo $!"


SESSION_POLL_S = 1  # how often the watcher looks whether the SSH session is still there
STOP_GRACE_S = 5  # SIGTERM, then SIGKILL to what is left this many seconds later

# Shell text (no values in it: the caller's command and stop commands are built by shell.*).
# Nothing signals a script when the SSH session that started it goes away: sshd gives a
# command without a pty no SIGHUP, and the channel's stdin carried the script (it is at EOF
# from the start, so EOF there says nothing). What does change: the per-connection sshd exits
# when its connection closes (Ctrl-C, the local process killed, the link reset, sshd's
# ClientAliveInterval giving up), and the shell below it is re-parented. So the parent of this
# shell and of each shell above it, up to the first process that is not a shell (sshd; with
# `connection: local` the gpuonboard process) is recorded, and a watcher checks every second
# that each still has it; one changed (or gone) means the session is over: SIGTERM to the
# script and every descendant it has then (torchrun's ranks run in sessions of their own, so
# a process group would miss them), SIGKILL to the survivors after a grace. The watcher ends
# with the script; the exit status is the script's own. Once stopping, the watcher ignores TERM:
# the script's end makes the main shell TERM the watcher, which cut off a container's `kill`
# through its runtime (seen under load: the container's processes are not the script's).
# gw_pp PID: its name (gw_n), parent (gw_p) and start time (gw_st, clock ticks since boot) from
# /proc/PID/stat. A name may hold a line break (any process can set one: prctl, /proc/self/comm),
# and `read` takes the first line only: `a) S 1234` then reads as a child of pid 1234, drawn into
# the tree that is killed. So a line without all of stat's fields after the name is refused.
# The start time tells a pid from a new process given the same number (gw_alive).
_SESSION_BOUND = sh.load("session_bound")


def until_session_ends(command: str, stop_term: str = "", stop_kill: str = "") -> str:
    """Shell text that runs the built `command` and stops it (and every process under it) when
    the SSH session that started it goes away; `stop_term` / `stop_kill` (built commands) also
    run then (a container's `kill`). The exit status is the command's own. See _SESSION_BOUND."""
    values = {
        "TERM": f"{stop_term} >/dev/null 2>&1" if stop_term else ":",
        "KILL": f"{stop_kill} >/dev/null 2>&1" if stop_kill else ":",
        "GRACE": str(STOP_GRACE_S),
        "POLL": str(SESSION_POLL_S),
        "COMMAND": command,
    }
    return re.sub(r"@([A-Z]+)@", lambda m: values[m.group(1)], _SESSION_BOUND)


def temp_script(workdir: str, script_name: str, command: str) -> str:
    """Run a script that arrives on stdin: make the private directory `workdir` (mode 0700;
    refusing one that exists), write stdin to `workdir/script_name`, run the built `command`
    (which names that file), and remove the directory on every exit (INT/TERM/HUP included).

    The exit status is the command's own. `workdir` is a literal path chosen by the caller
    (e.g. /tmp/gpuonboard-<random>), so a command run through `sudo` or in a container with
    `-v workdir:workdir` sees the same path.
    """
    if not script_name or "/" in script_name:
        raise ValueError(f"{script_name!r} must be a plain file name")
    d = quote(workdir)
    script = (
        f"D={d}\n"
        'cleanup() { rm -rf -- "$D"; }\n'
        "umask 077\n"
        # a closed channel (Ctrl-C, a dropped link) must not kill this shell with SIGPIPE when
        # it reports a child killed by a signal ("Terminated"): that skips the EXIT trap
        "trap '' PIPE\n"
        'mkdir -- "$D" || exit 1\n'
        "trap cleanup EXIT\n"
        "trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM\n"
        f'cat > "$D"/{quote(script_name)} || exit 1\n'
        f"{command}\n"
    )
    return sh_c(script)
