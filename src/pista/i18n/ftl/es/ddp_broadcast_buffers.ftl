## ddp-broadcast-buffers: en español
title = DDP difunde los buffers del modelo antes de cada forward

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    DistributedDataParallel difunde los buffers del modelo desde el rango 0 al principio de cada forward
    (`broadcast_buffers=True`, el valor por defecto): los aplana en un tensor por cubo
    (`aten::flatten_dense_tensors`), lo difunde (`c10d::broadcast_`), lo desaplana
    (`aten::unflatten_dense_tensors`) y copia cada buffer de vuelta (`aten::copy_`), antes de la primera op
    del módulo. En una red convolucional con BatchNorm son tres buffers por capa, en cada paso.

    Por qué:
    La difusión en sí es pequeña en la GPU, pero el host despacha una op por buffer a cada lado de ella, y el
    forward del módulo solo empieza tras la última copia: la GPU espera todo ese tiempo. La difusión mantiene
    iguales los buffers de los rangos; donde no necesitan sincronizarse es coste puro.

    Ejemplo:
    hta_nccl_data de HTA (ResNet-50, DDP sobre NCCL, 3 pasos de ~222 ms): cada DistributedDataParallel.forward
    pasa 38 ms antes de su primer conv2d (dos flatten_dense_tensors, dos difusiones, dos
    unflatten_dense_tensors de 15.3 y 7.3 ms, 159 copy_ de los buffers de BatchNorm) con la GPU ocupada
    0.3 ms: el 17% del paso, que overhead-bound solo mostraba como un nombre de op en su lista.

    Impacto:
    Los pasos reproducidos sin las ops de la sincronización de buffers (ni lo que lanzan): lo que ahorra
    `broadcast_buffers=False`.

    Solución:
    `DistributedDataParallel(model, broadcast_buffers=False)` donde los buffers no necesitan sincronizarse:
    ningún buffer cambia en el forward (sin BatchNorm en modo entrenamiento, sin estadísticas acumuladas), o
    todos los rangos los calculan igual (SyncBatchNorm: `nn.SyncBatchNorm.convert_sync_batchnorm(model)`
    promedia las estadísticas del lote entre los rangos, así que sus estadísticas acumuladas coinciden). Con
    BatchNorm normal en entrenamiento, las estadísticas acumuladas de cada rango siguen entonces a sus propios
    datos: aceptable donde un solo rango evalúa y guarda, o difúndelas tú de vez en cuando (cada N pasos,
    antes de evaluar o guardar).

message = Cada DistributedDataParallel.forward ({ $calls } en { $steps } paso(s)) sincroniza primero los buffers del
    módulo desde el rango 0: { $broadcasts } difusión(es) de ellos aplanados y luego { $copies } copias de vuelta,
    { $sync_us } por paso antes de la primera op del módulo, con la GPU ociosa { $idle_us } de ese tiempo. Es
    broadcast_buffers=True, el valor por defecto.{ $buffers ->
        [sync-batch-norm] {" "}El modelo usa SyncBatchNorm: todos los rangos calculan las mismas estadísticas, así
            que los buffers coinciden sin la difusión.
        [batch-norm] {" "}El modelo usa BatchNorm, cuyas estadísticas acumuladas cambian en cada forward: sin la
            difusión, las de cada rango siguen a sus propios datos.
       *[none] {" "}Ninguna op de los pasos actualiza un buffer en el forward (no hay BatchNorm): la difusión reenvía
            los valores que todos los rangos ya tienen.
    }
advice = { $buffers ->
    [batch-norm] broadcast_buffers=False la quita, y solo es seguro donde las estadísticas acumuladas de BatchNorm de
        los rangos pueden diferir: un solo rango evalúa y guarda el modelo, o difundes tú los buffers cada N pasos y
        antes de evaluar o guardar. O convierte las capas BatchNorm en SyncBatchNorm
        (nn.SyncBatchNorm.convert_sync_batchnorm(model), un all-reduce de las estadísticas del lote por capa) para
        que todos los rangos calculen las mismas estadísticas, y luego quita la difusión. Deja el valor por defecto
        donde cada rango evalúa con su propia copia y las copias deben coincidir.
   *[other] Construye DDP con broadcast_buffers=False (DistributedDataParallel(model, ...,
        broadcast_buffers=False)): los buffers siguen siendo iguales en todos los rangos sin la difusión.
  }
fix = DistributedDataParallel.forward sincroniza { $copies } buffers, { $idle_us } por paso con la GPU ociosa:
    broadcast_buffers=False{ $buffers ->
        [batch-norm] {" "}donde las estadísticas de BatchNorm de los rangos pueden diferir (o con SyncBatchNorm)
       *[other] {""}
    }
basis = el tiempo del host de la sincronización de buffers con la GPU ociosa, de su primera op a su última copia,
    por paso
sync-note = la sincronización de buffers: { $sync_us }, la GPU ociosa { $idle_us }, { $copies } copias de vuelta
