"""Host aliases resolved by OpenSSH itself: `ssh -G -F CONFIG ALIAS`, one local process per
alias (run concurrently, each bounded), read into the settings gpuonboard connects with.

`ssh -G` applies the config exactly as `ssh ALIAS` would (Match of every kind, Include, Host
patterns with negation, first value wins, tokens in HostName) and prints every option, the
defaults included. A setting counts as *set by the config* (so that it beats the inventory's
vendor profile and defaults, as an SSH config Host entry always has) when:

- user, port: a second reading of the same config is run, with a last `Host *` block that
  sets a sentinel User and Port (a wrapper file that Includes the config): a value the config
  sets comes first and wins, so the sentinel shows exactly where the config sets nothing
  (a `User` equal to your own login name, a `Port 22`, still count as set). Where OpenSSH
  re-reads the config for `Match final` or canonicalisation, or cannot read the wrapper, the
  values come from the plain reading and a user or port equal to OpenSSH's default counts as
  not set;
- hostname: it differs from the alias (OpenSSH prints it in lower case);
- identityfile: the list differs from OpenSSH's own default list (`ssh -G -F /dev/null`);
- certificatefile, proxyjump, proxycommand, hostkeyalias: present at all;
- connecttimeout, serveraliveinterval: other than OpenSSH's `none` / `0`.

`Match exec` commands run under `ssh -G` as they do under `ssh ALIAS`: that is the user's
own config. Each call is bounded: a timeout (SSH_G_TIMEOUT, the whole process group killed
past it), a minimal environment, stdin from /dev/null, at most MAX_OUTPUT bytes read.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.once import lazy_re

MAX_CONFIG_BYTES = 1 << 20  # an ssh_config is a few KiB; 1 MiB is far past any real one
SSH_G_TIMEOUT = 5.0  # seconds per `ssh -G` (a `Match exec` command runs inside it)
MAX_OUTPUT = 1 << 20  # bytes read from one call's stdout and stderr each (a -G dump is ~3 KiB)
MAX_WORKERS = 8  # `ssh -G` calls at a time (each is ~10 ms of CPU)
USER_SENTINEL = "gpuonboard-unset-user"
PORT_SENTINEL = "65531"
# the options read from `ssh -G`; those in CONNECTION_KEYS decide that the config covers a host
READ_KEYS = (
    "hostname",
    "port",
    "user",
    "identityfile",
    "certificatefile",
    "proxyjump",
    "proxycommand",
    "hostkeyalias",
    "connecttimeout",
    "serveraliveinterval",
    "stricthostkeychecking",
    "userknownhostsfile",
)
CONNECTION_KEYS = frozenset(
    {"hostname", "port", "user", "identityfile", "certificatefile", "proxyjump", "proxycommand"}
)
LIST_KEYS = frozenset({"identityfile", "certificatefile"})
# tokens OpenSSH expands in IdentityFile and CertificateFile that gpuonboard expands too
# (%C, %j, %k and %T are refused: a hash or a value only known when connecting)
PATH_TOKENS = frozenset("%dhilLnpru")
PROXY_COMMAND_TOKENS = frozenset("%hnpr")
_TOKEN = lazy_re(r"%(.?)")


def ssh_program() -> str | None:
    """The `ssh` client on PATH, or None (then the own reader, `sshconfig`, is used)."""
    return shutil.which("ssh")


def bad_token(text: str, allowed: Iterable[str]) -> str | None:
    """The first `%x` token in `text` that is not one of `allowed` (`%` stands for `%%`)."""
    allowed = frozenset(allowed)
    return next((f"%{m.group(1)}" for m in _TOKEN.finditer(text) if m.group(1) not in allowed), None)


def expand_tokens(text: str, values: Mapping[str, str], allowed: Iterable[str]) -> tuple[str, str | None]:
    """`text` with each `%x` token of `allowed` replaced by `values[x]` (`%%` is `%`), and the
    first token not allowed (then `text` is returned as it is), else None."""
    bad = bad_token(text, allowed)
    if bad is not None:
        return text, bad
    return _TOKEN.sub(lambda m: "%" if m.group(1) == "%" else values[m.group(1)], text), None


@dataclass(frozen=True)
class SSHResolution:
    """One alias as OpenSSH resolves it: each option of READ_KEYS as `ssh -G` prints it (the
    identity and certificate files with `~` and tokens expanded), and which the config sets."""

    alias: str
    values: Mapping[str, tuple[str, ...]]
    set_keys: frozenset[str]

    def first(self, key: str) -> str | None:
        """The option's (first) value, or None."""
        got = self.values.get(key, ())
        return got[0] if got else None

    @property
    def covered(self) -> bool:
        """Whether the config sets any connection setting of this alias."""
        return bool(self.set_keys & CONNECTION_KEYS)

    def lookup(self) -> dict[str, Any]:
        """The settings the config sets, shaped as paramiko's lookup() (identityfile and
        certificatefile lists; the hostname always, for a covered alias)."""
        if not self.covered:
            return {}
        out: dict[str, Any] = {"hostname": self.first("hostname") or self.alias.lower()}
        for key in sorted(self.set_keys):
            value = self.values.get(key, ())
            out[key] = list(value) if key in LIST_KEYS else " ".join(value)
        if "proxyjump" in out:  # (ProxyJump takes ssh:// URIs too)
            out["proxyjump"] = ",".join(
                h.removeprefix("ssh://").rstrip("/") for h in out["proxyjump"].split(",")
            )
        return out


