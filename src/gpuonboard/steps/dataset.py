"""Step `dataset`: upload a local dataset to the host's data dir with rsync, resumable, verified.

Plan (pure, from ONE read-only probe in the batched fact probe plus the local scan): is rsync
on the host, free space under the data dir, and which files differ by size/mtime from the
source (rsync's quick check). Apply: rsync over the host's own SSH settings (our known_hosts,
strict), `--partial-dir` inside the destination so half files never look complete, live
progress; then the host computes the sha256 of what arrived (one command), mismatches are
re-sent once. With `encrypt`, files go as cached age ciphertexts (see crypto.py), and with
`decrypt_on_host` the host decrypts them with the identity streamed over the channel's stdin.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import crypto, openssh, shell, transfer
from ..facts.probe import Probe
from ..units import format_bytes
from .base import Plan, Step, StepArgsError, StepContext

ENCRYPTED_SUFFIX = ".encrypted"  # ciphertexts live in <data_dir>/<name>.encrypted/<rel>.age


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", "false", "False", "no", "0", 0)


@dataclass
class Work:
    """What apply needs: the scan, what to send, and the settings."""

    tree: transfer.SourceTree
    send: list[transfer.Entry]
    target: str
    enc: crypto.Encryption | None = None
    cipher: dict[str, Path] = field(default_factory=dict)  # rel -> cached ciphertext (encrypted mode)
    decrypt: list[transfer.Entry] = field(default_factory=list)
    identity: Any = None


class DatasetStep(Step):
    """Upload `source` to `<dest>/<name>/` on the host (rsync, resumable, sha256-verified)."""

    name = "dataset"
    read_only = False
    ARGS = {
        "source": "local dataset path (default vars.dataset)",
        "dest": "remote data directory (default the host's data_dir)",
        "name": "directory name under dest (default the source's base name)",
        "encrypt": "upload age ciphertexts (recipients vars.age_recipients or vars.age_passphrase_env)",
        "decrypt_on_host": "decrypt on the host into <dest>/<name>/ (identity streamed over stdin)",
        "bwlimit": "rsync --bwlimit value, e.g. 5m",
        "cache_dir": "local cache of ciphertexts (default .gpuonboard/cache/encrypted)",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.source = str(self.args.get("source") or "")
        self.dest = str(self.args.get("dest") or "")
        self.encrypt = _truthy(self.args.get("encrypt"))
        self.decrypt_on_host = _truthy(self.args.get("decrypt_on_host"))
        if self.decrypt_on_host and not self.encrypt:
            raise StepArgsError("decrypt_on_host needs encrypt")
        bw = self.args.get("bwlimit")
        self.bwlimit = str(bw) if bw not in (None, "") else None
        if self.bwlimit and not self.bwlimit.replace(".", "", 1).rstrip("kKmMgGbB").isdigit():
            raise StepArgsError(f"bwlimit must be a rate like 500k or 5m, not {self.bwlimit!r}")
        name = self.args.get("name") or os.path.basename(self.source.rstrip("/")) or "dataset"
        if "/" in str(name) or str(name) in (".", ".."):
            raise StepArgsError(f"name must be one directory name, not {name!r}")
        self.dirname = str(name)
        self.plain_target = posixpath.join(self.dest, self.dirname) if self.dest else ""
        self.target = self.plain_target + (ENCRYPTED_SUFFIX if self.encrypt else "")

    def _probe(self, target: str) -> Probe:
        key = f"{target}\0{self.dest}"
        return Probe(
            "dataset:" + hashlib.sha1(key.encode()).hexdigest()[:10],
            transfer.listing_command(target, self.dest),
        )

    def probes(self) -> list[Probe]:
        """rsync present, free space, and the remote listing (plus the plaintext one when decrypting)."""
        if not self.dest:
            return []
        out = [self._probe(self.target)]
        if self.decrypt_on_host:
            out.append(self._probe(self.plain_target))
        return out

    def _cache_dir(self, ctx: StepContext) -> Path:
        custom = self.args.get("cache_dir")
        return Path(custom) if custom else ctx.project / ".gpuonboard" / "cache" / "encrypted"

    def plan(self, ctx: StepContext) -> Plan:
        """Source present -> rsync on host -> what differs -> free space -> send."""
        if not self.source:
            return Plan(False, "no dataset given: set vars.dataset or pass --dataset PATH", failed=True)
        src = Path(os.path.expanduser(self.source))
        if not src.is_absolute():
            src = ctx.project / src
        if not src.exists():
            return Plan(False, f"dataset source {src} does not exist", failed=True)
        if not self.dest:
            return Plan(
                False,
                "no remote data dir: set data_dir for the host (or its vendor) or pass --dest",
                failed=True,
            )
        remote = transfer.parse_listing(ctx.facts.raw[self._probe(self.target).name].stdout)
        if remote.rsync is None:
            return Plan(
                False,
                "rsync is not installed on the host; install it (apt-get install rsync / dnf install rsync)",
                failed=True,
            )
        tree = transfer.scan_source(src)
        work = Work(tree, [], self.target)
        entries = list(tree.entries.values())
        if self.encrypt:
            try:
                work.enc = crypto.load_encryption(
                    ctx.host.vars.get("age_recipients"), ctx.host.vars.get("age_passphrase_env")
                )
                if self.decrypt_on_host:
                    if work.enc.passphrase is not None:
                        return Plan(
                            False, "decrypt_on_host works with age recipients/identities only", failed=True
                        )
                    work.identity = crypto.load_identity(
                        ctx.host.vars.get("age_identity_env"), ctx.host.vars.get("age_identity_file")
                    )
            except crypto.CryptoError as exc:
                return Plan(False, str(exc), failed=True)
            cache = self._cache_dir(ctx)
            entries = []
            for e in tree.files:  # symlinks are not uploaded in encrypted mode
                path = cache / f"{work.enc.cache_key(e.sha256)}.age"
                work.cipher[e.rel] = path
                if path.is_file():
                    st = path.stat()
                    entries.append(transfer.Entry(e.rel + ".age", "f", st.st_size, int(st.st_mtime), ""))
                else:  # not encrypted yet: certainly to send; size estimated (age adds ~0.03 %)
                    entries.append(transfer.Entry(e.rel + ".age", "f", -1, 0, ""))
        work.send = transfer.to_send(entries, remote.files)
        if self.decrypt_on_host:
            plain = transfer.parse_listing(ctx.facts.raw[self._probe(self.plain_target).name].stdout)
            work.decrypt = transfer.to_send(tree.files, plain.files)
        need = sum(max(e.size, 0) for e in work.send) or 0
        if self.encrypt:
            need = sum(tree.entries[e.rel[: -len(".age")]].size for e in work.send)
            need += sum(e.size for e in work.decrypt)
        where = f"{ctx.host.name}:{self.target}"
        total = f"{len(tree.entries)} entries, {format_bytes(tree.total_bytes, binary=True)}"
        if not work.send and not work.decrypt:
            return Plan(False, f"dataset up to date at {where} ({total}); nothing sent", diff={"sent": 0})
        if remote.free_bytes is not None and remote.free_bytes < need:
            return Plan(
                False,
                f"not enough space under {self.dest} on {ctx.host.name}:"
                f" {format_bytes(remote.free_bytes, binary=True)} free,"
                f" {format_bytes(need, binary=True)} needed for {len(work.send)} files; free space first",
                failed=True,
            )
        names = ", ".join(e.rel for e in work.send[:3]) + (" ..." if len(work.send) > 3 else "")
        msg = f"send {len(work.send)} of {len(entries)} files ({format_bytes(need, binary=True)}) to {where}"
        if names:
            msg += f": {names}"
        if work.decrypt:
            msg += f"; decrypt {len(work.decrypt)} on the host into {self.plain_target}"
        diff = {"target": self.target, "send": [e.rel for e in work.send], "bytes": need, "source": str(src)}
        return Plan(True, msg, diff=diff, data=work)

    # ------------------------------------------------------------ apply

    def _staging(self, ctx: StepContext, work: Work) -> Path:
        """The tree rsync sends: the source itself, or hard links to cached ciphertexts."""
        if work.enc is None:
            root = work.tree.root
            return root if root.is_dir() else root.parent
        assert work.enc is not None
        key = hashlib.sha256(f"{ctx.host.name}\0{work.tree.root}".encode()).hexdigest()[:16]
        stage = ctx.project / ".gpuonboard" / "cache" / "staging" / key
        shutil.rmtree(stage, ignore_errors=True)
        for done, e in enumerate(work.tree.files):
            path = work.cipher[e.rel]
            if not path.is_file():
                if ctx.progress:
                    ctx.progress(f"step {self.label}: encrypting {done + 1}/{len(work.tree.files)}")
                src = work.tree.root / e.rel if work.tree.root.is_dir() else work.tree.root
                crypto.encrypt_file(src, path, work.enc)
            link = stage / (e.rel + ".age")
            link.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, link)
            except OSError:
                shutil.copy2(path, link)
        return stage

    def _progress(self, ctx: StepContext) -> Any:
        def show(u: transfer.ProgressUpdate) -> None:
            if ctx.progress:
                ctx.progress(
                    f"step {self.label}: {u.percent}% {format_bytes(u.bytes, binary=True)}"
                    f" {u.rate} ETA {u.eta}"
                )

        return show

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync, verify by sha256 on the host, re-send mismatches once, decrypt on the host."""
        work: Work = plan.data
        stage = self._staging(ctx, work)
        mk = ctx.runner.run(shell.join(["mkdir", "-p", "--", work.target]))
        if not mk.ok:
            return f"cannot create {work.target} on the host: {mk.stderr.strip() or mk.exit_code}"
        text, alias = openssh.config_text(
            ctx.host, ctx.inventory, ctx.known_hosts or Path(".gpuonboard/known_hosts")
        )
        cfg = openssh.write_config(ctx.project, ctx.host, text)
        cfg_dir = cfg.parent
        argv = transfer.rsync_argv(stage, work.target, cfg, alias, self.bwlimit)
        run = transfer.run_rsync(argv, self._progress(ctx))
        if run.exit_code != 0:
            return transfer.explain_rsync_failure(run) + "; rerun to resume (partial files are kept)"
        sent, literal = run.stats.files_transferred, run.stats.literal_bytes
        # verification: the host hashes what arrived
        expect = self._expected(work)
        bad = self._mismatches(ctx, work.target, expect)
        if bad:
            listing = cfg_dir / f"{cfg.stem}.files"
            listing.write_bytes(b"".join(r.encode("utf-8", "surrogateescape") + b"\0" for r in bad))
            resend = transfer.rsync_argv(stage, work.target, cfg, alias, self.bwlimit, files_from=listing)
            resend.insert(1, "--ignore-times")
            again = transfer.run_rsync(resend, self._progress(ctx))
            if again.exit_code != 0:
                return transfer.explain_rsync_failure(again)
            sent += again.stats.files_transferred
            literal += again.stats.literal_bytes
            still = self._mismatches(ctx, work.target, {r: expect[r] for r in bad})
            if still:
                return f"sha256 mismatch on the host after re-sending: {', '.join(still[:5])}"
        size = format_bytes(literal, binary=True)
        msg = f"sent {sent} files ({size} of data) to {ctx.host.name}:{work.target}"
        msg += f"; {len(expect)} files verified by sha256"
        if self.decrypt_on_host and (work.decrypt or sent):
            problem = self._decrypt(ctx, work)
            if problem:
                return problem
            msg += f"; decrypted {len(work.decrypt) or sent} into {self.plain_target}"
        plan.msg = msg
        plan.diff = {**(plan.diff or {}), "sent_files": sent, "literal_bytes": literal}
        return None

    def _expected(self, work: Work) -> dict[str, str]:
        if work.enc is None:
            return {e.rel: e.sha256 for e in work.tree.entries.values()}
        return {e.rel + ".age": crypto.sha256_file(work.cipher[e.rel]) for e in work.tree.files}

    def _mismatches(self, ctx: StepContext, target: str, expect: Mapping[str, str]) -> list[str]:
        rels = list(expect)
        r = ctx.runner.run(transfer.hash_command(target), stdin=transfer.hash_stdin(rels), timeout=3600)
        got = transfer.parse_hashes(rels, r.stdout)
        return [rel for rel in rels if got.get(rel) != expect[rel]]

    def _decrypt(self, ctx: StepContext, work: Work) -> str | None:
        """Decrypt on the host: identity on stdin (kept in a shell variable, never a file),
        each file into a temp name, renamed only when age succeeded; mtime set like the source."""
        todo = work.decrypt or work.tree.files
        args: list[str] = []
        for e in todo:
            args += [
                posixpath.join(work.target, e.rel + ".age"),
                posixpath.join(self.plain_target, e.rel),
                str(e.mtime),
            ]
        script = (
            "command -v age >/dev/null || { echo 'age is not installed on the host' >&2; exit 127; }\n"
            "key=$(cat); rc=0\n"
            "while [ $# -ge 3 ]; do\n"
            '  c=$1; p=$2; m=$3; shift 3; mkdir -p -- "$(dirname -- "$p")" || { rc=1; continue; }\n'
            '  t=$(mktemp "$(dirname -- "$p")/.gpuonboard-dec.XXXXXXXX") || { rc=1; continue; }\n'
            '  if printf \'%s\\n\' "$key" | age -d -i - -o "$t" -- "$c" 2>"$t.err"; then\n'
            '    touch -m -d "@$m" "$t"; mv -f -- "$t" "$p"; rm -f -- "$t.err"\n'
            '  else printf \'%s: \' "$c" >&2; tail -n 1 "$t.err" >&2; rm -f -- "$t" "$t.err"; rc=1; fi\n'
            "done\n"
            "exit $rc"
        )
        r = ctx.runner.run(
            shell.join(["sh", "-c", script, "sh", *args]),
            stdin=(work.identity.reveal() + "\n").encode(),
            timeout=3600,
        )
        if not r.ok:
            last = (r.stderr.strip().splitlines() or [f"exit code {r.exit_code}"])[-1]
            return f"decryption on the host failed (wrong identity, or tampered/truncated ciphertext): {last}"
        bad = self._mismatches(ctx, self.plain_target, {e.rel: e.sha256 for e in todo})
        if bad:
            return f"decrypted files differ from the source: {', '.join(bad[:5])}"
        return None

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """apply returns the problem sentence, or None when everything arrived verified."""
        return applied if isinstance(applied, str) else None
