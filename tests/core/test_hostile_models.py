"""HMMER3 model files with every kind of broken number: each is refused with its file and line
before anything is scored (pyhmmer alone reads ``x.yz`` as 0 -- a probability of 1 -- and
``nan`` without a word)."""
from __future__ import annotations

import pytest

from hmmbench.errors import InputError
from helpers.hostile_world import (FASTA, PROFILE_RUN, damaged, hmm_text, put, refused,  # noqa: F401
                                   world)

pytest.importorskip("pyhmmer")

#: A broken value put in place of a sound -ln probability, and what the message says.
NUMBERS = {
    "nan": ("nan", "not a finite number"),
    "NaN": ("NaN", "not a finite number"),
    "inf": ("inf", "not a finite number"),
    "minus-inf": ("-inf", "not a finite number"),
    "1e400": ("1e400", "not a finite number"),
    "x.yz": ("x.yz", "not a number"),
    "negative": ("-0.50000", "negative"),
    "comma": ("0,69315", "not a number"),
    "prob-one": ("0.00000", "sum to"),          # one field made probability 1: the sum is > 1
    "prob-zero": ("*", "sum to"),              # one field made probability 0: the sum is < 1
}
#: Which line of node 2 is broken: the match emissions, insert emissions or transitions.
LINES = ("match", "insert", "transition")


def _lines(text: str) -> list:
    return text.splitlines(keepends=True)


def node_line(text: str, node: int, which: str) -> int:
    """The 0-based index of node ``node``'s match, insert or transition line."""
    lines = _lines(text)
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [str(node)]
              and i > next(j for j, x in enumerate(lines) if x.startswith("HMM ")))
    return at + LINES.index(which)


def replace_field(text: str, index: int, field: int, value: str) -> str:
    lines = _lines(text)
    parts = lines[index].split()
    parts[field] = value
    lines[index] = "  " + "  ".join(parts) + "\n"
    return "".join(lines)


def run_model(world, capsys, content: str, *needles):
    path = put(world, "broken.hmm", content.encode() if isinstance(content, str) else content)
    db = put(world, "db.faa", FASTA)
    return refused(world, capsys, PROFILE_RUN + ["-d", db, "--model", path, "--json",
                                                 "out.json"], path, *needles)


@pytest.mark.parametrize("which", LINES)
@pytest.mark.parametrize("name", list(NUMBERS))
def test_broken_number_in_a_node(world, capsys, name, which):
    value, needle = NUMBERS[name]
    text = hmm_text()
    at = node_line(text, 2, which)
    field = 1 if which == "match" else 0        # the match line starts with the node number
    if name == "prob-one" and which == "transition":
        field = 1                                # m->i made probability 1 beside m->m
    broken = replace_field(text, at, field, value)
    run_model(world, capsys, broken, f"broken.hmm:{at + 1}:", needle)


def _edit_header(text: str, tag: str, new) -> str:
    """The model's header line ``tag`` replaced by ``new`` (None: removed; a tag missing is
    added before the HMM line)."""
    lines = _lines(text)
    hits = [i for i, line in enumerate(lines) if line.split()[:1] == [tag]]
    if hits:
        if new is None:
            del lines[hits[0]]
        else:
            lines[hits[0]] = new + "\n"
    else:
        at = next(i for i, line in enumerate(lines) if line.startswith("HMM "))
        lines.insert(at, new + "\n")
    return "".join(lines)


HEADER_CASES = {
    "leng-word": ("LENG", "LENG  six", "LENG"),
    "leng-zero": ("LENG", "LENG  0", "LENG"),
    "leng-negative": ("LENG", "LENG  -6", "LENG"),
    "leng-missing": ("LENG", None, "no LENG"),
    "leng-too-long": ("LENG", "LENG  7", "node 7 is missing"),
    "leng-too-short": ("LENG", "LENG  5", "expected '//'"),
    "alph-missing": ("ALPH", None, "no ALPH"),
    "alph-unknown": ("ALPH", "ALPH  klingon", "alphabet"),
    "stats-lambda-negative": ("STATS", "STATS LOCAL MSV  -9.0  -0.7", "lambda"),
    "stats-lambda-nan": ("STATS", "STATS LOCAL MSV  -9.0  nan", "lambda"),
    "stats-mu-word": ("STATS", "STATS LOCAL MSV  mu  0.7", "mu"),
    "stats-short": ("STATS", "STATS LOCAL MSV  -9.0", "STATS"),
    "nseq-negative": ("NSEQ", "NSEQ  -3", "NSEQ"),
    "effn-nan": ("EFFN", "EFFN  nan", "EFFN"),
    "ga-word": ("GA", "GA    x.yz 25.0;", "GA"),
    "tc-one-number": ("TC", "TC    25.0", "TC"),
}


