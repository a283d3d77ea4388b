"""Steps that change a host: `template` (render a Jinja2 file, write only on change) and `command`."""

from __future__ import annotations

import hashlib
import posixpath
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, truthy


def _probe_name(kind: str, key: str) -> str:
    return f"{kind}:{hashlib.sha1(key.encode()).hexdigest()[:10]}"


class TemplateStep(Step):
    """Render templates/<src> with host, order, facts and probe outputs; write it atomically
    to `dest` only when its content or mode differs (the remote sha256 rides in the fact probe)."""

    name = "template"
    read_only = False
    ARGS = {
        "src": "template path under templates/",
        "dest": "absolute remote path",
        "mode": "octal file mode, e.g. '0644'",
        "probes": "extra read-only commands whose outputs the template reads as p.<name>",
        "follow": "a `dest` that is a symlink: write to its target, keeping the link (default false)",
    }
    RAW_ARGS = frozenset({"probes"})

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        for key in ("src", "dest"):
            if not isinstance(self.args.get(key), str) or not self.args[key]:
                raise StepArgsError(f"argument {key!r} is required and must be a text")
        if not posixpath.isabs(self.args["dest"]):
            raise StepArgsError(f"argument 'dest' must be an absolute path, not {self.args['dest']!r}")
        if self.args["dest"].endswith("/"):
            # a directory: the rename put the temp file inside it, "changed" on every run
            raise StepArgsError(
                f"argument 'dest' must name a file, not the directory {self.args['dest']!r}"
                " (add the file's name)"
            )
        mode = self.args.get("mode", "0644")
        if not isinstance(mode, str):
            # YAML reads an unquoted 0644 as the number 420: refuse rather than write mode 0420
            raise StepArgsError(f"argument 'mode' must be quoted, like mode: \"0644\", not {mode!r}")
        if not re.fullmatch(r"0?[0-7]{3,4}", mode):
            raise StepArgsError(f"argument 'mode' must be an octal mode like '0644', not {mode!r}")
        self.mode = mode.lstrip("0").rjust(3, "0")
        probes = self.args.get("probes") or {}
        if not isinstance(probes, Mapping) or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, str) for k, v in probes.items()
        ):
            raise StepArgsError("argument 'probes' must map names to command texts")
        # (private: what they print is the template's data, a secret perhaps, never a report's)
        self.user_probes = {k: Probe(_probe_name("p", k + v), v, private=True) for k, v in probes.items()}
        self.follow = follow_arg(self.args.get("follow", False))
        self.state_probe = Probe(
            _probe_name("template", self.args["dest"] + ("\0follow" if self.follow else "")),
            state_command(self.args["dest"], self.follow),
        )

    def probes(self) -> list[Probe]:
        """The remote file's mode and sha256, plus the template's own probes."""
        return [self.state_probe, *self.user_probes.values()]

    def failed_probe(self, ctx: StepContext) -> str | None:
        """A probe of the template's that failed: its output, empty or cut, is not the value the
        template reads (`cat` of a missing file rendered `token=` and wrote it)."""
        for key, probe in self.user_probes.items():
            out = ctx.facts.raw[probe.name]
            if out.exit_code != 0:
                err = (out.stderr.strip().splitlines() or ["no error output"])[-1]
                return (
                    f"template {self.args['src']!r}: probe {key!r} ({probe.command}) exited"
                    f" {out.exit_code} ({err}); fix it, or end it with '|| true' if a failure is"
                    " expected"
                )
        return None

    def render(self, ctx: StepContext) -> bytes:
        """The file content for this host."""
        from gpuonboard.templating import render_file

        p = {k: ctx.facts.raw[pr.name].stdout for k, pr in self.user_probes.items()}
        return render_file(
            ctx.project,
            self.args["src"],
            host=ctx.host.name,
            inventory_host=ctx.host,
            order=ctx.host.order,
            vars=ctx.host.vars,
            facts=ctx.facts.summary(),
            p=p,
        ).encode()

    def plan(self, ctx: StepContext) -> Plan:
        """Compare the rendered content's sha256 and the mode with the remote file's."""
        import jinja2

        failed = self.failed_probe(ctx)
        if failed:
            return Plan(False, failed, failed=True)
        try:
            content = self.render(ctx)
        except jinja2.TemplateNotFound:
            return Plan(
                False,
                f"template {self.args['src']!r} not found under {ctx.project / 'templates'}",
                failed=True,
            )
        except jinja2.UndefinedError as exc:
            return Plan(
                False, f"template {self.args['src']!r} uses an undefined value ({exc.message})", failed=True
            )
        except jinja2.TemplateError as exc:
            return Plan(False, f"template {self.args['src']!r} cannot be rendered ({exc})", failed=True)
        except Exception as exc:  # `{{ 1/0 }}` in the file: the template's error, not ours
            return Plan(
                False,
                f"template {self.args['src']!r} cannot be rendered ({type(exc).__name__}: {exc})",
                failed=True,
            )
        want = hashlib.sha256(content).hexdigest()
        dest = self.args["dest"]
        state = parse_state(ctx.facts.raw[self.state_probe.name].stdout)
        refused = refusal(dest, state)
        if refused:
            return Plan(False, refused, failed=True)
        if state.sha == want and same_mode(state.mode, self.mode):
            through = f" (through the symlink to {state.link})" if state.link is not None else ""
            return Plan(False, f"{dest} is up to date{through}")
        diff: dict[str, Any] = {
            "path": dest,
            "before": {"sha256": state.sha, "mode": state.mode},
            "after": {"sha256": want, "mode": self.mode, "size": len(content)},
        }
        if state.link is not None:
            diff["symlink"] = {"target": state.link, "kept": self.follow}
        return Plan(True, change_message(dest, state, self.follow), diff=diff, data=(content, want))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """Write to a temp file beside dest with its mode, then rename: never a half-written
        file, and dest never exists with the wrong mode."""
        content, want = plan.data
        script = write_script(self.args["dest"], self.mode, want, secrets.token_hex(8), self.follow)
        return ctx.runner.run(shell.sh_c(script), stdin=content)

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The sha256 the host computed of the written file must be the rendered one."""
        _, want = plan.data
        if not applied.ok:
            err = (applied.stderr.strip().splitlines() or [f"exit code {applied.exit_code}"])[-1]
            return f"could not write {self.args['dest']}: {err}"
        got = applied.stdout.split()[:1]
        if got != [want]:
            return f"{self.args['dest']} does not hold the rendered content after writing"
        return None


class CommandStep(Step):
    """Run a command once; `creates: PATH` makes it idempotent (skipped when PATH exists)."""

    name = "command"
    read_only = False
    ARGS = {
        "argv": "the command as a list of arguments (each quoted)",
        "creates": "a path the command creates",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        argv = self.args.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str | int | float) for a in argv):
            raise StepArgsError("argument 'argv' is required: a list of arguments like [touch, /tmp/x]")
        self.argv = [str(a) for a in argv]
        creates = self.args.get("creates")
        if creates is not None and not isinstance(creates, str):
            raise StepArgsError("argument 'creates' must be a path")
        self.creates = creates
        self.state_probe = Probe(
            _probe_name("creates", str(creates)),
            f"[ -e {shell.quote(creates)} ] && echo present || true" if creates else "true",
        )

    def probes(self) -> list[Probe]:
        """Whether `creates` already exists."""
        return [self.state_probe] if self.creates else []

    def plan(self, ctx: StepContext) -> Plan:
        """Run unless `creates` exists."""
        if self.creates and ctx.facts.raw[self.state_probe.name].stdout.strip() == "present":
            return Plan(False, f"{self.creates} exists")
        return Plan(True, "run " + shell.join(self.argv))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """Run the quoted argv."""
        return ctx.runner.run(shell.join(self.argv))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The command must exit 0."""
        if applied.ok:
            return None
        err = (applied.stderr.strip().splitlines() or [""])[-1]
        return f"command {shell.join(self.argv)} exited {applied.exit_code}" + (f": {err}" if err else "")


