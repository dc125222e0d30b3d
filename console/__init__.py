"""agent-console: an approval console and session manager for supervising AI coding agents."""

__version__ = "0.1.0"
