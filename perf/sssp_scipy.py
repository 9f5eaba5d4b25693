"""The reference of issue 33 item 4: BFS levels from one source with pyarrow and scipy, as a
user would script them -- the script ``tfront sssp`` on the driver is measured against
(``python -m perf.bench_sssp --vs-scipy``).

::

    python perf/sssp_scipy.py EDGES.txt SOURCE [--digest]

Reads a SNAP-style text edge file (``#`` header lines, then ``src<TAB>dst`` or ``src dst``)
with ``pyarrow.csv`` (threads on), builds the CSR matrix (``scipy.sparse.csr_matrix``
of ones, ``n = max id + 1``; duplicate edges summed, then every stored entry set back to one
hop) and runs ``scipy.sparse.csgraph.dijkstra(directed=True, indices=SOURCE,
unweighted=True)``. Prints one line ``SSSP_SCIPY {json}``: ``read_s``, ``csr_s``,
``dijkstra_s``, ``imports_s``, ``reached`` and the farthest level; with ``--digest`` also
``dist_sum`` and the SHA-256 of the sorted ``(vertex, distance)`` int64 pairs
(:func:`perf.bench_sssp.fingerprint`), after the timed part.

It imports nothing of this repository (its interpreter start and imports are its own), so
its whole-process time is what such a script costs.
"""

import json
import sys
import time

T0 = time.perf_counter()

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pcsv  # noqa: E402
from scipy.sparse import csr_matrix  # noqa: E402
from scipy.sparse.csgraph import dijkstra  # noqa: E402

MARK = "SSSP_SCIPY "


def main(argv) -> int:
    path, source, digest = argv[0], int(argv[1]), "--digest" in argv[2:]
    t_imports = time.perf_counter()
    skip = 0
    with open(path, "rb") as f:   # the SNAP header: '#' lines
        for line in f:
            if not line.startswith(b"#"):
                sep = "\t" if b"\t" in line else " "
                break
            skip += 1
        else:
            sep = "\t"
    t = pcsv.read_csv(
        path, read_options=pcsv.ReadOptions(column_names=["src", "dst"], skip_rows=skip),
        parse_options=pcsv.ParseOptions(delimiter=sep),
        convert_options=pcsv.ConvertOptions(column_types={"src": pa.int64(),
                                                          "dst": pa.int64()}))
    src = t.column("src").combine_chunks().to_numpy()
    dst = t.column("dst").combine_chunks().to_numpy()
    t_read = time.perf_counter()
    n = int(max(src.max(), dst.max(), source)) + 1
    mat = csr_matrix((np.ones(len(src), np.float64), (src, dst)), shape=(n, n))
    mat.data[:] = 1.0
    t_csr = time.perf_counter()
    d = dijkstra(mat, directed=True, indices=source, unweighted=True)
    t_dij = time.perf_counter()
    reached = np.flatnonzero(np.isfinite(d))
    rec = {"imports_s": t_imports - T0, "read_s": t_read - t_imports, "csr_s": t_csr - t_read,
           "dijkstra_s": t_dij - t_csr, "edges": int(len(src)), "reached": int(len(reached)),
           "dist_max": int(d[reached].max()) if len(reached) else 0}
    if digest:
        import hashlib

        dist = d[reached].astype(np.int64)
        pairs = np.stack([reached.astype(np.int64), dist], axis=1)
        rec.update(dist_sum=int(dist.sum()),
                   digest=hashlib.sha256(np.ascontiguousarray(pairs).tobytes()).hexdigest())
    print(MARK + json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
