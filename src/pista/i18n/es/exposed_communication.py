"""exposed-communication en español."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.exposed_communication import ExposedCall, ExposedCommunication


def _where(r: ExposedCommunication) -> str:
    return "en la GPU" if r.domain == "gpu" else "en los hilos de gloo"


def _share(r: ExposedCommunication, us: float) -> str:
    return pct(min(1.0, us / max(r.step_us, 1e-9)))


TITLE = "Comunicación expuesta: los pasos esperan a las colectivas"


def message(r: ExposedCommunication) -> str:
    text = (f"{t(r.exposed_us)} de comunicación por paso corren sin cómputo al lado: el "
            f"{_share(r, r.exposed_us)} de un paso de {t(r.step_us)}. De {t(r.comm_us)} de colectivas por paso "
            f"{_where(r)} ({r.collectives} eventos en {r.steps} paso(s)), el {pct(r.overlap_share)} se solapa con "
            f"cómputo; {r.collective} es la que más expone.")
    if len(r.kinds) > 1:
        text += " Por colectiva, por paso: " + ", ".join(f"{KINDS[k]} {t(v)}" for k, v in r.kinds) + "."
    if r.late_peer is not None:
        text += (f" {t(r.late_peer.wait_us)} de ello es este rango esperando al rango {r.late_peer.rank}, que llega "
                 f"tarde (ver straggler); {t(r.own_exposed_us)} son suyos.")
    return text


KINDS = {"all_reduce": "all-reduce", "all_to_all": "all-to-all", "all_gather": "all-gather",
         "reduce_scatter": "reduce-scatter", "broadcast": "broadcast"}


def _kind_advice(r: ExposedCommunication) -> str:
    """El consejo para una colectiva que no es un all-reduce de gradientes ("" para un all-reduce o una sin nombre)."""
    if r.kind == "all_to_all":
        return (f"este all-to-all ({r.collective}) es la distribución de entradas y embeddings de TorchRec o el "
                "intercambio de tokens de una mezcla de expertos, no un all-reduce de gradientes, así que los ajustes "
                "de buckets de DDP no lo tocan: solápalo con cómputo encadenando la distribución de entradas, para que "
                "el all-to-all del lote siguiente corra durante el forward y el backward de este (TrainPipelineSparseDist "
                "de TorchRec), y compara los rangos: uno con más ids o tokens que enviar hace esperar a todos los demás")
    if r.kind in ("all_gather", "reduce_scatter"):
        return (f"este {KINDS[r.kind]} ({r.collective}) mueve los parámetros y gradientes de FSDP o ZeRO: precarga los "
                "parámetros de la unidad siguiente mientras esta calcula (forward_prefetch=True y "
                "backward_prefetch=BackwardPrefetch.BACKWARD_PRE en FSDP; set_modules_to_forward_prefetch y "
                "set_modules_to_backward_prefetch en FSDP2), y agrupa en menos unidades más grandes para que cada "
                "colectiva mueva más")
    if r.kind == "broadcast":
        return (f"este broadcast ({r.collective}): si son los buffers de DDP (las estadísticas de batch norm) enviados "
                "en cada forward, pon broadcast_buffers=False donde los rangos ya los mantienen iguales (o usa "
                "SyncBatchNorm); si no, lánzalo con async_op=True y espéralo solo donde se necesita su resultado")
    return ""


def _own_advice(r: ExposedCommunication) -> str:
    if _kind_advice(r):
        return _kind_advice(r)
    if r.domain == "gpu":
        return (f"deja que {r.collective} se solape con el backward: ajusta bucket_cap_mb de DDP para que los "
                "primeros buckets empiecen mientras el backward sigue, mantén gradient_as_bucket_view=True, acumula "
                "gradientes con no_sync() para hacer el all-reduce una vez cada N micro-lotes, o fragmenta con FSDP "
                "con prefetch")
    return (f"{r.collective} corre en los hilos de CPU de gloo junto al cómputo tras el que debería ocultarse "
            f"({pct(r.overlap_share)} solapado): acumula gradientes con no_sync() para hacer el all-reduce una vez "
            "cada N pasos, usa buckets más grandes (bucket_cap_mb) para enviar menos mensajes y más grandes, o "
            "entrena en GPUs con NCCL")


def advice(r: ExposedCommunication) -> str:
    own = _own_advice(r)
    if r.late_peer is not None:
        return (f"El rango {r.late_peer.rank} llega tarde y este rango le espera {t(r.late_peer.wait_us)} por paso: "
                f"arregla primero ese rango (ver straggler). Para los otros {t(r.own_exposed_us)}, {own}.")
    return own[0].upper() + own[1:] + "."


_KIND_FIX = {
    "all_to_all": "encadena la distribución de entradas (TrainPipelineSparseDist de TorchRec) y revisa el equilibrio "
                  "entre rangos",
    "all_gather": "precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)",
    "reduce_scatter": "precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)",
    "broadcast": "broadcast_buffers=False si son los buffers de DDP; si no, async_op=True",
}


def fix(r: ExposedCommunication) -> str:
    if r.kind in _KIND_FIX:
        if r.late_peer is not None:
            return (f"{r.collective} expone {t(r.own_exposed_us)} por paso propios además de esperar al rango "
                    f"{r.late_peer.rank}: arregla primero el rango {r.late_peer.rank} y luego {_KIND_FIX[r.kind]}")
        return (f"{r.collective} ({KINDS[r.kind]}) corre {t(r.exposed_us)} de cada paso de {t(r.step_us)} sin "
                f"cómputo al lado: {_KIND_FIX[r.kind]}")
    if r.late_peer is not None:
        return (f"{r.collective} expone {t(r.own_exposed_us)} por paso propios además de esperar al rango "
                f"{r.late_peer.rank}: arregla primero el rango {r.late_peer.rank} y luego acumula gradientes con "
                "no_sync() para hacer el all-reduce una vez cada N pasos")
    return (f"{r.collective} corre {t(r.exposed_us)} de cada paso de {t(r.step_us)} sin cómputo al lado: acumula "
            "gradientes con no_sync() para hacer el all-reduce una vez cada N pasos y ajusta bucket_cap_mb de DDP "
            "para que los buckets empiecen durante el backward")


def basis(r: ExposedCommunication) -> str:
    last = "el all-reduce del último bucket" if r.kind in ("all_reduce", "") else f"el último {KINDS[r.kind]}"
    text = f"comunicación sin cómputo al lado, sumada por paso (cota superior: {last} no puede ocultarse)"
    if r.late_peer is not None:
        text += f", menos la espera al rango {r.late_peer.rank}, que cuenta en straggler"
    return text


NOTES = {
    ExposedCall: lambda n: f"{t(n.exposed_us)} de sus {t(n.dur_us)} sin cómputo al lado",
}

DOCS = """Qué:
El paso espera a la comunicación: las colectivas (kernels NCCL en la GPU, el all-reduce de gloo en la
CPU) corren sin nada más a la vez, así que su tiempo se suma entero al paso en lugar de ocultarse
tras el backward u otro cómputo.

