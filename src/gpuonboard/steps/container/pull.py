"""Pure helpers of the container step: pull progress, registry manifests, the GPU python check.

- `parse_pull_progress`: docker's non-TTY pull output (`<id>: Pulling fs layer`, `Download
  complete`, `Pull complete`, `Already exists`, `Digest:`, `Status:`; `Downloading` lines
  with `12.3MB/45.6MB` when present) and podman's (`Copying blob sha256:...`, `... done`,
  `... skipped: already exists`, `Copying config`, `Writing manifest`, `Storing signatures`)
  -> layers done / total and bytes (layer sizes from the registry manifest when known).
- `manifest_command` / `parse_manifest`: one read-only remote `curl` for the image's
  manifest (OCI/Docker v2, manifest lists -> the host's linux/ARCH), credentials over stdin;
  `parse_config_platform`: a single-platform image's os/architecture from its config blob.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuonboard import sh, shell
from gpuonboard.units import format_bytes, parse_size

MANIFEST_MARK = "##gpuonboard-manifest "
ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
    )
)


@dataclass(frozen=True)
class PullProgress:
    """How far a pull is: layers done of total, bytes done (of total when known)."""

    layers_total: int
    layers_done: int
    bytes_done: int
    bytes_total: int | None
    finished: bool = False


_DOCKER_LINE = re.compile(r"^([0-9a-f]{12,64}): (.+)$")
_PODMAN_BLOB = re.compile(r"^Copying blob (?:sha256:)?([0-9a-f]{12,64})\s*(.*)$")
_SIZE_PAIR = re.compile(r"([\d.]+\s*[kKMGTP]?i?B)\s*/\s*([\d.]+\s*[kKMGTP]?i?B)")


def _size_of(layer: str, sizes: Mapping[str, int]) -> int | None:
    """The manifest size of a layer named by a (possibly 12-char) hex id prefix."""
    for digest, size in sizes.items():
        if digest.removeprefix("sha256:").startswith(layer):
            return size
    return None


def parse_pull_progress(lines: Iterable[str], layer_sizes: Mapping[str, int] | None = None) -> PullProgress:
    """Pure: pull output lines so far -> PullProgress.

    `layer_sizes` (digest -> compressed size, from the manifest) gives the total and the bytes
    of finished layers where the output itself has no byte counts (docker and podman both
    print none when not on a TTY). Layers found already present count as done, not as bytes.
    """
    sizes = dict(layer_sizes or {})
    state: dict[str, str] = {}  # layer -> pending | downloaded | done | cached
    partial: dict[str, int] = {}
    finished = False
    for raw in lines:
        for line in raw.split("\r"):
            line = line.strip()
            m = _DOCKER_LINE.match(line)
            if m:
                layer, status = m.groups()
                if status.startswith(("Already exists", "Pull complete")):
                    state[layer] = "cached" if status.startswith("Already") else "done"
                elif status.startswith(("Download complete", "Verifying Checksum", "Extracting")):
                    if state.get(layer) not in ("done", "cached"):
                        state[layer] = "downloaded"
                elif status.startswith(("Pulling fs layer", "Waiting", "Downloading", "Retrying")):
                    state.setdefault(layer, "pending")
                    pair = _SIZE_PAIR.search(status) if status.startswith("Downloading") else None
                    if pair:
                        try:
                            partial[layer] = parse_size(pair.group(1).replace(" ", ""))
                            sizes.setdefault(layer, parse_size(pair.group(2).replace(" ", "")))
                        except ValueError:
                            pass
                continue
            m = _PODMAN_BLOB.match(line)
            if m:
                layer, rest = m.groups()
                if "skipped" in rest or "already exists" in rest:
                    state[layer] = "cached"
                elif rest.startswith("done"):
                    state[layer] = "done"
                else:
                    state.setdefault(layer, "pending")
                continue
            if line.startswith(("Copying config", "Writing manifest", "Storing signatures")):
                # podman copies the config after every blob: all layers are in
                for layer, st in state.items():
                    if st in ("pending", "downloaded"):
                        state[layer] = "done"
            if line.startswith(("Digest: sha256:", "Status: ", "Writing manifest")):
                finished = True
    bytes_done = 0
    for layer, st in state.items():
        size = _size_of(layer, sizes) if sizes else None
        if st in ("done", "downloaded"):
            bytes_done += size or partial.get(layer, 0)
        elif st == "pending":
            bytes_done += partial.get(layer, 0)
    manifest_layers = [d for d in (layer_sizes or {})]
    to_fetch = [_size_of(layer, sizes) for layer, st in state.items() if st != "cached"]
    bytes_total: int | None
    if layer_sizes:
        cached = sum(_size_of(layer, sizes) or 0 for layer, st in state.items() if st == "cached")
        bytes_total = sum(layer_sizes.values()) - cached
    elif to_fetch and all(s is not None for s in to_fetch):
        bytes_total = sum(s or 0 for s in to_fetch)
    else:
        bytes_total = None
    done = sum(1 for st in state.values() if st in ("done", "cached"))
    total = max(len(state), len(manifest_layers))
    return PullProgress(total, done, bytes_done, bytes_total, finished)


def format_pull_progress(p: PullProgress, elapsed: float) -> str:
    """The terminal line: `pull 12/31 layers, 3.2 GiB of 9.1 GiB, 48.0 MiB/s`."""
    text = f"pull {p.layers_done}/{p.layers_total or '?'} layers"
    if p.bytes_done or p.bytes_total:
        text += f", {format_bytes(p.bytes_done)}"
        if p.bytes_total:
            text += f" of {format_bytes(p.bytes_total)}"
        if elapsed > 0 and p.bytes_done:
            text += f", {format_bytes(int(p.bytes_done / elapsed))}/s"
    return text


# lscpu's Architecture -> the OCI platform architecture (GOARCH names, as registries list them)
OCI_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le"}


def oci_arch(machine: str | None) -> str | None:
    """The OCI architecture of a host's `lscpu`/`uname -m` machine name, None when unknown."""
    return OCI_ARCH.get((machine or "").strip().lower())