def same_mode(have: str | None, want: str) -> bool:
    """Pure: `stat -c %a`'s mode is `want` (it prints 0 for mode 000, never "000")."""
    try:
        return have is not None and int(have, 8) == int(want, 8)
    except ValueError:
        return False


def dest_is_directory(dest: str) -> str:
    """The sentence for a `dest` that is a directory on the host (mv would put the file inside)."""
    return f"{dest} is a directory on the host; 'dest' must name a file (e.g. {dest.rstrip('/')}/NAME)"


def write_script(dest: str, mode: str, want: str, token: str, follow: bool = False) -> str:
    """The sh script that writes stdin to `dest` atomically, with `mode`, and prints its sha256.

    install (one process for mktemp + cat + chmod) unlinks whatever sits at the unpredictable
    temp name and creates it with O_EXCL (a planted symlink or FIFO is never followed), copies
    stdin, then sets the mode, all before the rename. A link that drops mid-write ends stdin
    early, and install succeeds with a cut file: the rename happens only when the temp file's
    sha256 is the rendered one. A hang-up or kill leaves no temp file (dash runs no EXIT trap
    on death by signal, so the signals exit through it). A `dest` that is a directory is refused:
    `mv` would put the file inside it (and every later run would write another); so is one
    that is a device, FIFO or socket (`mv` would replace it). A `dest` that exists keeps its
    owner and group when the login is root (who may give them); else, and for a new file, it
    belongs to the login user. A `dest` that is a symlink is replaced by the file, as Ansible's
    template does by default; with `follow` the file is written (the same way, temp file in
    its directory + rename) to the link's final target, and the link stays.
    """
    cannot = f"{dest} is a symlink whose target cannot be resolved (a loop, or a missing directory)"
    values = {
        "q": dest,
        "d": posixpath.dirname(dest) or "/",
        "tmp": ".gpuonboard." + token,
        "mode": mode,
        "want": want,
        "follow": "1" if follow else "",
        "cannot": cannot,
        "isdir": dest_is_directory(dest),
        "special": not_regular(dest),
    }
    # the values template_write.sh reads, as shell words before it
    return "".join(f"{k}={shell.quote(v)}\n" for k, v in values.items()) + sh.load("template_write")


