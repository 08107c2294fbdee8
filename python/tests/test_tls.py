"""tls:// addresses through libtandem: a tandemd with --tls-cert, a self-signed certificate made
with the openssl command in the test's folder."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import tandem
from conftest import Daemon
from tandem import ClientCode, ServerCode, TandemError

TOKEN = "s3cret-long-enough-for-128-bits"


def _make_cert(folder: str, name: str) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (Debian package openssl)")
    cert, key = os.path.join(folder, name + "-cert.pem"), os.path.join(folder, name + "-key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=tandem test",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def tls_daemon(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tls"))
    cert, key = _make_cert(folder, "server")
    other, _ = _make_cert(folder, "other")
    d = Daemon("--tls-cert", cert, "--tls-key", key, "--auth-token", TOKEN)
    yield d, cert, other
    d.cleanup()


def test_query_over_tls(tls_daemon):
    d, cert, _ = tls_daemon
    with tandem.Client(f"tls://127.0.0.1:{d.port}", auth_token=TOKEN, tls_ca=cert) as c:
        v = [[-0.5, -0.5, -0.5], [0.5, -0.5, -0.5], [0.5, 0.5, -0.5], [-0.5, 0.5, -0.5],
             [-0.5, -0.5, 0.5], [0.5, -0.5, 0.5], [0.5, 0.5, 0.5], [-0.5, 0.5, 0.5]]  # fmt: skip
        t = [[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
             [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]]  # fmt: skip
        m = c.put_mesh(v, t, name="cube")
        s = c.put_scene([tandem.SceneObject(m), tandem.SceneObject(m, movable=True)])
        poses = [[0.9, 0.3, 0.2, 0, 0, 0, 1], [1.2, 0, 0, 0, 0, 0, 1], [0.9, 0.95, 0.7, 0, 0, 0, 1]]
        r = c.query(s, poses)
        assert list(r.colliding) == [True, False, True]


def test_ca_from_the_environment_and_host_name(tls_daemon, monkeypatch):
    d, cert, _ = tls_daemon
    monkeypatch.setenv("TANDEM_TLS_CA", cert)
    with tandem.Client(f"tls://localhost:{d.port}", auth_token=TOKEN) as c:
        assert c.list_meshes() is not None


def test_wrong_ca_and_wrong_token_and_plain_client(tls_daemon):
    d, cert, other = tls_daemon
    with pytest.raises(TandemError) as e:
        tandem.Client(f"tls://127.0.0.1:{d.port}", auth_token=TOKEN, tls_ca=other)
    assert e.value.client_code == ClientCode.ECONNECT and "did not verify" in e.value.message
    with pytest.raises(TandemError) as e:
        tandem.Client(f"tls://127.0.0.1:{d.port}", auth_token="not-the-token", tls_ca=cert)
    assert e.value.code == ServerCode.UNAUTHENTICATED
    with pytest.raises(TandemError) as e:
        tandem.Client(d.tcp, auth_token=TOKEN, timeout=5)
    assert "speaks TLS" in e.value.message
