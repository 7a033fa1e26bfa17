"""Tasks' stack dumps grouped (stackgroups.py): the same stacks folded together whatever the
thread ids, their order or the container's paths; the odd task out marked; the executor's own
threads and frames left out of what is shown."""

from tony_jupyter.core.protocol import StacksAnswer, TaskStacks
from tony_jupyter.core.stackgroups import group, parse, render

OURS = """Thread 0x00007f0000000001 (most recent call first):
  File "/venv/lib/python3.11/threading.py", line 331 in wait
  File "/x/tony_jupyter/executor/background.py", line 66 in run
  File "/venv/lib/python3.11/threading.py", line 1002 in _bootstrap
"""


def dump(where: str, frame: str, tid: str = "0x00007f00000000aa", ours_first: bool = True) -> str:
    main = (
        f"Current thread {tid} (most recent call first):\n"
        f"  {frame}\n"
        f'  File "{where}/src/cell.py", line 9 in <module>\n'
        '  File "/x/tony_jupyter/executor/cell.py", line 76 in execute\n'
        '  File "<frozen runpy>", line 198 in _run_module_as_main\n'
    )
    return OURS + "\n" + main if ours_first else main + "\n" + OURS


SLEEP = 'File "/c/src/cell.py", line 4 in wait_here'
REDUCE = 'File "/venv/torch/distributed/distributed_c10d.py", line 2501 in all_reduce'


def test_a_dump_is_read_thread_by_thread():
    threads = parse(dump("/c", SLEEP))
    assert len(threads) == 2
    assert threads[1].frames[0] == SLEEP
    assert threads[0].ours and not threads[1].ours
    assert threads[1].user_frames() == (SLEEP, 'File "/c/src/cell.py", line 9 in <module>')


def test_a_named_thread_keeps_its_name_and_foreign_text_is_one_thread():
    (named,) = parse(
        'Thread 0x00007f01 [loader] (most recent call first):\n  File "a.py", line 1 in f'
    )
    assert named.name == "loader" and named.frames == ('File "a.py", line 1 in f',)
    (odd,) = parse("not a dump\nat all")
    assert odd.frames == ("not a dump", "at all")


def test_the_same_stacks_fold_together_whatever_ids_order_and_container_paths():
    stacks = [
        TaskStacks("worker:0", dump("/nm/container_01_000002", REDUCE, "0x01")),
        TaskStacks("worker:2", dump("/nm/container_01_000004", REDUCE, "0x02", ours_first=False)),
        TaskStacks("worker:1", dump("/nm/container_01_000003", SLEEP)),
    ]
    groups = group(stacks)
    assert [g.tasks for g in groups] == [("worker:0", "worker:2"), ("worker:1",)]
    assert [g.odd for g in groups] == [False, True]  # the one out of step is marked
    assert groups[0].threads[0].frames[0] == REDUCE  # the cell's thread comes first


def test_no_group_is_odd_when_all_agree_and_an_error_is_its_own_group():
    same = [TaskStacks(f"worker:{i}", dump("/c", SLEEP)) for i in range(2)]
    assert [g.odd for g in group(same)] == [False]
    gone = TaskStacks("worker:2", error="the task's process has exited")
    groups = group([*same, gone])
    assert groups[1].tasks == ("worker:2",) and groups[1].error and groups[1].odd


def test_the_text_marks_the_odd_and_the_furthest_behind_and_hides_the_executors_own():
    answer = StacksAnswer(
        1,
        (
            TaskStacks("worker:0", dump("/c", REDUCE), seconds=0.05),
            TaskStacks("worker:1", dump("/c", SLEEP), seconds=0.07),
            TaskStacks("worker:2", dump("/c", REDUCE), seconds=0.06),
        ),
        ("ps:0",),
    )
    text = render(answer, behind=("worker:1",))
    assert text.splitlines()[0] == (
        "3 task(s) in 2 group(s) of the same stacks (dumped in 0.05-0.07 s each)"
    )
    assert "\nworker:0, worker:2\n" in text
    assert "\n>>> worker:1 (differs, furthest behind)\n" in text
    assert "line 4 in wait_here" in text
    assert "background.py" not in text and "executor/cell.py" not in text
    assert "(and 1 thread(s) of tony-jupyter's own)" in text
    assert text.endswith("no answer in time from: ps:0")
