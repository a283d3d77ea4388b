"""Step `container`: a working container runtime with the training image pulled and smoke-tested.

Plan (pure, from ONE read-only probe in the batched fact probe): which runtime answers
(`docker info`, else `podman info`), whether the NVIDIA container toolkit is there (docker's
`nvidia` runtime or an nvidia CDI spec), free space under the runtime's storage root, and the
local image's id and repo digests, and the host's record of a passed smoke run for it. Apply:
registry login over stdin (never argv) into a temporary auth dir removed when the pull ends,
pull through the vendor's registry mirror with retries and backoff (a re-run reuses the layers
already present), tag the mirror's copy back to the canonical name, then a smoke run, whose
pass is recorded on the host (an image present without that record is smoke-run again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuonboard import shell
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, last_line
from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE
from gpuonboard.steps.container.credentials import _credentials
from gpuonboard.steps.container.planning import (
    host_platform,
    image_ready,
    mirror_digest_check,
    plan_from,
    platform_mismatch,
    state_access,
    wrong_platform,
)
from gpuonboard.steps.container.pullrun import fetch_manifest, pull_from
from gpuonboard.steps.container.refs import parse_ref
from gpuonboard.steps.container.settings import (
    DEFAULT_BACKOFF,
    DEFAULT_MANIFEST_UNPACK_FACTOR,
    DEFAULT_PULL_TIMEOUT,
    DEFAULT_RETRIES,
    DEFAULT_SIZE_ESTIMATE,
    DEFAULT_UNPACK_FACTOR,
    Settings,
    resolve_settings,
)
from gpuonboard.steps.container.smoke import _record_smoke, _smoke
from gpuonboard.steps.container.state import _MARK, INSPECT_FORMAT, Applied, parse_state, probe_command


class ContainerStep(Step):
    """Runtime + NVIDIA toolkit + image pulled (through a mirror, with retries) + smoke run."""

    name = "container"
    read_only = False
    ARGS = {
        "image": f"image to pull (default: vars.container_image, else {DEFAULT_IMAGE}); may pin @sha256:...",
        "registry_mirror": "pull MIRROR/<path>:<tag> and tag it back (default: vars/vendor registry_mirror);"
        " a list: each mirror in turn while the ones before fail",
        "pull_fallback_origin": "after every mirror failed, pull from the image's own registry"
        " (default false)",
        "image_size_estimate": f"download size of the image (default: vars, else {DEFAULT_SIZE_ESTIMATE})",
        "unpack_factor": f"free space needed = estimate x this (default {DEFAULT_UNPACK_FACTOR})",
        "pull_retries": f"retries after a failed pull (default {DEFAULT_RETRIES})",
        "retry_backoff": f"seconds before the first retry, doubled each time (default {DEFAULT_BACKOFF})",
        "registry_user_env": "environment variable (on this machine) holding the registry user",
        "registry_password_env": "environment variable holding the registry password or token",
        "smoke": "run the image after pulling (default true)",
        "registry_credentials_file": "YAML/JSON {registry: {username, password}} on this machine, mode 0600",
        "container_sudo": "run the runtime through `sudo -n` when the user cannot use it directly",
        "pull_timeout": f"time one pull attempt may take, e.g. 12h (default {DEFAULT_PULL_TIMEOUT})",
        "manifest_unpack_factor": (
            "free space needed = the manifest's compressed size x this"
            f" (default {DEFAULT_MANIFEST_UNPACK_FACTOR})"
        ),
    }

    def settings(self, host_vars: Mapping[str, Any], vendor_mirror: str | tuple[str, ...] | None) -> Settings:
        """Resolve every setting; a bad value raises StepArgsError naming it."""
        return resolve_settings(self.args, host_vars, vendor_mirror)

    def probe_for(self, local_ref: str, also: tuple[str, ...] = ()) -> Probe:
        """The container probe for this image, under its name or the others in `also` (named
        by them so two steps do not clash)."""
        names = "\n".join(dict.fromkeys((local_ref, *also)))
        name = "container:" + hashlib.sha1(names.encode()).hexdigest()[:10]
        return Probe(name, probe_command(local_ref, also))

    def probes(self) -> list[Probe]:
        """Runtime, toolkit, free space and the local image, in the batched fact probe.

        Host vars are not visible here, so the probe looks for the image named by the step's
        (rendered) `image` arg; when vars name another image, plan() probes that one itself.
        """
        try:
            ref = parse_ref(str(self.args.get("image") or DEFAULT_IMAGE))
        except StepArgsError:
            return []
        return [self.probe_for(ref.canonical)]

    def plan(self, ctx: StepContext) -> Plan:
        """Runtime -> toolkit -> image present (digest) -> free space -> pull."""
        vendor_mirror = ctx.host.vendor.registry_mirror if ctx.host.vendor else None
        try:
            s = self.settings(ctx.host.vars, vendor_mirror)
        except StepArgsError as exc:
            return Plan(False, str(exc), failed=True)
        probe = self.probe_for(s.ref.canonical, s.local_names)
        raw = ctx.facts.raw.get(probe.name)
        if raw is None:
            # the image comes from host vars: probe it now (one extra read-only command)
            raw_result = ctx.runner.run(shell.sh_c(probe.command), timeout=120)
            text = raw_result.stdout
        else:
            text = raw.stdout
        state = parse_state(text)
        creds = _credentials(s, ctx.project)
        if isinstance(creds, str):
            return Plan(False, creds, failed=True)
        if creds is not None and s.mirror and s.mirror_scheme == "http":
            return Plan(
                False,
                f"refusing to log in to mirror {s.login_registry} over plain http:// (the password would"
                " cross the network unencrypted): serve the mirror over https:// or remove its entry"
                " from the registry credentials file",
                failed=True,
            )
        manifest = None
        if state.cli and state.image_id is None:
            manifest = fetch_manifest(ctx, s, creds, host_platform(ctx.facts)[1])
        plan = plan_from(state, s, ctx.facts, manifest)
        if plan.changes:
            plan.data = (s, state, creds, manifest)
        return plan

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """Login (stdin, temporary auth dir) + pull with retries (mirror, then tag back),
        inspect, smoke run; an image already present gets only the smoke run."""
        s, state, secret, manifest = plan.data
        cli = state.cli
        out = Applied()
        run = ctx.runner.run
        if image_ready(state, s):
            out.smoke_only = True
            out.image_id, out.digests = state.image_id, state.digests
            if s.smoke:  # (run under the name the runtime holds: another one, docker would pull)
                _smoke(ctx, state, state.image_name or s.ref.canonical, out)
                _record_smoke(ctx, state, s.ref.canonical, out)
            return out
        tried: list[str] = []  # (one sentence per source, in order)
        last: tuple[str | None, str | None] = (None, None)  # (fail, pull_error) of the last source
        for n, source in enumerate(s.sources()):
            if n:  # a fallback source: its own credentials (only its entry in the file)
                creds = _credentials(source, ctx.project)
                if isinstance(creds, str) or (creds is not None and source.mirror_scheme == "http"):
                    why = creds if isinstance(creds, str) else "no login over plain http://"
                    tried.append(f"{source.source_name}: not tried ({why})")
                    continue
                secret = creds
                if ctx.progress:
                    ctx.progress(f"step {self.label}: {tried[-1]}; trying {source.source_name}")
            outcome = pull_from(ctx, plan, source, state, secret, manifest, out)
            if outcome == "done":
                out.source = source
                break
            if outcome == "stop":
                return out
            tried.append(f"{source.source_name}: {out.fail or out.pull_error}")
            last = (out.fail, None if out.fail else out.pull_error)
            out.fail = out.pull_error = None
        else:
            if s.fallbacks:
                out.pull_error = "; ".join(tried)
            else:  # (one source: its own sentence)
                out.fail, out.pull_error = last
            return out
        s = out.source
        local = s.ref.canonical
        if s.ref.tag and s.pull_ref != local:
            # a mirror's copy, or a `name:tag@sha256:` pin pulled by its digest (which leaves no
            # tag): tag it with the canonical name, which the probe and the smoke run look for
            r = run(state.command([cli, "tag", s.pull_ref, s.ref.tag_target]))
            if not r.ok:
                out.tag_error = last_line(r.stderr, r.exit_code)
                return out
        elif s.mirror:
            local = s.pull_ref  # digest-only pin: a digest reference cannot be a tag target
        r = run(state.command([cli, "image", "inspect", "--format", INSPECT_FORMAT, local]))
        if r.ok and r.stdout.strip():
            state_after = parse_state(f"{_MARK}image\n{r.stdout}")
            out.image_id, out.digests = state_after.image_id, state_after.digests
            wrong = platform_mismatch(ctx.facts, state_after.image_platform)
            if wrong is not None:  # (a single-platform copy whose config the plan could not read)
                has = (state_after.image_platform or "",)
                out.fail = f"pulled {s.pull_ref}, but {wrong_platform(s, has, *wrong)}"
                return out
        if s.smoke:
            _smoke(ctx, state, local, out)
            if out.image_id:  # (kept under the canonical name, which the probe's record is read by)
                _record_smoke(ctx, replace(state, image_id=out.image_id), s.ref.canonical, out)
        return out

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The image must be present (with the pinned digest) and the smoke run must pass."""
        s = plan.data[0]
        a: Applied = applied
        if a.fail:
            return a.fail
        if a.smoke_only:
            if a.smoke_error:
                return a.smoke_error
            digest = s.ref.digest or (a.digests[0] if a.digests else None)
            plan.msg = (
                f"{s.ref.canonical} is present ({digest or a.image_id}), nothing pulled; smoke run"
                f" (none had passed for it on this host): " + "; ".join(a.smoke)
            )
            plan.diff = {
                "image": s.image,
                "id": a.image_id,
                "digest": digest,
                "access": state_access(plan),
                "smoke": a.smoke,
            }
            return None
        if a.pull_error and s.fallbacks:
            return (
                f"pulling {s.ref.canonical} failed from each of its {len(s.sources())} sources, in order"
                f" ({a.attempts} attempts in all): {a.pull_error}"
            )
        if a.pull_error:
            where = f" from mirror {s.mirror}" if s.mirror else ""
            return f"pulling {s.pull_ref}{where} failed after {a.attempts} attempt(s): {a.pull_error}"
        s = a.source or s  # (the source the image came from: a fallback mirror, or none)
        if a.tag_error:
            return f"tagging {s.pull_ref} as {s.ref.tag_target} failed: {a.tag_error}"
        if not a.image_id:
            return f"{s.ref.canonical} is not present after the pull"
        if s.ref.digest and s.ref.digest not in a.digests:
            got = ", ".join(a.digests) or "unknown"
            return f"{s.ref.canonical} was pulled but its digest is {got}, not {s.ref.digest}"
        if a.smoke_error:
            return a.smoke_error
        digest = a.digests[0] if a.digests else None
        if s.mirror and not s.ref.digest:
            plan.checks.append(mirror_digest_check(s, digest or a.image_id or "?"))
        via = f" via mirror {s.mirror}" if s.mirror else ""
        tries = f" after {a.attempts} attempts" if a.attempts > 1 else ""
        plan.msg = f"pulled {s.image}{via}{tries} ({digest or a.image_id}); " + "; ".join(a.smoke)
        plan.diff = {
            "image": s.image,
            "before": None,
            "after": {"id": a.image_id, "digest": digest, "pulled_from": s.pull_ref, "attempts": a.attempts},
            "smoke": a.smoke,
        }
        return None
