"""recompilation en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.recompilation import NEAR_LIMIT, STEADY, WARMUP, CompileSpan, Recompilation, RegionCall

TITLE = "torch.compile compila dentro de la ventana perfilada o se acerca a su límite de recompilaciones"


def _steps(steps: tuple[int, ...]) -> str:
    if not steps:
        return "la ventana"
    return f"el paso {steps[0]}" if len(steps) == 1 else "los pasos " + ", ".join(map(str, steps))


def _what(r: Recompilation) -> str:
    return f"{r.compiles} compilación(es)" + (f" y {r.autotunes} autoajuste(s)" if r.autotunes else "")


def _ids(r: Recompilation) -> str:
    return "; ".join(f"frame {f.frame}: {', '.join(f.ids)}" for f in r.frames)


def _frames(r: Recompilation) -> str:
    return ", ".join(f"el frame {f.frame} ({', '.join(f.ids)})" for f in r.frames) or "torch.compile"


def _limit(r: Recompilation) -> str:
    near = [f for f in r.frames if f.frame in r.near_limit]
    held = ", ".join(f"el frame {f.frame} tiene {f.entries}" for f in near)
    text = (f" Cerca del límite de recompilaciones: {held} de las {r.recompile_limit} entradas compiladas que permite "
            "torch._dynamo.config.recompile_limit (cache_size_limit antes de torch 2.7); pasado el límite Dynamo deja "
            "de compilar el frame y lo ejecuta en eager.")
    if r.kind == STEADY:
        f = max(near, key=lambda f: f.entries)
        rate = f.compiles / max(r.steps, 1)
        if rate > 0:
            text += (f" A {rate:.1f} recompilación(es) por paso, el frame {f.frame} lo alcanza en unos "
                     f"{max(0.0, (r.recompile_limit - f.entries) / rate):.0f} paso(s) más.")
    return text


def message(r: Recompilation) -> str:
    cost = (f"{_what(r)} en {_steps(r.steps_compiling)}: {t(r.compile_us)} de host, {t(r.exposed_us)} de ellos con "
            f"la GPU inactiva, el {r.step_share_percent:.1f}% {'del tiempo del paso' if r.kind == STEADY else 'de la ventana'}")
    if r.kind == STEADY:
        text = (f"torch.compile recompila en régimen estable, {cost}: una guarda falla una y otra vez, así que el "
                "coste vuelve cada vez.")
    elif r.kind == WARMUP:
        text = (f"La primera compilación de torch.compile cae dentro de la ventana, {cost}: un "
                "calentamiento único, no un coste del régimen estable.")
    elif r.kind == NEAR_LIMIT:
        text = ("No se compila nada dentro de la ventana, pero las regiones compiladas muestran cuántas veces "
                "recompilaron sus frames.")
    else:
        text = (f"torch.compile recompiló una vez dentro de la ventana, {cost}: único aquí, pero vuelve cada vez que la misma guarda falle.")
    if r.frames:
        text += f" Ids de compilación vistos: {_ids(r)}."
    if r.graphs > 1:
        text += f" Se llaman {r.graphs} grafos compilados distintos (hashes de ## Call CompiledFxGraph)."
    if r.shapes:
        text += " Formas de entrada por llamada: " + " -> ".join(r.shapes) + "."
    if r.near_limit:
        text += _limit(r)
    return text


def _guard_fix(r: Recompilation) -> str:
    if r.shapes:
        return ("marca como dinámicas las dimensiones que varían (torch._dynamo.mark_dynamic(x, dim) o "
                "torch.compile(dynamic=True)) o rellena/agrupa las entradas en pocas formas")
    return ("mantén fijo lo que comprueba la guarda que falla (pasa los escalares de Python que cambian como "
            "tensores, reutiliza una misma instancia del módulo, conserva dtypes y dispositivos)")


def advice(r: Recompilation) -> str:
    if r.kind == WARMUP:
        return ("Calienta antes de perfilar o medir: ejecuta el paso compilado unas cuantas veces antes, o perfila "
                "con torch.profiler.schedule(wait=1, warmup=1, active=N); no hay nada que cambiar en el modelo.")
    if r.kind == STEADY:
        text = ("Las formas de entrada cambian entre llamadas: " if r.shapes else "Una guarda falla llamada tras "
                "llamada: ")
        text += f"{_guard_fix(r)}. TORCH_LOGS='recompiles' nombra la guarda que falló."
    elif r.kind == NEAR_LIMIT:
        text = f"Averigua qué recompila con TORCH_LOGS='recompiles' y {_guard_fix(r)}."
    else:
        text = (f"Calienta cada forma de entrada antes de perfilar; si esta se repite en el entrenamiento, "
                f"{_guard_fix(r)}. TORCH_LOGS='recompiles' nombra la guarda que falló.")
    if r.near_limit:
        text += " Subir recompile_limit solo aplaza la vuelta a eager: arregla la guarda."
    return text


def fix(r: Recompilation) -> str:
    if r.kind == STEADY:
        why = "formas de entrada nuevas" if r.shapes else "una guarda falla"
        return (f"{_frames(r)} recompila en {_steps(r.steps_compiling)} ({why}), {t(r.exposed_us / r.steps)} por "
                f"paso: {_guard_fix(r)}.")
    if r.kind == WARMUP:
        return (f"{_frames(r)} compila por primera vez dentro de la ventana ({t(r.exposed_us)}, una sola vez): "
                "calienta antes de perfilar.")
    if r.kind == NEAR_LIMIT:
        return f"{_frames(r)} se acerca al límite de recompilaciones ({r.recompile_limit}): {_guard_fix(r)}."
    return (f"{_frames(r)} recompila una vez dentro de la ventana ({t(r.exposed_us)}, una sola vez): calienta cada "
            "forma antes de perfilar.")


def basis(r: Recompilation) -> str:
    if r.kind == STEADY:
        return "tiempo de compilación con la GPU inactiva, por paso: se repite cada vez que falla una guarda"
    if r.kind == NEAR_LIMIT:
        return "ninguna compilación dentro de la ventana; el aviso es por el límite de recompilaciones"
    return ("una sola vez: el tiempo de compilación con la GPU inactiva, en toda la ventana "
            "(calienta antes de perfilar)")


NOTES = {
    CompileSpan: lambda n: (f"{'autoajuste' if n.autotune else 'compilación'}"
                            + (f" {n.compile_id}" if n.compile_id else "") + f": {t(n.dur_us)}"),
    RegionCall: lambda n: f"llamada a la región compilada: frame {n.frame}, compilación {n.frame}/{n.count}",
}

SEVERITY_EXCEPTION = "al menos aviso cerca del límite de recompilaciones: pasado este, el frame se ejecuta en modo eager"

DOCS = """Qué:
torch.compile compila dentro de la ventana perfilada: tramos de compilación de Dynamo/Inductor
(`dynamo`, `entire_frame_compile`, `_compile.compile_inner (dynamo_timed)`,
`OutputGraph.call_user_compiler`, `CompileTime`, autoajuste...) dentro de los pasos, o un mismo frame
con varios ids de compilación (`Torch-Compiled Region: 0/1`, `0/2`, ...: el número tras la barra cuenta
las recompilaciones), cada uno con su propio grafo (`## Call CompiledFxGraph <hash>` con un hash nuevo).
Distingue un calentamiento (la primera compilación de un frame, una vez) de las recompilaciones del
régimen estable, y avisa cuando un frame se acerca al límite de recompilaciones.

