## data-loading: en español
title = El paso espera sus datos: la carga corre en el proceso de entrenamiento

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un paso solo de CPU que pasa buena parte de su tiempo consiguiendo sus datos: la región
    `enumerate(DataLoader)#..._DataLoaderIter.__next__` que torch registra cada paso, en cualquier
    categoría (torch 1.8 la escribe como 'Operator'), o una región de record_function con nombre de datos
    en límites de palabra (`data_loading`, `## data_load ##`, `dataset`, `collate`, `prefetch`; no
    `DistributedDataParallel.forward` ni el `## sparse_data_dist ##` de TorchRec, su all-to-all). Con
    `_SingleProcessDataLoaderIter` (num_workers=0) la carga corre en el propio proceso de entrenamiento;
    muchos `aten::select` y un `aten::stack` dentro significan que el lote se lee muestra a muestra
    (`Dataset.__getitem__` por índice, luego `default_collate`). Sin región de datos: un paso que ejecuta
    cientos de ops antes de la primera capa de su modelo (una GEMM, convolución, atención, op recurrente o
    de embedding), en cada paso: el lote construido op a op en el paso, muy probablemente muestra a muestra
    (un bucle de Python de transformaciones por muestra, luego `torch.stack`).

    Por qué:
    Sin una GPU con la que solaparse, cada µs de carga es un µs del paso. Un TensorDataset leído índice a
    índice paga una operación de indexado por muestra y un stack por lote, donde indexar los tensores con
    todo el lote de índices es una sola operación. Con trabajo en la GPU ese mismo tiempo aparece como GPU
    inactiva, y lo señala gpu-idle.

    Ejemplo:
    El MLP tabular de una revisión experta (TensorDataset de 200k x 64, lote 256, Adam, un hilo, esta VM):
    la región del DataLoader ocupaba 1.75 ms de un paso perfilado de 6.7 ms, 512 aten::select y 2
    aten::stack por paso; leer lotes enteros (`sampler=BatchSampler(RandomSampler(ds), 256)`,
    `batch_size=None`) ahorró 0.62 ms de 3.91 ms por paso sin profiler (15.8%). gpu/data_loading_per_sample
    y su gemelo gpu/data_loading_batched lo reproducen. gpu/input_prep_per_sample (una CNN sobre imágenes de
    32x32 con lote 64, cada imagen rellenada, recortada, volteada, escalada y normalizada por separado): 865
    ops por paso en 7.5 ms antes de su primer aten::conv2d; transformar el lote entero de una vez
    (gpu/input_prep_batched, 18 ops) ahorró 3.38 de 39.7 ms por paso sin profiler; el cnn_peraug de una
    revisión experta, 1187 ops, 5.6 ms estimados, 5.2 ms medidos.

    Impacto:
    Por paso, el tiempo de host de las regiones de datos (sin ellas, el tiempo desde el inicio del paso hasta
    la primera capa del modelo) dividido por la inflación del tiempo de host que
    causa el profiler (PROFILER_HOST_INFLATION: la carga son muchas operaciones diminutas, cada una
    registrada); una cota superior, porque el lote hay que construirlo igual. many-calls deja a esta regla
    las llamadas dentro de esas regiones. Calla con GPU (es de gpu-idle) y por debajo de WARNING_SHARE del
    paso: unos pocos % de carga son trabajo normal.

    Solución:
    Lee lotes enteros: para un TensorDataset, `DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
    batch_size, drop_last=True), batch_size=None)` o indexa los tensores directamente con una permutación;
    para un Dataset con trabajo real por muestra, `num_workers>0` (y `persistent_workers=True`) carga los
    lotes siguientes mientras corre el paso, en núcleos que los hilos del paso dejen libres.

where = { $where ->
    [single] el DataLoader, en el proceso de entrenamiento (num_workers=0)
    [workers] el DataLoader
   *[region] '{ $region }'
  }
