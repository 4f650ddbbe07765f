"""EAGLE-3 debug kit: see what an engine will do with a draft checkpoint before you launch it."""

__version__ = "0.2.0"
