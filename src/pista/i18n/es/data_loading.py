"""data-loading en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.data_loading import DataLoading, RegionNote

TITLE = "El paso espera sus datos: la carga corre en el proceso de entrenamiento"


def _where(r: DataLoading) -> str:
    if r.dataloader:
        return "el DataLoader, en el proceso de entrenamiento (num_workers=0)" if r.single_process else "el DataLoader"
    return f"'{r.region}'"


def message(r: DataLoading) -> str:
    text = f"Cada paso pasa {t(r.region_us_per_step)} de host en {_where(r)} antes de poder calcular"
    if r.per_sample:
        text += (f": {r.selects_per_step:.0f} aten::select y {r.stacks_per_step:.0f} aten::stack por paso, el lote "
                 "leído muestra a muestra (Dataset.__getitem__ por índice, luego default_collate)")
    return text + ". Sin una GPU con la que solaparse, cada µs de carga es un µs del paso."


def advice(r: DataLoading) -> str:
    if r.per_sample:
        return ("Lee lotes enteros: para un TensorDataset, DataLoader(ds, sampler=BatchSampler(RandomSampler(ds), "
                "batch_size, drop_last=True), batch_size=None), o indexa tú los tensores con una permutación: una "
                "operación de indexado por lote en lugar de una por muestra y un stack. Donde cada muestra necesita "
                "trabajo de verdad, num_workers>0 carga los lotes siguientes mientras corre el paso.")
    return ("Carga los lotes siguientes mientras corre el paso: num_workers>0 con persistent_workers=True (en núcleos "
            "que los hilos del paso dejen libres), y aligera o agrupa en lotes el trabajo por muestra.")


def fix(r: DataLoading) -> str:
    if r.per_sample:
        return (f"El DataLoader lee cada lote muestra a muestra ({r.selects_per_step:.0f} aten::select por paso): "
                "indexa lotes enteros (sampler=BatchSampler(...), batch_size=None).")
    return (f"{_where(r)[0].upper() + _where(r)[1:]} ocupa {t(r.region_us_per_step)} por paso: carga en procesos "
            "aparte (num_workers>0).")


def basis(r: DataLoading) -> str:
    return (f"el tiempo de host de las regiones de datos por paso, dividido por {r.host_inflation:.0f} por la "
            "inflación del tiempo de host que causa el profiler; una cota superior (el lote hay que construirlo igual)")


NOTES = {
    RegionNote: lambda n: (f"una llamada a una región de datos, {n.selects} aten::select en ella" if n.selects
                           else "una llamada a una región de datos"),
}


DOCS = """Qué:
Un paso solo de CPU que pasa buena parte de su tiempo consiguiendo sus datos: la región
`enumerate(DataLoader)#..._DataLoaderIter.__next__` que torch registra cada paso (o una región de
record_function con nombre de datos: `data`, `dataset`, `collate`, `prefetch`). Con
`_SingleProcessDataLoaderIter` (num_workers=0) la carga corre en el propio proceso de entrenamiento;
muchos `aten::select` y un `aten::stack` dentro significan que el lote se lee muestra a muestra
(`Dataset.__getitem__` por índice, luego `default_collate`).

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
y su gemelo gpu/data_loading_batched lo reproducen.

Impacto:
Por paso, el tiempo de host de las regiones de datos dividido por la inflación del tiempo de host que
causa el profiler (PROFILER_HOST_INFLATION: la carga son muchas operaciones diminutas, cada una
registrada); una cota superior, porque el lote hay que construirlo igual. many-calls deja a esta regla
las llamadas dentro de esas regiones. Calla con GPU (es de gpu-idle) y por debajo de WARNING_SHARE del
paso: unos pocos % de carga son trabajo normal.

Solución:
Lee lotes enteros: para un TensorDataset, `DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
batch_size, drop_last=True), batch_size=None)` o indexa los tensores directamente con una permutación;
para un Dataset con trabajo real por muestra, `num_workers>0` (y `persistent_workers=True`) carga los
lotes siguientes mientras corre el paso, en núcleos que los hilos del paso dejen libres."""
