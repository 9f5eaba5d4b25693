"""``tfront rollback`` on hostile input (issue 23, items 4-6): every bad file is one line
``error: line N: ... (in FILE)`` with status 2 (format/rollback-v1, section 6) -- bytes that are not UTF-8,
numbers of thousands of digits, a problem too large to build (``--max-states``) -- and the
search over availability lists that are not closed under union is bounded: its output by
``--max-choices`` (the answer says ``cut``), its work by ``--max-search`` (a refusal); the
Python API (``solve``, ``solve_batched``) takes the same limits."""

from __future__ import annotations

import pytest

from engine.cli.main import main
from engine.errors import RollbackFormatError, RollbackLimitError
from engine.rollback.batched import solve_batched
from engine.rollback.format import MAX_STATES, format_answer, parse_rollback, read_rollback
from engine.rollback.problem import MAX_CHOICES, solve, within

HEAD = "timely-rollback v1\n"


def run(capsys, path, *options):
    """``tfront rollback PATH *options``: ``(status, stdout, stderr)``."""
    status = main(["rollback", str(path), *map(str, options)])
    out, err = capsys.readouterr()
    return status, out, err


def refused(capsys, path, line, what, *options):
    """The file is refused with one line naming it, the line and ``what``; nothing on stdout."""
    status, out, err = run(capsys, path, *options)
    assert status == 2 and out == "", (status, out, err)
    assert err.startswith(f"error: line {line}: ") and what in err and str(path) in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def chain(n: int) -> str:
    """A chain of ``n`` processors, each able to return to four incomparable frontiers of
    ``T = 4 x 4`` (and ``{}``): not closed under union, so the answer searches their
    combinations -- 5**n of them, and exponentially many maximal choices."""
    lines = [HEAD + "times 4 4"] + [f"node {p}" for p in range(n)] + ["in 0 0"]
    lines += [f"edge {p + 1} {p} {p + 1}" for p in range(n - 1)]
    lines += ["consumed 0 0 0"] + [f"consumed {p + 1} 0 0 1 1" for p in range(n - 1)]
    lines += [f"avail {p} {t}" for p in range(n) for t in ("0 3", "1 2", "2 1", "3 0")]
    return "\n".join(lines) + "\n"


# -- item 4: bytes and numbers -----------------------------------------------------------------

def test_gh23_bytes_that_are_not_utf8_name_their_line(tmp_path, capsys):
    path = tmp_path / "latin1.txt"
    path.write_bytes(HEAD.encode() + b"times 2 1\nnode 0\n# caf\xe9\nin 0 0\n")
    err = refused(capsys, path, 4, "not UTF-8 text: byte 0xe9 at column 6")
    with pytest.raises(RollbackFormatError) as info:
        read_rollback(path)
    assert (info.value.line, info.value.path) == (4, str(path))
    assert err == f"error: line 4: {info.value.reason} (in {path})\n"


@pytest.mark.parametrize(("body", "line"), [
    ("times 2 1\nnode 0\nin 0 0\nconsumed 0 12345678901234567890123456 0\n", 5),  # a time
    ("times 12345678901234567890123456 1\nnode 0\n", 2),                             # NE
    ("times 2 1\nnode 0\nin 0 " + "7" * 5_000_000 + "\n", 4),                         # a node
])
def test_gh23_numbers_of_many_digits_are_refused_at_their_line(tmp_path, capsys, body, line):
    path = tmp_path / "digits.txt"
    path.write_text(HEAD + body)
    err = refused(capsys, path, line, "digits; numbers have at most 18")
    assert len(err) < 400   # the number is not repeated whole


# -- item 5: the size of a problem -------------------------------------------------------------

def test_gh23_a_problem_too_large_is_refused_before_it_is_built(tmp_path, capsys):
    """``times 100000 100000`` in a four-line file tried to allocate 9.3 GiB: it is refused
    at its line, naming the limit and the option that raises it."""
    path = tmp_path / "huge.txt"
    path.write_text(HEAD + "times 100000 100000\nnode 0\nin 0 0\n")
    err = refused(capsys, path, 2, "10,000,000,000 (location, time) states")
    assert f"max_states = {MAX_STATES:,}" in err and "--max-states" in err


def test_gh23_the_size_limit_counts_nodes_and_internal_edges_and_can_be_raised(tmp_path, capsys):
    text = HEAD + "times 100 10\nnode 0\nnode 1\nin 0 0\nedge 1 0 1\nconsumed 0 0 0\n"
    path = tmp_path / "sized.txt"
    path.write_text(text)
    refused(capsys, path, 4, "2,000 (location, time) states", "--max-states", 1999)
    refused(capsys, path, 6, "3,000 (location, time) states", "--max-states", 2999)
    status, out, _ = run(capsys, path, "--max-states", 3000)
    assert status == 0 and "result ok" in out
    with pytest.raises(RollbackLimitError, match=r"line 6: edge 1: .*max_states = 2,999"):
        parse_rollback(text, max_states=2999)
    assert parse_rollback(text, max_states=3000).n == 2


# -- item 6: the search over lists not closed under union ---------------------------------------

