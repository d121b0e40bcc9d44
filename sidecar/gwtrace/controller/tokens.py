"""Bearer tokens as the grid issues them (WLCG tokens, SciTokens): verified, then mapped to a role.

Verification is pyjwt's (a kept library: signature, ``exp``/``nbf``/``iat``,
``iss`` and ``aud`` checks done right, and ``PyJWKClient`` fetching and
caching the issuer's keys, refetching on an unknown ``kid``). The keys come
from the issuer's discovery document, ``<issuer>/.well-known/openid-configuration``
→ ``jwks_uri``, read once and cached. An issuer must be ``https://``, or
``http://`` on a loopback address (tests, a local issuer).

The role map (a JSON file, docs/control.md) maps a token's WLCG groups
(``wlcg.groups``) or scopes (``scope``) to a role, and a site admin's groups
or scopes to their sites. A valid token that maps to nothing gets
``default_role`` (``user``: their own jobs only), or is refused when that is null.
Only the issuer's signed claims decide: nothing else a client sends can name a role.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .roles import PERSON_ROLES, Principal

#: Signature algorithms taken (asymmetric only: a shared-secret HS256 token is never accepted).
ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"]
FETCH_TIMEOUT_S = 5.0
#: After the issuer's discovery document could not be read, requests are refused at once for this long.
RETRY_DISCOVERY_S = 30.0
#: An unknown key id (a rotated key) refreshes the issuer's key set at most this often.
REFRESH_UNKNOWN_S = 60.0


class BadToken(Exception):
    """A token that is not accepted: one line (HTTP 401)."""


class BadRoleMap(ValueError):
    """The role map file cannot be used: one line naming what is wrong."""


@dataclass(frozen=True)
class Grant:
    role: str
    sites: FrozenSet[str] = field(default_factory=frozenset)


def _grant(name: str, value: Any) -> Grant:
    if isinstance(value, str):
        value = {"role": value}
    if not isinstance(value, Mapping) or value.get("role") not in PERSON_ROLES:
        raise BadRoleMap(f"{name}: the role must be one of {', '.join(PERSON_ROLES)}")
    sites = value.get("sites", [])
    if not isinstance(sites, list) or not all(isinstance(s, str) and s for s in sites):
        raise BadRoleMap(f"{name}: sites must be a list of site names")
    if value["role"] == "siteadmin" and not sites:
        raise BadRoleMap(f"{name}: a siteadmin grant names its sites")
    return Grant(value["role"], frozenset(sites))


@dataclass(frozen=True)
class RoleMap:
    groups: Mapping[str, Grant] = field(default_factory=dict)
    scopes: Mapping[str, Grant] = field(default_factory=dict)
    default_role: Optional[str] = "user"
    name_claims: tuple = ("preferred_username", "sub")

    @classmethod
    def from_dict(cls, data: Any) -> "RoleMap":
        if not isinstance(data, Mapping):
            raise BadRoleMap("the role map is a JSON object")
        unknown = set(data) - {"groups", "scopes", "default_role", "name_claims"}
        if unknown:
            raise BadRoleMap(f"unknown key {sorted(unknown)[0]!r} (known: groups, scopes, default_role, name_claims)")
        groups = {str(k): _grant(f"groups {k}", v) for k, v in dict(data.get("groups") or {}).items()}
        scopes = {str(k): _grant(f"scopes {k}", v) for k, v in dict(data.get("scopes") or {}).items()}
        default = data.get("default_role", "user")
        if default is not None and default not in ("user", "shifter"):
            raise BadRoleMap("default_role is user or null")
        claims = tuple(data.get("name_claims") or ("preferred_username", "sub"))
        return cls(groups, scopes, default, claims)

    @classmethod
    def from_file(cls, path: str) -> "RoleMap":
        try:
            with open(path, encoding="utf-8") as handle:
                return cls.from_dict(json.load(handle))
        except (OSError, ValueError) as exc:
            if isinstance(exc, BadRoleMap):
                raise BadRoleMap(f"{path}: {exc}") from None
            raise BadRoleMap(f"cannot read the role map {path}: {exc}") from None

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """The strongest role the token's groups and scopes grant; a site admin's sites from all their grants."""
        name = next((str(claims[c]) for c in self.name_claims if isinstance(claims.get(c), str) and claims[c]), "")
        if not name:
            raise BadToken(f"the token has none of the claims {', '.join(self.name_claims)}")
        groups = claims.get("wlcg.groups") or []
        scopes = claims.get("scope") or ""
        grants: List[Grant] = [self.groups[g] for g in groups if isinstance(g, str) and g in self.groups]
        if isinstance(scopes, str):
            grants += [self.scopes[s] for s in scopes.split() if s in self.scopes]
        if not grants:
            if self.default_role is None:
                raise BadToken("the token grants no gwtrace role")
            return Principal(name, self.default_role)
        role = min((g.role for g in grants), key=PERSON_ROLES.index)
        sites = frozenset().union(*(g.sites for g in grants if g.role == "siteadmin"))
        return Principal(name, role, sites if role == "siteadmin" else frozenset())


def check_issuer_url(issuer: str) -> str:
    """``https://...``, or ``http://`` on loopback only: the keys must not be swapped on the way."""
    parts = urllib.parse.urlsplit(issuer)
    if parts.scheme == "https" and parts.hostname:
        return issuer.rstrip("/")
    if parts.scheme == "http" and parts.hostname:
        try:
            if parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname).is_loopback:
                return issuer.rstrip("/")
        except ValueError:
            pass
    raise BadRoleMap(f"the issuer {issuer} must be https:// (http:// only on a loopback address)")


