"""The W3C ``traceparent`` rule (docs/protocol.md, "TRACEPARENT"): one parser and one formatter.

Every Python reader of a traceparent uses this module (the ``TRACEPARENT`` a command runs in,
the glidein's in glidein_config, a job ad's ``TraceParent``, the unsampled parent the job
wrapper records, a user's typed job id), so they accept and refuse the same values as the
bash library (``_gwtrace_read_context``) and the job wrapper (``_gwtrace_jw_valid_tp``);
tests/test_conformance.py runs ``parse`` on the producers' table.

Standard library only: the node imports this (shim/context.py) from the .pyz.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from gwtrace.wire.events import is_hex_id

#: Flag bits W3C trace-context defines (level 2): the others are written as 0.
SAMPLED = 0x01
RANDOM = 0x02
_KNOWN_FLAGS = SAMPLED | RANDOM
_HEX = frozenset("0123456789abcdef")
#: What "spaces around the value" means: the bash library's ``[:space:]`` in the C locale.
_SPACES = " \t\n\r\v\f"
#: ``00-`` + 32 + ``-`` + 16 + ``-`` + 2: version 00 is exactly this long, a later version at least.
LENGTH_00 = 55


class TraceParent(NamedTuple):
    """A valid traceparent: lower-case ids (never all zero) and only the known flag bits."""

    trace_id: str
    span_id: str
    flags: int

    @property
    def sampled(self) -> bool:
        return bool(self.flags & SAMPLED)

    @property
    def random(self) -> bool:
        return bool(self.flags & RANDOM)

    @property
    def flags_hex(self) -> str:
        return f"{self.flags:02x}"

    def format(self) -> str:
        """The version-00 form every gwtrace producer writes."""
        return format_traceparent(self.trace_id, self.span_id, self.flags)


def format_traceparent(trace_id: str, span_id: str, flags: int) -> str:
    """``00-<trace>-<span>-<flags>``, with the unknown flag bits cleared."""
    return f"00-{trace_id}-{span_id}-{flags & _KNOWN_FLAGS:02x}"


def parse(value: object, *, any_case: bool = False) -> Optional[TraceParent]:
    """The context ``value`` names, or None when it is not a valid traceparent (ignored as a whole).

    ``any_case`` lower-cases the value first. The rule says lower-case hex, and a producer must not
    follow an upper-case one (bash and the job wrapper do not); a person typing or pasting an id
    into ``gwtrace job`` is not a producer, so journey/view.py asks for it.
    """
    if not isinstance(value, str):
        return None
    text = value.strip(_SPACES)
    if any_case:
        text = text.lower()
    if len(text) < LENGTH_00 or text[2] != "-" or text[35] != "-" or text[52] != "-":
        return None
    version, trace_id, span_id, flags = text[:2], text[3:35], text[36:52], text[53:55]
    if not (_HEX.issuperset(version) and _HEX.issuperset(flags)) or version == "ff":
        return None
    if len(text) > LENGTH_00 and (version == "00" or text[LENGTH_00] != "-"):
        return None        # version 00 has nothing after the flags; a later one, only more fields
    if not (is_hex_id(trace_id, 32) and is_hex_id(span_id, 16)):
        return None
    return TraceParent(trace_id, span_id, int(flags, 16) & _KNOWN_FLAGS)