def _local_user() -> tuple[str, str]:
    """This machine's user name and home directory as OpenSSH takes them (from the password
    database, not $USER and $HOME)."""
    entry = pwd.getpwuid(os.getuid())
    return entry.pw_name, entry.pw_dir


def _clean_env() -> dict[str, str]:
    """The environment `ssh -G` runs in: PATH (a `Match exec` command may need it), HOME, the
    user's name, and the C locale; nothing else of this process."""
    name, home = _local_user()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "USER": name,
        "LOGNAME": name,
        "LC_ALL": "C",
    }


def _run(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    """Run `argv` bounded (stdin /dev/null, its own process group, killed whole past
    `timeout` or past MAX_OUTPUT bytes of output): (exit status or None when killed, stdout,
    stderr)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_clean_env(),
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    sizes = dict.fromkeys(chunks, 0)
    deadline = time.monotonic() + timeout
    killed = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map() and not killed:
            left = deadline - time.monotonic()
            events = sel.select(max(0.0, left)) if left > 0 else []
            if not events:
                killed = True
                break
            for key, _ in events:
                fd = key.fd
                data = os.read(fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                chunks[fd].append(data)
                sizes[fd] += len(data)
                if sizes[fd] > MAX_OUTPUT:
                    killed = True
    if killed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    try:
        status = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not killed else 5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        status, killed = proc.wait(), True
    proc.stdout.close()
    proc.stderr.close()
    out, err = (b"".join(chunks[fd]).decode("utf-8", "replace") for fd in chunks)
    return (None if killed else status), out, err


def parse_dump(text: str) -> dict[str, tuple[str, ...]]:
    """`ssh -G` output (`keyword value` lines) as keyword -> its values in order (identityfile
    and certificatefile appear once per file)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key in READ_KEYS:
            out.setdefault(key, []).append(value)
    return {k: tuple(v) for k, v in out.items()}


def _ssh_message(err: str) -> str:
    """ssh's own words: the last lines of its stderr that are not debug output, in a line."""
    lines = [
        ln.strip()
        for ln in err.splitlines()
        if ln.strip() and not ln.startswith(("debug", "OpenSSH_", "Pseudo-terminal"))
    ]
    return "; ".join(lines[-2:])[:300] or "no message"


class OpenSSHConfig:
    """The user's SSH config as OpenSSH reads it, one `ssh -G` per alias looked up (cached;
    `prefetch` resolves many at once). Offers what the loader asks of a config: lookup(),
    get_hostnames(), unexpanded(), path."""

    def __init__(self, path: Path, program: str, timeout: float = SSH_G_TIMEOUT) -> None:
        self.path = path
        self.program = program
        self.timeout = timeout
        self._done: dict[str, SSHResolution | InventoryError] = {}
        self._defaults: tuple[str, ...] | None = None

    def prefetch(self, aliases: Iterable[str]) -> None:
        """Resolve `aliases` not resolved yet, MAX_WORKERS calls at a time."""
        todo = list(dict.fromkeys(a for a in aliases if a not in self._done))
        if not todo:
            return
        self._default_identities()
        with self._wrapper() as wrapper, ThreadPoolExecutor(min(MAX_WORKERS, len(todo))) as pool:
            for alias, got in zip(
                todo, pool.map(lambda a: self._resolve_or_error(a, wrapper), todo), strict=True
            ):
                self._done[alias] = got

    def resolution(self, alias: str) -> SSHResolution:
        """`alias` as OpenSSH resolves it; an InventoryError when ssh refuses the config."""
        if alias not in self._done:
            self.prefetch([alias])
        got = self._done[alias]
        if isinstance(got, InventoryError):
            raise got
        return got

    def resolution_with(self, alias: str, options: Sequence[str]) -> SSHResolution:
        """`alias` as `ssh -o OPTION... ALIAS` resolves it (`options`: `HostName=10.0.0.5`,
        `ProxyJump=none`): ssh's command line sets them before the config is read, so a `Match
        host` block tests that HostName, and a config's ProxyJump yields to `none` (its later
        ProxyCommand then applies)."""
        key = "\0".join((alias, *options))
        if key not in self._done:
            self._default_identities()
            words = tuple(w for option in options for w in ("-o", option))
            with self._wrapper() as wrapper:
                self._done[key] = self._resolve_or_error(alias, wrapper, words)
        got = self._done[key]
        if isinstance(got, InventoryError):
            raise got
        return got

    def lookup(self, alias: str) -> dict[str, Any]:
        """The settings this config sets for `alias` (paramiko's lookup() shape)."""
        return self.resolution(alias).lookup()

    def unexpanded(self, alias: str, key: str) -> Any:
        """The setting as OpenSSH prints it (ProxyCommand's tokens are not expanded by -G)."""
        return self.lookup(alias).get(key)

    def get_hostnames(self) -> set[str]:
        """The aliases resolved so far that the config covers (sets a connection setting of)."""
        return {a for a, r in self._done.items() if isinstance(r, SSHResolution) and r.covered}

    def _default_identities(self) -> tuple[str, ...]:
        """OpenSSH's own IdentityFile list (read once from `ssh -G -F /dev/null`)."""
        if self._defaults is None:
            status, out, _ = _run(
                [self.program, "-G", "-F", "/dev/null", "--", "gpuonboard-probe"], self.timeout
            )
            self._defaults = parse_dump(out).get("identityfile", ()) if status == 0 else ()
        return self._defaults

    @contextlib.contextmanager
    def _wrapper(self) -> Iterator[Path | None]:
        """A config that Includes the user's and ends with the sentinel User and Port (None
        when the path cannot be written into an Include line: a quote, a glob character)."""
        target = str(self.path.resolve())
        if any(c in target for c in '"*?[\n\r'):
            yield None
            return
        with tempfile.TemporaryDirectory(prefix="gpuonboard-ssh-") as tmp:
            wrapper = Path(tmp) / "config"
            wrapper.write_text(
                f'Include "{target}"\nHost *\n  User {USER_SENTINEL}\n  Port {PORT_SENTINEL}\n'
            )
            wrapper.chmod(0o600)
            yield wrapper

    def _resolve_or_error(
        self, alias: str, wrapper: Path | None, options: tuple[str, ...] = ()
    ) -> SSHResolution | InventoryError:
        try:
            return self._resolve(alias, wrapper, options)
        except InventoryError as exc:
            return exc

    def _call(
        self, config: Path, alias: str, verbose: bool, options: tuple[str, ...] = ()
    ) -> tuple[dict[str, tuple[str, ...]], str]:
        """One `ssh -G` of `alias` with `config` (and command-line `options`): its options and
        stderr; a failure or a timeout is an InventoryError naming the config and ssh's words."""
        argv = [self.program, *(["-v"] if verbose else []), "-G", "-F", str(config), *options, "--", alias]
        try:
            status, out, err = _run(argv, self.timeout)
        except OSError as exc:  # (ssh not executable, no process left to start)
            raise InventoryError(
                f"{self.path}: OpenSSH's {self.program} could not be started to resolve host {alias!r}"
                f" ({exc.strerror or exc}); fix that, or give {alias!r} its address in the inventory."
            ) from None
        if status is None:
            raise InventoryError(
                f"{self.path}: `ssh -G {alias}` (OpenSSH reading this config) did not finish within"
                f" {self.timeout:g} s, so host {alias!r} cannot be resolved (a `Match exec` command of"
                f" the config runs there, as under `ssh {alias}`); fix it, or give {alias!r} its"
                " address in the inventory."
            )
        if status != 0:
            raise InventoryError(
                f"{self.path}: OpenSSH cannot resolve host {alias!r} from this SSH config (`ssh -G`"
                f" said: {_ssh_message(err)}); fix the config, or give {alias!r} its address in the"
                " inventory."
            )
        return parse_dump(out), err

    def _resolve(self, alias: str, wrapper: Path | None, options: tuple[str, ...] = ()) -> SSHResolution:
        if alias.startswith("-") or not alias or any(c.isspace() or ord(c) < 32 for c in alias):
            raise InventoryError(f"{self.path}: {alias!r} is no host alias `ssh -G` can be asked about.")
        local, _ = _local_user()
        sentinel: dict[str, tuple[str, ...]] | None = None
        if wrapper is not None:
            with contextlib.suppress(InventoryError):  # (then the plain reading decides)
                got, err = self._call(wrapper, alias, True, options)
                dump = "\n".join(" ".join(v) for k, v in got.items() if k not in ("user", "port"))
                if USER_SENTINEL not in dump and PORT_SENTINEL not in dump:
                    sentinel = got
                    if "re-parsing configuration" not in err:  # (no final pass: exact)
                        return self._resolution(alias, got, sentinel, local)
        values, _ = self._call(self.path, alias, False, options)
        return self._resolution(alias, values, sentinel, local)

    def _resolution(
        self,
        alias: str,
        values: dict[str, tuple[str, ...]],
        sentinel: dict[str, tuple[str, ...]] | None,
        local: str,
    ) -> SSHResolution:
        """The resolution from `values` (a -G dump), with what the config sets decided as the
        module docstring says; the sentinel user and port replaced by OpenSSH's defaults."""
        values = dict(values)
        set_keys: set[str] = set()
        for key, default, mark in (("user", local, USER_SENTINEL), ("port", "22", PORT_SENTINEL)):
            value = values.get(key, (default,))[0]
            if value == mark:
                value = default
            elif value != default:
                set_keys.add(key)
            if sentinel is not None and sentinel.get(key, (mark,))[0] != mark:
                set_keys.add(key)
            values[key] = (value,)
        hostname = values.get("hostname", (alias.lower(),))[0]
        if hostname != alias.lower():
            set_keys.add("hostname")
        if values.get("identityfile", ()) != self._default_identities():
            set_keys.add("identityfile")
        for key in ("certificatefile", "proxyjump", "proxycommand", "hostkeyalias"):
            if values.get(key) and values[key] != ("none",):
                set_keys.add(key)
        if values.get("connecttimeout", ("none",)) != ("none",):
            set_keys.add("connecttimeout")
        if values.get("serveraliveinterval", ("0",)) != ("0",):
            set_keys.add("serveraliveinterval")
        if values.get("stricthostkeychecking", ("ask",))[0] in ("false", "accept-new"):
            set_keys.add("stricthostkeychecking")  # (-G prints `no` as false)
        if values.get("userknownhostsfile") == ("/dev/null",):
            set_keys.add("userknownhostsfile")
        tokens = self._path_tokens(alias, hostname, values["port"][0], values["user"][0])
        for key in LIST_KEYS:
            if key in values:
                values[key] = tuple(self._expand_path(alias, key, v, tokens) for v in values[key])
        return SSHResolution(alias, values, frozenset(set_keys))

    @staticmethod
    def _path_tokens(alias: str, hostname: str, port: str, user: str) -> dict[str, str]:
        local, home = _local_user()
        full = socket.gethostname()
        return {
            "%": "%",
            "d": home,
            "h": hostname,
            "i": str(os.getuid()),
            "l": full,
            "L": full.split(".")[0],
            "n": alias,
            "p": port,
            "r": user,
            "u": local,
        }

    def _expand_path(self, alias: str, key: str, value: str, tokens: Mapping[str, str]) -> str:
        """An IdentityFile or CertificateFile path as OpenSSH opens it (`~` and tokens)."""
        text, bad = expand_tokens(value, tokens, PATH_TOKENS)
        if bad is not None:
            raise InventoryError(
                f"{self.path}: host {alias!r} takes {key} {value!r} from this SSH config, and"
                f" gpuonboard does not expand its token {bad}; write the path out, or set key_file"
                " for the host in the inventory."
            )
        if text == "~" or text.startswith("~/"):
            text = tokens["d"] + text[1:]
        return text
