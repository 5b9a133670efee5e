"""Español: las etiquetas de los renderizadores (WORDS) y, un módulo por regla, el texto de cada hallazgo."""

from __future__ import annotations

WORDS = {
    "fix": "solución",
    "more hint -v": "-v: cada hallazgo completo", "more hint report": "la página HTML",
    "more hint table": "la tabla de ops",
    "GPU time per step": "Tiempo de GPU por paso", "GPU time by purpose": "Tiempo de GPU por propósito",
    "gemm": "GEMM", "conv": "convolución", "attention": "atención", "optimizer": "optimizador", "cast": "conversiones",
    "elementwise": "elemento a elemento", "reduction": "reducciones", "copy": "copias", "memset": "memsets",
    "communication": "comunicación", "compile": "compilación", "other": "otros",
    "Host time per step": "Tiempo del host por paso", "forward": "forward", "backward": "backward",
    "data": "datos", "waiting": "esperando", "python": "Python entre ops",
    "except": "excepto", "cycle": "ciclo", "Start here": "Empieza por aquí", "in": "en", "Top kernels": "Kernels principales", "of peak": "del pico",
    "Memory allocated over time": "Memoria asignada a lo largo del tiempo", "peak allocated": "pico asignado",
    "reserved": "reservada", "impact": "impacto", "per step": "por paso", "of the step": "del paso",
    "once": "una vez", "of the window": "de la ventana", "from": "de",
    "without the profiler": "sin el profiler", "as profiled": "perfilado",
    "No findings.": "Sin hallazgos.",
    "Findings": "Hallazgos",
    "Thresholds:": "Umbrales:",
    "severity": "gravedad",
    "severity from impact": ("gravedad según el impacto: crítico desde el 20% del paso, aviso desde el 5%, "
                             "info por debajo; un coste de una sola vez, como mucho aviso"),
    # severities, as the terminal (upper case) and the HTML page (lower case) show them
    "CRITICAL": "CRÍTICO", "WARNING": "AVISO", "INFO": "INFO",
    "critical": "crítico", "warning": "aviso", "info": "info",
    # evidence lines and the summary
    "step": "paso", "no step": "sin paso", "at": "en", "dur": "dur", "more": "más", "notice": "nota",
    "GPU busy": "GPU ocupada", "of": "de", "steps": "pasos", "thread": "hilo",
    "GPU idle": "GPU inactiva", "dead window": "ventana muerta",
    "rank": "rango", "ranks": "rangos", "shown:": "se muestra:",
    # the HTML page
    "Timeline": "Línea de tiempo",
    "timeline hint": ("Arrastra o usa la rueda para ampliar; pulsa una fila de evidencia de un hallazgo para ir "
                      "allí. Sombreado: pasos (alternos), huecos con la GPU inactiva (rojo), ventanas muertas "
                      "(gris). Chinchetas: la evidencia de los hallazgos."),
    "Kernel durations": "Duración de los kernels",
    "kernels hint": ("Por kernel, a lo largo de sus llamadas: mínimo, cuartiles, máximo (escala logarítmica). "
                     "Los kernels con más tiempo de GPU."),
    "Step widths": "Anchura de los pasos",
    "steps hint": ("El tiempo de pared de cada ProfilerStep; un primer paso mucho más ancho que el resto es un "
                   "arranque en frío."),
    "Rebuilt key_averages table": "Tabla key_averages reconstruida",
    "Fix:": "Solución:",
    "evidence": "evidencia", "event": "evento", "events": "eventos", "lane": "carril", "note": "nota",
    "Steps": "Pasos", "Events": "Eventos", "Device": "Dispositivo", "none recorded": "ninguno registrado",
    "No findings: none of the rules fired on this trace.": "Sin hallazgos: ninguna regla se activó en esta traza.",
    "and": "y", "more events": "eventos más",
    "made by pista": "hecho por pista", "charts by": "gráficos de",
    # the charts (report.js)
    "events merged, first:": "eventos fusionados, el primero:",
    "calls": "llamadas", "total": "total", "min": "mín.", "median": "mediana", "max": "máx.", "mean": "media",
    "flagged: kernel-variability": "señalado: kernel-variability",
    "step wall time": "tiempo de pared del paso",
    "pista findings": "hallazgos de pista", "depth": "profundidad",
    "events on these lanes:": "eventos en estos carriles:", "blocks zoomed out,": "bloques sin ampliar,",
    "rectangles zoomed in (runs of events under a pixel merged":
        "rectángulos al ampliar (las rachas de eventos de menos de un píxel, fusionadas",
    "; per row, the longest up to a budget of": "; por fila, los más largos hasta un presupuesto de",
    "× the median step": "× el paso mediano",
    "No ProfilerStep regions in this trace (no schedule, or not stepped).":
        "No hay regiones ProfilerStep en esta traza (sin schedule, o sin llamar a step()).",
    # a folder of one process's profiler cycles (pista.render.cycles)
    "host": "host", "profiler cycles of one process": "ciclos del profiler de un proceso",
    "in time order": "en orden de tiempo", "Cycle": "Ciclo", "median step": "paso mediano",
    "cycles hint": ("por ciclo: el veredicto, el paso mediano, la GPU ocupada, la solución principal y los hallazgos "
                    "(regla, gravedad, parte del paso); después, qué cambió de cada ciclo al siguiente"),
    "What changed": "Qué cambió", "verdict": "veredicto", "unchanged": "sin cambios",
    "appeared": "aparecen", "vanished": "desaparecen", "severity changed": "cambia la gravedad",
    "same findings": "los mismos hallazgos",
}