def follow_arg(value: Any) -> bool:
    """Pure: the `follow` argument (true/false, or its text as a templated argument renders)."""
    return truthy(value, "follow")


def state_command(dest: str, follow: bool) -> str:
    """The read-only probe of `dest`: `directory`, `special` (a device, FIFO or socket),
    `unresolved` (with `follow`: a link loop, or a missing directory), or the mode and sha256
    of the file the path reads (the link's target: `stat -L`, as the link's own mode is always
    777), or nothing when absent; then, for a symlink, `link TARGET` LAST: a target may hold
    line breaks (`x<LF>644 <sha256>` must not read as a file that is up to date), so everything
    from that line on is the target. Plain files cost two execs, no subshells (cheap on 50 hosts)."""
    resolve = ' f=$(readlink -f -- "$f") || { echo unresolved; f=; };' if follow else ""
    return (
        f"f={shell.quote(dest)}; l="
        f'; if [ -L "$f" ]; then l=$(readlink -- "$f");{resolve} fi'
        '; if [ -z "$f" ]; then :; elif [ -d "$f" ]; then echo directory'
        '; elif [ -f "$f" ]; then stat -L -c %a "$f" && sha256sum < "$f"'
        '; elif [ -e "$f" ] && [ ! -L "$f" ]; then echo special; fi'
        '; [ -z "$l" ] || printf \'link %s\\n\' "$l"'
    )


@dataclass(frozen=True)
class RemoteState:
    """What `dest` is on the host, from state_command's output."""

    kind: str  # "absent", "file", "directory", "special" or "unresolved"
    mode: str | None = None
    sha: str | None = None
    link: str | None = None  # the symlink's target as `readlink` prints it, when dest is one


def parse_state(stdout: str) -> RemoteState:
    """Pure: state_command's output (the `link` line and all after it: the link's target)."""
    lines = stdout.splitlines()
    link = None
    at = next((i for i, line in enumerate(lines) if line.startswith("link ")), None)
    if at is not None:
        link, lines = "\n".join([lines[at][len("link ") :], *lines[at + 1 :]]), lines[:at]
    words = " ".join(lines).split()
    if not words:
        return RemoteState("absent", link=link)
    if words[0] in ("directory", "special", "unresolved"):
        return RemoteState(words[0], link=link)
    return RemoteState("file", words[0], words[1] if len(words) > 1 else None, link)


def refusal(dest: str, state: RemoteState) -> str | None:
    """Pure: why `dest` cannot be written, as it stands on the host (None: it can)."""
    if state.kind == "unresolved":
        return (
            f"{dest} is a symlink to {state.link} that cannot be resolved on the host (a loop, or a"
            " missing directory); fix the link, or drop 'follow' to replace the link with a file"
        )
    if state.kind == "directory":
        if state.link is None:
            return dest_is_directory(dest)
        return (
            f"{dest} is a symlink to the directory {state.link} on the host; 'dest' must name a file"
            f" (e.g. {dest.rstrip('/')}/NAME)"
        )
    if state.kind == "special":
        return not_regular(dest) if state.link is None else not_regular(f"{dest} (a symlink to {state.link})")
    return None


def change_message(dest: str, state: RemoteState, follow: bool) -> str:
    """Pure: what writing would do (the message --check shows)."""
    verb = "create" if state.sha is None else "update"
    if state.link is None:
        return f"{verb} {dest}"
    if follow:
        return f"{verb} {state.link}, the target of the symlink {dest} (the link is kept)"
    return (
        f"replace the symlink {dest} (-> {state.link}) with a file"
        " (add 'follow: true' to write to its target instead)"
    )


def not_regular(dest: str) -> str:
    """The sentence for a `dest` that is a device, FIFO or socket (mv would replace it)."""
    return (
        f"{dest} exists on the host and is not a regular file (a device, FIFO or socket);"
        " 'dest' must name a regular file"
    )
