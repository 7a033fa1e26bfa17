"""A long session in bounded memory, the AM's side: a cell's pushed names are dropped once
every task has taken the cell, and the values of done cells are held up to a bound, the
newest first, an older cell's view saying its value was dropped and why."""

from test_coordinator import make, register_all

from tony_jupyter.am import sessioncells as cells_mod
from tony_jupyter.am.sessioncells import CellQueue


def test_names_go_once_every_task_has_the_cell_and_old_values_past_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(cells_mod, "HELD_VALUES_BYTES", 3000)
    c, _, _ = make("--workers 2", tmp_path)
    register_all(c)
    assert c.state == "RUNNING"
    queue = CellQueue(c)
    for i in range(1, 6):
        cell = queue.submit("x", "N" * 10_000, [], "<cell>")
        first = queue.next_for("worker:0", i - 1)
        assert first.names == "N" * 10_000 and cell.names  # worker:1 has not taken it yet
        second = queue.next_for("worker:1", i - 1)
        assert second.names == "N" * 10_000  # the last task to take it still gets the names
        assert cell.names == ""  # and the AM holds them no more
        for task in ("worker:0", "worker:1"):
            queue.report(task, cell.id, {"status": "ok", "value": "V" * 1000})
    views = [queue.get(i).view(with_value=True) for i in range(1, 6)]
    held = [v for v in views if all(r.value is not None for r in v.results.values())]
    assert [v.id for v in held] == [5]  # 2,000 bytes a cell: only the newest fits 3,000
    for v in views[:4]:
        assert "no longer held" in (v.dropped or "") and v.results["worker:0"].value is None
    c.close()
