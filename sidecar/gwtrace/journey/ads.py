"""Job ads in the long ``Attr = value`` form (``condor_q -long``, ``condor_history -long``, a history or
StartdHistoryLog file, ``$_CONDOR_JOB_AD``), for ``gwtrace ingest --job-ads``.

Ads are separated by blank lines or by the history files' ``*** Offset = ...`` banners.  Values are
taken as ClassAd literals where they are one (strings unquoted, integers, reals, booleans); an
expression is kept as its text.
"""

from typing import Any, Dict, Iterator, List


def literal(text: str) -> Any:
    """A ClassAd literal as Python, else the expression's text."""
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"' and '"' not in text[1:-1].replace('\\"', ""):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    lower = text.lower()
    if lower in ("true", "false"):
        return lower == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def iter_ads(text: str) -> Iterator[Dict[str, Any]]:
    """Each ad of a long-form file, as a dict (attribute names as written)."""
    ad: Dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("***"):
            if ad:
                yield ad
            ad = {}
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if sep and name and " " not in name:
            ad[name] = literal(value)
    if ad:
        yield ad


def read_ads(paths: List[str]) -> List[Dict[str, Any]]:
    """Every ad with a ClusterId and ProcId in the files."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for ad in iter_ads(handle.read()):
                lower = {k.lower(): v for k, v in ad.items()}
                if isinstance(lower.get("clusterid"), int) and isinstance(lower.get("procid"), int):
                    out.append(ad)
    return out
