"""dead-window en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._one_time import FIRST_CALLS, HOST, LIBRARY, PROFILER
from pista.rules.dead_window import DeadWindow, FillerNote, FirstCallNote, RegionNote, TargetNote, WindowNote

TITLE = "Ventana muerta: una región espera mucho antes de su primer lanzamiento"


def _target(kind: str) -> str:
    return "lanzamiento de kernel" if kind == "launch" else "op aten::"


def _where(r: DeadWindow) -> str:
    return f" (paso {r.step})" if r.step is not None else ""


def _schedule(r: DeadWindow) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _or_schedule(r: DeadWindow) -> str:
    """The schedule as the other way out, unless the trace's schedule already warmed up."""
    return " (los pasos de calentamiento del schedule no la ejecutaron)" if r.warmed_up else f", o perfila con {_schedule(r)}"


def message(r: DeadWindow) -> str:
    in_op = f" dentro de {r.in_op}" if r.in_op else ""
    compare = (f", {r.gap_us / max(r.typical_gap_us, 1e-3):.0f} veces los {t(r.typical_gap_us)} de sus otras llamadas"
               if r.typical_gap_us is not None else "")
    fillers = ", ".join(f"{f.name} {t(f.self_us)}" for f in r.fillers)
    text = (f"'{r.region}'{_where(r)} tardó {t(r.gap_us)} hasta su primer {_target(r.target)} "
            f"({r.first_target}{in_op}){compare}. {t(r.recorded_us)} están en llamadas registradas"
            + (f" ({fillers})" if fillers else "") + f"; {t(r.untraced_us)} son preparación sin trazar{in_op}.")
    if r.profiler_us:
        text += f" Las peticiones de búfer del propio profiler son {t(r.profiler_us)} de la espera."
    if r.first_calls:
        calls = ", ".join(f"{c.name} {t(c.dur_us)}" for c in r.first_calls)
        text += (f" Después, primeras llamadas en la misma región (ops que cargan sus kernels CUDA) añaden "
                 f"{t(r.first_calls_us)}: {calls}.")
    if r.loading_us:
        text += (f" CUPTI registra {t(r.loading_us)} de carga de kernels en ellas; el resto de esas llamadas es "
                 "preparación que no traza (carga de módulos, reservas de memoria).")
    return text


def advice(r: DeadWindow) -> str:
    if r.cause == PROFILER:
        return (f"Casi toda la espera son las peticiones de búfer del propio profiler, no el programa: perfila con "
                f"{_schedule(r)} para que caigan en los pasos de calentamiento.")
    if r.cause == LIBRARY:
        return (f"La primera llamada a {r.in_op} prepara cuBLAS (handle, workspace, elección de kernel) y carga sus "
                f"kernels: ejecuta '{r.region}' una vez antes de perfilar{_or_schedule(r)}.")
    if r.cause == HOST:
        return (f"'{r.region}' ejecuta mucho código propio antes de su primer op la primera vez (imports, cachés, "
                f"arranque del DataLoader): caliéntala antes de perfilar{_or_schedule(r)}.")
    if r.cause == FIRST_CALLS:
        return (f"'{r.region}' ejecuta sus ops por primera vez en el proceso (CUDA carga sus kernels de forma "
                f"perezosa): ejecútala una vez (cada rama y cada forma) antes de perfilar{_or_schedule(r)}; "
                "CUDA_MODULE_LOADING=EAGER adelanta la carga al arranque.")
    raise KeyError(r.cause)


def fix(r: DeadWindow) -> str:
    more = f", y sus primeras llamadas añaden {t(r.first_calls_us)}" if r.first_calls else ""
    in_op = f" en {r.in_op}" if r.in_op else ""
    return (f"'{r.region}'{_where(r)} espera {t(r.gap_us)} hasta su primer {_target(r.target)}{more} (preparación "
            f"única{in_op}): ejecútala una vez antes de perfilar{_or_schedule(r)}.")


def basis(r: DeadWindow) -> str:
    usual = ", menos la espera habitual de sus otras llamadas" if r.typical_gap_us is not None else ""
    return (f"única vez: la GPU inactiva desde el inicio de la región hasta su primer {_target(r.target)} y en sus "
            f"primeras llamadas posteriores{usual}")