@dataclass(frozen=True)
class Manifest:
    """A fetched manifest: an image's layers (digest, size) or an index's entry for the host's
    platform; `missing` names the host's platform when the image has no build for it."""

    layers: tuple[tuple[str, int], ...] = ()
    platform_digest: str | None = None  # an index: the host platform's manifest to fetch next
    error: str | None = None
    config_digest: str | None = None  # an image manifest's config blob (its os/architecture)
    platforms: tuple[str, ...] = ()  # the platforms the image has (os/arch), when known
    missing: str | None = None  # the host's platform (linux/ARCH), which the image has no build for

    @property
    def size(self) -> int | None:
        """Sum of the layers' (compressed) sizes; None for an index or an error."""
        return sum(s for _, s in self.layers) if self.layers else None


def parse_manifest(text: str, arch: str = "amd64") -> Manifest:
    """Pure: the manifest command's output -> Manifest (layers and config digest, or the digest
    of the linux/`arch` entry of an index; an index without it: `missing`, with its platforms)."""
    status, _, body = text.partition("\n")
    if not status.startswith(MANIFEST_MARK):
        return Manifest(error="no answer from the manifest probe")
    word = status[len(MANIFEST_MARK) :].strip()
    if word != "ok":
        return Manifest(error=word.removeprefix("error ").strip() or "unreachable")
    try:
        data = json.loads(body)
    except ValueError:
        return Manifest(error="the registry's manifest is not JSON")
    if not isinstance(data, dict):
        return Manifest(error="the registry's manifest is not an object")
    if isinstance(data.get("layers"), list):
        layers = tuple(
            (str(x.get("digest", "")), int(x["size"]))
            for x in data["layers"]
            if isinstance(x, dict) and isinstance(x.get("size"), int)
        )
        config = data.get("config")
        digest = config.get("digest") if isinstance(config, dict) else None
        if not layers:
            return Manifest(error="the manifest lists no layer sizes")
        return Manifest(layers=layers, config_digest=str(digest) if digest else None)
    if isinstance(data.get("manifests"), list):
        listed: list[str] = []
        for entry in data["manifests"]:
            plat = entry.get("platform") or {} if isinstance(entry, dict) else {}
            if plat.get("os") == "linux" and plat.get("architecture") == arch and entry.get("digest"):
                return Manifest(platform_digest=str(entry["digest"]))
            if plat.get("os") not in (None, "unknown"):  # (not a build: an attestation manifest)
                listed.append(f"{plat.get('os')}/{plat.get('architecture')}")
        return Manifest(
            error=f"the manifest list has no linux/{arch} image",
            platforms=tuple(dict.fromkeys(listed)),
            missing=f"linux/{arch}",
        )
    return Manifest(error="the manifest is neither an image manifest nor a list (schema 1?)")


