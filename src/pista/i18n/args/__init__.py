"""The arguments of each catalogued rule's text (pista.i18n._fluent), one module per rule named like the
rule's own: `args(record, say) -> {name: str}` for its finding's parts, and `NOTES = {note class: function
(note, say) -> {name: str}}`. Language-independent: figures written with pista.i18n._fmt, selector keys
(`"step"`, `"window"`), list items rendered by `say("...-item", ...)` and joined; no word of any language."""