Por qué:
Una compilación cuesta de cientos de ms a segundos de host, mientras la GPU espera. Compilar una vez
al arrancar es el trato que ofrece torch.compile; volver a compilar en régimen estable significa que
falló una guarda: una forma de entrada nueva (sin formas dinámicas), un dtype o dispositivo nuevo, una
constante o global de Python que cambió, una instancia nueva del módulo. Cada recompilación añade
además una entrada que las guardas comprueban en cada llamada, y pasado
`torch._dynamo.config.recompile_limit` (8) Dynamo se rinde y ejecuta el frame en eager.

Ejemplo:
gpu/recompile en una H200: `torch.compile(fn, dynamic=False)` de `relu(x @ w) + 1` llamado con un
tamaño cuadrado nuevo en cada paso (96, 128, 160 en los pasos perfilados): ids 0/1, 0/2, 0/3, una
compilación por paso (`dynamo` 220-231 ms cada una) más el autoajuste de Inductor en la primera
llamada de cada grafo nuevo (60-68 ms): 865 ms de los 896 ms de pasos.

Impacto:
El tiempo de compilación (los tramos de compilación de nivel superior, autoajuste incluido) durante
el que la GPU no ejecutaba trabajo del usuario, por paso. Las recompilaciones del régimen estable
(compilaciones en dos o más pasos) cuestan eso cada vez: gpu/recompile 288 ms por paso, el 96%
(critical), y el frame 0 ya tiene 4 de sus 8 entradas, una más por paso. Un calentamiento (las
primeras compilaciones de sus frames, en un solo paso) o una recompilación suelta se reparten entre
los pasos de la ventana y su base dice "una sola vez": se arreglan calentando antes de perfilar. Un
frame con la mitad del límite o más (`Torch-Compiled Region: F/R` con R+1 >= 4) se avisa aunque no
compile nada en la ventana, como warning como mínimo: pasado el límite el frame corre en eager.
Antes era siempre warning a partir de 1 ms de compilación.

Solución:
Averigua qué cambia con `TORCH_LOGS="recompiles"` (o `torch._dynamo.explain`); marca como dinámicas
las dimensiones que varían (`torch._dynamo.mark_dynamic(x, 0)`, `dynamic=True`) o rellena/agrupa las
formas en pocos tamaños; saca del grafo compilado los escalares de Python que cambian (pásalos como
tensores); calienta cada forma antes de perfilar o medir."""
