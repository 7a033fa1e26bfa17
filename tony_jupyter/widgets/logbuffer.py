"""A task's log as the widget keeps it: the last N lines, with chunks split anywhere."""

from __future__ import annotations

from collections import deque

# A line past this many characters is cut (a progress bar redrawn with "\r" for a day is one
# line): the buffer is bounded in characters, not only in lines.
MAX_LINE_CHARS = 8192


class LogBuffer:
    def __init__(self, max_lines: int = 2000, max_line_chars: int = MAX_LINE_CHARS):
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.max_line_chars = max_line_chars
        self.partial = ""  # text after the last newline: the task is mid-line
        self.total = 0  # lines ever seen, so the report can say "last 50 of 12,345"

    def write(self, text: str) -> list[str]:
        """Add text; returns the lines it completed (what the terminal fallback prints)."""
        if not text:
            return []
        *done, self.partial = (self.partial + text).split("\n")
        done = [self._cut(line.rstrip("\r")) for line in done]
        self.partial = self._cut(self.partial)
        self.lines.extend(done)
        self.total += len(done)
        return done

    def _cut(self, line: str) -> str:
        if len(line) <= self.max_line_chars:
            return line
        keep = self.max_line_chars // 2
        return f"{line[:keep]} [... {len(line) - 2 * keep} characters ...] {line[-keep:]}"

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
