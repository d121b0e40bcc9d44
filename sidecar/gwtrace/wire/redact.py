"""The redaction rule for Python producers and the sidecar's backstop.

One rule in three languages (bash/gwtrace.sh ``_gwtrace_redacts`` and
``_gwtrace_userinfo``, shim/gwtrace-job-wrapper ``_gwtrace_jw_redacts`` and
``_gwtrace_jw_userinfo``, and this module), held equal by tests/test_redact.py,
which runs all of them on one table. The rule is written so that a shell
``case`` pattern can state it exactly, without forks, regexes or
locale-dependent ranges (docs/protocol.md, "Secrets"). It applies to
attribute values and to status messages (``error:<message>``):

* a key names a secret if, compared ASCII-case-insensitively, it contains one
  of SECRET_PARTS, or one of SECRET_WORDS as a whole word (bounded by a
  character other than an ASCII letter or digit, or by the key's ends):
  ``my-pass`` and ``ssh_key`` do, ``passes``, ``compass``, ``bypass_count``
  and ``author`` do not;
* a value is a secret if it contains, ASCII-case-insensitively, ``bearer``
  and a space or TAB, or ``github_pat``, or an assignment of a secret: one of
  VALUE_NAMES, or one of VALUE_WORDS after the value's start or a character
  other than an ASCII letter or digit, directly followed by ``=`` or ``:``
  (``--password=x``, ``SSHPASS=x``, ``&sig=x``, ``Authorization: Basic x``);
  or a JWT: ``eyJ``, then later two dots, each after at least one character.

A secret value is written as REDACTED; the key is kept, so one can see that
something was there. A value that is not a secret but holds a URL with
credentials (``https://user:pw@host/``) keeps everything but them:
``https://[REDACTED]@host/`` (strip_userinfo, which is also what every
gwtrace command uses to show or log a URL).
"""

from __future__ import annotations

import logging
import re
from typing import Tuple, TypeVar

REDACTED = "[REDACTED]"

#: Key substrings that name a secret wherever they appear.
SECRET_PARTS = ("token", "secret", "passw", "passphrase", "credential", "cookie", "authoriz", "authent",
                "apikey", "privatekey", "sshkey", "proxy", "sshpass", "signature", "github_pat")
#: Key words that name a secret only as a whole word.
SECRET_WORDS = ("pass", "pwd", "pw", "auth", "key", "jwt")
#: Names that make a value secret when ``=`` or ``:`` directly follows them,
#: whatever comes before (``db_password=``, ``X-Amz-Signature=``).
VALUE_NAMES = ("password", "passwd", "passphrase", "sshpass", "token", "secret", "apikey", "privatekey", "sshkey",
               "authorization", "cookie", "credential", "credentials", "signature")
#: The same, only at the value's start or after a character other than an
#: ASCII letter or digit (``pw=`` and ``&sig=``, not ``bypass=``).
VALUE_WORDS = ("pass", "pwd", "pw", "auth", "key", "jwt", "sig")
#: Text that makes a value secret anywhere in it, ASCII-case-insensitively.
VALUE_PARTS = ("bearer ", "bearer\t", "github_pat")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_KEY_RE = re.compile("|".join(SECRET_PARTS) + "|(?<![a-z0-9])(?:" + "|".join(SECRET_WORDS) + ")(?![a-z0-9])")
# re.ASCII with IGNORECASE: only A-Z fold (not the Kelvin sign, long s, dotless i),
# as the shell's explicit [Aa] classes.
_VALUE_CI_RE = re.compile("|".join(re.escape(p) for p in VALUE_PARTS)
                          + "|(?:" + "|".join(VALUE_NAMES) + ")[=:]"
                          + "|(?<![a-z0-9])(?:" + "|".join(VALUE_WORDS) + ")[=:]", re.ASCII | re.IGNORECASE)
_JWT_RE = re.compile(r"eyJ.+\..+\.", re.S)
#: True for any key or value the rule could redact (and some more): the
#: sidecar's hot path tests this first, one C-level search per attribute.
_HINT_RE = re.compile(r"(?i)token|secret|pass|pw|auth|key|jwt|credential|cookie|proxy|bearer[ \t]|eyJ|sig|github_pat"
                      r"|://")
#: What ends a URL's authority (host and userinfo): RFC 3986's / ? #, and white space.
_AUTHORITY_END_RE = re.compile(r"[/?# \t\n\r]")
V = TypeVar("V")


def is_secret_key(key: str) -> bool:
    """True if ``key`` names a secret."""
    return _KEY_RE.search(key.translate(_ASCII_LOWER)) is not None


def is_secret_value(value: str) -> bool:
    """True if ``value`` holds a bearer token, an assignment of a secret or a JWT."""
    return _VALUE_CI_RE.search(value) is not None or _JWT_RE.search(value) is not None


def redacts(key: str, value: str) -> bool:
    """True if the attribute ``key=value`` must be written as ``key=[REDACTED]``."""
    return is_secret_key(key) or is_secret_value(value)


def strip_userinfo(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by REDACTED.

    After each ``://``, the authority runs to the first ``/``, ``?``, ``#`` or
    white space (or the next ``://``); if it holds an ``@``, all before its
    last ``@`` is the userinfo: ``https://u:pw@host/x`` becomes
    ``https://[REDACTED]@host/x``. Scheme, host, port and path stay, so a
    message still says where. Used to show or log any URL (endpoints).
    """
    if "://" not in text or "@" not in text:
        return text
    pieces = text.split("://")
    for i in range(1, len(pieces)):
        piece = pieces[i]
        end = _AUTHORITY_END_RE.search(piece)
        at = piece.rfind("@", 0, end.start() if end is not None else len(piece))
        if at >= 0:
            pieces[i] = REDACTED + piece[at:]
    return "://".join(pieces)


def redact_value(key: str, value: str) -> str:
    """What is written for the attribute ``key=value``: REDACTED, the value
    with its URLs' credentials stripped, or the value itself."""
    if _HINT_RE.search(key + "=" + value) is None:
        return value
    if redacts(key, value):
        return REDACTED
    return strip_userinfo(value)


def redact_message(message: str) -> str:
    """What is written for a status message (unescaped): by the value rule,
    as an attribute's value under a key that names nothing."""
    if _HINT_RE.search(message) is None:
        return message
    return REDACTED if is_secret_value(message) else strip_userinfo(message)


def redact_pair(key: str, value: V) -> Tuple[str, object]:
    """``(key, value)``, or ``(key, REDACTED)`` (or the value with its URLs'
    credentials stripped) if the rule says so. Only string values can hold a
    secret (ints and booleans cannot)."""
    if isinstance(value, str):
        return key, redact_value(key, value)
    return key, value


def hinted(text: str) -> bool:
    """Cheap pre-test: False means no attribute in ``text`` can be redacted."""
    return _HINT_RE.search(text) is not None


class StripUserinfo(logging.Filter):
    """A logging filter that passes every record with the credentials of the
    URLs in its message replaced (strip_userinfo): the sidecar's log and
    ``gwtrace serve``'s never keep an endpoint's ``user:password@``, whatever
    a library put in an exception's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        stripped = strip_userinfo(message)
        if stripped != message:
            record.msg, record.args = stripped, ()
        return True


def strip_userinfo_in_logs() -> None:
    """Add StripUserinfo to every handler of the root logger (once each)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, StripUserinfo) for f in handler.filters):
            handler.addFilter(StripUserinfo())
