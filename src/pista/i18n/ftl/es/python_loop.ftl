## python-loop: en español
title = Un bucle de Python ejecuta las mismas ops una vez por muestra o por modelo

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Un bucle de Python en el paso que ejecuta las mismas ops una vez por muestra o una vez por modelo: las ops
    de primer nivel del paso se repiten como un bloque muchas veces seguidas. Se distinguen dos clases por lo
    que muestra la traza:
    - **por muestra**: cada pasada empieza indexando un elemento del lote (`aten::select`/`aten::slice`/
      `aten::narrow`, de `x[i]` o `x[i:i+1]`), o un `aten::unbind` llega justo antes de la primera pasada
      (`for fila in x`): una pérdida, una métrica o un aumento de datos calculados muestra a muestra;
    - **por modelo**: los resultados de las pasadas se juntan con `aten::stack`/`aten::cat` (`torch.stack([m(x)
      for m in models])`): un ensemble, o varias cabezas, ejecutados uno tras otro.
    Las capas de un modelo también se repiten, pero ni empiezan con un índice ni acaban en un stack: son la
    estructura del modelo, no un bucle que quitar (los bloques de healthy_gpt_bf16 no dan nada).

    Por qué:
    Cada pasada despacha de nuevo cada op: ~5-20 µs de host por op y un kernel pequeño cada una, así que la GPU
    espera al host (launch-bound y overhead-bound son los síntomas de este bucle). Una llamada por lotes hace
    el mismo trabajo en un despacho y unos pocos kernels que usan la GPU entera.

    Ejemplo:
    savings/h100/loop_per_sample_loss: una pérdida ponderada sumada muestra a muestra en un lote de 32 (`loss =
    loss + w[i] * F.cross_entropy(logits[i:i+1], y[i:i+1])`): 32 pasadas de select, slice, slice,
    cross_entropy, mul, add por paso; el gemelo con `cross_entropy(reduction="none")` es un 84% más rápido sin
    profiler. savings/h100/loop_ensemble: 16 MLPs ejecutados uno a uno y apilados; `torch.func.
    stack_module_state` + `torch.vmap` es un 74% más rápido.

    Impacto:
    El paso reproducido con una sola pasada, por lotes: el tiempo de host de las demás pasadas desaparece (sus
    ops, el Python entre ellas) con sus nodos del backward; los kernels de la pasada que queda crecen con el
    trabajo de las demás, menos el coste fijo de un kernel pequeño por pasada (KERNEL_FLOOR_NS).

    Solución:
    Por muestra: llama a la op sobre el lote entero (`F.cross_entropy(logits, y, reduction="none")` y después
    pondera, enmascara o reduce; `torch.vmap` para una función escrita por muestra). Por modelo: apila los pesos
    de los modelos y aplica vmap a una llamada funcional (`params, buffers = torch.func.stack_module_state(
    models)`, `torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0,
    None))`), o un módulo con una dimensión de modelos (`torch.bmm`, convoluciones agrupadas).

where = { $has_source ->
    [yes] {" "}en { $source }
   *[no] {""}
  }
message = El paso repite las mismas { $ops } op(s) ({ $block }) { $passes } veces seguidas{ where }, { $kind ->
        [sample] una vez por muestra (cada pasada empieza indexando un elemento del lote)
        [slices] una vez por trozo de un tensor partido antes del bucle (los resultados se apilan o concatenan)
       *[model] una vez por modelo (los resultados de las pasadas se apilan, concatenan o suman)
    }{ $has_others ->
        [no] {""}
       *[yes] , y { $others } bucle(s) más como este en el paso
    }: { $host_us } de tiempo de host por paso de la segunda pasada a la última; cada pasada despacha de nuevo cada
    op y lanza sus propios kernels pequeños.
advice = { $kind ->
    [sample] Llama a las ops una vez sobre el lote entero: { $example ->
            [loss] F.cross_entropy(logits, y, reduction='none') y después pondera, enmascara o reduce los valores por
                muestra
            [readback] reduce en la GPU y lee el resultado una sola vez (x.sum().item(), no una suma de x[i].item() o
                x[i].cpu()), o copia el tensor entero una vez (x.cpu(), x.tolist())
           *[other] pasa el lote entero (la op sobre x, no sobre x[i] en un bucle)
        }; torch.vmap para una función escrita por muestra. La llamada por lotes despacha una vez y lanza pocos
        kernels que llenan la GPU.
    [slices] Ejecuta las ops una vez sobre el tensor entero en lugar de sobre sus trozos: míralo con los trozos como
        dimensión inicial (x.view(k, ...), x.unflatten(...)) y llama a cada op una vez; las normalizaciones, softmax
        y las ops elemento a elemento actúan sobre las dimensiones finales, así que una llamada hace todos los
        trozos, y el stack tras el bucle sobra.
   *[model] Ejecuta los modelos en una sola llamada por lotes: params, buffers =
        torch.func.stack_module_state(models) y torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b),
        (x,)), in_dims=(0, 0, None)); o un módulo con una dimensión de modelos (torch.bmm, convoluciones agrupadas).
        Los CUDA graphs conservarían los kernels por modelo; agrupar los elimina.
  }
fix = un bucle de Python repite { $block } { $passes } veces por paso{ where }: { $kind ->
        [sample] { $example ->
            [readback] reduce en la GPU y lee el resultado una sola vez (x.sum().item())
           *[other] llámalas una vez sobre el lote entero
        }
        [slices] llámalas una vez sobre el tensor sin partir
       *[model] vmap de los modelos (torch.func.stack_module_state)
    }
basis = las pasadas del bucle tras la primera, eliminadas (tiempo de host, kernels, backward), la primera haciendo
    todo su trabajo
pass = pasada { $index } del bucle ({ $ops } op(s))
