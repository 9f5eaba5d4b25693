"""timely-frontier: exact progress tracking for timely dataflow.

The semantics layer: timestamps and their order, path summaries, antichains, the graph
builder, the path-summary closure ``Psi``, and three trackers that agree by construction
and by test -- the reference (implied frontiers from ``Psi``), timely-style local
propagation, and Naiad's occurrence/precursor counts. Above them, the operator-facing
interface (``engine.operate``): ``Operate`` descriptions, nested ``Scope``s and progress
``Report``s in the operators' words (docs/operate.md). See ``docs/semantics.md`` for the definitions.

>>> import engine
>>> b = engine.GraphBuilder(m=1)
>>> src = b.add_operator(0, 1, depth=1)
>>> dst = b.add_operator(1, 0, depth=1)
>>> b.connect(src, 0, dst, 0)
>>> tracker = engine.make_tracker(b.build())
>>> tracker.update([0], [(3, 0)], [1])
[FrontierChange(loc=0, ts=(3, 0), diff=1), FrontierChange(loc=1, ts=(3, 0), diff=1)]
"""

from .antichain import SummaryAntichain, frontier
from .backend import Backend, make_tracker, resolve_backend
from .batched import BatchedTracker, Strategy
from .closure import closure, closure_row, could_result_in
from .counts import FrontierChange, PointstampCounts
from .errors import *  # noqa: F401,F403 -- the named exceptions are part of the public API
from .errors import __all__ as _errors_all
from .graph import Edge, Graph, GraphBuilder, Location, PortKind
from .naiad import NaiadTracker
from .operate import BOUNDARY, Dataflow, DataflowTracker, Operate, Scope
from .propagation import PropagationTracker
from .psi import PsiArrays, compute_psi
from .reference import ImpliedFrontierTracker, implied_frontier
from .report import Ports, Report, ReportKind
from .summary import Summary
from .timestamp import MAX_COORD, check_timestamp
from .tracker import FrontierTracker
from .workload import Workload, parse_workload, read_workload

__version__ = "0.1.0"

__all__ = [
    "BOUNDARY", "Backend", "BatchedTracker", "Dataflow", "DataflowTracker", "Edge",
    "FrontierChange", "FrontierTracker", "Graph", "GraphBuilder", "ImpliedFrontierTracker",
    "Location", "MAX_COORD", "NaiadTracker", "Operate", "PointstampCounts", "PortKind", "Ports",
    "PropagationTracker", "PsiArrays", "Report", "ReportKind", "Scope", "Strategy", "Summary",
    "SummaryAntichain", "Workload", "check_timestamp", "closure", "closure_row", "compute_psi",
    "could_result_in", "frontier", "implied_frontier", "make_tracker", "parse_workload",
    "read_workload", "resolve_backend",
    *_errors_all,
]
