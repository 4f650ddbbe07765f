"""The kit's version, in a module of its own: the CLI and the JSON stamp read it without
importing the package's public calls."""

__version__ = "0.2.0"
