## unfused-elementwise: en español
title = Cadenas de kernels elemento a elemento limitados por memoria, cada uno una pasada completa

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    Qué:
    Trabajo elemento a elemento que un kernel fusionado haría en una pasada, ejecutado como muchos kernels
    eager, cada uno una pasada por memoria. Dos formas:
    - Código escrito operación a operación (pista.rules._written_out): tramos de al menos 4 kernels eager de
      al menos 3 operaciones primitivas distintas (mul, add, pow, mean, rsqrt, cat, neg, silu,
      conversiones...) seguidos en un stream, como se ejecuta sin torch.compile una RMSNorm (pow, mean,
      rsqrt, mul), un embedding rotatorio (mul, neg, cat, add) o una compuerta SiLU con sus conversiones.
      Se informa donde los tramos ocupan el 10% del tiempo de GPU o más, nombrados por lo que calculan y por
      el nn.Module y la línea de código que los ejecutan (trazas con with_stack), junto a la parte de todos
      los kernels eager elemento a elemento, de reducción y de conversión. Las operaciones nativas fusionadas
      (layer_norm, gelu, softmax, una batch norm) ya son una pasada y no cuentan; la fórmula tanh de GELU es
      de tanh-gelu y las pasadas sobre las puntuaciones de una atención, de manual-attention.
    - Cadenas sobre tensores del mismo tamaño: kernels consecutivos en un stream (propósito "elementwise",
      nada entre ellos) cuyas operaciones reciben un primer tensor de la misma forma (`Input Dims`), cada uno
      moviendo sus bytes cerca del ancho de banda de la tarjeta (bytes = las entradas de tamaño completo más
      la salida, con el dtype de `Input type`).
    Los kernels que ya generó un compilador (Triton `triton_*`) y los que van bajo una región compilada
    quedan fuera.

    Por qué:
    Un kernel elemento a elemento sobre un tensor grande apenas calcula: su tiempo es una lectura y
    una escritura del tensor al ancho de banda de memoria. N operaciones así seguidas recorren los
    datos N veces donde un kernel fusionado (torch.compile) los recorre una. Una RMSNorm escrita a mano en
    fp32 son 8 pasadas (subir a fp32, cuadrado, media, suma, rsqrt, escala, bajar de tipo, peso) sobre una
    activación que F.rms_norm lee y escribe una vez.

    Ejemplo:
    tl_h100_qwen05 (TraceLens: el forward de Qwen1.5-0.5B, lote 16 x 559, bf16, H100): los kernels eager
    elemento a elemento, de reducción y de conversión ocupan 28.7 ms por paso (el 63% del tiempo de GPU);
    17.3 ms de ellos son código escrito a mano: el embedding rotatorio en Qwen2Attention
    (apply_rotary_pos_emb: mul > neg > cat > mul > add, q y k, y luego 3 copias) 9.06 ms, Qwen2RMSNorm
    (add > copy_ > pow > mean > add > rsqrt > mul > copy_ > mul) 8.25 ms. El mismo modelo (sus formas,
    pesos aleatorios) medido en una H100 (torch 2.11): 29.9 ms eager, 23.0 ms con F.rms_norm en
    Qwen2RMSNorm, 18.2 ms con torch.compile.
    gpu/elementwise_chain en una H200: seis operaciones eager (mul, add, relu, mul, sigmoid, sub) sobre
    un tensor fp32 de 64 Mi, 126-187 µs cada una a 4.1-4.3 TB/s (los 4.27 medidos de la tarjeta),
    825 µs por paso. gpu/elementwise_compiled ejecuta la misma cadena con torch.compile como un solo
    kernel `triton_poi_fused_add_mul_relu_sigmoid_sub_0` de 127 µs.

    Impacto:
    Por paso: para cada tramo escrito a mano, su tiempo de kernel menos una pasada fusionada (una lectura y
    una escritura de su tensor más grande al ancho de banda de la tarjeta, y nunca menos que su kernel más
    largo, que ya hace una pasada así; el motor reproduce los kernels del tramo encogidos hasta eso, no
    quitados); para cada cadena, (N-1)/N de su tiempo, las pasadas que ahorra fusionar, una cota superior
    (el kernel fusionado aún lee cada entrada distinta una vez). tl_h100_qwen05: 17.3 ms de tramos
    fusionados en 2.62 ms, 14.4 ms por paso (29.7%) previstos sin el profiler, frente a 11.7 ms (39%)
    medidos en su gemelo de H100 de arriba. savings/h100/elementwise_rmsnorm (RMSNorm y SwiGLU al estilo
    Llama escritas a mano, 4 bloques, H100): 39.9% medido con torch.compile; la estimación propia de la
    regla, 29.0%. gpu/elementwise_chain 687 µs (el 77.9% del paso, que dura su trabajo de GPU); las
    parejas suma residual + ReLU (forward) y add_ + threshold_backward (backward) de gpu/resnet50_bf16
    1.78 ms (5.5%). Nueva en el issue 15; los tramos escritos a mano, en el issue 35.

    Solución:
    Compila con `torch.compile` el modelo, o la función (o el módulo) que contiene el tramo o la cadena. Sin
    compilar, la operación fusionada donde la hay: `F.rms_norm` / `nn.RMSNorm` para una RMSNorm (la de Liger
    Kernel en un modelo de transformers), un kernel rotatorio fusionado (`apply_rotary_emb` de flash_attn),
    una SwiGLU fusionada sin idas y vueltas de .float()/.to(); a mano, junta las operaciones escalares en
    una (`torch.addcmul`; las operaciones in-place no ayudan: cada una sigue siendo una pasada) o escribe un
    solo kernel (Triton).

