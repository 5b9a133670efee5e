"""exposed-communication en español."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.exposed_communication import ExposedCall, ExposedCommunication, SetupCall, WaitingCall


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
    return text + _role_text(r) + _wait_text(r) + _setup_text(r)


def _moved(r: ExposedCommunication) -> str:
    """"fp32, 128.0 MiB por llamada" hasta donde la traza lo dice."""
    parts = [r.dtype] if r.dtype else []
    if r.message_bytes:
        parts.append(f"{r.message_bytes / 2**20:.1f} MiB por llamada")
    return ", ".join(parts)


def _role_text(r: ExposedCommunication) -> str:
    if r.role != "tp":
        return ""
    moved = f" ({_moved(r)})" if _moved(r) else ""
    where = ", en un forward sin backward" if r.forward_only else ""
    return (f" Mueven activaciones del paralelismo de tensor o de secuencia{moved}: DTensor redistribuye "
            f"{r.redistributes:.0f} vez/veces por paso{where}, y la traza no tiene ninguna marca de FSDP.")


def _wait_text(r: ExposedCommunication) -> str:
    w = r.wait
    if w is None:
        return ""
    what = f"llamada de {KINDS[w.kind]}" if w.kind else "llamada"
    many = f"{w.calls} {what}s tardan hasta" if w.calls > 1 else f"Una {what} tarda"
    return (f" {many} {t(w.dur_us)} frente a una mediana de {t(w.median_us)} de las {w.siblings} llamadas de la "
            f"colectiva: {t(w.exposed_us)} por paso de espera a que llegue otro rango, no de transferencia; la traza "
            "de este rango no puede decir por qué el otro llegó tarde.")


def _setup_text(r: ExposedCommunication) -> str:
    if r.setup_us <= 0:
        return ""
    return (f" Se deja fuera: {t(r.setup_us)} en las primeras llamadas de sus colectivas en la ventana, hasta "
            f"{r.setup_ratio:.1f}x la mediana de sus llamadas siguientes: preparación única (NCCL conectando con sus "
            "pares, la primera pasada de cada rango).")


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


def _tp_advice(r: ExposedCommunication) -> str:
    moved = f" ({_moved(r)})" if _moved(r) else ""
    bf16 = ("envíalas en bf16 (ejecuta el modelo en bf16, o convierte las activaciones que redistribuyen los estilos "
            "de paralelismo: la mitad de bytes), " if r.dtype in ("fp32", "fp64", "") else "")
    return (f"estas colectivas ({r.collective}) son activaciones del paralelismo de tensor o de secuencia{moved}, "
            "no parámetros de FSDP, y cada capa las espera: "
            f"{bf16}limítate al mínimo de colectivas (el paralelismo de secuencia necesita un all-gather y un "
            "reduce-scatter por bloque de atención y por bloque MLP; las demás vienen de disposiciones de entrada o "
            "salida que replican en medio), solápalas con cómputo (paralelismo de tensor asíncrono: "
            "torch.compile con torch._inductor.config._micro_pipeline_tp = True) o, si el modelo cabe en una GPU, "
            "no lo fragmentes: ejecuta una copia entera en cada GPU")


def _unknown_shard_advice(r: ExposedCommunication) -> str:
    return (f"si este {KINDS[r.kind]} ({r.collective}) mueve los parámetros y gradientes de FSDP o ZeRO (la traza no "
            "tiene ninguna marca de FSDP que lo diga), precarga los parámetros de la unidad siguiente mientras esta "
            "calcula (forward_prefetch=True y backward_prefetch=BackwardPrefetch.BACKWARD_PRE en FSDP; "
            "set_modules_to_forward_prefetch y set_modules_to_backward_prefetch en FSDP2) y agrupa en menos unidades "
            "más grandes; si mueve activaciones del paralelismo de tensor, envíalas en bf16 y solápalas (paralelismo de "
            "tensor asíncrono)")


def _own_advice(r: ExposedCommunication) -> str:
    if r.role == "tp":
        return _tp_advice(r)
    if r.role != "fsdp" and r.kind in ("all_gather", "reduce_scatter"):
        return _unknown_shard_advice(r)
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


def _waits_most(r: ExposedCommunication) -> bool:
    return r.wait is not None and r.late_peer is None and r.wait.exposed_us >= 0.5 * r.exposed_us


def advice(r: ExposedCommunication) -> str:
    own = _own_advice(r)
    if r.late_peer is not None:
        return (f"El rango {r.late_peer.rank} llega tarde y este rango le espera {t(r.late_peer.wait_us)} por paso: "
                f"arregla primero ese rango (ver straggler). Para los otros {t(r.own_exposed_us)}, {own}.")
    if _waits_most(r):
        return (f"Compara primero los rangos: {t(r.wait.exposed_us if r.wait else 0.0)} por paso son una llamada esperando a otro "
                "rango, que ni solapar ni mensajes más pequeños acortan; ejecuta pista analyze sobre la carpeta con la "
                "traza de cada rango, o mira qué hacen los otros rangos en ese momento, y haz que el tardío llegue a "
                f"tiempo. Para el resto, {own}.")
    return own[0].upper() + own[1:] + "."


_KIND_FIX = {
    "all_to_all": "encadena la distribución de entradas (TrainPipelineSparseDist de TorchRec) y revisa el equilibrio "
                  "entre rangos",
    "all_gather": "precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)",
    "reduce_scatter": "precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de FSDP)",
    "broadcast": "broadcast_buffers=False si son los buffers de DDP; si no, async_op=True",
}


_TP_FIX = ("activaciones del paralelismo de tensor: envíalas en bf16, limítate al mínimo de colectivas, solápalas "
           "(TP asíncrono) o no fragmentes un modelo que cabe en una GPU")
_ALL_REDUCE_FIX = ("acumula gradientes con no_sync() para hacer el all-reduce una vez cada N pasos y ajusta "
                   "bucket_cap_mb de DDP para que los buckets empiecen durante el backward")
_SHARD_FIX = ("si es de FSDP, precarga los parámetros de la unidad siguiente (forward_prefetch y backward_prefetch de "
              "FSDP); si son activaciones del paralelismo de tensor, envíalas en bf16 y solápalas (TP asíncrono)")


def _fix_of(r: ExposedCommunication) -> str:
    if r.role == "tp":
        return _TP_FIX
    if r.role != "fsdp" and r.kind in ("all_gather", "reduce_scatter"):
        return _SHARD_FIX
    return _KIND_FIX.get(r.kind, _ALL_REDUCE_FIX)


def fix(r: ExposedCommunication) -> str:
    own = _fix_of(r)
    if r.late_peer is not None:
        then = own if r.kind in _KIND_FIX or r.role == "tp" else \
            "acumula gradientes con no_sync() para hacer el all-reduce una vez cada N pasos"
        return (f"{r.collective} expone {t(r.own_exposed_us)} por paso propios además de esperar al rango "
                f"{r.late_peer.rank}: arregla primero el rango {r.late_peer.rank} y luego {then}")
    kind = f" ({KINDS[r.kind]})" if r.kind in _KIND_FIX or (r.kind and r.role == "tp") else ""
    first = (f"{t(r.wait.exposed_us if r.wait else 0.0)} de ello son una llamada esperando a otro rango (compara primero los rangos); "
             "para el resto, " if _waits_most(r) else "")
    return f"{r.collective}{kind} corre {t(r.exposed_us)} de cada paso de {t(r.step_us)} sin cómputo al lado: {first}{own}"


def basis(r: ExposedCommunication) -> str:
    if r.role == "tp":
        text = ("comunicación sin cómputo al lado, sumada por paso (cada capa espera sus activaciones: solo "
                "solaparlas, el paralelismo de tensor asíncrono, la oculta)")
    else:
        last = "el all-reduce del último bucket" if r.kind in ("all_reduce", "") else f"el último {KINDS[r.kind]}"
        text = f"comunicación sin cómputo al lado, sumada por paso (cota superior: {last} no puede ocultarse)"
    if r.setup_us > 0:
        text += f", menos {t(r.setup_us)} de preparación única en primeras llamadas"
    if r.late_peer is not None:
        text += f", menos la espera al rango {r.late_peer.rank}, que cuenta en straggler"
    return text


NOTES = {
    ExposedCall: lambda n: f"{t(n.exposed_us)} de sus {t(n.dur_us)} sin cómputo al lado",
    WaitingCall: lambda n: (f"{n.dur_us / max(n.median_us, 1e-9):.0f}x la mediana de {t(n.median_us)} de su "
                            "colectiva: espera a otro rango"),
    SetupCall: lambda n: (f"la primera llamada de la colectiva, {n.dur_us / max(n.median_us, 1e-9):.1f}x la mediana "
                          f"de {t(n.median_us)} de las siguientes: preparación única"),
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
(ver `straggler`), arregla primero ese rango: la espera es su retraso.

De quién es un all-gather o un reduce-scatter también se lee de la traza (revisión 4): las marcas propias
de FSDP (regiones `FSDP::`, `FullyShardedDataParallel`) significan parámetros y gradientes de FSDP; una
colectiva lanzada bajo el `Redistribute` de DTensor (o una colectiva funcional, `_c10d_functional::`, en
una ventana sin backward) sin ninguna marca de FSDP es el paralelismo de tensor o de secuencia moviendo
activaciones, con otro consejo: enviarlas en bf16 (la mitad de bytes), limitarse al mínimo de colectivas
(el paralelismo de secuencia necesita un all-gather y un reduce-scatter por bloque de atención y por
bloque MLP), solaparlas (paralelismo de tensor asíncrono) o no fragmentar un modelo que cabe en una GPU (rtx4090_tp2_llama_dim1024 de
tokenomics: el forward de un LLaMA de 4 capas en 2 RTX 4090, 39 llamadas a Redistribute, reduce-scatters
en fp32 de activaciones [4096, 8, 1024], 313 ms de 370 ms de tiempo de GPU; antes, el consejo de
prefetch de FSDP). Dos llamadas no son lo que parecen y se distinguen: la primera llamada de una
colectiva en la ventana, mucho más lenta que las siguientes, es su preparación única (NCCL conectando
con sus pares), que queda fuera del impacto (el primer reduce-scatter de dim1024, 59.7 ms frente a una
mediana de 13.7 ms); una llamada mucho más larga que las demás de su colectiva espera a que llegue otro
rango (rtx4090_tp2_llama_annot: un all-gather de 442 ms frente a una mediana de 3.6 ms, 441 de sus 551 ms
expuestos), algo que la traza de este rango no puede explicar: compara los rangos."""
