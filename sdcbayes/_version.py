"""Package version (single source, read by provenance stamps)."""

__version__ = "0.1.0"
