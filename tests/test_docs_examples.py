"""Every ```python example of the docs and the README runs, or says why not.

An example is marked not runnable by an HTML comment on the line before its fence,
``<!-- not runnable: WHY -->``; every other one is run, page by page and in order, in an IPython
shell with the extension loaded, on the local backend (test_a_pages_examples_run, in the full
tier: they start real jobs, some train TensorFlow). CI's landing run checks that each example is
marked or compiles (test_each_example_is_marked_or_compiles)."""

from __future__ import annotations

import pytest
from helpers.docs import ROOT, all_examples, examples, pages
from IPython.core.inputtransformer2 import TransformerManager

EXAMPLES = all_examples()
RUNNABLE_PAGES = [p for p in pages() if any(e.not_runnable is None for e in examples(p))]


def _python(source: str) -> list[str]:
    """The Python an example holds: a %%tony cell's body, and the rest as IPython runs it."""
    if source.startswith("%%"):
        return [source.split("\n", 1)[1] if "\n" in source else ""]
    return [TransformerManager().transform_cell(source)]


def test_the_docs_have_examples_and_most_run():
    assert len(EXAMPLES) >= 10
    runnable = [e for e in EXAMPLES if e.not_runnable is None]
    assert len(runnable) > len(EXAMPLES) / 2, [e.id for e in EXAMPLES if e.not_runnable]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_each_example_is_marked_or_compiles(example):
    if example.not_runnable is not None:
        assert len(example.not_runnable) > 10, f"{example.id}: say why it is not runnable"
        return
    for code in _python(example.source):
        compile(code, example.id, "exec")


def test_the_mark_is_read():
    from helpers.docs import Example, examples

    page = ROOT / "build" / "test-docs-mark.md"
    page.parent.mkdir(exist_ok=True)
    page.write_text(
        "<!-- not runnable: it reads the notebook's model -->\n```python\nmodel\n```\n\n"
        "```python\n1 + 1\n```\n"
    )
    try:
        got = examples(page)
    finally:
        page.unlink()
    assert got == [
        Example(page, 2, "model", "it reads the notebook's model"),
        Example(page, 6, "1 + 1", None),
    ]


@pytest.mark.full  # test_each_example_is_marked_or_compiles is the landing run's check
@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_pages_examples_run(page, shell):
    from tony_jupyter import session

    try:
        for example in examples(page):
            if example.not_runnable is not None:
                continue
            result = shell.run_cell(example.source, store_history=False)
            error = result.error_before_exec or result.error_in_exec
            assert result.success, f"{example.id}: {error!r}"
    finally:
        if session.current() is not None:  # an example started one
            shell.run_line_magic("tony", "session stop")
