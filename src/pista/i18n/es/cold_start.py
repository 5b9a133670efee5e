"""cold-start en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._one_time import FIRST_CALLS, HOST, LIBRARY, PROFILER
from pista.rules.cold_start import ColdStart, FirstNote, OpNote, ProfilerNote, SteadyNote

TITLE = "Arranque en frío: el primer paso es mucho más lento que el resto"


def _first(r: ColdStart) -> str:
    if r.kind == "iteration":
        return f"la primera iteración (de la primera llamada a '{r.name}' a la siguiente)"
    return f"el paso {r.step}" if r.kind == "step" else f"la primera llamada a '{r.name}'"


def _others(r: ColdStart) -> str:
    if r.kind == "iteration":
        return f"las {r.others} iteraciones posteriores"
    if r.kind != "step":
        return f"las {r.others} llamadas posteriores"
    if len(r.other_steps) == 1:
        return f"el paso {r.other_steps[0]}"
    return f"los pasos {r.other_steps[0]}-{r.other_steps[-1]}"


def _schedule(r: ColdStart) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _op(r: ColdStart) -> str:
    return r.ops[0].name if r.ops else r.name


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def message(r: ColdStart) -> str:
    text = f"{_cap(_first(r))} tardó {t(r.first_us)}"
    left_out = [f"la compilación, {t(r.compile_us)}" if r.compile_us else "",
                f"los eventos propios del profiler, {t(r.profiler_us)}" if r.profiler_us else ""]
    if any(left_out):
        text += f" ({t(r.own_us)} sin contar " + " ni ".join(p for p in left_out if p) + ")"
    text += (f", {r.ratio:.0f} veces la mediana de {t(r.median_others_us)} de {_others(r)}: se perfiló la "
             "preparación inicial.")
    if r.ops:
        text += " Casi todo es tiempo propio de " + ", ".join(
            f"{o.name} {t(o.first_us)} (normalmente {t(o.typical_us)})" for o in r.ops) + "."
    parts = []
    if r.loading_us:
        parts.append(f"carga de módulos CUDA, {t(r.loading_us)}")
    if r.queries:
        parts.append(f"{r.queries} consultas de ocupación, {t(r.query_us)}")
    if parts:
        text += " También contiene " + "; ".join(parts) + "."
    return text


def advice(r: ColdStart) -> str:
    if r.cause == PROFILER:
        return (f"Casi todo son las peticiones de búfer del propio profiler, no el programa: perfila con {_schedule(r)} "
                "para que caigan en los pasos de calentamiento, y lee solo los pasos estables.")
    if r.cause == LIBRARY and not r.gpu:
        return (f"La primera llamada a {_op(r)} prepara la biblioteca de GEMM de la CPU (oneDNN/MKL: su pool de "
                f"hilos, el empaquetado de pesos, la elección de kernel): ejecuta el paso una vez antes de perfilar, o "
                f"perfila con {_schedule(r)} y lee solo los pasos estables.")
    if r.cause == LIBRARY:
        return (f"La primera llamada a {_op(r)} prepara cuBLAS (handle, workspace, elección de kernel) y carga sus "
                f"kernels: ejecuta el paso una vez antes de perfilar, o perfila con {_schedule(r)} y lee solo los pasos "
                "estables.")
    if r.cause == HOST:
        return (f"El Python propio de {_first(r)} (fuera de cualquier op) es lento la primera vez (imports, cachés, "
                f"arranque del DataLoader): calienta antes de perfilar, o perfila con {_schedule(r)}.")
    if r.cause == FIRST_CALLS and not r.gpu:
        return (f"Las primeras llamadas a {', '.join(o.name for o in r.ops)} reservan memoria y preparan sus kernels "
                f"de CPU: ejecuta el paso una vez (cada rama y cada forma) antes de perfilar, o perfila con "
                f"{_schedule(r)}.")
    if r.cause == FIRST_CALLS:
        return (f"Las primeras llamadas a {', '.join(o.name for o in r.ops)} cargan sus kernels CUDA y reservan "
                f"memoria: ejecuta el paso una vez (cada rama y cada forma) antes de perfilar, o perfila con "
                f"{_schedule(r)}; CUDA_MODULE_LOADING=EAGER adelanta la carga al arranque.")
    raise KeyError(r.cause)


def fix(r: ColdStart) -> str:
    where = f", {t(r.ops[0].first_us)} en {r.ops[0].name}" if r.ops else ""
    return (f"{_cap(_first(r))} tarda {t(r.first_us)} frente a {t(r.median_others_us)} del resto{where} (preparación "
            f"única): calienta antes de perfilar con {_schedule(r)}.")


def basis(r: ColdStart) -> str:
    if r.kind == "step":
        return f"única vez: la GPU inactiva en el paso {r.step} por encima de la mediana de los demás pasos"
    if r.kind == "iteration":
        return "única vez: la GPU inactiva en la primera iteración por encima de la mediana de las posteriores"
    return (f"única vez: la GPU inactiva en la primera llamada a '{r.name}' por encima de la mediana de las "
            "posteriores")


NOTES = {
    FirstNote: lambda n: f"{n.ratio:.0f} veces la mediana de {t(n.median_us)} de los otros {n.others}",
    OpNote: lambda n: f"tiempo propio {t(n.self_us)}; normalmente {t(n.typical_us)}",
    ProfilerNote: lambda n: f"trabajo propio del profiler, {t(n.dur_us)}",
    SteadyNote: lambda n: f"uno estable, {t(n.dur_us)}, para comparar",
}

DOCS = """Qué:
El primer paso registrado tarda mucho más que los siguientes: trabajo único (creación del contexto CUDA
y del handle de cuBLAS, carga perezosa de módulos, crecimiento del asignador, la primera petición de
búfer del profiler) cayó dentro de la ventana perfilada. Sin eventos ProfilerStep se compara la primera
de varias llamadas a la misma región record_function de nivel superior con las siguientes.

