"""A task's log as the widget keeps it: the last N lines, with chunks split anywhere."""

from __future__ import annotations

from collections import deque


class LogBuffer:
    def __init__(self, max_lines: int = 2000):
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.partial = ""  # text after the last newline: the task is mid-line
        self.total = 0  # lines ever seen, so the report can say "last 50 of 12,345"

    def write(self, text: str) -> list[str]:
        """Add text; returns the lines it completed (what the terminal fallback prints)."""
        if not text:
            return []
        *done, self.partial = (self.partial + text).split("\n")
        done = [line.rstrip("\r") for line in done]
        self.lines.extend(done)
        self.total += len(done)
        return done

    def flush(self) -> list[str]:
        """End a pending partial line (the attempt or the job ended without a newline)."""
        if not self.partial:
            return []
        return self.write("\n")

    def mark(self, line: str) -> None:
        self.flush()
        self.lines.append(line)
        self.total += 1

    def view(self) -> list[str]:
        return [*self.lines, self.partial] if self.partial else list(self.lines)

    def text(self) -> str:
        return "\n".join(self.view())
