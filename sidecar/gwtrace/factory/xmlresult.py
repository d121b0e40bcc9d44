"""The glidein's XML result (``OSGTestResult``), short (``.out``) or long (``.err``).

The long form holds one ``OSGTestResult`` per executed script with
``tStart``/``tEnd``: a per-script timeline at 1 s resolution.  Script command
lines (``<cmd>``) are deliberately not kept: they can carry credentials.
"""

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


def parse_xml_result(data: Optional[bytes]) -> XmlResult:
    """Parse an XML result; raises ``ValueError`` with one clear line if it is not one."""
    if not data or not data.strip():
        raise ValueError("empty XML result")
    try:
        root = ET.fromstring(data.strip())
    except ET.ParseError as err:
        raise ValueError(f"malformed XML result ({err})") from None
    if root.tag != "OSGTestResult":
        raise ValueError(f"not an OSGTestResult but <{root.tag}>")
    scripts = [_script(node) for sub in root if sub.tag == "subtestlist" for group in sub
               if group.tag == "OSGTestResults" for node in group if node.tag == "OSGTestResult"]
    return XmlResult(glidein=_script(root), scripts=scripts)
