"""A controller rule: where it applies (its scope, perhaps one operation), what it sets (level, sampling ratio),
until when, and who set it.

A rule is data a person typed or an API client sent: every field is checked
here, once, so that the rest of the controller (``decide``, the store, the
pages) only ever sees valid rules. What is wrong is said in one line
(``BadRule``), naming the field.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

#: The tracing levels, least first: "less" is earlier in this list (the contract, briefs c32).
LEVELS: Tuple[str, ...] = ("off", "scripts", "functions", "commands")

#: Scope fields, most specific first. A rule's specificity compares the most specific field it names, then
#: the next (``specificity``): a job's rule beats an owner's, an owner's at a site beats the owner's alone.
SCOPE_FIELDS: Tuple[str, ...] = ("trace_id", "job_id", "glidein_id", "owner", "entry", "site", "factory", "frontend")

#: The roles, strongest first.
ROLES: Tuple[str, ...] = ("admin", "shifter", "siteadmin", "user")

#: Longest string a scope value, reason or name may be (the decide contract's bound).
MAX_TEXT = 256


class BadRule(ValueError):
    """A rule that cannot be kept: the message says which field and why, in one line."""


@dataclass(frozen=True)
class Rule:
    """One rule. ``level`` or ``sample_ratio`` None: the rule does not set that field.

    ``operation`` (a span name, as in Jaeger's per-operation strategies) makes it an operation rule: it sets
    only a ratio, for spans of that name in its scope, and speaks only in the Jaeger sampling answer
    (``sampling.strategy``); the nodes' decisions (``decide.decide``) are about whole glideins and jobs and
    never see it.
    """

    scope: Mapping[str, str]
    level: Optional[str] = None
    sample_ratio: Optional[float] = None
    expires: Optional[float] = None          # unix seconds; None: never
    reason: str = ""
    set_by: str = ""
    role: str = ""
    created: float = 0.0                     # unix seconds; ties between equally specific rules go to the newest
    id: str = ""
    operation: Optional[str] = None
    _mask: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_mask", specificity(self.scope))

    @property
    def specificity(self) -> int:
        return self._mask

    def matches(self, query: Mapping[str, Any]) -> bool:
        """Whether every field of the scope equals the query's (an empty scope matches everything)."""
        return all(query.get(k) == v for k, v in self.scope.items())

    def expired(self, now: float) -> bool:
        return self.expires is not None and self.expires <= now

    def is_site_rule(self) -> bool:
        """A rule about a site (its scope names a site, perhaps an entry, factory or frontend there, and no
        person, job, glidein or trace): the kind an admin's or site admin's rule binds users with."""
        return "site" in self.scope and not any(k in self.scope for k in ("owner", "job_id", "glidein_id",
                                                                          "trace_id"))

    def to_dict(self) -> Dict[str, Any]:
        out = asdict(self)
        out.pop("_mask")
        out["scope"] = dict(self.scope)
        return out


def specificity(scope: Mapping[str, str]) -> int:
    """A number that is larger for a more specific scope: each field a bit, the most specific the highest bit."""
    return sum(1 << (len(SCOPE_FIELDS) - 1 - SCOPE_FIELDS.index(k)) for k in scope)


def level_rank(level: str) -> int:
    return LEVELS.index(level)


def _text(name: str, value: Any, allow_empty: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise BadRule(f"{name} must be a string, not {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise BadRule(f"{name} is longer than {MAX_TEXT} characters")
    if not value.isprintable():
        raise BadRule(f"{name} holds control characters")
    if not allow_empty and not value:
        raise BadRule(f"{name} is empty")
    return value


def check_scope(raw: Any) -> Dict[str, str]:
    """A scope from JSON: a mapping of known fields to non-empty strings (a trace id: 32 hex digits)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise BadRule("scope must be an object of field: value")
    scope = {}
    for key, value in raw.items():
        if key not in SCOPE_FIELDS:
            raise BadRule(f"unknown scope field {str(key)[:40]!r} (known: {', '.join(SCOPE_FIELDS)})")
        scope[key] = _text(f"scope {key}", value, allow_empty=False)
    if "trace_id" in scope:
        tid = scope["trace_id"].lower()
        if len(tid) != 32 or any(c not in "0123456789abcdef" for c in tid):
            raise BadRule("scope trace_id must be 32 hex digits")
        scope["trace_id"] = tid
    return {k: scope[k] for k in SCOPE_FIELDS if k in scope}


def check_level(value: Any) -> Optional[str]:
    if value is None or value == "none":
        return None
    if value not in LEVELS:
        raise BadRule(f"level must be one of {'|'.join(LEVELS)} or none, not {str(value)[:40]!r}")
    return str(value)


def check_ratio(value: Any) -> Optional[float]:
    if value is None or value == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRule("sample_ratio must be a number between 0 and 1, or none")
    ratio = float(value)
    if math.isnan(ratio) or not 0.0 <= ratio <= 1.0:
        raise BadRule("sample_ratio must be between 0 and 1")
    return ratio


def check_operation(value: Any) -> Optional[str]:
    """An operation (a span name, as the SDK names it): a printable string of 1..256 characters, or None."""
    if value is None:
        return None
    return _text("operation", value, allow_empty=False)


def check_expires(value: Any, now: float) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRule("expires must be unix seconds (a number) or null")
    if value <= now:
        raise BadRule("expires is in the past")
    return float(value)


def rule_from_request(body: Mapping[str, Any], now: float) -> Rule:
    """The rule a client asks for (``scope``, ``level``, ``sample_ratio``, ``expires``, ``reason``).

    ``set_by`` and ``role`` are never taken from the request: they come from who is asking (a client naming
    them is refused, so that nobody can write a rule in another's name or role).
    """
    for forbidden in ("set_by", "role", "id", "created"):
        if forbidden in body:
            raise BadRule(f"{forbidden} is not yours to set: it comes from your token and the server")
    unknown = set(body) - {"scope", "operation", "level", "sample_ratio", "expires", "reason"}
    if unknown:
        raise BadRule(f"unknown field {sorted(unknown)[0][:40]!r}")
    level = check_level(body.get("level"))
    ratio = check_ratio(body.get("sample_ratio"))
    operation = check_operation(body.get("operation"))
    if operation is not None and (level is not None or ratio is None):
        raise BadRule("an operation rule sets only a sample_ratio (Jaeger's per-operation strategies have no "
                      "level): drop the level, give the ratio")
    if level is None and ratio is None:
        raise BadRule("a rule sets a level, a sample_ratio or both")
    return Rule(scope=check_scope(body.get("scope")), level=level, sample_ratio=ratio, operation=operation,
                expires=check_expires(body.get("expires"), now), reason=_text("reason", body.get("reason")))
