"""The fan-in graph and batches of the closure gather's witness rule (issue 10, item 1) and of
its only-producer refinement (issue 24, item 4), shared by its cpu test and its simulator
test."""

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
    in full); then (0,0) leaves ``c``: the only witness of I(b), an orphan (b in full)."""
    return [([a, a, c], [(0, 5), (5, 0), (0, 0)], [1, 1, 1]),
            ([a], [(0, 5)], [-1]),
            ([c], [(0, 0)], [-1])]


def unchanged_producer_batches(a, c):
    """F(a) = F(c) = {(0,0)}: I(b) = {(0,0)}. Then (0,0) leaves ``c``: a withdrawn witness of
    I(b), but the unchanged ``a`` still produces (0,0) -- b updates incrementally (the rule
    before recomputed it in full); ``c`` itself loses its only producer (full)."""
    return [([a, c], [(0, 0), (0, 0)], [1, 1]),
            ([c], [(0, 0)], [-1])]


def changed_producer_batches(a, c):
    """F(a) = {(0,5), (5,0)}, F(c) = {(1,1)}: I(b) = {(0,5), (1,1), (5,0)}. Then (1,1)
    leaves ``c`` (withdrawn: a witness of I(b)) while (1,0) joins ``a``: the changed ``a``'s
    new candidate (1,0) <= (1,1), so b updates incrementally, to {(0,5), (1,0)} (the rule
    before recomputed it in full); ``a`` grew (incremental), ``c`` is emptied (full)."""
    return [([a, a, c], [(0, 5), (5, 0), (1, 1)], [1, 1, 1]),
            ([c, a], [(1, 1), (1, 0)], [-1, 1])]


def two_hits_batches(a, c):
    """F(a) = F(c) = {(0,3), (3,0)}: I(b) = the same. Then both rows leave ``c``: two
    distinct withdrawn witnesses of I(b), both still produced by the unchanged ``a``: b
    updates incrementally if the vote's table holds two hit rows, in full with one."""
    return [([a, a, c, c], [(0, 3), (3, 0), (0, 3), (3, 0)], [1, 1, 1, 1]),
            ([c, c], [(0, 3), (3, 0)], [-1, -1])]
