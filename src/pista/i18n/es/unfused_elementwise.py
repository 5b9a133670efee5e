"""unfused-elementwise en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.unfused_elementwise import GELU_SHARE, Chain, ChainKernel, UnfusedElementwise

TITLE = "Cadenas de kernels elemento a elemento limitados por memoria, cada uno una pasada completa"

_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}


def _chain(c: Chain) -> str:
    ops = " > ".join(o.removeprefix("aten::") for o in c.ops)
    shape = "x".join(map(str, c.shape))
    return (f"{len(c.ops)} kernels ({ops}) sobre {shape} {_DTYPE.get(c.dtype, c.dtype)}, {c.count}x en la ventana: "
            f"{t(c.us)} por paso a {c.tbps:.2f} TB/s")


def _ceiling(r: UnfusedElementwise) -> str:
    where = {"measured": f"medido en la {r.card}", "datasheet": f"estimado para la {r.card}",
             "trace": "el mejor de esta traza"}[r.ceiling_source]
    return f"{r.ceiling_tbps:.2f} TB/s, {where}"


def message(r: UnfusedElementwise) -> str:
    return (f"{'; '.join(_chain(c) for c in r.chains)}. Cada kernel va cerca del ancho de banda de memoria "
            f"({_ceiling(r)}), así que cada uno es una pasada más sobre el tensor: {r.kernels_per_step:.0f} kernels "
            f"ocupan {t(r.chain_us)} por paso (el {r.gpu_share_percent:.1f}% del tiempo de GPU); un kernel fusionado "
            f"por cadena ahorraría unos {t(r.saving_us)}, el {r.step_share_percent:.1f}% del paso.")


def _gelu(r: UnfusedElementwise) -> str:
    if r.tanh_gelu_percent < GELU_SHARE:
        return ""
    return (f"El {r.tanh_gelu_percent:.0f}% es la fórmula tanh de GELU escrita a mano (aten::pow, aten::tanh...): "
            "F.gelu(x, approximate='tanh') es un kernel hacia delante y uno hacia atrás (transformers: "
            "activation_function='gelu_pytorch_tanh'). ")


def advice(r: UnfusedElementwise) -> str:
    c = r.chains[0]
    return _gelu(r) + (f"Fusiona la cadena ({' > '.join(c.ops)}): compila con torch.compile la función o el módulo que la "
            "ejecuta, para que Inductor genere un kernel que lea las entradas una vez y escriba el resultado una "
            "vez; las variantes in-place no ayudan (cada una sigue siendo una pasada). Sin compilar, un kernel "
            "Triton escrito a mano hace lo mismo.")


def fix(r: UnfusedElementwise) -> str:
    c = r.chains[0]
    return (f"{len(c.ops)} kernels elemento a elemento seguidos ({' > '.join(o.removeprefix('aten::') for o in c.ops)}) "
            f"ocupan {t(c.us)} por paso al límite del ancho de banda: compílalos con torch.compile en un solo kernel")


def basis(r: UnfusedElementwise) -> str:
    return ("(N-1)/N del tiempo de kernel de cada cadena por paso, las pasadas que ahorra un kernel fusionado (cota "
            "superior)")


NOTES = {
    ChainKernel: lambda n: f"{n.position} de {n.length} en una cadena, lanzado por {n.op}, {n.tbps:.2f} TB/s",
}

DOCS = """Qué:
Cadenas de kernels elemento a elemento limitados por memoria sobre tensores del mismo tamaño:
kernels consecutivos en un stream (propósito "elementwise", nada entre ellos) cuyas operaciones
reciben un primer tensor de la misma forma (`Input Dims`), cada uno moviendo sus bytes cerca del
ancho de banda de la tarjeta (bytes = las entradas de tamaño completo más la salida, con el dtype
de `Input type`). Los kernels que ya generó un compilador (Triton `triton_*`) quedan fuera.

Por qué:
Un kernel elemento a elemento sobre un tensor grande apenas calcula: su tiempo es una lectura y
una escritura del tensor al ancho de banda de memoria. N operaciones así seguidas recorren los
datos N veces donde un kernel fusionado (torch.compile) los recorre una.

Ejemplo:
gpu/elementwise_chain en una H200: seis operaciones eager (mul, add, relu, mul, sigmoid, sub) sobre
un tensor fp32 de 64 Mi, 126-187 µs cada una a 4.1-4.3 TB/s (los 4.27 medidos de la tarjeta),
825 µs por paso. gpu/elementwise_compiled ejecuta la misma cadena con torch.compile como un solo
kernel `triton_poi_fused_add_mul_relu_sigmoid_sub_0` de 127 µs.

Impacto:
Por paso: (N-1)/N del tiempo de cada cadena, las pasadas que ahorra fusionar, una cota superior (el
kernel fusionado aún lee cada entrada distinta una vez). gpu/elementwise_chain 687 µs (el 77.9% del
paso, que dura su trabajo de GPU); las parejas suma residual + ReLU (forward) y add_ +
threshold_backward (backward) de gpu/resnet50_bf16 1.78 ms (5.5%). Nueva en el issue 15.

Solución:
Compila con `torch.compile` la función (o el módulo) que contiene la cadena; a mano, junta las
operaciones escalares en una (`torch.addcmul`; las operaciones in-place no ayudan: cada una sigue
siendo una pasada) o escribe un solo kernel (Triton)."""
