## host-work: en español
title = El host hace su propio trabajo en el paso mientras la GPU espera

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    El host hace su propio trabajo entre ops de torch dentro de los pasos mientras la GPU espera: preprocesado
    en NumPy o Python (aumento de datos, normalización, tokenización), bucles de Python sobre datos, registro,
    E/S. En la traza es tiempo del hilo que lanza sin ninguna op ni llamada al runtime, en tramos de
    HOST_WORK_GAP_NS o más (el Python entre dos ops eager es de 5-30 µs), con la GPU ociosa debajo. Con pilas
    la regla nombra los frames del usuario que corrieron ahí; sin ellas, las ops de cada lado. El Python propio
    de un framework ahí (los envoltorios de torch, el forward de un modelo de Hugging Face) es despacho y se deja
    fuera, pero el preprocesado de una biblioteca es trabajo del usuario esté donde esté su código: los
    procesadores de imagen y vídeo de Hugging Face, sus extractores de características, sus tokenizadores y el
    preprocess de un pipeline, con el trabajo de PIL y NumPy que llaman, nombrados con el frame del usuario que
    los llamó (tl_h100_timesformer de TraceLens: el preprocess del pipeline, 215 ms de un paso de 383 ms).

    Por qué:
    La GPU solo ejecuta lo que el host ha lanzado. Los huecos de despacho son coste por op (de overhead-bound);
    un tramo de trabajo del host en medio del paso es una etapa en serie propia: la GPU está ociosa todo ese
    tiempo, y ni fusionar, ni compilar, ni un CUDA graph lo recuperan. El trabajo tiene que salir del camino
    del paso: a la GPU como ops de tensores, a workers del DataLoader, o fuera del bucle (hecho una vez).

    Ejemplo:
    savings/h100/numpy_augment: recortes aleatorios, volteos y ruido en NumPy para un lote de 64 imágenes en
    cada paso, fuera de toda región y sin pilas: el host pasa la mayor parte del paso entre la última op del
    optimizador y la primera del siguiente forward. savings/h100/python_tokenize: textos tokenizados en Python
    (una búsqueda en un dict por palabra) en cada paso, con pilas: la regla nombra el frame `tokenize`.

    Impacto:
    El paso reproducido sin los tramos de trabajo del host (corren en otro sitio, o en la GPU en unos pocos
    kernels): lo que ahorra sacar el trabajo del paso, como mucho.

    Solución:
    Haz el trabajo en la GPU con ops de torch sobre el lote entero (recortes por indexado, volteos con
    torch.where, normalización con ops de tensores), en un DataLoader con workers (`num_workers>0,
    pin_memory=True, persistent_workers=True`) para que se solape con el paso de la GPU, o una vez antes del
    bucle (un dataset tokenizado y preprocesado). Donde las pilas nombran el frame, ese es el código a mover.
    Un procesador de Hugging Face: llámalo sobre un lote y no sobre una muestra, en workers del DataLoader (un
    pipeline acepta un dataset con `batch_size` y `num_workers`), o usa su variante rápida basada en torchvision
    (`use_fast=True`), que puede correr en la GPU.

where = { $where ->
    [frames] en { $frames }
    [between] entre { $before } y { $after }
    [after] después de { $before }
    [before] antes de { $after }
   *[none] fuera de toda op
  }
caller = { $has_caller ->
    [yes] , llamado desde { $caller }
   *[no] {""}
  }
library = el preprocesado de Hugging Face ({ $entry }{ caller })
Library = El preprocesado de Hugging Face ({ $entry }{ caller })
message = Por paso el hilo que lanza pasa { $work_us } en { $stretches } tramo(s) de trabajo propio fuera de toda
    op de torch (el más largo { $longest_us }), { where }; la GPU está ociosa { $idle_us } de ese tiempo. { $preprocess ->
        [yes] { $pre_us } de ello es { library }: las entradas preparadas en el host dentro del paso, no el
            despacho de ops del modelo.
       *[no] Es trabajo de Python o NumPy (preprocesado, tokenización, registro, E/S) en el paso, no el
            despacho de ops.
    }
advice = { $has_frames ->
        [yes] El código: { where }.
       *[no] Graba el paso con with_stack=True para ver qué código de Python corre { where }.
    } { $preprocess ->
        [yes] { Library } corre en el paso mientras la GPU espera. Llévalo a donde se solape con la GPU: a
            workers del DataLoader (num_workers>0) o, en un pipeline, pásale las entradas como dataset con
            batch_size y num_workers; procesa un lote por llamada en lugar de una muestra cada vez; usa el
            procesador rápido basado en torchvision donde el modelo lo tenga (use_fast=True), que también puede
            correr en la GPU (device='cuda'). Compilar o capturar el modelo en un grafo no ayuda aquí.
       *[no] Saca el trabajo del paso: hazlo en la GPU con ops de torch sobre el lote entero, en un DataLoader
            con workers (num_workers>0, pin_memory=True) para que se solape con la GPU, o una vez antes del
            bucle (un dataset ya preprocesado y tokenizado). Compilar o capturar el paso en un grafo no ayuda
            aquí.
    }
fix = { $preprocess ->
    [yes] { $who } ejecuta el preprocesado de Hugging Face { $pre_us } por paso con la GPU ociosa: llévalo a
        workers del DataLoader, un lote por llamada, o usa el procesador rápido
   *[no] el host trabaja { $idle_us } por paso fuera de las ops de torch { where }: llévalo a la GPU o a
        workers del DataLoader
  }
basis = los tramos de trabajo del host quitados del paso
stretch = { $dur_us } de trabajo del host, la GPU ociosa { $idle_us }{ $has_frame ->
    [yes] , en { $frame }
   *[no] {""}
  }
