"""A token issuer on loopback for the controller's tests: discovery document, JWKS, and signed tokens.

The keys are made with ``cryptography``; the tokens with pyjwt, as a WLCG
issuer's would look (``wlcg.groups``, ``scope``, ``preferred_username``).
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, Optional, Tuple

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from gwtrace.controller.tokens import RoleMap, TokenVerifier
from gwtrace.server.app import create_app
from gwtrace.store import TraceStore

AUDIENCE = "https://gwtrace.example.org"


class Issuer:
    """Serves ``/.well-known/openid-configuration`` and ``/jwks`` on 127.0.0.1; ``token()`` signs one."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "k1"
        self.requests = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                issuer.requests += 1
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks"}
                elif self.path == "/jwks":
                    jwk = json.loads(RSAAlgorithm.to_jwk(issuer.key.public_key()))
                    body = {"keys": [dict(jwk, kid=issuer.kid, use="sig", alg="RS256")]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def token(self, name: str, groups: Optional[list] = None, scope: str = "", audience: str = AUDIENCE,
              key: Any = None, lifetime: int = 600, issuer: Optional[str] = None, **extra: Any) -> str:
        now = int(time.time())
        claims: Dict[str, Any] = {"iss": issuer or self.url, "sub": "sub-" + name, "preferred_username": name,
                                  "aud": audience, "iat": now, "nbf": now, "exp": now + lifetime,
                                  "wlcg.ver": "1.0"}
        if groups:
            claims["wlcg.groups"] = groups
        if scope:
            claims["scope"] = scope
        claims.update(extra)
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


ROLE_MAP = {
    "groups": {"/vo/admins": "admin", "/vo/ops": "shifter",
               "/vo/sites/S1": {"role": "siteadmin", "sites": ["S1"]},
               "/vo/sites/S2": {"role": "siteadmin", "sites": ["S2"]}},
    "scopes": {"gwtrace.admin": "admin"},
    "default_role": "user",
}


def issuer_fixture() -> Iterator[Issuer]:
    issuer = Issuer()
    try:
        yield issuer
    finally:
        issuer.close()


@contextmanager
def controlled_client(path: Any, issuer: Issuer, pilot_token: str) -> Iterator[Tuple[Any, TraceStore]]:
    """A test client of an app over a new store in ``path`` whose controller trusts ``issuer`` (``ROLE_MAP``),
    and the store; the store is closed after."""
    store = TraceStore(path / "traces.db")
    try:
        app = create_app(store, pilot_token,
                         control_verifier=TokenVerifier(issuer.url, AUDIENCE, RoleMap.from_dict(ROLE_MAP)))
        yield app.test_client(), store
    finally:
        store.close()
