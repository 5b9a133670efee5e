"""many-calls en español."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.many_calls import ManyCalls, OneOfMany, RepeatedCall

TITLE = "Operaciones llamadas muchísimas veces por paso: su coste por llamada se acumula"

SOURCE = {
    "loop": "un bucle de llamadas",
    "optimizer": "en el paso del optimizador",
    "cast": "conversiones de tipo",
    "compiled": "en código compilado",
}

ADVICE = {
    "loop": ("Agrupa el bucle: una operación sobre un tensor apilado (torch.stack, torch._foreach_*) en vez de una "
             "llamada por trozo, o aplica torch.compile al bucle para que las llamadas se fusionen."),
    "optimizer": ("Pasa fused=True al optimizador (Adam, AdamW, SGD): su actualización pasa a ser un kernel por "
                  "grupo."),
    "cast": ("Son conversiones de tipo en cada paso (autocast convirtiendo pesos fp32): mantén los pesos en el tipo "
             "de cómputo (model.to(torch.bfloat16)) o aplica torch.compile al paso para que se fusionen."),
    "compiled": ("Se ejecutan dentro de código compilado: captúralo como CUDA graph "
                 "(torch.compile(mode='reduce-overhead'))."),
}

ACTION = {
    "loop": "agrupa las llamadas en una operación sobre tensores apilados o aplica torch.compile al bucle",
    "optimizer": "pasa fused=True al optimizador",
    "cast": "mantén los pesos en bf16 o aplica torch.compile al paso",
    "compiled": "captura el paso como CUDA graph (mode='reduce-overhead')",
}


def _step(r: ManyCalls) -> str:
    return "paso" if r.has_steps else "ventana"


def _call(c: RepeatedCall, r: ManyCalls) -> str:
    hidden = (f"{t(c.idle_us_per_step)} de ellos con la GPU inactiva" if r.has_gpu
              else f"{t(c.idle_us_per_step)} de tiempo de host")
    if c.kind == "kernel":  # sus llamadas de lanzamiento y el tiempo del dispositivo por separado
        return (f"kernel {c.name} {c.calls_per_step:.0f} veces por {_step(r)} ({SOURCE[c.source]}): "
                f"{t(c.launch_us_per_step)} de llamadas de lanzamiento y {t(c.gpu_us_per_step)} en la GPU por "
                f"{_step(r)}, {hidden}")
    kind = "operación"
    return (f"{kind} {c.name} {c.calls_per_step:.0f} veces por {_step(r)} ({SOURCE[c.source]}), {t(c.avg_us)} cada "
            f"una, {t(c.cost_us_per_step)} por {_step(r)}, {hidden}")


def message(r: ManyCalls) -> str:
    whole = r.mean_step_us or r.step_us  # las cifras por paso son medias sobre los pasos: su total también
    share = pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%"
    what = ("la GPU espera mientras el host está dentro de ellas" if r.has_gpu else "el host pasa en ellas")
    return (f"{len(r.calls)} operación(es) llamadas muchísimas veces por {_step(r)}: "
            + "; ".join(_call(c, r) for c in r.calls)
            + f". En total {what}: {t(r.idle_us_per_step)} por {_step(r)}, el {share} de "
            + (f"el paso medio de {t(whole)}." if r.has_steps else f"la ventana de {t(whole)}."))


def advice(r: ManyCalls) -> str:
    sources = list(dict.fromkeys(c.source for c in r.calls))
    return (" ".join(ADVICE[s] for s in sources)
            + (" Un CUDA graph del paso entero también paga una sola vez el coste por llamada."
               if r.has_gpu and not r.graphed else ""))


def fix(r: ManyCalls) -> str:
    c = r.calls[0]
    cost = f"{t(c.idle_us_per_step)} de GPU inactiva" if r.has_gpu else f"{t(c.idle_us_per_step)} de tiempo de host"
    return (f"{c.name} se llama {c.calls_per_step:.0f} veces por {_step(r)} ({SOURCE[c.source]}), {cost} por "
            f"{_step(r)}: {ACTION[c.source]}")


def basis(r: ManyCalls) -> str:
    if not r.has_gpu:
        return "tiempo de host de las llamadas listadas, por paso (no hay GPU tras la que ocultarlo); cota superior"
    return ("GPU inactiva mientras el host está dentro de las llamadas listadas, por paso, sin la inactividad que "
            "reclaman otros hallazgos (sincronizaciones, carga de datos, compilación, lanzamientos de kernels "
            "diminutos); cota superior: una llamada agrupada sigue costando una llamada")


NOTES = {
    OneOfMany: lambda n: f"una de {n.calls_per_step:.0f} llamadas " + ("por paso" if n.steps else "en la ventana"),
}

DOCS = """Qué:
Operaciones (o kernels) llamadas muchísimas veces por paso, cada llamada barata y sobre todo trabajo
de host, que juntas hacen esperar a la GPU: el problema es la cantidad. Todas las de una traza son un
solo hallazgo, cada una con sus llamadas por paso, de dónde vienen (un bucle de Python, el
optimizador, conversiones de tipo, código compilado) y la GPU inactiva mientras el host está dentro.