Por qué:
Un paso en frío no es lo que el programa hace en régimen estable: sus operaciones parecen muchas veces
más lentas de lo que son, y cada total de la tabla (y cada otra regla) se inclina hacia el calentamiento.

Ejemplo:
`seed_mm64_cold` (matmul_add de 64x64, `schedule(wait=0, warmup=0, active=3)`, sin calentamiento): el
paso 0 tardó 137.932 ms frente a una mediana de 256.6 µs en los pasos 1-2, 537 veces más; el tiempo
propio (sin trazar) de aten::mm es 102.6 ms y el de aten::add 24.5 ms, las primeras llamadas a cuBLAS y
a los kernels elementwise; también contiene la petición de búfer del profiler (2.5 ms), 5 cargas de
módulos (0.6 ms) y 32 consultas de ocupación (42 µs).

Impacto:
Única vez: el tiempo de GPU inactiva del primer paso por encima de la mediana de los demás (sin la
compilación, que es de recompilation), repartido entre los pasos de la ventana. seed_mm64_cold: 137.7 ms
en 3 pasos, 45.9 ms por paso frente a un paso mediano de 368 µs (crítico). Este hallazgo es dueño de
todo el primer paso: dead-window, profiler-overhead, gemm-heuristics y lazy-loading no dicen nada de los
eventos de dentro (antes la semilla daba cinco hallazgos para este único paso). El paso debe estar frío
por sí mismo: la primera llamada de seed_mm4096_compile_cold es 7.4 veces la segunda, pero 2.9 ms de sus
3.7 ms de exceso son la petición de búfer del profiler, que informa profiler-overhead. La compilación es
de recompilation: el paso 0 de gpu/compile_warmup tarda 2.5 s, 2.41 s de ellos compilando; los 86 ms de
GPU inactiva que quedan (69 ms en el primer aten::mm del grafo compilado) son de este hallazgo, 28.8 ms
por paso.

Solución:
Ejecuta unas iteraciones antes de perfilar, o deja que el profiler se las salte:
`torch.profiler.schedule(wait=1, warmup=1, active=3)`; lee solo los pasos estables."""
