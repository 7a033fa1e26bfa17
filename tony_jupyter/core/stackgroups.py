"""Tasks' stack dumps read and grouped: tasks with the same stacks folded together, the odd
ones out marked, as ``%tony stacks``, ``tony-jupyter stacks`` and the widget show them.

A dump is faulthandler's text (executor/stacks.py): per thread a header
``Thread 0x7f.. (most recent call first):`` (``Current thread`` for the one that took the
signal) and its frames. Two tasks have the same stacks when their threads' frames are the same,
thread ids and their order aside: the ids differ between processes, and which thread took the
signal is chance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .protocol import StackGroup, StackGroups, StacksAnswer, StackThread, TaskStacks

_HEADER = re.compile(
    r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+(.*?)\s*\(most recent call first\):$"
)


_PATH = re.compile(r'^File "([^"]*)"')
_OURS = re.compile(r'tony_jupyter/executor/|File "<frozen runpy>"|/threading\.py"')


def _short(m: re.Match) -> str:
    return 'File "' + "/".join(m.group(1).rsplit("/", 2)[-2:]) + '"'


@dataclass(frozen=True)
class Thread:
    name: str  # what the header says past the id (Python 3.13+: the thread's name), or ""
    frames: tuple[str, ...]  # 'File "x.py", line 3 in f', most recent first

    @property
    def key(self) -> tuple[str, ...]:
        """The frames with each file's path cut to its last two parts: a YARN container's
        files are under its own directory, and each host localizes the environment anew."""
        return tuple(_PATH.sub(_short, f) for f in self.frames)

    @property
    def ours(self) -> bool:
        """A thread of the executor's own (log capture and shipping), not the task's code."""
        return bool(self.frames) and all(_OURS.search(f) for f in self.frames)

    def user_frames(self) -> tuple[str, ...]:
        """The frames down to the task's code: the executor's that run it (cell.py, main.py,
        runpy) cut from the bottom."""
        frames = list(self.frames)
        while len(frames) > 1 and _OURS.search(frames[-1]):
            frames.pop()
        return tuple(frames)


def parse(text: str) -> tuple[Thread, ...]:
    """A dump's threads; text that is not faulthandler's is one thread of its lines."""
    threads: list[Thread] = []
    name: str | None = None
    frames: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        head = _HEADER.match(line)
        if head:
            if name is not None or frames:
                threads.append(Thread(name or "", tuple(frames)))
            name, frames = head.group(1).strip(" []"), []
        elif line:
            frames.append(line)
    if name is not None or frames:
        threads.append(Thread(name or "", tuple(frames)))
    return tuple(threads)


def main_first(threads: Sequence[Thread]) -> tuple[Thread, ...]:
    """The thread that runs the task's code first (the one with a ``<module>`` frame: the
    cell), then the others as they came."""
    return tuple(
        sorted(threads, key=lambda t: not any(f.endswith(" in <module>") for f in t.frames))
    )


@dataclass(frozen=True)
class Group:
    tasks: tuple[str, ...]
    threads: tuple[Thread, ...]  # the first task's, the cell's thread first
    odd: bool = False  # fewer tasks share these stacks than share the commonest ones
    error: str | None = None  # for tasks that sent no dump: why


def group(stacks: Iterable[TaskStacks]) -> list[Group]:
    """Tasks with the same stacks (or the same error) together, the largest group first."""
    by_key: dict[tuple, list[tuple[str, tuple[Thread, ...], str | None]]] = {}
    for s in stacks:
        threads = parse(s.text) if not s.error else ()
        key = (s.error, tuple(sorted(t.key for t in threads)))
        by_key.setdefault(key, []).append((s.task, threads, s.error))
    largest = max((len(v) for v in by_key.values()), default=0)
    groups = [
        Group(
            tuple(sorted(t for t, _, _ in members)),
            main_first(members[0][1]),
            len(by_key) > 1 and len(members) < largest,
            members[0][2],
        )
        for members in by_key.values()
    ]
    return sorted(groups, key=lambda g: (-len(g.tasks), g.tasks))


def render(answer: StacksAnswer, behind: Sequence[str] = ()) -> str:
    """The text ``%tony stacks`` prints: each group's tasks, then its threads (the executor's
    own counted, not shown; the frames that run the cell cut); ``behind``: tasks to mark too
    (a stalled job's furthest behind)."""
    groups = group(answer.tasks)
    took = [s.seconds for s in answer.tasks]
    lines = [
        f"{len(answer.tasks)} task(s) in {len(groups)} group(s) of the same stacks"
        + (f" (dumped in {min(took):.2f}-{max(took):.2f} s each)" if took else "")
    ]
    for g in groups:
        late = set(g.tasks) & set(behind)
        flags = [w for w, on in (("differs", g.odd), ("furthest behind", late)) if on]
        lines.append("")
        lines.append(
            f"{'>>> ' if flags else ''}{', '.join(g.tasks)}"
            + (f" ({', '.join(flags)})" if flags else "")
        )
        if g.error:
            lines.append(f"  no stacks: {g.error}")
        shown = [t for t in g.threads if not t.ours]
        for i, t in enumerate(shown):
            lines.append(f"  thread {i + 1}{f' [{t.name}]' if t.name else ''}:")
            lines.extend(f"    {f}" for f in t.user_frames())
        if len(shown) < len(g.threads):
            lines.append(f"  (and {len(g.threads) - len(shown)} thread(s) of tony-jupyter's own)")
    if answer.missing:
        lines.append("")
        lines.append(f"no answer in time from: {', '.join(answer.missing)}")
    return "\n".join(lines)


def grouped(answer: StacksAnswer, behind: Sequence[str] = ()) -> StackGroups:
    """The groups :func:`render` words, as a record for the job page (the same cuts: the
    executor's own threads counted, not shown; the frames that run the cell left out)."""
    out = []
    for g in group(answer.tasks):
        shown = [t for t in g.threads if not t.ours]
        out.append(
            StackGroup(
                tasks=g.tasks,
                threads=tuple(StackThread(t.name, t.user_frames()) for t in shown),
                own_threads=len(g.threads) - len(shown),
                odd=g.odd,
                behind=bool(set(g.tasks) & set(behind)),
                error=g.error,
            )
        )
    return StackGroups(
        groups=tuple(out),
        seconds={s.task: round(s.seconds, 3) for s in answer.tasks},
        missing=answer.missing,
    )