ceiling-text = { $ceiling_tbps } TB/s, { $ceiling_source ->
    [measured] medido en la { $card }
    [datasheet] estimado para la { $card }
   *[trace] el mejor de esta traza
  }
chain-item = { $kernels } kernels ({ $ops }) sobre { $shape } { $dtype }, { $count }x en la ventana: { $us } por paso
    a { $tbps } TB/s
idiom-name = { $idiom ->
    [rmsnorm] RMSNorm
    [layernorm] LayerNorm
    [rotary] embedding rotatorio
    [gate] activación con compuerta
   *[other] código elemento a elemento
  }
where-text = { $where ->
    [both] {" "}en { $module } ({ $frame })
    [one] {" "}en { $where_one }
   *[none] {""}
  }
run-item = { idiom-name }{ where-text }: { $ops }, { $count }x en la ventana, { $us } por paso
fused-op-item = { $idiom ->
    [rmsnorm] F.rms_norm(x, (d,), weight, eps) o nn.RMSNorm para la RMSNorm (un kernel de RMSNorm fusionado, como el
        de Liger Kernel, en un modelo de transformers)
    [layernorm] F.layer_norm o nn.LayerNorm para la LayerNorm
    [rotary] un kernel rotatorio fusionado para el embedding rotatorio (flash_attn.layers.rotary.apply_rotary_emb,
        liger_rotary_pos_emb de Liger Kernel)
   *[gate] un kernel SwiGLU/GeGLU fusionado para la activación con compuerta, sin ida y vuelta de .float()/.to() a
        su alrededor
  }
message = { $form ->
    [written] Los kernels eager elemento a elemento, de reducción y de conversión de tipo ocupan { $eager_us } por
        paso (el { $eager_share }% del tiempo de GPU); { $runs_us } de ellos (el { $runs_share }%) son código escrito
        operación a operación, cada operación una pasada por memoria: { $runs }.{ $has_chains ->
            [yes] {" "}Además, cadenas de la misma forma en otros sitios: { $chains }.
           *[no] {""}
        } Fusionado, cada tramo es más o menos una pasada sobre su tensor más grande ({ ceiling-text }):
        { $fused_us } en lugar de { $runs_us }, unos { $saving_us } menos por paso, el { $step_share }% del paso.
   *[chains] { $chains }. Cada kernel va cerca del ancho de banda de memoria ({ ceiling-text }), así que cada uno
        es una pasada más sobre el tensor: { $kernels } kernels ocupan { $chain_us } por paso (el { $gpu_share }% del
        tiempo de GPU); un kernel fusionado por cadena ahorraría unos { $saving_us }, el { $step_share }% del paso.
  }
advice = { $form ->
    [written] Compila el modelo con torch.compile{ $has_modules ->
            [yes] {" "}(o los módulos nombrados: { $modules })
           *[no] {""}
        }: Inductor convierte cada tramo en un kernel que lee sus entradas una vez y escribe su resultado una vez;
        las variantes in-place no ayudan (cada una sigue siendo una pasada).{ $has_fused ->
            [yes] {" "}Sin compilar, las operaciones fusionadas: { $fused_ops }.
           *[no] {" "}Sin compilar, un kernel Triton escrito a mano hace lo mismo.
        }
   *[chains] { $gelu ->
            [yes] El { $gelu_share }% es la fórmula tanh de GELU escrita a mano (aten::pow, aten::tanh...):
                F.gelu(x, approximate='tanh') es un kernel hacia delante y uno hacia atrás (transformers:
                activation_function='gelu_pytorch_tanh').{" "}
           *[no] {""}
        }Fusiona la cadena ({ $chain_ops }): compila con torch.compile la función o el módulo que la ejecuta, para
        que Inductor genere un kernel que lea las entradas una vez y escriba el resultado una vez; las variantes
        in-place no ayudan (cada una sigue siendo una pasada). Sin compilar, un kernel Triton escrito a mano hace lo
        mismo.
  }
fix = { $form ->
    [written] { $runs_us } por paso de código elemento a elemento escrito operación a operación ({ idiom-name }{ where-text } el
        primero): compílalo con torch.compile{ $idiom ->
            [rmsnorm] , o F.rms_norm(x, (d,), weight, eps) o nn.RMSNorm
            [layernorm] , o F.layer_norm o nn.LayerNorm
            [rotary] , o un kernel rotatorio fusionado
            [gate] , o un kernel SwiGLU/GeGLU fusionado
           *[other] {""}
        }
   *[chains] { $first_kernels } kernels elemento a elemento seguidos ({ $first_ops }) ocupan { $first_us } por paso al
        límite del ancho de banda: compílalos con torch.compile en un solo kernel
  }
basis = { $form ->
    [written] por cada tramo escrito operación a operación, su tiempo de kernel menos una pasada fusionada (una
        lectura y una escritura de su tensor más grande a { ceiling-text }, y nunca menos que su kernel más largo),
        por paso{ $has_chains ->
            [yes] ; más (N-1)/N de cada cadena de la misma forma fuera de ellos
           *[no] {""}
        }
   *[chains] (N-1)/N del tiempo de kernel de cada cadena por paso, las pasadas que ahorra un kernel fusionado (cota
        superior)
  }
run-kernel = { $position } de { $length } en un tramo escrito operación a operación ({ idiom-name }), lanzado por
    { $op }
chain-kernel = { $position } de { $length } en una cadena, lanzado por { $op }, { $tbps } TB/s
