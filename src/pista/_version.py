"""pista's version, in a module of its own: the modules that write it (the JSON schema, the capture's record,
the CLI) import it from here, not from the package, whose `__init__` imports the analysis on use."""

__version__ = "0.1.0"
