"""A progress log of the WCC protocol without Spark: the job's delta batches, applied to a real
frontier service in the order the driver applies them, recorded by the real recorder.

Epoch ``e`` has ``iterations[e]`` loop iterations; messages shrink as the loop converges.
"""

from spark_plugin.jobs.progress_log import ProgressRecorder
from spark_plugin.schema import delta_table
from spark_plugin.service.frontier_service import FrontierService
from spark_plugin.jobs.wcc.job import EpochSummary, wcc_graph


class WccProtocol:
    """Drives a :class:`FrontierService` on :func:`wcc_graph` like ``run_wcc`` does; every
    ``apply`` result is kept (``results``) as the oracle of the recorded changes."""

    def __init__(self, path=None, partitions=2):
        self.wg = wcc_graph()
        self.svc = FrontierService(self.wg.graph, backend="reference", strict=True)
        self.rec = ProgressRecorder(None, path, graph=self.wg.graph, job="wcc",
                                    meta={"edges": "simulated"})
        self.rec.attach(self.svc)
        self.results = []
        self.seq = {"wcc-driver": 0, "wcc-output": 0}
        self.stage = 0
        self.P = partitions

    def driver(self, rows, producer="wcc-driver"):
        self.rec.tag(producer, self.seq[producer])
        self._apply(rows, producer, self.seq[producer])
        self.seq[producer] += 1

    def tasks(self, step, e, it, rows):
        """One stage: producer ``wcc-0`` sends ``rows``, the others their markers."""
        self.rec.step(step, e, it, self.stage)
        self._apply(rows, "wcc-0", self.stage)
        for p in range(1, self.P):
            self._apply([(0, (0, 0), 0)], f"wcc-{p}", self.stage)
        self.stage += 1

    def _apply(self, rows, producer, seq):
        self.results.append(self.svc.apply(delta_table(
            [r[0] for r in rows], [list(r[1]) for r in rows], [r[2] for r in rows], producer,
            seq)))

    def run(self, iterations=(3, 2), edges=100):
        wg = self.wg
        self.driver([(wg.a_out, (0, 0), 1)])
        for e, its in enumerate(iterations):
            more = e + 1 < len(iterations)
            self.rec.step("read", e, 0)
            rows = [(wg.b_in1, (e, 0), edges), (wg.s_out1, (e, 0), 1), (wg.a_out, (e, 0), -1)]
            self.driver(rows + ([(wg.a_out, (e + 1, 0), 1)] if more else []))
            n = edges
            self.tasks("contract", e, 0, [(wg.b_in1, (e, 0), -edges), (wg.s_in0, (e, 0), n)])
            for it in range(its):
                new = n // 2 if it + 1 < its else 0
                self.tasks("small-star", e, it, [(wg.s_in0, (e, it), -n)]
                           + ([(wg.b_in0, (e, it + 1), new)] if new else []))
                if not new:
                    break
                self.tasks("large-star", e, it + 1, [(wg.b_in0, (e, it + 1), -new),
                                                     (wg.s_in0, (e, it + 1), new)])
                n = new
            self.rec.step("output", e, its - 1)
            self.driver([(wg.d_in0, (e, its - 1), 1), (wg.s_out1, (e, 0), -1)])
            self.driver([(wg.d_in0, (e, its - 1), -1)], producer="wcc-output")
            self.rec.epoch(EpochSummary(e, 10 * (e + 1), edges * (e + 1), 3, its, 0.5))
        self.rec.close()
        return self


def simulated_log(path, iterations=(3, 2)) -> WccProtocol:
    """Write the progress log of a simulated two-epoch WCC run to ``path``."""
    return WccProtocol(path).run(iterations)
