"""Spanish."""
from pista.i18n import Entry

RULES: dict[str, Entry] = {}
