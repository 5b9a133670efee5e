"""inference-train-mode en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.inference_train_mode import InferenceTrainMode, TrainingOp

SEVERITY_EXCEPTION = ("al menos un aviso: dropout y batch norm en modo entrenamiento hacen incorrectas las salidas "
                      "de la inferencia; info sin marcas ProfilerStep, donde el forward de un entrenamiento perfilado "
                      "solo se ve igual")
TITLE = "La inferencia corre con el modelo en train(): dropout y batch norm actúan como al entrenar"


def _what(r: InferenceTrainMode) -> str:
    parts = []
    if r.dropouts_per_step:
        parts.append(f"{r.dropouts_per_step:.0f} dropouts por paso siguen descartando (sus salidas son aleatorias)")
    if r.attention_dropouts_per_step:
        parts.append(f"{r.attention_dropouts_per_step:.0f} llamadas a scaled_dot_product_attention por paso descartan "
                     f"pesos de atención (dropout_p={r.attention_dropout_p:g})")
    if r.batch_norms_per_step:
        parts.append(f"{r.batch_norms_per_step:.0f} batch norms por paso normalizan con las estadísticas del propio "
                     "lote y sobrescriben su media y varianza acumuladas")
    return " y ".join(parts)


def message(r: InferenceTrainMode) -> str:
    lead = ("La traza no tiene ProfilerStep ni backward (si el programa entrena y su backward corrió fuera de la "
            "ventana perfilada, esto no aplica)" if not r.has_steps else
            "Ningún paso ejecuta backward" if r.steps == r.of_steps
            else f"{r.steps} de los {r.of_steps} pasos no ejecutan backward")
    wrong = ("Las salidas son incorrectas, no solo más lentas." if r.has_steps else
             "Si esta ventana es inferencia, sus salidas son incorrectas, no solo más lentas; nada en ella dice cuál.")
    return (f"{lead}, y aun así el modelo está en modo entrenamiento: {_what(r)}. {wrong} Los kernels propios del "
            f"entrenamiento ocupan {t(r.kernel_us_per_step)} de GPU por paso{_idle(r)}.")


def _idle(r: InferenceTrainMode) -> str:
    if not r.idle_us_per_step:
        return ""
    what = " y ".join(w for w, n in (("los dropouts", r.dropouts_per_step),
                                     (f"{r.counter_updates_per_step:.0f} actualizaciones de num_batches_tracked",
                                      r.counter_updates_per_step)) if n)
    return f", y la GPU está inactiva {t(r.idle_us_per_step)} por paso mientras se despachan {what}"


def advice(r: InferenceTrainMode) -> str:
    sdpa = (" Cuando eval() pone dropout_p a 0, scaled_dot_product_attention puede elegir la atención de cuDNN, que "
            "construye un grafo por cada longitud de secuencia nueva (cudnn-setup): fíjala a flash/efficient con "
            "torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])."
            if r.attention_not_cudnn else "")
    return ("Llama a model.eval() antes del bucle de inferencia (y a model.train() antes de volver a entrenar); "
            "torch.inference_mode() y torch.no_grad() no desactivan dropout ni batch norm." + sdpa)


def fix(r: InferenceTrainMode) -> str:
    sdpa = (", y fija SDPA a flash/efficient (sdpa_kernel): con dropout_p=0 puede elegir la atención de cuDNN"
            if r.attention_not_cudnn else "")
    grad = " y ejecútala dentro de torch.inference_mode() (inference-grad-mode)" if r.grad_mode else ""
    return f"el modelo hace inferencia en modo train() ({_modules(r)}): llama antes a model.eval(){grad}{sdpa}."


def _modules(r: InferenceTrainMode) -> str:
    parts = [w for w, n in (("dropout", r.dropouts_per_step + r.attention_dropouts_per_step),
                            ("estadísticas de batch norm", r.batch_norms_per_step)) if n]
    return ", ".join(parts)


def basis(r: InferenceTrainMode) -> str:
    if not r.kernel_us_per_step and not r.idle_us_per_step:
        return ("el trabajo propio del entrenamiento no ocupa tiempo de GPU aquí: el hallazgo es por las salidas, que el "
                "modo entrenamiento hace incorrectas" + ("" if r.has_steps else " si esta ventana es inferencia"))
    severity = ("; al menos un aviso, y primero, porque las salidas son incorrectas" if r.has_steps
                else "; solo información: sin pasos, la ventana puede ser un forward de entrenamiento")
    return (f"el tiempo de GPU de los kernels que solo corren en modo entrenamiento (los de dropout, las estadísticas "
            f"de batch norm), por el {100 * r.busy_share:.0f}% de la ventana en que la GPU está ocupada, más la "
            "inactividad de la GPU mientras se despachan los dropouts y las actualizaciones de num_batches_tracked de "
            f"batch norm{severity}")


NOTES = {
    TrainingOp: lambda n: {"dropout": "dropout que descarta (modo train)", "attention": "atención con dropout_p > 0 (modo train)"}.get(n.kind, "batch norm en modo entrenamiento"),
}

DOCS = """Qué:
Inferencia con el modelo en modo entrenamiento (`model.train()`, el modo por defecto al construirlo, o
tras un bucle de entrenamiento sin `model.eval()`): en pasos que no ejecutan backward, dropout sigue
descartando (`aten::dropout` llama a `aten::native_dropout`, sus kernels corren) y batch norm
normaliza con las estadísticas del propio lote y actualiza las acumuladas (`aten::batch_norm` con
training=True, sus kernels de estadísticas corren).

