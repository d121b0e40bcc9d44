"""Parse a glidein's ``job.C.P.err`` (stderr): encoded logs, long XML, config.

The glidein ships its HTCondor logs and the long XML result home inside stderr
as ``gzip | base64`` blocks.  Blocks are located once and decoded only when
asked for (``ErrFile.log``), so a caller that wants only the XML pays only for
the XML.  A truncated or corrupt block is reported in ``problems``, never
raised.

The file comes from a worker node: a block is inflated only up to a bound
(``MAX_XML_BYTES`` for the XML result, ``MAX_LOG_BYTES`` for a log; a 1.4 MB
``.err`` once inflated to 1 GiB), and one over it is skipped: ``skipped``
holds one line per such block, naming its byte offset, for the caller to
print with the file's name.
"""

import base64
import binascii
import re
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from gwtrace.wire.inflate import InflateLimit, describe, gunzip

from .outfile import read_config

#: The long XML result holds one OSGTestResult per script run (tens of KB in practice).
MAX_XML_BYTES = 4 << 20
#: A shipped HTCondor log (StartdHistoryLog is the one read): GlideinWMS ships at most a few MB of each.
MAX_LOG_BYTES = 64 << 20

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
    blocks: Dict[str, Tuple[int, bytes]] = field(default_factory=dict)  # name -> (offset, base64 text)
    xml_b64: Optional[Tuple[int, bytes]] = None
    config: Dict[str, str] = field(default_factory=dict)
    validation_errors: List[str] = field(default_factory=list)
    gpus: Optional[int] = None
    problems: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)   # "byte N: ..." per block over its bound

    def log(self, name: str) -> Optional[bytes]:
        """The decoded content of the shipped log ``name`` (None if absent, broken or over MAX_LOG_BYTES)."""
        found = self.blocks.get(name)
        return None if found is None else self._decode(found, name, MAX_LOG_BYTES)

    def long_xml(self) -> Optional[bytes]:
        """The decoded long XML result (one OSGTestResult per executed script); None over MAX_XML_BYTES."""
        return None if self.xml_b64 is None else self._decode(self.xml_b64, "encoded XML", MAX_XML_BYTES)

    def _decode(self, found: Tuple[int, bytes], name: str, limit: int) -> Optional[bytes]:
        offset, raw = found
        try:
            return gunzip(base64.b64decode(raw), limit)
        except InflateLimit as err:
            self._skip(offset, name, str(err))
        except (binascii.Error, OSError, EOFError, zlib.error) as err:
            self.problems.append(f"{name}: cannot decode ({err})")
        return None

    def _skip(self, offset: int, name: str, why: str) -> None:
        self.problems.append(f"{name}: skipped, {why}")
        self.skipped.append(f"byte {offset}: skipped the {name} block: {why}")


def _block_body(data: bytes, start: int, name: str, err: ErrFile, limit: int) -> Optional[Tuple[int, bytes]]:
    """The base64 text of the block whose body starts at ``start`` (and that offset), not copied when it is too
    long to hold ``limit`` bytes of gzip (base64 takes 4 bytes for 3, a line break every 76)."""
    end = data.find(BLOCK_END, start)
    if end < 0:
        err.problems.append(f"{name}: truncated (no closing ====)")
        return None
    if end - start > (limit // 3 + 1) * 4 * 77 // 76 + 4096:
        err._skip(start, name, f"its {end - start} bytes of base64 hold more than {describe(limit)} of gzip")
        return None
    return start, data[start:end]


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
            body = _block_body(data, start, name.group(0).decode(), err, MAX_LOG_BYTES)
            if body is not None:
                err.blocks[name.group(0).decode()] = body
        at = data.find(BLOCK_HEAD, start)
    at = data.find(XML_BLOCK)
    if at >= 0:
        first_block = min(first_block, at)
        err.xml_b64 = _block_body(data, at + len(XML_BLOCK), "encoded XML", err, MAX_XML_BYTES)
    head = data[:first_block]
    read_config(head, err.config)
    err.validation_errors = [m.group(1).decode("utf-8", "replace") for m in VALIDATION_ERROR.finditer(head)]
    gpus = GPU_RESOURCE.search(head) or GPU_FOUND.search(head)
    err.gpus = int(gpus.group(1)) if gpus else None
    return err