def parse_config_platform(text: str) -> str | None:
    """Pure: the manifest command's output for an image's config blob -> its `os/architecture`
    (None when unreadable)."""
    status, _, body = text.partition("\n")
    if status.strip() != f"{MANIFEST_MARK}ok".strip():
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("architecture"):
        return None
    return f"{data.get('os') or 'linux'}/{data['architecture']}"


def registry_api(registry: str | None, path: str) -> tuple[str, str]:
    """(host[:port], repository) for the v2 API: Docker Hub defaults, a mirror's /prefix moved
    into the repository path."""
    if registry is None:
        return "registry-1.docker.io", path if "/" in path else f"library/{path}"
    host, _, prefix = registry.partition("/")
    return host, f"{prefix}/{path}" if prefix else path


# Hosts besides the registry itself whose token service may be sent the registry's basic
# credentials (the registry's own, well-known auth service; never one a server names).
TOKEN_HOSTS: dict[str, tuple[str, ...]] = {"registry-1.docker.io": ("auth.docker.io",)}


def is_loopback(host: str) -> bool:
    """`localhost`, `127.x.x.x` or `::1` (with or without a port / brackets)."""
    h = host.lower()
    if h.startswith("["):
        h = h[1:].partition("]")[0]
    elif h.count(":") == 1:
        h = h.partition(":")[0]
    return h in ("localhost", "::1") or re.fullmatch(r"127(\.\d{1,3}){3}", h) is not None


def manifest_command(
    host: str, repo: str, reference: str, schemes: tuple[str, ...], kind: str = "manifests"
) -> str:
    """Read-only: GET /v2/REPO/manifests/REF with curl (Accept: OCI/Docker v2 and lists), the
    script sh/container_manifest.sh after its values (the URLs as its positional arguments).
    `kind="blobs"`: GET /v2/REPO/blobs/DIGEST instead (an image's config, for its platform),
    following a redirect (registries hand blobs to a CDN) within the same scheme; curl sends
    neither the credentials nor the token to another host.

    stdin carries the curl config with `user = "name:password"` (or nothing); on a 401 with a
    Bearer challenge the token is fetched and sent as a header, also through stdin.
    Prints `##gpuonboard-manifest ok` and the body, or `... error WHY`.

    The challenge's `realm` comes from the server (a mirror may be hostile), so it is used
    only when it is an `https://` URL (`http://` only on loopback, for a registry reached over
    http on loopback); else the probe ends with an error naming the registry and the realm's
    scheme and host. curl gets it as `--url` (never read as an option) with `--proto`
    limiting it (and any redirect) to that scheme. The basic credentials go to the realm only
    when its host is the registry's own (or the registry's well-known token service,
    TOKEN_HOSTS); any other realm host is asked for a token anonymously.

    Every curl starts with `-q`: the login's `~/.curlrc` on the host (a vendor image's
    `insecure`, a header of its own) is never read.
    """
    reg = host.lower()
    trusted = "\n".join((reg, *TOKEN_HOSTS.get(reg, ())))
    urls = [f"{s}://{host}/v2/{repo}/{kind}/{reference}" for s in schemes]
    # the values sh/container_manifest.sh reads, as shell words before it; the URLs as `set --`
    values = (
        f"M={shell.quote(MANIFEST_MARK)}; h={shell.quote('Accept: ' + ACCEPT)};"
        f" scope={shell.quote(f'repository:{repo}:pull')}\n"
        f"reg={shell.quote(reg)}; loop={'1' if is_loopback(host) else ''}; T={shell.quote(trusted)}"
        f"; follow={'1' if kind == 'blobs' else ''}\n"
        f"set -- {shell.join(urls)}\n"
    )
    return shell.sh_c(values + sh.load("container_manifest"))
