"""straggler en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.straggler import Cause, LateCall, SlowStep, Straggler

TITLE = "Rezagado: un rango hace esperar a los demás"


def _others(r: Straggler) -> str:
    return f"los otros {r.world - 1} rango(s)"


def message(r: Straggler) -> str:
    if r.cause == Cause.LATE:
        text = (f"El rango {r.rank} llega a sus colectivas {t(r.late_us or 0.0)} después de la mediana de "
                f"{_others(r)} (mediana sobre {r.matched_collectives} colectivas emparejadas; su paso mediano dura "
                f"{t(r.step_us or 0.0)}): le esperan {t(r.wait_us)} por paso.")
    else:
        text = (f"El paso mediano del rango {r.rank} dura {t(r.step_us or 0.0)} frente a "
                f"{t(r.others_step_us or 0.0)} en {_others(r)}, {t(r.wait_us)} más por paso.")
    if r.peers_exposed_us is not None and r.own_exposed_us is not None and r.peers_exposed_us > r.own_exposed_us:
        text += (f" Los demás esperan en comunicación {t(r.peers_exposed_us)} por paso (mediana); el rango "
                 f"{r.rank}, solo {t(r.own_exposed_us)}.")
    if r.extra is not None:
        theirs = f"los demás, {t(r.extra.others_us)}" if r.extra.others_us >= 1.0 else "los demás no la ejecutan"
        text += f" El rango {r.rank} pasa {t(r.extra.own_us)} por paso en {r.extra.name}; {theirs}."
    return text


def advice(r: Straggler) -> str:
    if r.extra is not None and r.extra.device:
        if r.extra.others_us < 1.0:
            return (f"El rango {r.rank} ejecuta {r.extra.name} ({t(r.extra.own_us)} por paso) y los demás no: "
                    "ejecuta otros kernels, así que su configuración es distinta (dtype, TF32 o autocast, una "
                    "versión de biblioteca): hazla igual en todos los rangos.")
        return (f"{r.extra.name} tarda {t(r.extra.own_us)} por paso en el rango {r.rank} y {t(r.extra.others_us)} "
                "en los demás: sus entradas son mayores (fragmentos desiguales, secuencias más largas, relleno) o su "
                "GPU es más lenta (relojes, throttling); equilibra las entradas o revisa el dispositivo.")
    if r.extra is not None:
        return (f"{r.extra.name} le cuesta al rango {r.rank} {t(r.extra.own_us - r.extra.others_us)} más por paso "
                "que a los demás: si lee o prepara la entrada, carga en workers del DataLoader (num_workers>0) o "
                f"equilibra los fragmentos de datos; si registra, evalúa o guarda checkpoints solo en el rango "
                f"{r.rank}, hazlo fuera del paso o de forma asíncrona; si no, que cueste lo mismo que en los otros "
                "rangos.")
    if r.cause == Cause.LATE:
        return (f"Ninguna región del host del rango {r.rank} explica su retraso: compara sus entradas (tamaño de "
                "los fragmentos, longitud de las secuencias) y su dispositivo (relojes, throttling, un vecino "
                "ruidoso) con los de los demás; equilibra el trabajo o saca del trabajo el host lento.")
    return (f"El rango {r.rank} hace sus pasos más despacio sin colectivas en las que esperar: compara su "
            "configuración (precisión, TF32, tamaño de lote), su dispositivo y sus entradas con los de los otros "
            "rangos y alinéalos.")


def fix(r: Straggler) -> str:
    if r.extra is not None and r.extra.device:
        return (f"el rango {r.rank} pasa {t(r.extra.own_us - r.extra.others_us)} más por paso en {r.extra.name} que "
                f"los demás rangos ({t(r.wait_us)} por paso por detrás de ellos): dale la misma configuración y las "
                "mismas entradas que a ellos")
    if r.extra is not None:
        return (f"el rango {r.rank} pasa {t(r.extra.own_us - r.extra.others_us)} más por paso en {r.extra.name} "
                f"que los demás rangos, que le esperan {t(r.wait_us)} por paso: saca ese trabajo del paso en el "
                f"rango {r.rank} o equilíbralo")
    if r.cause == Cause.LATE:
        return (f"los demás rangos esperan {t(r.wait_us)} por paso en sus colectivas al rango {r.rank}: busca qué "
                f"retrasa al rango {r.rank} (entradas, dispositivo, host) y equilíbralo")
    return (f"los pasos del rango {r.rank} duran {t(r.step_us or 0.0)} frente a {t(r.others_step_us or 0.0)} en "
            f"los demás: alinea su configuración, dispositivo y entradas con los de ellos")


def basis(r: Straggler) -> str:
    if r.cause == Cause.LATE:
        return ("por paso, cuánto más tarde que la mediana de los otros rangos llama a sus colectivas (mediana "
                "sobre las colectivas del paso), promediado sobre los pasos: lo que los demás le esperan")
    return ("su paso mediano menos el paso mediano de los otros rangos: lo que ahorraría yendo a su ritmo")


NOTES = {
    LateCall: lambda n: f"{t(n.late_us)} de retraso (la n.º {n.nth} con su nombre en el paso)",
    SlowStep: lambda n: f"{t(n.dur_us - n.others_us)} más que el paso mediano de los otros rangos ({t(n.others_us)})",
}

DOCS = """Qué:
Un rango llega tarde a sus colectivas (all-reduce, all-gather, ...) o sus pasos duran más que los de
los demás, y todos los otros rangos le esperan dentro de la colectiva. Solo se ve entre rangos:
`pista analyze DIR` sobre una carpeta de trazas por rango.

Por qué:
Una colectiva termina cuando llega el último participante. Lo que los demás esperan aparece en sus
trazas como comunicación larga y expuesta, y el trabajo entero va al ritmo del rango más lento: un
rango lento de mil hace lentas mil GPUs.

Ejemplo:
Dos rangos gloo entrenando un MLP pequeño con DDP en la CPU, el rango 1 duerme 30 ms antes de cada
forward: el rango 1 llega a cada all-reduce unos 30 ms después que el rango 0, y el rango 0 espera
esos 30 ms por paso en `gloo:all_reduce` (tests/fixtures/gloo/straggler_2). La región del host en la
que el rango 1 pasa más tiempo que los demás, `slow_input` (30.2 ms por paso, ausente en el rango 0),
se nombra como la causa.

Impacto:
Por paso: cuánto más tarde que la mediana de los otros rangos llama el rezagado a sus colectivas (la
mediana sobre las colectivas emparejadas de cada paso, promediada sobre los pasos): lo que los demás
le esperan cada paso, que el trabajo ahorra cuando el rezagado va a su ritmo. Fracción del paso
mediano del rezagado. Sin colectivas emparejadas, su paso mediano menos el de los demás. Esa espera
es también comunicación expuesta de los demás: sobre una carpeta se descuenta de sus hallazgos
exposed-communication, para contarla una sola vez. Antes, un aviso fijo. straggler_2: 31.9 ms de un
paso de 38.4 ms (83%, crítico); straggler_4: 31.3 de 52.4 ms (60%, crítico).

Solución:
Mira qué hace el rango lento antes de sus colectivas que los demás no hacen: datos o longitudes de
secuencia desiguales, carga de datos o sistema de ficheros lentos en ese host, logs o checkpoints en
un solo rango, un dispositivo más lento o limitado, un vecino ruidoso. Equilibra el trabajo, saca del
paso lo que solo hace un rango o sustituye el host lento."""
