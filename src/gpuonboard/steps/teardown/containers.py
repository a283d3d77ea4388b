"""`teardown_containers`: stops and removes the project's containers and (unless keep_image)
the training image, with each mirror's copy of it."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, last_line, truthy
from gpuonboard.steps.teardown.common import probe_name


def _image_refs(image: str, mirror: str) -> list[str]:
    """The image's local names: canonical, plus each mirror's copy when pulled through one
    (`mirror`: one mirror, or a list as the playbook renders it, `['a', 'b']`)."""
    if not image:
        return []
    refs = [image]
    if mirror:
        try:
            from gpuonboard.steps.container import parse_mirrors, parse_ref

            listed: object = mirror
            if mirror[:1] + mirror[-1:] in ("[]", "()"):  # (a host's list, a vendor's tuple)
                listed = ast.literal_eval(mirror)
            ref = parse_ref(image)  # (each mirror as the container step named its copy)
            refs = [ref.canonical, *(ref.on(m) for m, _ in parse_mirrors(listed))]
        except (ImportError, StepArgsError, AttributeError, ValueError, SyntaxError):
            pass  # (a malformed mirror: the container step pulled nothing through it)
    return list(dict.fromkeys(refs))


class TeardownContainersStep(Step):
    """Stop and remove the project's containers and (unless keep_image) the training image."""

    name = "teardown_containers"
    read_only = False
    ARGS = {
        "containers": "container names started for this project (e.g. vars.containers)",
        "label": "also remove containers carrying this label key (default gpuonboard)",
        "image": "the training image (vars.container_image)",
        "registry_mirror": "mirror the image was pulled through (its copy is removed too)",
        "keep_image": "keep the image",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        raw = self.args.get("containers") or []
        if isinstance(raw, str):  # a rendered template: "a,b"
            raw = [n.strip() for n in raw.split(",")]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'containers' must be a list of container names")
        self.names = [str(n) for n in raw if str(n).strip()]
        self.label_key = str(self.args.get("label") or "gpuonboard")
        self.keep_image = truthy(self.args.get("keep_image", False), "keep_image")
        mirror = str(self.args.get("registry_mirror") or "")
        self.images = _image_refs(str(self.args.get("image") or ""), mirror)
        # (the script: sh/teardown_containers.sh; the names and refs as its arguments)
        values = [self.label_key, str(len(self.names)), *self.names, *self.images]
        command = shell.join(["sh", "-c", sh.load("teardown_containers"), "sh", *values])
        self.probe = Probe(probe_name("teardown_containers", command), command)

    def probes(self) -> list[Probe]:
        """Which runtime answers, which of our containers and image refs exist."""
        return [self.probe]

    def plan(self, ctx: StepContext) -> Plan:
        """No runtime: nothing to do; else the containers and image refs to remove."""
        cli, ctrs, imgs, down = "", [], [], []
        for line in ctx.facts.raw[self.probe.name].stdout.split("\n"):
            kind, _, rest = line.partition(" ")
            if kind == "cli":
                cli = rest.strip()
            elif kind == "ctr" and rest.strip():
                ctrs.append(rest.strip())
            elif kind == "img":
                imgs.append(rest.strip())
            elif kind == "down":
                down.append(rest.strip())
        if not cli:
            why = f" ({', '.join(down)} installed but not answering)" if down else ""
            return Plan(False, f"no container runtime answers{why}; no containers or image to remove")
        ctrs = list(dict.fromkeys(ctrs))
        kept = imgs if self.keep_image else []
        imgs = [] if self.keep_image else imgs
        parts = []
        if ctrs:
            parts.append(f"stop and remove containers {', '.join(ctrs)}")
        if imgs:
            parts.append(f"remove image {', '.join(imgs)}")
        note = f" (keeping image {', '.join(kept)})" if kept else ""
        if not parts:
            what = "containers" if self.keep_image else "containers or image"
            return Plan(False, f"no project {what} on {cli}{note}")
        return Plan(
            True,
            " and ".join(parts) + f" ({cli}){note}",
            diff={"containers": ctrs, "images": imgs, "kept": kept},
            data=(cli, ctrs, imgs),
        )

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """`rm -f` (stops too) the containers, then `rmi` the image refs, in one command."""
        cli, ctrs, imgs = plan.data
        parts = []
        if ctrs:
            parts.append(shell.join([cli, "rm", "-f", *ctrs]))
        if imgs:
            parts.append(shell.join([cli, "rmi", *imgs]))
        return ctx.runner.run(shell.sh_c(" && ".join(parts)))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The runtime must have removed them."""
        if applied.ok:
            return None
        return f"could not remove containers/image: {last_line(applied.stderr, applied.exit_code)}"
