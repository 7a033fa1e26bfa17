"""Hosts kept out of the next attempts' placement: the host of a task lost by missed heartbeats
(cut off, hung, its NodeManager silent) is excluded, so that the attempt that replaces it runs
on the hosts that remain. YARN keeps a silent NodeManager RUNNING until its liveness expiry (ten
minutes by default) and would place the new attempt's containers there again as soon as it
answers; the provider asks YARN to exclude the host instead (``Provider.exclude_hosts``: YARN's
AMRMClient.updateBlacklist, as MapReduce and Spark's excludeOnFailure do).

An exclusion is lifted again (a pure rule of the job's state at ``now``, :meth:`Exclusions.due`):

- when tasks of the current attempt have waited ``wait_s`` with no container since the later of
  the attempt's start and the newest exclusion: no other node could take them (a job whose
  partition has that one node waits for its host to come back, as it did without exclusion);
- in any case ``MAX_S`` after it was made (the cluster has declared a lost node by then).

``tony.task.exclusion-wait-sec`` sets ``wait_s``; 0 turns exclusion off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The longest an exclusion lasts (YARN's default NodeManager liveness expiry).
MAX_S = 600.0


@dataclass
class Exclusions:
    wait_s: float
    max_s: float = MAX_S
    since: dict[str, float] = field(default_factory=dict)  # host -> when excluded

    @property
    def on(self) -> bool:
        return self.wait_s > 0

    @property
    def hosts(self) -> list[str]:
        return sorted(self.since)

    def exclude(self, host: str, now: float) -> bool:
        """Exclude ``host`` (again: from ``now``); whether it was not excluded before."""
        if not self.on:
            return False
        new = host not in self.since
        self.since[host] = now
        return new

    def due(self, now: float, waiting_since: float | None) -> list[str]:
        """The hosts to let back in at ``now``; ``waiting_since``: when the current attempt's
        tasks still without a container began to wait (None: none waits)."""
        if not self.since:
            return []
        if waiting_since is not None:
            newest = max(self.since.values())
            if now - max(waiting_since, newest) >= self.wait_s:
                return self.hosts  # no other node took them
        return sorted(h for h, at in self.since.items() if now - at >= self.max_s)

    def lift(self, hosts: list[str]) -> None:
        for host in hosts:
            self.since.pop(host, None)
