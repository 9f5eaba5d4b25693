"""Fixtures of the FrontierService tests: the loop graph (``spark_cases.loop_graph``) and the
random delta rounds on it, each module naming its own count and seed as ``ROUNDS = (n, seed)``."""

import pytest

from spark_cases import loop_graph, random_rounds


@pytest.fixture(scope="module")
def graph():
    return loop_graph()


@pytest.fixture(scope="module")
def rounds(request, graph):
    n, seed = request.module.ROUNDS
    return random_rounds(graph, rounds=n, seed=seed)