Por qué:
Cada llamada paga el mismo peaje fijo: Python y el dispatcher en una operación (10-20 µs), un
lanzamiento en un kernel (5-10 µs de host, unos µs de arranque en la GPU). Cien llamadas pequeñas
pagan cien peajes; una llamada agrupada o fusionada paga uno. El peaje solo cuesta tiempo donde la GPU
lo espera: detrás de kernels largos queda oculto. Una operación cuyo tiempo son los elementos que crea o
mueve (números aleatorios, rellenos, copias) a 200 µs o más por llamada es ese trabajo, no un peaje, y se
deja fuera: una llamada agrupada tarda lo mismo (monisha_trace: 100 aten::randn de 2.9 ms cada una en la
CPU, a las que antes se decía "agrupa las llamadas").

Ejemplo:
big_gpt_eager_20steps (un GPT de 12 capas, autocast bf16, eager) en una H200: aten::to se llama 271
veces por paso (32.8 µs cada una, las conversiones de autocast de los pesos fp32) y la GPU está
inactiva 7.3 ms por paso mientras el host está dentro de ellas. En gpu/launch_bound (200 operaciones
elementales diminutas por paso) las operaciones son aten::mul y aten::add, 100 llamadas cada una por
paso; su inactividad es de launch-bound (la explican los kernels diminutos), así que esta regla calla
ahí.

Impacto:
Por paso: la GPU inactiva mientras el host está dentro de las llamadas de las operaciones listadas
(para kernels: dentro de sus llamadas de lanzamiento), sin contar la que reclama otro hallazgo
(sincronizaciones, carga de datos, compilación, profiler, las operaciones de kernels diminutos de
launch-bound): lo que agruparlas o fusionarlas ahorraría como mucho (cota superior; la llamada
agrupada sigue costando una). El tiempo de host oculto tras trabajo de GPU no ahorra nada y no cuenta.
Sin GPU cuenta el propio tiempo de host de las llamadas. Antes cada operación era su propio aviso, con
su tiempo total como coste, oculto o no, y repetía overhead-bound.

La fila de un kernel (o una copia) da por separado sus llamadas de lanzamiento y su tiempo de GPU, y
su coste cuenta una sola vez la llamada de una copia bloqueante y la copia (issue 35: las llamadas de
CPU de las copias sumadas a su tiempo de GPU, 181.7 ms donde la GPU corrió 82.7 ms). Las cifras por
paso son partes del paso medio.

Solución:
Agrupa el trabajo (una operación sobre un tensor apilado en vez de un bucle de operaciones sobre
trozos), usa las variantes `torch._foreach_*` / los optimizadores fusionados (`fused=True`), mantén los
pesos en el tipo de cómputo para que autocast no los convierta en cada paso, fusiona con torch.compile
o reproduce el paso entero como CUDA graph para que el coste por llamada desaparezca (código ya
compilado: el CUDA graph)."""
