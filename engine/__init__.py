"""timely-frontier: exact progress tracking for timely dataflow.

The semantics layer: timestamps and their order, path summaries, antichains, the graph
builder, the path-summary closure ``Psi``, and three trackers that agree by construction
and by test -- the reference (implied frontiers from ``Psi``), timely-style local
propagation, and Naiad's occurrence/precursor counts. Above them, the operator-facing
interface (``engine.operate.dataflow``): ``Operate`` descriptions, nested ``Scope``s and progress
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

from engine.core.antichain import SummaryAntichain, frontier
from engine.batched.backend import Backend, make_tracker, resolve_backend
from engine.batched.tracker import BatchedTracker, Strategy
from engine.core.closure import closure, closure_row, could_result_in
from engine.core.counts import FrontierChange, PointstampCounts
from engine.exchange.simulation import Exchange
from engine.errors import *  # noqa: F401,F403 -- the named exceptions are part of the public API
from engine.errors import __all__ as _errors_all
from engine.core.graph import Edge, Graph, GraphBuilder, Location, PortKind
from engine.trackers.naiad import NaiadTracker
from engine.operate.dataflow import BOUNDARY, Dataflow, DataflowTracker, Operate, Scope
from engine.trackers.propagation import PropagationTracker
from engine.batched.psi import PsiArrays, compute_psi
from engine.trackers.reference import ImpliedFrontierTracker, implied_frontier
from engine.operate.report import Ports, Report, ReportKind
from engine.core.summary import Summary
from engine.core.timestamp import MAX_COORD, check_timestamp
from engine.trackers.base import FrontierTracker
from engine.core.workload import Workload, parse_workload, read_workload

__version__ = "0.1.0"

__all__ = [
    "BOUNDARY", "Backend", "BatchedTracker", "Dataflow", "DataflowTracker", "Edge", "Exchange",
    "FrontierChange", "FrontierTracker", "Graph", "GraphBuilder", "ImpliedFrontierTracker",
    "Location", "MAX_COORD", "NaiadTracker", "Operate", "PointstampCounts", "PortKind", "Ports",
    "PropagationTracker", "PsiArrays", "Report", "ReportKind", "Scope", "Strategy", "Summary",
    "SummaryAntichain", "Workload", "check_timestamp", "closure", "closure_row", "compute_psi",
    "could_result_in", "frontier", "implied_frontier", "make_tracker", "parse_workload",
    "read_workload", "resolve_backend",
    *_errors_all,
]