NOTES = {
    WindowNote: lambda n: f"desde {n.region} hasta su primer {_target(n.target)}",
    RegionNote: lambda n: "la región",
    TargetNote: lambda n: f"su primer {_target(n.target)}" + (f" dentro de {n.in_op}" if n.in_op else ""),
    FillerNote: lambda n: f"en la ventana, tiempo propio {t(n.self_us)}",
    FirstCallNote: lambda n: f"una primera llamada (su kernel se carga de forma perezosa), {t(n.dur_us)} tras la espera",
}

DOCS = """Qué:
Una región de record_function (un ProfilerStep o una región del usuario como `matmul_add`) pasa mucho
tiempo (más de 1 ms) antes de lanzar su primer kernel (en una traza solo de CPU: antes de su primer op
aten::), mucho más que en sus otras llamadas (regiones vistas una vez: basta el 1 ms): hay preparación
única dentro de la ventana. Las primeras llamadas posteriores en la misma llamada a la región (ops que
cargan sus kernels CUDA) son parte de la misma preparación y cuentan con ella.

Por qué:
La preparación (handle y workspace de cuBLAS, heurísticas de la biblioteca, carga perezosa de módulos
CUDA, carga del grafo compilado) se paga una vez, pero cae dentro de la primera llamada: esas
operaciones parecen lentas y la GPU espera. No es lo que cuesta el programa por paso.

Ejemplo:
`gpu/window_sync_cold` (el primer `matmul_add` del proceso, sin schedule): la región tardó 95.921 ms
hasta su primer lanzamiento (cuLaunchKernelEx en aten::mm), 91.7 ms de ello preparación sin trazar
dentro de aten::mm (cuBLAS), y luego la primera llamada a aten::add tardó 15.1 ms más (su kernel se
cargó de forma perezosa). `gpu/eval_first_call`: una rama de evaluación (`eval_metrics`) ejecutada por
primera vez en el paso 3 espera 19.6 ms en su copia bf16 -> fp32 antes del primer lanzamiento, y sus
primeras llamadas (la carga del kernel de la propia copia, cross-entropy, argmax, eq, mean) tardan
126.0 ms más.

Impacto:
Única vez: el tiempo de GPU inactiva desde el inicio de la región hasta su primer lanzamiento, más el de
las primeras llamadas posteriores en la misma llamada, menos la espera de sus otras llamadas, repartido
entre los pasos de la ventana. gpu/window_sync_cold: 111.1 ms, el 99% de su ventana (crítico);
gpu/eval_first_call: 145.6 ms en 3 pasos, 48.5 ms por paso frente a un paso mediano de 3.8 ms (crítico).
La región debe esperar por sí misma: la petición de búfer del profiler dentro de la espera no cuenta para
el 1 ms ni para las 5 veces (gpu/window_sync_warm espera 2.0 ms, 1.8 ms de ellos del profiler: hallazgo
de profiler-overhead), pero pertenece a este hallazgo cuando salta. Una ventana dentro de un primer paso
frío es de cold-start (los 107 ms de seed_mm64_cold, antes informados aquí); una dentro de la
compilación, de recompilation.

Una primera llamada sin evento de carga (CUPTI antiguo, ROCm) cuenta si arranca CUDA
(_one_time.startup_ops) durante 1 ms o más pasada la espera (foreign/hta_alexnet: los 10.0 s de la
primera convolución tras el primer lanzamiento de la región, de nadie antes). Una espera que es en más
de la mitad las peticiones de búfer del propio profiler es de profiler-overhead, y las primeras llamadas
que siguen, de lazy-loading (tl_b200_eager de TraceLens: 2.6 ms, 1.5 ms de ellos un Activity Buffer
Request; issue 35). Una espera que es en más de la mitad trabajo propio del host tampoco es preparación:
los frames de Python, las sincronizaciones que vacían trabajo encolado antes de la región y los ops cuyas
otras llamadas tardan lo mismo son lo que la región hace cada vez (trazas de TraceLens reservadas:
los 218 ms de preprocesado de VideoMAE por vídeo de tl_h100_timesformer, antes el 57% de su ventana
'una sola vez'; el cudaDeviceSynchronize de 14.1 ms del arnés de tl_h100_qwen05, esperando a 500
kernels anteriores); por debajo de esa parte su tiempo queda fuera del impacto.

Solución:
Calienta fuera del profiler: ejecuta el paso (cada forma, cada rama) unas veces antes de perfilar, o usa
`torch.profiler.schedule(wait=1, warmup=1, active=N)` para que la preparación quede fuera de la ventana."""
