"""Which rule decides, and why: the controller's precedence (docs/control.md, "Precedence").

1. Only rules whose scope matches the question (every field the rule names
   equals the question's) and that have not expired take part.
2. Each field (``level``, ``sample_ratio``) is decided on its own: among the
   rules that set it, the most specific scope wins (``rules.specificity``:
   trace > job > glidein > owner > entry > site > factory > frontend); equally
   specific rules: the newest wins.
3. Limits: a rule set by an admin or a site admin for a site (its scope names
   a site and no owner, job, glidein or trace) is a ceiling for users' rules:
   when the winner was set by a user and asks for more (a higher level, a
   higher ratio) than the lowest such ceiling, the ceiling's value is taken. So
   a site admin's ``off`` at their site binds every user's rule there, however
   specific. An admin's default for everything is a default, not a ceiling.
4. Operation rules (``Rule.operation``, a span name) set a ratio for spans of
   that name only, and only in the Jaeger sampling answer: for an operation,
   a matching operation rule for it is more specific than any rule without
   one (whatever their scopes); among them, 1. and 2. again. The ceilings of
   3. still bind a user's operation rule: an admin's or site admin's ratio
   for the site, with no operation or with that same one. A decided level
   ``off`` is a ratio 0 for every operation too.

Pure functions over a list of rules: no store, no clock but the one passed in.
``RuleIndex`` keeps the rules bucketed by their most specific field so that a
question looks at the few rules that can match it, not all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .rules import LEVELS, SCOPE_FIELDS, Rule, level_rank

#: How long a node may keep a decision (seconds), unless a rule that took part expires sooner.
DEFAULT_TTL_S = 300

_LIMIT_ROLES = ("admin", "siteadmin")


@dataclass(frozen=True)
class FieldChoice:
    """How one field was decided: the value, the rule that gave it, the limit that cut it (if any)."""

    value: Any = None
    rule: Optional[Rule] = None
    capped_by: Optional[Rule] = None
    asked: Any = None                     # the winner's own value, before a limit


@dataclass(frozen=True)
class Decision:
    level: FieldChoice
    sample_ratio: FieldChoice
    ttl_s: int

    @property
    def rule(self) -> Optional[Rule]:
        """The deciding rule: the one that gave the level, else the one that gave the ratio."""
        choice = self.level if self.level.rule is not None else self.sample_ratio
        return choice.capped_by or choice.rule

    def reason(self) -> str:
        parts = []
        for name, choice in (("level", self.level), ("sample_ratio", self.sample_ratio)):
            if choice.rule is None:
                continue
            why = f"{name} {choice.value} from {choice.rule.id}"
            if choice.capped_by is not None:
                why += (f" (asked {choice.asked}; capped by {choice.capped_by.id}, a {choice.capped_by.role}'s "
                        f"limit)")
            if choice.rule.reason:
                why += f": {choice.rule.reason}"
            parts.append(why)
        return "; ".join(parts) or "no rule matches: use your own default"


class _Buckets:
    """Rules bucketed by their most specific scope field and its value, so that a question looks at few."""

    def __init__(self, rules: Iterable[Rule]):
        self._global: List[Rule] = []
        self._buckets: Dict[Tuple[str, str], List[Rule]] = {}
        for rule in rules:
            first = next((k for k in SCOPE_FIELDS if k in rule.scope), None)
            if first is None:
                self._global.append(rule)
            else:
                self._buckets.setdefault((first, rule.scope[first]), []).append(rule)

    def matching(self, query: Mapping[str, Any]) -> List[Rule]:
        out = list(self._global)
        for key in SCOPE_FIELDS:
            value = query.get(key)
            if value:
                out.extend(r for r in self._buckets.get((key, value), ()) if r.matches(query))
        return out


class RuleIndex:
    """The rules: those about glideins and jobs and the operation rules kept apart (a node's question never
    looks at the operation rules), each bucketed by their most specific scope field and its value."""

    def __init__(self, rules: Iterable[Rule]):
        self.rules = list(rules)
        self._plain = _Buckets(r for r in self.rules if r.operation is None)
        self._operations = _Buckets(r for r in self.rules if r.operation is not None)

    def candidates(self, query: Mapping[str, Any]) -> List[Rule]:
        """The rules without an operation whose scope matches the question (expired ones included)."""
        return self._plain.matching(query)

    def operation_candidates(self, query: Mapping[str, Any], operation: Optional[str] = None) -> List[Rule]:
        """The operation rules whose scope matches the question (for ``operation`` only, when given)."""
        return [r for r in self._operations.matching(query) if operation is None or r.operation == operation]


def _newest_most_specific(rules: List[Rule]) -> Optional[Rule]:
    return max(rules, key=lambda r: (r.specificity, r.created, r.id), default=None)


def _value(rule: Rule, name: str) -> Any:
    return rule.level if name == "level" else rule.sample_ratio


def _more(name: str, a: Any, b: Any) -> bool:
    """Whether value ``a`` asks for more tracing than ``b``."""
    return level_rank(a) > level_rank(b) if name == "level" else a > b


def _choose(name: str, live: List[Rule], ceilings: Iterable[Rule] = ()) -> FieldChoice:
    """The field's winner among ``live``; a user's winner is capped by the limits among ``live`` and
    ``ceilings`` (more rules that bind users without taking part otherwise)."""
    setting = [r for r in live if _value(r, name) is not None]
    winner = _newest_most_specific(setting)
    if winner is None:
        return FieldChoice()
    asked = _value(winner, name)
    if winner.role == "user":
        limits = [r for r in setting + [c for c in ceilings if _value(c, name) is not None]
                  if r.role in _LIMIT_ROLES and r.is_site_rule()]
        rank = (lambda r: level_rank(r.level)) if name == "level" else (lambda r: r.sample_ratio)
        lowest = min(limits, key=lambda r: (rank(r), -r.created), default=None)
        if lowest is not None and _more(name, asked, _value(lowest, name)):
            return FieldChoice(_value(lowest, name), winner, lowest, asked)
    return FieldChoice(asked, winner, None, asked)


def decide(index: RuleIndex, query: Mapping[str, Any], now: float) -> Decision:
    """The decision for one question (``query``: scope field -> value, the node's identity)."""
    live = [r for r in index.candidates(query) if not r.expired(now)]
    ttl = min([DEFAULT_TTL_S] + [max(1, int(r.expires - now)) for r in live if r.expires is not None])
    return Decision(_choose("level", live), _choose("sample_ratio", live), ttl)


def decide_operations(index: RuleIndex, query: Mapping[str, Any], now: float, decision: Decision,
                      operation: Optional[str] = None) -> Dict[str, FieldChoice]:
    """Each operation some live operation rule names (only ``operation``, when given): its ratio and why.

    The operation's rules are more specific than the rules without one; a user's is capped by the admins'
    and site admins' ratio limits for the site, with no operation or with this one; level ``off`` makes it 0.
    """
    live = [r for r in index.operation_candidates(query, operation) if not r.expired(now)]
    plain = [r for r in index.candidates(query) if not r.expired(now)] if live else []
    by_name: Dict[str, List[Rule]] = {}
    for rule in live:
        by_name.setdefault(rule.operation or "", []).append(rule)
    out: Dict[str, FieldChoice] = {}
    for name in sorted(by_name):
        choice = _choose("sample_ratio", by_name[name], plain)
        if decision.level.value == "off":
            off = decision.level.capped_by or decision.level.rule
            choice = FieldChoice(0.0, choice.rule, off, choice.asked)
        out[name] = choice
    return out


def _status(rule: Rule, decision: Decision, now: float) -> str:
    if rule.expired(now):
        return "expired: ignored"
    said = []
    for name in ("level", "sample_ratio"):
        choice: FieldChoice = getattr(decision, name)
        value = _value(rule, name)
        if value is None:
            continue
        if choice.rule is rule:
            said.append(f"won {name}" + (f" but was capped by {choice.capped_by.id}" if choice.capped_by else ""))
        elif choice.capped_by is rule:
            said.append(f"capped {name} of {choice.rule.id} (a {rule.role}'s limit binds users' rules)")
        elif choice.rule is not None:
            winner = choice.rule
            why = ("less specific" if rule.specificity < winner.specificity else "older") + f" than {winner.id}"
            said.append(f"lost {name}: {why}")
    return "; ".join(said)


def _operation_notes(rule: Rule, decision: Decision, operations: Mapping[str, FieldChoice]) -> List[str]:
    said = []
    for name, choice in operations.items():
        if choice.rule is rule:
            said.append(f"won operation {name}" + (f" but was capped by {choice.capped_by.id}"
                                                   if choice.capped_by else ""))
        elif choice.capped_by is rule:
            said.append(f"made operation {name} 0 (level off)" if decision.level.value == "off" else
                        f"capped operation {name} of {choice.rule.id} (a {rule.role}'s limit binds users' rules)")
        elif rule.operation == name and choice.rule is not None:
            less = rule.specificity < choice.rule.specificity
            said.append(f"lost operation {name}: {'less specific' if less else 'older'} than {choice.rule.id}")
    return said


def operation_why(name: str, choice: Optional[FieldChoice], decision: Decision) -> str:
    """One line: which rule gave an operation its ratio, or that the service's ratio applies to it."""
    if choice is None or choice.rule is None:
        return f"no operation rule for {name}: the service's ratio applies"
    why = f"sample_ratio {choice.value} for operation {name} from {choice.rule.id}"
    if choice.capped_by is not None:
        why += (f" (asked {choice.asked}; level off from {choice.capped_by.id})" if decision.level.value == "off"
                else f" (asked {choice.asked}; capped by {choice.capped_by.id}, a {choice.capped_by.role}'s limit)")
    return why + (f": {choice.rule.reason}" if choice.rule.reason else "")


def explain(index: RuleIndex, query: Mapping[str, Any], now: float,
            operation: Optional[str] = None) -> Dict[str, Any]:
    """The decision, which rule gave each field and why, and every other matching rule and why it lost.

    With ``operation`` (a span name): also which operation rule gave that operation its ratio (``operation``),
    and only that operation's rules among the matched ones; without, every operation rule that matches.
    """
    decision = decide(index, query, now)
    operations = decide_operations(index, query, now, decision, operation)
    matched = sorted(index.candidates(query) + index.operation_candidates(query, operation),
                     key=lambda r: (r.operation is None, -r.specificity, -r.created, r.id))

    def status(rule: Rule) -> str:
        if rule.expired(now):
            return "expired: ignored"
        said = [_status(rule, decision, now)] if rule.operation is None else []
        return "; ".join(s for s in said + _operation_notes(rule, decision, operations) if s)

    out: Dict[str, Any] = {
        "question": {k: query[k] for k in SCOPE_FIELDS if query.get(k)},
        "level": decision.level.value,
        "sample_ratio": decision.sample_ratio.value,
        "rule": decision.rule.id if decision.rule else None,
        "why": decision.reason(),
        "ttl_s": decision.ttl_s,
        "matched": [{"rule": r.to_dict(), "status": status(r)} for r in matched],
        "levels": list(LEVELS),
    }
    if operation is not None:
        choice = operations.get(operation)
        out["operation"] = {"name": operation, "sample_ratio": choice.value if choice else None,
                            "rule": choice.rule.id if choice and choice.rule else None,
                            "why": operation_why(operation, choice, decision)}
    return out
