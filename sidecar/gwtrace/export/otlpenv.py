"""The OTLP exporter environment, read in one place.

Every gwtrace client that sends spans or snapshots towards a collector (the
sidecar's exporter, ``gwtrace ingest``, ``gwtrace run``'s private sidecar, the
snapshot sender, the endpoint warnings of the CLI) reads the standard
``OTEL_EXPORTER_OTLP_*`` variables through :func:`otlp_env`, so they cannot
disagree on a rule. The rules are the OpenTelemetry specification's
(exporter.md, "Configuration Options"):

* endpoint: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as it is;
  otherwise ``OTEL_EXPORTER_OTLP_ENDPOINT`` is a base URL and gets
  ``/v1/traces`` appended (after one trailing ``/``);
* headers: ``k=v,k2=v2``, each side URL-decoded and stripped;
* compression: ``gzip`` or ``none`` (anything else is warned about and means none);
* timeout: milliseconds (``0`` means no limit: an hour here), default 10 s;
* certificate, client key, client certificate: file paths;
* ``GWTRACE_OTLP_TOKEN_FILE`` (gwtrace's own): a file whose content, stripped,
  becomes the ``Authorization: Bearer`` header (it wins over one in the
  headers). A glidein passes the *path* so that the token itself never sits in
  ``glidein_config`` (printed into the glidein's .err), in an environment (jobs
  inherit the pilot's) or on a command line. A file that cannot be used leaves
  no Authorization header and says why in ``token_problem`` (never the content);
  the sidecar then keeps its spans rather than send them unauthenticated.

The resource metrics' endpoint (``metrics_endpoint``) follows the same rule with ``/v1/metrics``;
their other options are the spans' (docs/resources.md).

Each option's signal-specific ``OTEL_EXPORTER_OTLP_TRACES_X`` wins over the
generic ``OTEL_EXPORTER_OTLP_X``. Standard library only: the snapshot sender
imports it on the node.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from typing import Dict, Mapping, NamedTuple, Optional, Tuple

log = logging.getLogger("gwtrace.export.otlpenv")

DEFAULT_TIMEOUT_S = 10.0
#: What a timeout of 0 ("no limit") becomes: a stuck collector still frees the thread.
UNLIMITED_TIMEOUT_S = 3600.0
TRACES_PATH = "/v1/traces"
PREFIX = "OTEL_EXPORTER_OTLP_"
TOKEN_FILE_VARIABLE = "GWTRACE_OTLP_TOKEN_FILE"
#: A bearer token is a few kB at most (a SciToken or a JWT); more is not one.
MAX_TOKEN_BYTES = 64 * 1024


class OtlpEnv(NamedTuple):
    """The OTLP/HTTP trace exporter's settings, resolved."""

    endpoint: str                 # the full traces URL, "" when no endpoint is set
    endpoint_variable: str        # the variable it came from, for messages ("" when none)
    endpoint_value: str           # that variable's value, as set
    headers: Dict[str, str]
    compression: str              # "gzip" or "none"
    timeout_s: float
    certificate: Optional[str]    # CA file
    client_key: Optional[str]
    client_certificate: Optional[str]
    token_problem: str = ""       # why GWTRACE_OTLP_TOKEN_FILE gave no token ("" when fine or unset)

    @property
    def configured(self) -> bool:
        """An endpoint is set: spans go to a collector, not the embedded store."""
        return bool(self.endpoint)

    @property
    def base_url(self) -> str:
        """The endpoint without its ``/v1/traces`` (where the other gwtrace paths live)."""
        url = self.endpoint.rstrip("/")
        return url[: -len(TRACES_PATH)] if url.endswith(TRACES_PATH) else url


def _option(env: Mapping[str, str], name: str) -> Tuple[str, str]:
    """(value, variable) of option ``name``: the TRACES_ variable first, then the generic one."""
    for var in (f"{PREFIX}TRACES_{name}", f"{PREFIX}{name}"):
        value = (env.get(var) or "").strip()
        if value:
            return value, var
    return "", ""


def resolve_endpoint(traces: str, base: str) -> str:
    """The traces URL from the signal-specific and the generic variable (either may be "")."""
    traces, base = traces.strip(), base.strip()
    if traces:
        return traces
    if base:
        return base.rstrip("/") + TRACES_PATH
    return ""


def parse_headers(raw: str) -> Dict[str, str]:
    """``k=v,k2=v2`` with URL-encoded sides; an item without ``=`` or without a key is skipped."""
    headers: Dict[str, str] = {}
    for item in raw.split(","):
        key, eq, value = item.partition("=")
        key = urllib.parse.unquote(key).strip()
        if eq and key:
            headers[key] = urllib.parse.unquote(value).strip()
    return headers


