"""Analysis of glidein records: where pilot time goes and what to change (docs/analysis.md)."""
