"""The glidein's XML result (``OSGTestResult``), short (``.out``) or long (``.err``).

The long form holds one ``OSGTestResult`` per executed script with
``tStart``/``tEnd``: a per-script timeline at 1 s resolution.  Script command
lines (``<cmd>``) are deliberately not kept: they can carry credentials.
"""

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
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


def iso_epoch(text: Optional[str]) -> Optional[int]:
    """Epoch seconds of an ISO-8601 time with offset (None when absent or bad)."""
    if not text:
        return None
    try:
        return int(datetime.fromisoformat(text.strip()).timestamp())
    except ValueError:
        return None


def _text(node: Optional[ET.Element]) -> Optional[str]:
    return node.text.strip() if node is not None and node.text is not None else None


def _script(node: ET.Element) -> ScriptResult:
    result = ScriptResult(id=node.get("id", ""))
    result.start = iso_epoch(_text(node.find("test/tStart")))
    result.end = iso_epoch(_text(node.find("test/tEnd")))
    result.status = _text(node.find("result/status"))
    for metric in node.findall("result/metric"):
        result.metrics[metric.get("name", "")] = (metric.text or "").strip()
    for env in node.findall("operatingenvironment/env"):
        result.env[env.get("name", "")] = (env.text or "").strip()
    detail = _text(node.find("detail"))
    result.detail = " ".join(detail.split()) if detail else None
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
    scripts = [_script(node) for node in root.findall("subtestlist/OSGTestResults/OSGTestResult")]
    return XmlResult(glidein=_script(root), scripts=scripts)