class TokenVerifier:
    """Verifies bearer tokens of one issuer and audience and maps them to a Principal."""

    def __init__(self, issuer: str, audience: str, role_map: RoleMap, timeout: float = FETCH_TIMEOUT_S,
                 keys_lifespan_s: int = 3600):
        self.issuer = check_issuer_url(issuer)
        self.audience = audience
        self.role_map = role_map
        self.timeout = timeout
        self.lifespan = keys_lifespan_s
        self._client: Any = None
        self._lock = threading.Lock()
        self._failed: Optional[Tuple[float, str]] = None      # (until when, why): an issuer down is not asked per request
        self._refreshed = float("-inf")

    def _keys(self) -> Any:
        """pyjwt's JWKS client for the issuer's ``jwks_uri`` (discovered once)."""
        import jwt

        with self._lock:
            if self._client is None:
                if self._failed is not None and time.monotonic() < self._failed[0]:
                    raise BadToken(self._failed[1])
                url = self.issuer + "/.well-known/openid-configuration"
                try:
                    with urllib.request.urlopen(url, timeout=self.timeout) as answer:  # noqa: S310 - checked scheme
                        jwks_uri = json.loads(answer.read(1 << 20))["jwks_uri"]
                    check_issuer_url(jwks_uri)
                except Exception as exc:  # noqa: BLE001 - one line
                    why = f"cannot read the issuer's keys from {url}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
                    self._failed = (time.monotonic() + RETRY_DISCOVERY_S, why)
                    raise BadToken(why) from None
                self._client = jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=self.lifespan,
                                               timeout=self.timeout)
            return self._client

    def claims(self, token: str) -> Dict[str, Any]:
        import jwt

        try:
            key = self._key_for(jwt.get_unverified_header(token).get("kid"))
            return jwt.decode(token, key.key, algorithms=ALGORITHMS, audience=self.audience, issuer=self.issuer,
                              options={"require": ["exp", "iss", "aud"]}, leeway=30)
        except BadToken:
            raise
        except jwt.PyJWTError as exc:
            raise BadToken(f"token refused: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None

    def _key_for(self, kid: Any) -> Any:
        """The issuer's key with this id, from the cached set; an unknown id fetches the set again at most once
        per ``REFRESH_UNKNOWN_S`` (so tokens with made-up key ids cannot make the server hammer the issuer)."""
        client = self._keys()
        found = [k for k in client.get_signing_keys() if k.key_id == kid]
        if not found:
            now = time.monotonic()
            with self._lock:
                if now - self._refreshed < REFRESH_UNKNOWN_S:
                    raise BadToken("token refused: signed with a key the issuer does not list")
                self._refreshed = now
            found = [k for k in client.get_signing_keys(refresh=True) if k.key_id == kid]
            if not found:
                raise BadToken("token refused: signed with a key the issuer does not list")
        return found[0]

    def principal(self, token: str) -> Principal:
        return self.role_map.principal(self.claims(token))
