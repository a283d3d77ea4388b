"""The manifest probe's token realm comes from the registry (a mirror may be hostile).

The product's `manifest_command` shell text is run here with `sh`, against fake registries on
loopback (http.server) answering 401 with a chosen `WWW-Authenticate: Bearer realm=...`. A
`curl` wrapper first on PATH logs every argv before running the real curl.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import shlex
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import masking, shell
from gpuonboard.steps.container.pull import Manifest, manifest_command, parse_manifest

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")

USER, PASSWORD = "ngc-user", "realm-Pa55-never-leaves"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
MANIFEST = {"schemaVersion": 2, "layers": [{"digest": "sha256:" + "a" * 64, "size": 4242}]}


class Fake:
    """A registry (/v2/...: 401 + Bearer challenge unless `Bearer GOOD`) and/or a token
    service (/token: `{"token": "GOOD"}`, only with the basic credentials when `need_basic`).
    Every request's path and Authorization header are recorded."""

    def __init__(self, bind: str = "127.0.0.1", need_basic: bool = False, tls: ssl.SSLContext | None = None):
        self.realm = ""
        self.need_basic = need_basic
        self.seen: list[tuple[str, str]] = []
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            def send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
                b = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def do_GET(self) -> None:  # noqa: N802
                auth = self.headers.get("Authorization") or ""
                fake.seen.append((self.path, auth))
                if self.path.startswith("/v2/"):
                    if auth == "Bearer GOOD":
                        self.send(200, MANIFEST)
                    else:
                        challenge = f'Bearer realm="{fake.realm}",service="fake-registry"'
                        self.send(401, {"errors": []}, {"WWW-Authenticate": challenge})
                elif self.path.startswith("/token"):
                    if fake.need_basic and auth != BASIC:
                        self.send(401, {"errors": []})
                    else:
                        self.send(200, {"token": "GOOD"})
                else:
                    self.send(404, {})

            def log_message(self, *a: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((bind, 0), H)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.address = f"{bind}:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def saw(self, text: str) -> bool:
        return any(text in path or text in auth for path, auth in self.seen)


@pytest.fixture
def fakes() -> Iterator[list[Fake]]:
    made: list[Fake] = []
    yield made
    for f in made:
        f.close()


def _fake(fakes: list[Fake], **kw: Any) -> Fake:
    f = Fake(**kw)
    fakes.append(f)
    return f


def _probe(
    tmp_path: Path, host: str, schemes: tuple[str, ...], extra_env: dict[str, str] | None = None
) -> tuple[Manifest, str, list[list[str]]]:
    """Run the real manifest command with sh (credentials on stdin) -> (Manifest, stdout, curl argvs)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "curl-argv.log"
    wrapper = bin_dir / "curl"
    wrapper.write_text(
        f"#!/bin/sh\n{{ printf '%s\\n' \"$@\"; echo ----; }} >> {shlex.quote(str(log))}\n"
        f'exec {shlex.quote(str(shutil.which("curl")))} "$@"\n'
    )
    wrapper.chmod(0o755)
    cmd = manifest_command(host, "nvidia/pytorch", "tiny", schemes)
    assert PASSWORD not in cmd
    cfg = shell.curl_config({"user": masking.Secret(f"{USER}:{PASSWORD}")})
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), **(extra_env or {})}
    r = subprocess.run(
        ["sh", "-c", shlex.split(cmd)[2]], input=cfg, env=env, capture_output=True, timeout=120
    )
    out = r.stdout.decode()
    argvs = [chunk.strip("\n").split("\n") for chunk in log.read_text().split("----\n") if chunk.strip()]
    return parse_manifest(out), out, argvs


def _refused(m: Manifest, registry: str, scheme: str, host: str) -> None:
    assert m.error == (
        f"the token realm of registry {registry} (scheme {scheme}, host {host}) was refused: only an"
        " https:// realm is used (http:// only on loopback for a registry on loopback)"
    ), m.error


def test_a_file_realm_is_refused_and_the_file_never_read(tmp_path: Path, fakes: list[Fake]) -> None:
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"token": "FILE-SECRET-OF-THE-HOST"}\n')
    reg = _fake(fakes)
    reg.realm = f"file://{secret}"
    m, out, argvs = _probe(tmp_path, reg.address, ("http",))
    assert not reg.saw("FILE-SECRET")  # never sent to the mirror
    _refused(m, reg.address, "file", "none")
    assert not any(str(secret) in arg for argv in argvs for arg in argv)  # curl never asked for it
    assert PASSWORD not in out and str(secret) not in out


@pytest.mark.parametrize("realm", ["-o/dev/null", "--config=/etc/passwd", "-K/etc/passwd"])
def test_a_realm_curl_would_read_as_an_option_is_refused(
    tmp_path: Path, fakes: list[Fake], realm: str
) -> None:
    reg = _fake(fakes)
    reg.realm = realm
    m, out, argvs = _probe(tmp_path, reg.address, ("http",))
    _refused(m, reg.address, "not a URL", "none")
    assert not any(realm in argv for argv in argvs), argvs  # never on a curl command line
    assert PASSWORD not in out


def test_every_url_reaches_curl_as_url_with_its_protocol_pinned(tmp_path: Path, fakes: list[Fake]) -> None:
    reg = _fake(fakes, need_basic=True)
    reg.realm = f"http://{reg.address}/token"
    m, _, argvs = _probe(tmp_path, reg.address, ("http",))
    assert m.size == 4242
    assert len(argvs) >= 3  # the manifest, the 401's challenge, the token, the manifest again
    for argv in argvs:
        url = [a for a in argv if "://" in a]
        assert len(url) == 1 and argv[argv.index(url[0]) - 1] == "--url", argv
        assert "--proto" in argv and "--proto-redir" in argv, argv
    token_call = next(argv for argv in argvs if any("/token" in a for a in argv))
    assert token_call[token_call.index("--proto") + 1] == "=http"


def test_a_realm_on_another_host_gets_no_basic_credentials(tmp_path: Path, fakes: list[Fake]) -> None:
    reg = _fake(fakes)
    tokens = _fake(fakes, bind="127.0.0.2")  # another host (loopback, so http is allowed)
    reg.realm = f"http://{tokens.address}/token"
    m, out, _ = _probe(tmp_path, reg.address, ("http",))
    assert m.size == 4242  # an anonymous token still reads a public image's manifest
    token_requests = [auth for path, auth in tokens.seen if path.startswith("/token")]
    assert token_requests == [""], tokens.seen  # asked once, anonymously
    assert PASSWORD not in out


def test_the_registrys_own_http_loopback_realm_gets_the_credentials(
    tmp_path: Path, fakes: list[Fake]
) -> None:
    reg = _fake(fakes, need_basic=True)
    reg.realm = f"http://{reg.address}/token?x=1"
    m, out, _ = _probe(tmp_path, reg.address, ("https", "http"))
    assert m.error is None and m.size == 4242
    want = "/token?x=1&service=fake-registry&scope=repository%3anvidia%2fpytorch%3apull"
    assert [auth for path, auth in reg.seen if path.lower() == want] == [BASIC], reg.seen
    assert PASSWORD not in out


def test_a_plain_http_realm_off_loopback_is_refused(tmp_path: Path, fakes: list[Fake]) -> None:
    reg = _fake(fakes)
    reg.realm = "http://Mirror.Example.invalid:8080/token"
    m, _, argvs = _probe(tmp_path, reg.address, ("http",))
    _refused(m, reg.address, "http", "mirror.example.invalid:8080")
    assert not any("Mirror.Example" in a for argv in argvs for a in argv)


def test_a_realm_with_userinfo_or_odd_characters_is_refused(tmp_path: Path, fakes: list[Fake]) -> None:
    reg = _fake(fakes)
    reg.realm = "https://evil@127.0.0.1/token"
    m, _, _ = _probe(tmp_path, reg.address, ("http",))
    _refused(m, reg.address, "https", "unusable")


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    """A self-signed certificate for 127.0.0.1 (server context, CA file for curl)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx, cert


def test_the_registrys_own_https_realm_works_as_before(
    tmp_path: Path, fakes: list[Fake], tls: tuple[ssl.SSLContext, Path]
) -> None:
    reg = _fake(fakes, need_basic=True, tls=tls[0])
    reg.realm = f"https://{reg.address}/token"
    m, out, _ = _probe(tmp_path, reg.address, ("https",), {"CURL_CA_BUNDLE": str(tls[1])})
    assert m.error is None and m.size == 4242
    assert any(path.startswith("/token") and auth == BASIC for path, auth in reg.seen)
    assert PASSWORD not in out


def test_an_https_registry_naming_an_http_realm_is_refused(
    tmp_path: Path, fakes: list[Fake], tls: tuple[ssl.SSLContext, Path]
) -> None:
    reg = _fake(fakes, need_basic=True, tls=tls[0])
    reg.realm = f"http://{reg.address}/token"  # the credentials would cross in the clear
    m, _, _ = _probe(tmp_path, reg.address, ("https",), {"CURL_CA_BUNDLE": str(tls[1])})
    _refused(m, reg.address, "http", reg.address)
    assert not any(path.startswith("/token") for path, _ in reg.seen)


def test_the_hosts_curlrc_is_never_read(tmp_path: Path, fakes: list[Fake]) -> None:
    """A vendor image's ~/.curlrc (`insecure`, a header, a user) would change what curl sends
    and checks: every curl of the probe starts with -q, which skips it."""
    reg = _fake(fakes, need_basic=True)
    reg.realm = f"http://{reg.address}/token"
    (tmp_path / ".curlrc").write_text('header = "Authorization: Bearer FROM-CURLRC"\ninsecure\n')
    m, _, argvs = _probe(tmp_path, reg.address, ("http",))
    assert m.size == 4242
    assert not reg.saw("FROM-CURLRC"), reg.seen
    assert all(argv[0] == "-q" for argv in argvs), argvs