Where = { $where ->
    [single] El DataLoader, en el proceso de entrenamiento (num_workers=0)
    [workers] El DataLoader
   *[region] '{ $region }'
  }
message = { $form ->
    [prep] Cada paso ejecuta { $ops } ops ({ $top_ops }...) en { $prep_us } antes de la primera capa de su modelo
        ({ $first_compute }), fuera de cualquier DataLoader: el lote se construye op a op dentro del paso, muy
        probablemente muestra a muestra (un bucle de Python de transformaciones por muestra, luego un stack). Sin
        una GPU con la que solaparse, cada µs de ello es un µs del paso.
   *[loading] Cada paso pasa { $region_us } de host en { where } antes de poder calcular{ $per_sample ->
            [yes] : { $selects } aten::select y { $stacks } aten::stack por paso, el lote leído muestra a muestra
                (Dataset.__getitem__ por índice, luego default_collate)
           *[no] {""}
        }. Sin una GPU con la que solaparse, cada µs de carga es un µs del paso.
  }
advice = { $form ->
    [prep] Transforma el lote entero de una vez (un pad, recorte, volteo y normalización sobre un tensor
        N,C,H,W: torchvision.transforms.v2 acepta lotes) en lugar de muestra a muestra, o lleva el trabajo por
        muestra al __getitem__ de un Dataset y carga con DataLoader(num_workers>0), para que corra junto al
        paso.
   *[loading] { $per_sample ->
        [yes] Lee lotes enteros: para un TensorDataset, DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
            batch_size, drop_last=True), batch_size=None), o indexa tú los tensores con una permutación: una
            operación de indexado por lote en lugar de una por muestra y un stack. Donde cada muestra necesita
            trabajo de verdad, num_workers>0 carga los lotes siguientes mientras corre el paso.
       *[no] { $where ->
            [workers] El DataLoader ya carga en procesos aparte y el paso aún lo espera: los workers son más
                lentos que el paso. Dales más (num_workers hasta los núcleos libres, prefetch_factor), comprueba
                que los hilos del paso no les quitan núcleos (torch.set_num_threads), y abarata cada muestra
                (decodifica en la GPU, guarda los datos decodificados, transformaciones por lotes).
           *[other] Carga los lotes siguientes mientras corre el paso: num_workers>0 con persistent_workers=True
                (en núcleos que los hilos del paso dejen libres), y aligera o agrupa en lotes el trabajo por
                muestra.
        }
    }
  }
fix = { $form ->
    [prep] El paso construye su lote en { $ops } ops antes de { $first_compute }: transforma el lote entero de
        una vez, o lleva el trabajo por muestra a procesos del DataLoader.
   *[loading] { $per_sample ->
        [yes] El DataLoader lee cada lote muestra a muestra ({ $selects } aten::select por paso): indexa lotes
            enteros (sampler=BatchSampler(...), batch_size=None).
       *[no] { $where ->
            [workers] { Where } ocupa { $region_us } por paso aunque tiene workers: más workers, o muestras más
                baratas.
           *[other] { Where } ocupa { $region_us } por paso: carga en procesos aparte (num_workers>0).
        }
    }
  }
basis = { $form ->
    [prep] el tiempo de host desde el inicio de cada paso hasta la primera capa de su modelo, dividido por
        { $inflation } por la inflación del tiempo de host que causa el profiler; una cota superior (el lote hay
        que construirlo igual)
   *[loading] el tiempo de host de las regiones de datos por paso, dividido por { $inflation } por la inflación
        del tiempo de host que causa el profiler; una cota superior (el lote hay que construirlo igual)
  }
prep-note = { $first_layer ->
    [yes] la primera capa del modelo, tras { $ops } ops que construyen el lote
   *[no] la primera de { $ops } ops que construyen el lote
  }
region-note = { $has_selects ->
    [yes] una llamada a una región de datos, { $selects } aten::select en ella
   *[no] una llamada a una región de datos
  }
