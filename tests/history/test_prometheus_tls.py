"""TLS with a CA file, against an HTTPS server on the loopback interface.

The certificates are made for the test by the ``openssl`` command (skipped without it):
a CA, and a server certificate for localhost signed by it.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.history.prometheus import PrometheusSource
from joiner.history.series import QueryRange, Series

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

_EXT = """subjectAltName=DNS:localhost,IP:127.0.0.1
authorityKeyIdentifier=keyid,issuer
subjectKeyIdentifier=hash
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
"""

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tls")
    (d / "ext.cnf").write_text(_EXT)
    _openssl(
        "req",
        "-x509",
        *_EC,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=test CA",
        cwd=d,
    )
    _openssl("req", *_EC, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost", cwd=d)
    _openssl(
        "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "srv.pem", "-days", "1", "-extfile", "ext.cnf", cwd=d,
    )  # fmt: skip
    return d


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [{"metric": {"__name__": "up", "job": "ksm"}, "values": [[60, "1"]]}],
            },
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def https_url(certs: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "srv.pem", certs / "srv.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_ca_file_lets_the_client_verify_the_server(certs: Path, https_url: str) -> None:
    src = PrometheusSource(
        https_url, QueryRange(60, 60, 60), ca_file=certs / "ca.pem", timeout_s=10
    )
    try:
        assert src.fetch("up", "up") == [Series({"job": "ksm"}, (60.0,), (1.0,))]
    finally:
        src.close()


def test_without_the_ca_file_the_handshake_fails_naming_the_url(https_url: str) -> None:
    src = PrometheusSource(https_url, QueryRange(60, 60, 60), timeout_s=10)
    try:
        with pytest.raises(InputError) as caught:
            src.fetch("up", "up")
    finally:
        src.close()
    assert str(caught.value).startswith(f"{https_url}: query up: the TLS handshake failed")
    assert "--ca-file" in str(caught.value)
