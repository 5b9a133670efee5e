"""Español: un módulo por regla aún fuera de los catálogos Fluent (FALLBACK, pista.i18n), con el texto de sus
hallazgos. Las etiquetas de los renderizadores están en ftl/es/_words.ftl."""
