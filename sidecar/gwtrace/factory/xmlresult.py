"""The glidein's XML result (``OSGTestResult``), short (``.out``) or long (``.err``).

The long form holds one ``OSGTestResult`` per executed script with
``tStart``/``tEnd``: a per-script timeline at 1 s resolution.  Script command
lines (``<cmd>``) are deliberately not kept: they can carry credentials.

The XML is written on a worker node, so it is untrusted: it is parsed with
``defusedxml`` (the ``[factory]`` extra), which refuses DTDs and entity
declarations (billion laughs, external entities); without it, XML that holds
``<!DOCTYPE`` or ``<!ENTITY`` is refused here before the standard parser sees
it. GlideinWMS writes neither. A result over ``MAX_XML_BYTES`` is refused too.
"""

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Dict, List, Optional


@dataclass
class ScriptResult:
    """One ``OSGTestResult``: a script (or the whole glidein) and its outcome."""

    id: str
    status: Optional[str] = None
    start: Optional[int] = None
    end: Optional[int] = None
    metrics: Dict[str, str] = field(default_factory=dict)
    env: Dict[str, str] = field(default_factory=dict)
    detail: Optional[str] = None

    @property
    def failed_script(self) -> Optional[str]:
        """The failing script's id, as the glidein names it in the ``TestID`` metric."""
        return self.metrics.get("TestID") if self.status == "ERROR" else None


@dataclass
class XmlResult:
    """The top-level result plus the per-script results of the long form."""

    glidein: ScriptResult
    scripts: List[ScriptResult] = field(default_factory=list)


@lru_cache(maxsize=4096)
def iso_epoch(text: Optional[str]) -> Optional[int]:
    """Epoch seconds of an ISO-8601 time with offset (None when absent or bad).

    Cached: the scripts of one glidein share a handful of distinct seconds.
    """
    if not text:
        return None
    try:
        return int(datetime.fromisoformat(text.strip()).timestamp())
    except ValueError:
        return None


def _text(node: Optional[ET.Element]) -> Optional[str]:
    return node.text.strip() if node is not None and node.text is not None else None


def _fill(result: ScriptResult, part: ET.Element) -> None:
    """One child of an OSGTestResult (direct iteration: path lookups cost more than the parse)."""
    if part.tag == "test":
        for item in part:
            if item.tag == "tStart":
                result.start = iso_epoch(_text(item))
            elif item.tag == "tEnd":
                result.end = iso_epoch(_text(item))
    elif part.tag == "result":
        for item in part:
            if item.tag == "status":
                result.status = _text(item)
            elif item.tag == "metric":
                result.metrics[item.get("name", "")] = (item.text or "").strip()
    elif part.tag == "operatingenvironment":
        for item in part:
            result.env[item.get("name", "")] = (item.text or "").strip()
    elif part.tag == "detail":
        detail = _text(part)
        result.detail = " ".join(detail.split()) if detail else None


def _script(node: ET.Element) -> ScriptResult:
    result = ScriptResult(id=node.get("id", ""))
    for part in node:
        _fill(result, part)
    return result


#: The largest XML result parsed (the long one is tens of KB; errfile bounds its inflation the same).
MAX_XML_BYTES = 4 << 20
_DECLARATION = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.I)


def _fromstring(text: bytes) -> ET.Element:
    """Parse untrusted XML: defusedxml when installed, else the standard parser after refusing declarations."""
    try:
        from defusedxml import DefusedXmlException
        from defusedxml.ElementTree import fromstring
    except ImportError:
        if _DECLARATION.search(text):
            raise ValueError("XML result declares a DTD or entities: refused (GlideinWMS writes none)") from None
        return ET.fromstring(text)
    try:
        return fromstring(text, forbid_dtd=True)
    except DefusedXmlException as err:
        raise ValueError(f"XML result refused ({type(err).__name__}: GlideinWMS writes no DTD or entity)") from None


def parse_xml_result(data: Optional[bytes]) -> XmlResult:
    """Parse an XML result; raises ``ValueError`` with one clear line if it is not one."""
    if not data or not data.strip():
        raise ValueError("empty XML result")
    if len(data) > MAX_XML_BYTES:
        raise ValueError(f"XML result of {len(data)} bytes, over the {MAX_XML_BYTES >> 20} MiB limit: skipped")
    try:
        root = _fromstring(data.strip())
    except ET.ParseError as err:
        raise ValueError(f"malformed XML result ({err})") from None
    if root.tag != "OSGTestResult":
        raise ValueError(f"not an OSGTestResult but <{root.tag}>")
    scripts = [_script(node) for sub in root if sub.tag == "subtestlist" for group in sub
               if group.tag == "OSGTestResults" for node in group if node.tag == "OSGTestResult"]
    return XmlResult(glidein=_script(root), scripts=scripts)
