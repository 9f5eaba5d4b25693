"""Ctrl-C while a command drives Spark (spark_plugin.session.interrupt, issue 23 item 7):
:exc:`KeyboardInterrupt` is not raised inside a py4j call -- that breaks the connection and
py4j logs two tracebacks -- but at the first safe point after it; leaving the context
restores the handler found on entering it."""

import os
import signal
import threading
import types

import pytest

from spark_plugin.session.interrupt import CtrlC, in_py4j

# a function of a module named as py4j's are: what the main thread runs inside a py4j call
PY4J = types.ModuleType("py4j.blocked_call")
exec("def call(inside, release):\n"
     "    inside.set()\n"
     "    while not release.wait(0.01):\n"
     "        pass\n"
     "    return 'answered'\n", PY4J.__dict__)


def test_ctrl_c_inside_py4j_waits_for_the_call_to_return_gh23():
    previous = signal.getsignal(signal.SIGINT)
    inside, release = threading.Event(), threading.Event()
    with CtrlC() as ctrl_c:

        def press():   # Ctrl-C inside the call, which returns once the handler has seen it
            inside.wait()
            os.kill(os.getpid(), signal.SIGINT)
            while not ctrl_c.requested:
                threading.Event().wait(0.01)
            release.set()
        threading.Thread(target=press).start()
        answers = []
        with pytest.raises(KeyboardInterrupt):
            answers.append(PY4J.call(inside, release))   # not interrupted: it answers
            while True:                          # the next safe point raises
                threading.Event().wait(0.01)
        assert answers == ["answered"] and ctrl_c.requested and ctrl_c.raised
        ctrl_c.handled()
    assert signal.getsignal(signal.SIGINT) is previous


def test_in_py4j_sees_the_whole_stack():
    seen = []
    PY4J.__dict__["probe"] = lambda: seen.append(in_py4j(__import__("sys")._getframe()))
    exec("def outer():\n    probe()\n", PY4J.__dict__)
    PY4J.outer()
    seen.append(in_py4j(__import__("sys")._getframe()))
    assert seen == [True, False]
