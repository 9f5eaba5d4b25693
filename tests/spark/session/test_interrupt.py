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


def test_gh32_the_first_ctrl_c_calls_on_request_before_anything_else():
    """Issue 32 item 13: the JVM was hushed only once the main thread had unwound to the
    command's handler, so the daemon's broken-pipe tracebacks of the cancelled tasks could
    get through before; ``CtrlC(on_request=...)`` runs the hush in the signal handler
    itself, once, at the first Ctrl-C (``tfront wcc`` passes ``hush_jvm`` below ``-v``)."""
    import os
    import signal

    import pytest

    from spark_plugin.session import console
    from spark_plugin.session.interrupt import CtrlC

    calls = []
    with CtrlC(on_request=lambda: calls.append(console._HUSHED.is_set()) or
               console.hush_jvm()) as ctrl_c:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):   # the handler runs between bytecodes
                pass
        assert ctrl_c.requested and calls == [False] and console._HUSHED.is_set()
        ctrl_c.handled()
    console.hush_jvm(False)