Por qué:
El entrenamiento con datos en paralelo solapa el all-reduce de un bucket de gradientes con el
backward del siguiente; solo se paga lo que queda cuando se acaba el cómputo. La comunicación
expuesta crece con el número de rangos y el tamaño del modelo, y es también donde los rangos esperan
a uno más lento, así que suele ser lo primero que pierde eficiencia al escalar.

Ejemplo:
Dos rangos gloo entrenando con DDP un MLP de 4 capas de 256 (buckets de 0.25 MB) en la CPU: los
all-reduce de cada paso se solapan con el backward solo parte de su tiempo, y el hilo principal
espera el resto (tests/fixtures/gloo/balanced_2). Con un rango lento (straggler_2), la comunicación
expuesta del rango que espera es casi todo su paso.

Impacto:
Por paso: el trabajo de comunicación durante el que no corre ningún cómputo (en la GPU, ningún otro
kernel ni copia; en los hilos de gloo, ningún op de los hilos de cómputo), sumado sobre los pasos y
dividido por su número; fracción del paso mediano. Es una cota superior: el all-reduce del último
bucket siempre cierra el backward solo. Sobre una carpeta (`pista analyze DIR`), la parte que es este
rango esperando a un rango tardío es el impacto de straggler, no de esta regla: se descuenta aquí, y
el hallazgo solo queda si lo que resta sigue pasando los umbrales. Antes, la regla daba la fracción
mediana y un aviso fijo. balanced_2: 2.6 ms de un paso de 6.7 ms en el rango 0 (38%), 5.6 de 9.8 ms
en el rango 1 (57%); el rango 0 de straggler_2 solo, 36.4 de 39.4 ms (92%), de los que 31.9 ms son
su espera al rango 1 (en la carpeta: 4.6 ms, 12%, aviso).

El consejo sigue a la colectiva que más expone, leída de la traza: el argumento 'Collective name'
del propio trabajo, si no la llamada del host que lo lanzó (`nccl:all_to_all`, `c10d::alltoall_base_`,
el 'Collective name' de `record_param_comms`), si no el nombre del kernel (AllReduce, AllGather,
ReduceScatter, Broadcast; SendRecv solo no dice nada: NCCL 2.1x ejecuta todas las colectivas de
hta_negq_rank0 como `ncclKernel_SendRecv`). Antes, toda exposición recibía el consejo del all-reduce de
DDP, también el all-to-all de embeddings de TorchRec (hta_diff_control: 42 `nccl:all_to_all`;
hta_negq_rank0, hta_sampled_rank0: `c10d::alltoall_base_`).

Solución:
Dale a la comunicación cómputo tras el que ocultarse. Un all-reduce (los gradientes de DDP): ajusta
`bucket_cap_mb` de DDP para que los buckets empiecen antes, mantén `gradient_as_bucket_view=True`,
acumula gradientes en varios micro-lotes con `no_sync()`, fragmenta con FSDP/ZeRO con prefetch, o
comprime gradientes (comm hooks de DDP). Un all-to-all (la distribución de entradas y embeddings de
TorchRec, los tokens de una mezcla de expertos): solápalo con el cómputo del lote anterior
(`TrainPipelineSparseDist` de TorchRec corre la distribución de entradas del lote siguiente durante el
forward y el backward de este) y revisa el desequilibrio entre rangos (uno con más ids o tokens hace
esperar a todos). All-gather y reduce-scatter (los parámetros y gradientes de FSDP): precarga
(`forward_prefetch=True`, `backward_prefetch=BackwardPrefetch.BACKWARD_PRE`; en FSDP2
`set_modules_to_forward_prefetch`) y agrupa en menos unidades más grandes. Si un rango llega tarde
(ver `straggler`), arregla primero ese rango: la espera es su retraso."""