def test_gh23_the_maximal_choices_listed_are_capped_and_the_answer_says_cut(tmp_path, capsys):
    """Twelve processors (5**12 combinations; 24 of them ran for over 15 minutes): the
    answer lists the first ``--max-choices`` maximal choices and says it was cut."""
    path = tmp_path / "chain12.txt"
    path.write_text(chain(12))
    status, out, err = run(capsys, path)
    assert status == 0
    lines = out.splitlines()
    assert lines[3:5] == [f"result nolargest {MAX_CHOICES}", "cut"]
    assert sum(x.startswith("choice ") for x in lines) == MAX_CHOICES
    assert err.startswith("tfront rollback: the answer was cut") and "--max-choices" in err
    status, out, _ = run(capsys, path, "--max-choices", 3)
    assert out.splitlines()[3:6] == ["result nolargest 3", "cut", "choice 1"]


def test_gh23_a_cut_answer_lists_maximal_choices_and_matches_the_api():
    """Five processors: 192 maximal choices. Cut at 10, the ten listed are among the 192
    (the search finds the largest first, so each is maximal when found); the reference and
    the batched solver give the same answer, and an uncut one lists all of them."""
    problem = parse_rollback(chain(5))
    full = solve(problem, max_choices=1000)
    assert full.result == "nolargest" and not full.cut and len(full.choices) == 192
    assert solve_batched(problem, max_choices=1000) == full
    cut = solve(problem, max_choices=10)
    assert cut.cut and len(cut.choices) == 10 and all(c in full.choices for c in cut.choices)
    assert solve_batched(problem, max_choices=10) == cut
    assert not any(all(within(x, y) for x, y in zip(a, b))
                   for a in cut.choices for b in cut.choices if a != b)
    assert "\nresult nolargest 10\ncut\nchoice 1\n" in format_answer(problem, cut)


def test_gh23_the_search_work_is_bounded(tmp_path, capsys):
    """``--max-search`` bounds the fixed points the search computes: past it, a refusal
    naming the limit, from the command line and from both solvers."""
    path = tmp_path / "chain24.txt"
    path.write_text(chain(24))
    status, out, err = run(capsys, path, "--max-search", 40)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"tfront rollback: error: {path}: the search over the availability "
                          f"lists that are not closed under union (24 processors")
    assert "max_search = 40 fixed points" in err and "--max-search" in err
    problem = parse_rollback(chain(24))
    for solver in (solve, solve_batched):
        with pytest.raises(RollbackLimitError, match="needs more than max_search = 40"):
            solver(problem, max_search=40)


@pytest.mark.parametrize("option", ["--max-choices", "--max-search", "--max-states"])
def test_gh23_limits_must_be_positive(tmp_path, capsys, option):
    path = tmp_path / "p.txt"
    path.write_text(HEAD + "times 2 1\nnode 0\n")
    with pytest.raises(SystemExit) as info:
        run(capsys, path, option, 0)
    assert info.value.code == 2 and "must be a positive integer" in capsys.readouterr().err
    with pytest.raises(ValueError, match="must be a positive integer"):
        solve(parse_rollback(HEAD + "times 2 1\nnode 0\n"), max_choices=0)


# -- issue 32, item 23: a long search says what it is doing -------------------------------------

def test_gh32_the_search_reports_each_fixed_point_to_progress():
    """Both solvers tell ``progress`` of every fixed point of the search, numbered, with the
    limit; the answer is the one without it. A problem whose lists are closed under union
    takes one fixed point and no search: no call."""
    problem = parse_rollback(chain(5))
    for solver in (solve, solve_batched):
        calls = []
        answer = solver(problem, max_search=500, progress=lambda *a: calls.append(a))
        assert answer == solver(problem, max_search=500)
        assert calls == [(k, 500) for k in range(1, len(calls) + 1)] and len(calls) > 5
    calls = []
    solve(parse_rollback(HEAD + "times 2 1\nnode 0\nin 0 0\nconsumed 0 0 0\n"),
          progress=lambda *a: calls.append(a))
    assert calls == []


def test_gh32_tfront_rollback_prints_a_progress_line_while_it_searches(tmp_path, capsys,
                                                                       monkeypatch):
    """Near the states limit one fixed point takes 0.1 s, and the search may compute
    ``--max-search`` of them (a 37-line file ran 26 s in silence): ``tfront rollback`` says on
    stderr how far it is, the limit and the most the rest can take -- a line every
    ``EVERY_S`` seconds (here 0: one per fixed point), stdout unchanged."""
    from engine.cli.main import SearchProgress

    path = tmp_path / "chain5.txt"
    path.write_text(chain(5))
    status, quiet_out, quiet_err = run(capsys, path, "--max-choices", 1000)
    assert status == 0 and quiet_err == ""
    monkeypatch.setattr(SearchProgress, "EVERY_S", 0.0)
    status, out, err = run(capsys, path, "--max-choices", 1000, "--max-search", 9000)
    assert status == 0 and out == quiet_out
    lines = err.splitlines()
    assert len(lines) > 5
    for k, line in enumerate(lines, start=1):
        assert line.startswith(f"tfront rollback: searching the combinations of 5 processors' "
                               f"availability lists (not closed under union): {k:,} fixed "
                               f"points so far of at most 9,000 (--max-search), "), line
        assert " each over 144 states; at most " in line   # (5 nodes + 4 edges) x 4 x 4
