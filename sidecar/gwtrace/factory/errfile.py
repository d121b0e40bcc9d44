"""Parse a glidein's ``job.C.P.err`` (stderr): encoded logs, long XML, config.

The glidein ships its HTCondor logs and the long XML result home inside stderr
as ``gzip | base64`` blocks.  Blocks are located once and decoded only when
asked for (``ErrFile.log``), so a caller that wants only the XML pays only for
the XML.  A truncated or corrupt block is reported in ``problems``, never
raised.
"""

import base64
import binascii
import gzip
import re
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .outfile import read_config

# Patterns start with a literal (no ^ + MULTILINE) so the regex engine scans in C.
BLOCK_HEAD = b"\n======== gzip | uuencode =============\nbegin-base64 644 -\n"
BLOCK_NAME = re.compile(rb"\w[\w.]*\Z")
XML_BLOCK = b"=== Encoded XML description of glidein activity ===\nbegin-base64 644 -\n"
VALIDATION_ERROR = re.compile(rb"=== Validation error in (\S+) ===")
GPU_RESOURCE = re.compile(rb"\nMACHINE_RESOURCE_GPUs = (\d+)")
GPU_FOUND = re.compile(rb"condor_gpu_discovery found (\d+) GPUs")
BLOCK_END = b"\n===="


@dataclass
class ErrFile:
    """What gwtrace reads from one ``.err``; ``log(name)`` decodes lazily."""

    size: int = 0
    blocks: Dict[str, bytes] = field(default_factory=dict)  # name -> base64 text
    xml_b64: Optional[bytes] = None
    config: Dict[str, str] = field(default_factory=dict)
    validation_errors: List[str] = field(default_factory=list)
    gpus: Optional[int] = None
    problems: List[str] = field(default_factory=list)

    def log(self, name: str) -> Optional[bytes]:
        """The decoded content of the shipped log ``name`` (None if absent or broken)."""
        raw = self.blocks.get(name)
        return None if raw is None else self._decode(raw, name)

    def long_xml(self) -> Optional[bytes]:
        """The decoded long XML result (one OSGTestResult per executed script)."""
        return None if self.xml_b64 is None else self._decode(self.xml_b64, "encoded XML")

    def _decode(self, raw: bytes, name: str) -> Optional[bytes]:
        try:
            return gzip.decompress(base64.b64decode(raw))
        except (binascii.Error, OSError, EOFError, zlib.error) as err:
            self.problems.append(f"{name}: cannot decode ({err})")
            return None


def _block_body(data: bytes, start: int, name: str, err: ErrFile) -> Optional[bytes]:
    end = data.find(BLOCK_END, start)
    if end < 0:
        err.problems.append(f"{name}: truncated (no closing ====)")
        return None
    return data[start:end]


def parse_err(data: bytes) -> ErrFile:
    """Parse the bytes of a ``.err``; never raises on odd content."""
    err = ErrFile(size=len(data))
    first_block = len(data)
    at = data.find(BLOCK_HEAD)
    while at >= 0:
        line_start = data.rfind(b"\n", 0, at) + 1
        name = BLOCK_NAME.match(data, line_start, at)
        start = at + len(BLOCK_HEAD)
        if name is not None:
            first_block = min(first_block, line_start)
            body = _block_body(data, start, name.group(0).decode(), err)
            if body is not None:
                err.blocks[name.group(0).decode()] = body
        at = data.find(BLOCK_HEAD, start)
    at = data.find(XML_BLOCK)
    if at >= 0:
        first_block = min(first_block, at)
        err.xml_b64 = _block_body(data, at + len(XML_BLOCK), "encoded XML", err)
    head = data[:first_block]
    read_config(head, err.config)
    err.validation_errors = [m.group(1).decode("utf-8", "replace") for m in VALIDATION_ERROR.finditer(head)]
    gpus = GPU_RESOURCE.search(head) or GPU_FOUND.search(head)
    err.gpus = int(gpus.group(1)) if gpus else None
    return err
