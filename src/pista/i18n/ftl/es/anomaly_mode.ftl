## anomaly-mode: en español
title = La detección de anomalías de autograd está activa: cada nodo del backward busca NaN en sus gradientes

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    La detección de anomalías de autograd olvidada activa (`torch.autograd.set_detect_anomaly(True)` tras
    buscar un NaN, o un paso dentro de `with torch.autograd.detect_anomaly():`). En la traza cada nodo del
    backward (`autograd::engine::evaluate_function: ...`) termina con las comprobaciones del propio motor
    sobre sus salidas: `aten::isnan`, `aten::_is_any_true` (o `aten::any`) y `aten::item`, justo bajo el
    nodo.

    Por qué:
    El modo de anomalías hace que el motor compruebe si cada gradiente que calcula tiene NaN: una pasada
    por cada gradiente y un valor leído en Python por nodo; en una GPU cada lectura es una sincronización
    que vacía la cola. En el forward además guarda una traza de Python por cada nodo de autograd. Es una
    herramienta de depuración: con ella activa un paso cuesta un tercio más.

    Ejemplo:
    gpu/anomaly_cnn_on (CPU, un hilo, una CNN de 3 convoluciones sobre imágenes de 28x28 con lote 64,
    SGD): 102 comprobaciones por paso, 5.5 ms de un paso perfilado de 32.6 ms; sin profiler 31.5 frente a
    23.3 ms por paso de su gemelo (gpu/anomaly_cnn_off): 8.4 ms, el 27%. gpu/anomaly_mlp_on (4 capas
    Linear de 512, Adam, dentro de `detect_anomaly()`): 75 comprobaciones, 2.7 ms de 14.9 ms; sin
    profiler 13.7 frente a 9.1 ms (4.5 ms, el 33%).

    Impacto:
    Por paso, el tiempo de las comprobaciones: solo CPU, su tiempo de host; con GPU, la inactividad de la
    GPU bajo ellas (las sincronizaciones de las lecturas vacían la cola). Las trazas que guarda el forward
    no cuentan, así que queda por debajo de lo que ahorra apagar el modo (los gemelos: 5.5 de 8.4 ms, 2.7
    de 4.5 ms); host-sync deja estas lecturas a esta regla. Calla por debajo del 1% del paso y en toda
    traza sin las comprobaciones. Reproducido (lo predeterminado,
    pista.engine), el arreglo quita las comprobaciones y, en una traza de GPU cuyas operaciones del forward que
    crean nodos tienen una mediana de tiempo propio de FORWARD_TRACEBACK_SELF_NS o más (set_detect_anomaly(True)
    para toda la ejecución), deja ese tiempo propio en TRACEBACK_SELF_KEEP: savings/h100/anomaly_global 64.9%
    predicho frente a 76.5% medido; anomaly_ctx, detección solo alrededor de backward(), 40.0% frente a 48.2%.

    Solución:
    Apágala fuera de la depuración: quita `torch.autograd.set_detect_anomaly(True)` (o pasa False), o el
    bloque `with torch.autograd.detect_anomaly():`; para encontrar un NaN, actívala solo en el paso que
    falla, o comprueba la pérdida con `torch.isfinite` cada N pasos.

message = El motor de autograd comprueba si hay NaN en las { $gradients } salidas de { $nodes } nodos del backward por
    paso (aten::isnan, aten::_is_any_true, aten::item bajo cada nodo): la detección de anomalías está activa. Las
    comprobaciones ocupan { $checks_us } de host por paso{ $gpu ->
        [yes] ; la GPU está inactiva { $idle_us } por paso bajo ellas (cada lectura del resultado sincroniza)
       *[no] {""}
    }{ $forward ->
        [tracebacks] ; el forward además guarda una traza de Python en cada operación que crea un nodo de autograd
            (set_detect_anomaly(True) para toda la ejecución), que el impacto cuenta
        [outside] ; el forward se ejecuta fuera del modo de anomalías (sus operaciones no muestran coste de trazas)
       *[unknown] , y con set_detect_anomaly(True) el forward guarda además una traza de Python por cada nodo de
            autograd
    }.
advice = La detección de anomalías es una herramienta de depuración: quita torch.autograd.set_detect_anomaly(True) (o
    pasa False) y cualquier bloque torch.autograd.detect_anomaly() alrededor del paso. Para cazar un NaN, actívala
    solo en el paso que falla, o comprueba la pérdida con torch.isfinite cada N pasos.
fix = La detección de anomalías comprueba { $nodes } nodos del backward por paso: quita
    torch.autograd.set_detect_anomaly(True) / detect_anomaly() fuera de la depuración.
basis = { $gpu ->
    [yes] la GPU inactiva bajo las comprobaciones de NaN del motor, por paso; las trazas que guarda el forward no
        cuentan
   *[no] el tiempo de host de las comprobaciones de NaN del motor, por paso; las trazas que guarda el forward no
        cuentan
  }
check-note = una comprobación de NaN de las salidas de { $node }