@pytest.mark.parametrize("name", list(HEADER_CASES))
def test_broken_header(world, capsys, name):
    tag, new, needle = HEADER_CASES[name]
    run_model(world, capsys, _edit_header(hmm_text(), tag, new), "broken.hmm:", needle)


def test_node_out_of_order_and_short_lines(world, capsys):
    text = hmm_text()
    at = node_line(text, 3, "match")
    run_model(world, capsys, replace_field(text, at, 0, "4"), f"broken.hmm:{at + 1}:",
              "node 3")
    lines = _lines(text)
    t = node_line(text, 2, "transition")
    lines[t] = "  ".join(lines[t].split()[:5]) + "\n"
    run_model(world, capsys, "".join(lines), f"broken.hmm:{t + 1}:", "5 fields")
    e = node_line(text, 4, "insert")
    lines = _lines(text)
    lines[e] = "  ".join(lines[e].split()[:12]) + "\n"
    run_model(world, capsys, "".join(lines), f"broken.hmm:{e + 1}:", "12 fields")


def test_symbols_do_not_match_the_alphabet(world, capsys):
    text = hmm_text()
    lines = _lines(text)
    at = next(i for i, line in enumerate(lines) if line.startswith("HMM "))
    lines[at] = lines[at].replace(" Y", "")
    run_model(world, capsys, "".join(lines), f"broken.hmm:{at + 1}:", "19 symbols")


def test_second_model_broken(world, capsys):
    """A file of two models: the second one's broken number is found at its own line."""
    first, second = hmm_text(seed=1), hmm_text(seed=2)
    at = node_line(second, 1, "insert")
    broken = first + replace_field(second, at, 3, "x.yz")
    run_model(world, capsys, broken, f"broken.hmm:{len(_lines(first)) + at + 1}:",
              "not a number")


@pytest.mark.parametrize("where", ["NAME", "DESC", "node"])
def test_non_utf8_byte(world, capsys, where):
    text = hmm_text()
    if where == "node":
        at = node_line(text, 1, "insert")
        raw = replace_field(text, at, 2, "0.5\udce9").encode("utf-8", "surrogateescape")
    else:
        text = _edit_header(text, where, f"{where}  caf\udce9")
        at = next(i for i, line in enumerate(_lines(text)) if line.startswith(where))
        raw = text.encode("utf-8", "surrogateescape")
    run_model(world, capsys, raw, f"broken.hmm:{at + 1}:", "UTF-8", "0xe9")


def test_hmmer_validate_refuses_what_the_lines_pass(tmp_path, monkeypatch):
    """Where the line checks are switched off, pyhmmer's HMM.validate() still refuses a model
    whose probabilities do not sum to 1 -- the second net under the first."""
    from hmmbench.profile import datasets, hmmcheck
    text = hmm_text()
    at = node_line(text, 2, "transition")
    path = tmp_path / "m.hmm"
    path.write_text(replace_field(text, at, 0, "-0.5"))
    monkeypatch.setattr(hmmcheck, "check_hmm_file", lambda path, fh, sums=True: 0)
    with pytest.raises(InputError, match="HMMER refuses"):
        datasets.read_hmms(str(path))


@pytest.mark.parametrize("alphabet", ["amino", "dna"])
@pytest.mark.parametrize("M", [1, 2, 40])
def test_sound_models_pass(tmp_path, alphabet, M):
    """The control: sound models of every size pass the checks (so the refusals above are about
    the broken numbers)."""
    from hmmbench.profile.datasets import read_hmms
    path = tmp_path / "m.hmm"
    path.write_text(hmm_text(M, alphabet, seed=M))
    assert [h.M for h in read_hmms(str(path))] == [M]


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_model_files_load_or_name_the_file(tmp_path, data):
    """Bytes changed, cut or inserted anywhere in a sound model file: it reads, or the refusal is
    an InputError naming the file (and a line that exists) -- never any other exception, and
    never a model with a probability outside [0, 1]."""
    from hmmbench.profile.datasets import read_hmms
    raw = damaged(hmm_text(4).encode(), data,
                  st.sampled_from(list(b"0123456789.-+eE*x \n\t") + [0xe9, 0]))
    path = tmp_path / "damaged.hmm"
    path.write_bytes(raw)
    try:
        hmms = read_hmms(str(path))
    except InputError as exc:
        assert exc.path == str(path) and "\n" not in exc.message
        if exc.line is not None:
            assert 1 <= exc.line <= max(1, len(raw.splitlines()))
    else:
        import numpy as np
        for hmm in hmms:
            for table in (hmm.match_emissions, hmm.insert_emissions,
                          hmm.transition_probabilities):
                values = np.asarray(table)
                assert np.all(np.isfinite(values)) and values.min() >= 0 and values.max() <= 1
