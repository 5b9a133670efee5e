"""English: one module per rule not yet in the Fluent catalogues (FALLBACK, pista.i18n), with the text of its
findings. The renderers' labels are in ftl/en/_words.ftl."""