def timeout_seconds(env: Mapping[str, str]) -> float:
    """The timeout in seconds from milliseconds; a bad value is warned about and skipped.

    The Python exporter reads these variables as seconds (opentelemetry-python
    #4044), so gwtrace reads them itself and passes seconds explicitly.
    """
    for variable in (f"{PREFIX}TRACES_TIMEOUT", f"{PREFIX}TIMEOUT"):
        raw = (env.get(variable) or "").strip()
        if not raw:
            continue
        try:
            ms = float(raw)
        except ValueError:
            log.warning("ignoring %s=%r: not a number of milliseconds", variable, raw)
            continue
        if not ms >= 0:
            log.warning("ignoring %s=%r: negative", variable, raw)
            continue
        return UNLIMITED_TIMEOUT_S if ms == 0 else ms / 1000.0
    return DEFAULT_TIMEOUT_S


def parse_compression(raw: str, variable: str) -> str:
    value = raw.lower()
    if value in ("", "none", "gzip"):
        return value or "none"
    log.warning("ignoring %s=%r: only gzip and none are supported", variable, raw)
    return "none"


def read_token(path: str) -> Tuple[str, str]:
    """(token, problem) of a token file; the problem names the file, never its content."""
    where = f"{TOKEN_FILE_VARIABLE}={path!r}"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        return "", f"{where}: cannot read it: {exc.strerror or type(exc).__name__}"
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return "", f"{where}: not an ASCII token"
    if len(raw) > MAX_TOKEN_BYTES:
        return "", f"{where}: larger than {MAX_TOKEN_BYTES} bytes, not a token"
    if not token:
        return "", f"{where}: empty"
    if any(c.isspace() or not c.isprintable() for c in token):
        return "", f"{where}: more than one word (a token is one line without spaces)"
    return token, ""


def with_token(headers: Dict[str, str], env: Mapping[str, str]) -> Tuple[Dict[str, str], str]:
    """``headers`` with the token file's Authorization (replacing any), and the token's problem."""
    path = (env.get(TOKEN_FILE_VARIABLE) or "").strip()
    if not path:
        return headers, ""
    token, problem = read_token(path)
    kept = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    if token:
        kept["Authorization"] = f"Bearer {token}"
    return kept, problem


def otlp_env(env: Optional[Mapping[str, str]] = None) -> OtlpEnv:
    """The OTLP settings of ``env`` (default ``os.environ``), by the rules of the module docstring."""
    env = os.environ if env is None else env
    traces = (env.get(f"{PREFIX}TRACES_ENDPOINT") or "").strip()
    base = (env.get(f"{PREFIX}ENDPOINT") or "").strip()
    variable = f"{PREFIX}TRACES_ENDPOINT" if traces else f"{PREFIX}ENDPOINT" if base else ""
    compression_raw, compression_var = _option(env, "COMPRESSION")
    headers, token_problem = with_token(parse_headers(_option(env, "HEADERS")[0]), env)
    return OtlpEnv(
        endpoint=resolve_endpoint(traces, base),
        endpoint_variable=variable,
        endpoint_value=traces or base,
        headers=headers,
        compression=parse_compression(compression_raw, compression_var),
        timeout_s=timeout_seconds(env),
        certificate=_option(env, "CERTIFICATE")[0] or None,
        client_key=_option(env, "CLIENT_KEY")[0] or None,
        client_certificate=_option(env, "CLIENT_CERTIFICATE")[0] or None,
        token_problem=token_problem,
    )


def endpoint_problem(env: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Why the configured OTLP endpoint cannot work (one line, never its
    credentials), or None. Here, not in reachability.py: `sidecar start`
    asks it and must not import requests to do so."""
    from urllib.parse import urlsplit

    from gwtrace.wire.redact import strip_userinfo  # start-up cost: standard library only at import

    settings = otlp_env(env)
    if not settings.configured:
        return None
    name, value = settings.endpoint_variable, strip_userinfo(settings.endpoint_value)
    try:
        url = urlsplit(settings.endpoint)
        url.port                          # raises on a bad port
    except ValueError as exc:
        return strip_userinfo(f"{name}={value!r} is not a valid URL ({exc}): spans will wait in the outbox")
    if url.scheme not in ("http", "https") or not url.hostname:
        return f"{name}={value!r} is not an http(s)://host URL: spans will wait in the outbox"
    return None


METRICS_PATH = "/v1/metrics"


def metrics_endpoint(env: Optional[Mapping[str, str]] = None) -> str:
    """The metrics URL: ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` as it is; else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/metrics``; else, when only the traces endpoint is
    set and ends in ``/v1/traces``, the same server's ``/v1/metrics``; else "" (none)."""
    env = os.environ if env is None else env
    explicit = (env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or "").strip()
    if explicit:
        return explicit
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    if base:
        return base.rstrip("/") + METRICS_PATH
    traces = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip().rstrip("/")
    if traces.endswith(TRACES_PATH):
        return traces[: -len(TRACES_PATH)] + METRICS_PATH
    return ""
