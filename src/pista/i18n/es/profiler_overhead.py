"""profiler-overhead en español."""

from __future__ import annotations

from pista.i18n._fmt import num, t
from pista.rules.profiler_overhead import InsideOp, OutsideOps, ProfilerOverhead

TITLE = "La sobrecarga del profiler infla las operaciones donde cae"


def _schedule(r: ProfilerOverhead) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _where(r: ProfilerOverhead) -> str:
    if not r.in_steps:
        return ""
    return f" en el paso {r.in_steps[0]}" if len(r.in_steps) == 1 else " en los pasos " + ", ".join(map(str, r.in_steps))


def message(r: ProfilerOverhead) -> str:
    parts = [f"{t(o.overhead_us)} dentro de {o.name} (el {100.0 * o.overhead_us / max(o.op_us, 1e-3):.1f}% de sus "
             f"{t(o.op_us)})" for o in r.ops]
    if r.outside_us:
        parts.append(f"{t(r.outside_us)} fuera de cualquier op")
    return (f"{r.events} evento(s) de sobrecarga del profiler ({', '.join(r.names)}){_where(r)}, {t(r.total_us)} en "
            f"total, el {num(r.window_percent, 2)}% de la ventana, {t(r.idle_us)} de ello con la GPU inactiva: "
            + "; ".join(parts) + ". Sin el profiler, el programa no lo paga.")


def advice(r: ProfilerOverhead) -> str:
    op = f" del total de CPU de {r.ops[0].name} y" if r.ops else ""
    return (f"Nada que cambiar en el programa: perfila con {_schedule(r)} para que el profiler prepare sus búferes en "
            f"los pasos de calentamiento, perfila más pasos para que una petición pese menos, y descuéntalo{op} del "
            "ancho de su paso.")


def fix(r: ProfilerOverhead) -> str:
    where = f" dentro de {r.ops[0].name}" if r.ops else ""
    return (f"La {r.names[0]} del propio profiler tarda {t(r.total_us)}{where}{_where(r)}: perfila con {_schedule(r)} "
            "para que caiga en los pasos de calentamiento.")


def basis(r: ProfilerOverhead) -> str:
    return "única vez: la GPU inactiva durante los eventos propios del profiler; sin el profiler, el programa no lo paga"


NOTES = {
    InsideOp: lambda n: (f"dentro de {n.op}, el {n.percent:.1f}% de su tiempo de pared"
                         + (f"; todos ellos ahí: {n.together_percent:.1f}%" if n.together_percent is not None
                            else "")),
    OutsideOps: lambda n: f"fuera de cualquier op, {t(n.dur_us)}",
}

DOCS = """Qué:
El trabajo propio del profiler ("Activity Buffer Request", "Buffer Flush": CUPTI reservando y vaciando
sus búferes de actividad) dibujado en la línea de sobrecarga de pid -1, y las operaciones donde cae.

Por qué:
Ese tiempo se gasta en el hilo perfilado mientras corre una operación: el tiempo de pared de la operación
(CPU total) y de cada región por encima crece en esa cantidad, y la GPU espera, aunque el programa sin el
profiler no lo pagaría. torch anida el evento bajo la operación, así que el Self CPU queda bien, pero no
el ancho de los pasos, los totales de CPU ni los huecos de la GPU. Sin pasos de calentamiento en el
schedule, la primera petición de búfer cae en la primera operación perfilada.

Ejemplo:
`gpu/profiler_first_step` (el forward de un MLP de 32 capas, ya calentado, perfilado con
`schedule(wait=0, warmup=0, active=3)`): una Activity Buffer Request de 2.600 ms dentro del primer
aten::addmm del paso 0, el 90% de los 2.890 ms de esa operación; el paso 0 dura 6.9 ms frente a 3.8 ms
los demás. `gpu/window_sync_warm` (una llamada, sin schedule): 1.811 ms dentro de aten::mm, el 77% de la
ventana.

Impacto:
Única vez: el tiempo de GPU inactiva durante los eventos del profiler, repartido entre los pasos de la
ventana; el programa sin el profiler no lo paga, y los pasos de calentamiento de un schedule lo sacan de
la ventana. gpu/profiler_first_step: 2.6 ms en 3 pasos, 867 µs por paso frente a un paso mediano de
3.8 ms (crítico); gpu/window_sync_warm 1.8 ms, el 77% de su ventana; seed_mm4096_compile_cold 2.9 ms, el
58%. Los eventos dentro de un primer paso frío o de una ventana muerta son de esos hallazgos
(seed_mm64_cold, gpu/window_sync_cold), y una petición que cuesta menos del 1% del paso es ruido: los
3.1 ms de big_gpt_eager_20steps en 20 pasos son el 0.3% de su paso de 52.7 ms (antes, un hallazgo info).

Una ventana que no registró ninguna operación, región ni trabajo del dispositivo (a lo sumo unas
llamadas al runtime) no contiene nada que el profiler infle: flowmatch_pytorch_trace (ajena: 0
operaciones, ningún kernel) se leía antes como un 8.4% de sobrecarga del profiler dentro de un
cudaDeviceSynchronize ocioso (issue 35).

Solución:
Nada que cambiar en el programa: perfila con `schedule(wait=1, warmup=1, active=N)` (los búferes se
piden en los pasos de calentamiento), perfila más pasos para que una petición pese menos, y descuenta ese
tiempo del total de CPU de las operaciones nombradas."""
