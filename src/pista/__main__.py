from pista.cli import entry

entry()
