"""The fan-in graph and batches of the closure gather's witness rule (issue 10, item 1),
shared by its cpu test and its simulator test."""

from engine import GraphBuilder, Summary


def fan_in_graph():
    """m = 2, no counters: one operator whose inputs ``a`` and ``c`` both lead to its output
    ``b`` unchanged. Returns ``(graph, a, c, b)``."""
    g = GraphBuilder(m=2)
    op = g.add_operator(2, 1)
    g.add_summary(op, 0, 0, Summary.identity(0, 2))
    g.add_summary(op, 1, 0, Summary.identity(0, 2))
    graph = g.build()
    return graph, graph.target(op, 0), graph.target(op, 1), graph.source(op, 0)


def fan_in_batches(a, c):
    """F(a) = {(0,5), (5,0)}, F(c) = {(0,0)}: I(b) = {(0,0)}. Then (0,5) leaves ``a``: a
    retraction whose candidate at ``b`` is no witness (b updates incrementally, ``a`` itself
    in full); then (0,0) leaves ``c``: the only witness of I(b) (b in full)."""
    return [([a, a, c], [(0, 5), (5, 0), (0, 0)], [1, 1, 1]),
            ([a], [(0, 5)], [-1]),
            ([c], [(0, 0)], [-1])]
