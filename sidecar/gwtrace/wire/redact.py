"""The redaction rule for Python producers and the sidecar's backstop.

One rule in three languages (bash/gwtrace.sh ``_gwtrace_redacts``,
shim/gwtrace-job-wrapper ``_gwtrace_jw_redacts`` and this module), held equal
by tests/test_redact.py, which runs all of them on one table. The rule is
written so that a shell ``case`` pattern can state it exactly, without forks,
regexes or locale-dependent ranges (docs/protocol.md, "Secrets"):

* a key names a secret if, compared ASCII-case-insensitively, it contains one
  of SECRET_PARTS, or one of SECRET_WORDS as a whole word (bounded by a
  character other than an ASCII letter or digit, or by the key's ends):
  ``my-pass`` and ``ssh_key`` do, ``passes``, ``compass``, ``bypass_count``
  and ``author`` do not;
* a value is a secret if it contains ``bearer`` and a space (any case), or a
  JWT: ``eyJ``, then later two dots, each after at least one character.

A secret value is written as REDACTED; the key is kept, so one can see that
something was there.
"""

from __future__ import annotations

import re
from typing import Dict, Mapping, Tuple, TypeVar

REDACTED = "[REDACTED]"

#: Key substrings that name a secret wherever they appear.
SECRET_PARTS = ("token", "secret", "passw", "passphrase", "credential", "cookie", "authoriz", "authent",
                "apikey", "privatekey", "sshkey", "proxy")
#: Key words that name a secret only as a whole word.
SECRET_WORDS = ("pass", "pwd", "auth", "key", "jwt")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_KEY_RE = re.compile("|".join(SECRET_PARTS) + "|(?<![a-z0-9])(?:" + "|".join(SECRET_WORDS) + ")(?![a-z0-9])")
_VALUE_RE = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] |eyJ.+\..+\.", re.S)
#: True for any key or value the rule could redact (and some more): the
#: sidecar's hot path tests this first, one C-level search per attribute.
_HINT_RE = re.compile(r"(?i)token|secret|pass|pwd|auth|key|jwt|credential|cookie|proxy|bearer |eyJ")

V = TypeVar("V")


def is_secret_key(key: str) -> bool:
    """True if ``key`` names a secret."""
    return _KEY_RE.search(key.translate(_ASCII_LOWER)) is not None


def is_secret_value(value: str) -> bool:
    """True if ``value`` looks like a bearer token or a JWT."""
    return _VALUE_RE.search(value) is not None


def redacts(key: str, value: str) -> bool:
    """True if the attribute ``key=value`` must be written as ``key=[REDACTED]``."""
    return is_secret_key(key) or is_secret_value(value)


def redact_pair(key: str, value: V) -> Tuple[str, object]:
    """``(key, value)``, or ``(key, REDACTED)`` if the rule says so. Only
    string values can hold a secret (ints and booleans cannot)."""
    if isinstance(value, str) and _HINT_RE.search(key + "=" + value) is not None and redacts(key, value):
        return key, REDACTED
    return key, value


def redact_attributes(attributes: Mapping[str, V]) -> Dict[str, object]:
    """A copy of ``attributes`` with every secret value replaced."""
    return dict(redact_pair(key, value) for key, value in attributes.items())


def hinted(text: str) -> bool:
    """Cheap pre-test: False means no attribute in ``text`` can be redacted."""
    return _HINT_RE.search(text) is not None