Por qué:
Las salidas son incorrectas, no solo más lentas: dropout las vuelve aleatorias, y batch norm hace que
la salida de cada muestra dependa del resto de su lote mientras sobrescribe la media y la varianza
acumuladas que aprendió el modelo. `torch.inference_mode()` y `torch.no_grad()` no lo cambian; solo
`model.eval()`. Los kernels propios del entrenamiento cuestan además tiempo de GPU.

Ejemplo:
gpu/resnet50_train (ResNet-50 bf16, lote 32, bajo torch.inference_mode(), H200): 53 batch norms por
paso en modo entrenamiento, sus kernels de estadísticas 1.8 ms de GPU por paso (el gemelo en eval
gpu/resnet50_nograd no ejecuta ninguno); sin profiler (gpu/train_time.py) eval() llevó el paso de 6.22
a 4.84 ms. gpu/gpt2_decode_train (decodificación de GPT-2): 25 dropouts y 12 dropouts de atención por
token; eval() llevó el token de 7.24 a 6.57 ms con SDPA fijado a flash, pero sin fijarlo dropout_p=0
deja que SDPA elija la atención de cuDNN, un grafo por longitud de KV (gpu/gpt2_decode_nograd,
cudnn-setup).

Impacto:
El tiempo de GPU de los kernels que solo corren en modo entrenamiento (los de los dropouts activos,
las estadísticas de batch norm y la actualización de las acumuladas), por la fracción ocupada de la
GPU, más la inactividad de la GPU por operación bajo los dropouts que descartan (su despacho, donde
el host es el límite; overhead-bound, launch-bound y many-calls se la dejan a esta regla,
`claimed_idle`): una cota inferior (el kernel de entrenamiento de batch norm de cuDNN hace ambas
cosas en uno, y no cuenta). gpu/resnet50_train 1.2 ms, gpu/gpt2_decode_train 1.5 ms por paso (medido
sin profiler: 1.34 y 0.66 ms). Las salidas incorrectas son la razón de que sea al menos un aviso,
cueste lo que cueste, y vaya primero (SEVERITY_EXCEPTION); sin marcas ProfilerStep es info con esa
condición dicha (el forward de un entrenamiento perfilado solo, con su backward fuera de la ventana,
se ve igual).

Solución:
Llama a `model.eval()` antes del bucle de inferencia (y a `model.train()` de nuevo antes de volver a
entrenar)."""
