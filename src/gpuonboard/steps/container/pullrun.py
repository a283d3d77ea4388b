"""One image pull on the host: the registry manifest fetched first (its size, for the free-space
check and the progress line), the login over stdin into a temporary auth dir, the pull bound to
the SSH session and to `pull_timeout`, its live progress, and the retries with backoff from one
source (`pull_from`: what failed, and whether another source may do better)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from gpuonboard import masking, shell
from gpuonboard.steps.base import Plan, StepContext, last_line
from gpuonboard.steps.container.pull import (
    Manifest,
    format_pull_progress,
    manifest_command,
    parse_config_platform,
    parse_manifest,
    parse_pull_progress,
    registry_api,
)
from gpuonboard.steps.container.settings import Settings
from gpuonboard.steps.container.state import Applied, ContainerState
from gpuonboard.units import format_bytes

PROGRESS_EVERY = 0.5  # seconds between live progress updates


_PULL_TIMED_OUT = "##gpuonboard-pull-timed-out"


_LOGIN_FAILED = "##gpuonboard-login-failed"


# login errors that are the network's, not the credentials': retried like a failed pull
_NETWORK_ERRORS = (
    "connection refused",
    "no such host",
    "i/o timeout",
    "network is unreachable",
    "connection reset",
    "tls handshake timeout",
    "no route to host",
    "temporary failure in name resolution",
    "server misbehaving",
    "timeout exceeded",
    "eof",
)


# a pull refused for the host's platform: never the network's, so never retried. docker: "no
# matching manifest for linux/arm64/v8 in the manifest list entries" (docker-library/mysql#698);
# podman (containers/image): "no image found in manifest list for architecture arm64, ..."
_NO_PLATFORM = ("no matching manifest for", "no image found in manifest list for architecture")


def _no_platform(s: Settings, where: str, text: str) -> str:
    """The sentence for a pull refused for the host's platform, quoting the runtime's line."""
    said = next(ln.strip() for ln in text.splitlines() if any(w in ln.lower() for w in _NO_PLATFORM))
    return (
        f"pulling {s.pull_ref} failed: the {where} has no build of it for this host's platform"
        f" ({said}); not retried: pull an image with a build for it, or have the mirror copy"
        " all platforms"
    )


def pull_timed_out(s: Settings, manifest: Manifest | None) -> str:
    """The sentence for a pull the host stopped at pull_timeout: how slow the link must have
    been, that finished layers are kept, and the setting to raise."""
    t = s.pull_timeout
    limit = f"{t / 3600:g} h" if t >= 3600 else f"{t / 60:g} min" if t >= 60 else f"{t:g} s"
    size = manifest.size if manifest else None
    rate = (
        f" (below {format_bytes(int(size / s.pull_timeout), binary=False)}/s on average for its"
        f" {format_bytes(size, binary=False)} of layers)"
        if size
        else ""
    )
    return (
        f"pulling {s.pull_ref} did not finish within pull_timeout ({limit}) and was stopped: the"
        f" link is too slow{rate} or the download stalled; layers finished so far are kept, so a rerun"
        " continues from them; on a slow link set vars.pull_timeout higher (e.g. 12h)"
    )


def pull_command(
    state: ContainerState, pull_ref: str, login: tuple[str, str] | None, limit: int | None = None
) -> str:
    """One pull attempt (stderr folded into stdout). With `login` (user, registry): `login
    --password-stdin` (the password is this command's stdin) into a fresh 0700 temporary dir
    (DOCKER_CONFIG for docker, REGISTRY_AUTH_FILE for podman), used by the pull and removed by
    a trap when the command ends: no credential stays on the host. A failed login prints
    `##gpuonboard-login-failed` after its error.

    The pull stops when this session ends early (Ctrl-C or SIGTERM here, a dropped link): see
    _pull_until_session_ends. The channel's stderr is fd 3 inside, for its watcher, which also
    stops a pull running longer than `limit` seconds (printing `##gpuonboard-pull-timed-out` on
    that stderr)."""
    cli = state.cli or "docker"
    pre = "sudo -n " if state.sudo else ""
    pull = shell.join([cli, "pull", pull_ref])
    if login is None:
        # the first line is what the run log shows
        script = f": {pull}\n" + _pull_until_session_ends(state, pull, "", limit=limit)
        return shell.merge_stderr(f"{shell.sh_c(script)} 3>&2")
    user, registry = login
    env = 'env DOCKER_CONFIG="$d" REGISTRY_AUTH_FILE="$d/auth.json" '
    login_cmd = shell.join([cli, "login", "--username", user, "--password-stdin", registry])
    logout_cmd = shell.join([cli, "logout", registry])
    # docker keeps a login in the platform's default credential helper (secretservice, pass)
    # unless the config already holds an auth entry: start the temporary config with one, so
    # the login lands in the file that the trap removes (and log out in the trap as well)
    seed = json.dumps({"auths": {registry: {}}})
    script = (
        # the first line is what the run log shows: say what runs (no secret in it)
        f"umask 077; : {login_cmd} then {pull} with a temporary auth dir\n"
        'b=${XDG_RUNTIME_DIR:-/dev/shm}; { [ -d "$b" ] && [ -w "$b" ]; } || b=${TMPDIR:-/tmp}\n'
        'd=$(mktemp -d "$b/gpuonboard-auth.XXXXXX") || { echo "cannot create a temporary auth dir under $b";'
        f" echo '{_LOGIN_FAILED}'; exit 1; }}\n"
        f"printf '%s\\n' {shell.quote(seed)} > \"$d/config.json\"\n"
        + _pull_until_session_ends(
            state,
            f"{env}{pull}",
            f'{pre}{env}{logout_cmd} >/dev/null 2>&1; rm -rf "$d"',
            f"if ! {pre}{env}{login_cmd} 2>&1; then echo '{_LOGIN_FAILED}'; exit 1; fi\n",
            limit,
        )
    )
    return shell.merge_stderr(f"{shell.sh_c(script)} 3>&2")


def _pull_until_session_ends(
    state: ContainerState, pull: str, cleanup: str, before: str = "", limit: int | None = None
) -> str:
    """Shell text: run `before` (the login), then `pull` in the background (in its own process
    group when `setsid` exists) and wait for it; `cleanup` runs on exit however it comes.

    An SSH session's command outlives the client: sshd sends no signal to a command without
    a tty, and the pull's stdin (the password) is at its end already. So a watcher writes a
    newline to the channel's stderr (fd 3) every second; once this machine's run has gone
    (Ctrl-C, SIGTERM, a dropped link) sshd has closed that pipe, the write fails, and the
    watcher stops the pull (TERM, KILL 5 s later), whose end runs the exit trap (the logout,
    the temporary auth dir removed); so it does when this shell has gone (killed). Through
    sudo, `sudo -n kill` stops the root-owned pull. After `limit` seconds (its beats counted)
    the watcher says so on fd 3 and stops the pull the same way."""
    pre = "sudo -n " if state.sudo else ""
    sudo_kill = ' || sudo -n kill -s "$1" -- "-$p" 2>/dev/null' if state.sudo else ""
    return (
        "p=; w=\n"
        'gpo_stop_pull() { [ -n "$p" ] || return 0\n'
        f'  kill -s "$1" -- "-$p" 2>/dev/null{sudo_kill} || kill -s "$1" "$p" 2>/dev/null; }}\n'
        # KILL: a TERM reaching the watcher before it drops this shell's TERM trap is lost
        'gpo_end() { [ -z "$w" ] || kill -s KILL "$w" 2>/dev/null; gpo_stop_pull TERM'
        + (f"; {cleanup}" if cleanup else "")
        + "; }\n"
        "trap gpo_end EXIT\n"
        # a write to the closed channel (a marker, the shell's `Terminated` job note) would
        # kill this shell with SIGPIPE, skipping the exit trap: trapped, it exits through it
        "trap 'exit 130' HUP INT TERM; trap 'exit 141' PIPE\n"
        + before
        + "s=; command -v setsid >/dev/null 2>&1 && s=setsid\n"
        f"$s {pre}{pull} 3>&- 2>&1 &\n"
        "p=$!\n"
        "( trap '' PIPE; n=0\n"
        "  while sleep 1 </dev/null >/dev/null 2>&1 3>&- && kill -0 $$; do printf '\\n' >&3 || break\n"
        + (
            f"    n=$((n+1)); [ $n -lt {int(limit)} ] ||"
            f" {{ printf '%s\\n' '{_PULL_TIMED_OUT}' >&3; break; }}\n"
            if limit
            else ""
        )
        + "  done\n"
        "  gpo_stop_pull TERM; sleep 5 3>&-; gpo_stop_pull KILL ) </dev/null >/dev/null 2>&1 &\n"
        "w=$!\n"
        'wait "$p"; rc=$?; p=\n'
        'exit "$rc"'
    )


def fetch_manifest(
    ctx: StepContext, s: Settings, creds: tuple[str, masking.Secret] | None, arch: str | None = None
) -> Manifest:
    """The image's manifest from the registry (the mirror when set), asked from the host with
    curl; an index is followed to its entry for the host's platform (linux/`arch`, the OCI name
    of the host's CPU: amd64, arm64), and a single-platform image's config is read for its
    platform: an image without a build for the host comes back with `.missing` set (a pull
    would fail, or bring an image that cannot run here). Read-only; errors are in .error."""
    want = arch or "amd64"
    registry = s.mirror or (None if s.ref.docker_hub else s.ref.registry)
    host, repo = registry_api(registry, s.ref.repository)
    if s.mirror_scheme == "http":
        schemes: tuple[str, ...] = ("http",)
    elif host.split(":")[0] in ("localhost", "127.0.0.1", "::1"):
        schemes = ("https", "http")
    else:
        schemes = ("https",)
    stdin = b""
    if creds is not None:
        stdin = shell.curl_config({"user": masking.Secret(f"{creds[0]}:{creds[1].reveal()}")})
    reference = s.ref.digest or s.ref.tag or "latest"
    for hop in range(2):
        r = ctx.runner.run(manifest_command(host, repo, reference, schemes), stdin=stdin, timeout=180)
        m = parse_manifest(r.stdout, want)
        if m.platform_digest is None:
            if hop or arch is None or m.config_digest is None:
                return m  # (reached through an index: its entry named the platform)
            cmd = manifest_command(host, repo, m.config_digest, schemes, kind="blobs")
            platform = parse_config_platform(ctx.runner.run(cmd, stdin=stdin, timeout=180).stdout)
            if platform is None or platform == f"linux/{want}":
                return m
            return replace(m, platforms=(platform,), missing=f"linux/{want}")
        reference = m.platform_digest
    return Manifest(error="the manifest list points to another list")


def _progress_watcher(ctx: StepContext, manifest: Manifest | None) -> Any:
    """An on_output callback turning the pull's output into the terminal's live line."""
    if ctx.progress is None:
        return None
    report = ctx.progress
    sizes = dict(manifest.layers) if manifest and manifest.layers else None
    start = time.monotonic()
    seen: list[str] = []
    last = [0.0]

    def on_output(chunk: bytes) -> None:
        seen.append(chunk.decode("utf-8", "replace"))
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
        p = parse_pull_progress("".join(seen).splitlines(), sizes)
        report(format_pull_progress(p, now - start))

    return on_output


def pull_from(
    ctx: StepContext,
    plan: Plan,
    s: Settings,
    state: ContainerState,
    secret: tuple[str, masking.Secret] | None,
    manifest: Manifest | None,
    out: Applied,
) -> str:
    """Login + pull from one source with retries: "done", "next" (this source failed in a
    way another may not: unreachable, no such tag there) or "stop" (out.fail says why)."""
    run = ctx.runner.run
    login = (secret[0], s.login_registry) if secret is not None and s.login_registry else None
    stdin = (secret[1].reveal() + "\n").encode() if login and secret is not None else None
    where = "mirror" if s.mirror else "registry"
    delay = s.backoff
    for attempt in range(s.retries + 1):
        out.attempts += 1
        r = run(
            pull_command(state, s.pull_ref, login, int(s.pull_timeout)),
            stdin=stdin,
            timeout=s.pull_timeout + 120,  # the host stops the pull at pull_timeout itself
            on_output=_progress_watcher(ctx, manifest),
        )
        if r.ok:
            out.pull_error = out.fail = None
            return "done"
        text = r.stdout + "\n" + r.stderr
        low = text.lower()
        if _PULL_TIMED_OUT in r.stderr:
            out.fail = pull_timed_out(s, manifest)
            return "stop"
        if login and _LOGIN_FAILED in text:
            why = last_line(text.split(_LOGIN_FAILED, 1)[0], r.exit_code)
            if not any(w in why.lower() for w in _NETWORK_ERRORS):
                out.fail = f"login to {login[1]} failed: {why}"
                return "stop"
            out.pull_error = f"the {where} {login[1]} is unreachable (login failed: {why})"
        elif "no space left on device" in low:
            root = state.info.storage_root or "the container runtime's storage root"
            diff = plan.diff or {}
            need, free = diff.get("needed_bytes"), state.free_bytes
            counted = (
                f"; it needed more than the {format_bytes(need, binary=False)} counted on from the"
                f" {diff.get('size_from', 'estimate')} ({format_bytes(free, binary=False)} was free"
                " there before it), or the runtime's temporary download dir (podman: /var/tmp) is on"
                " a fuller file system"
                if need and free is not None
                else ""
            )
            out.fail = (
                f"pulling {s.pull_ref} failed with no space left on device: free space under {root}"
                f" and run again{counted} (not retried: the disk stays full until space is freed)"
            )
            return "stop"
        elif any(w in low for w in _NO_PLATFORM):
            out.fail = _no_platform(s, where, text)
            return "next"
        elif "manifest unknown" in low:
            what = (
                f"no image with the pinned digest {s.ref.digest} (its copy may be another version,"
                " or none; have the mirror synced, or set pull_fallback_origin: true to pull from"
                f" {s.ref.registry or 'Docker Hub'})"
                if s.ref.digest and s.mirror
                else "no such image or tag"
            )
            out.fail = (
                f"pulling {s.pull_ref} failed: the {where} has {what} ({last_line(text, r.exit_code)});"
                " not retried"
            )
            return "next"
        else:
            out.pull_error = last_line(text, r.exit_code)
        if attempt < s.retries:
            time.sleep(delay)
            delay *= 2
    return "next"
