"""One PNG per part, beside its JSON in bench/results/ (matplotlib, no display needed)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.lib.common import results_dir

LABELS = {
    "hand": "by hand",
    "tony_local": "tony-jupyter local",
    "tony_local_cold": "tony-jupyter local, no spares",
    "tony_local_first": "tony-jupyter local, kernel's first job",
    "tony_local_warm": "tony-jupyter local, warm (spares imported TF)",
    "tony_local_no_tb": "tony-jupyter local, no TensorBoard",
    "tony_yarn": "tony-jupyter YARN",
    "tony_yarn_warm": "tony-jupyter YARN, warm AM",
    "tony": "TonY 0.4.7 YARN",
    "dshell_yarn": "distributed shell YARN",
}


def _bars(ax, groups: list[str], series: dict[str, list], ylabel: str, title: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [v or 0 for v in values], width, label=name)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def draw(name: str, data: dict) -> None:
    fig = None
    if name == "time_to_training":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        groups = sorted(data["workers"], key=int)
        sides = sorted({s for g in groups for s in data["workers"][g]["median"]})
        for ax, key in zip(axes, ("to_user_code_s", "to_first_step_s"), strict=True):
            series = {
                LABELS.get(s, s): [data["workers"][g]["median"].get(s, {}).get(key) for g in groups]
                for s in sides
            }
            _bars(ax, [f"{g} worker(s)" for g in groups], series, "seconds (median)", key)
        loads = [data["workers"][g].get("load") for g in groups]
        if all(loads):
            fig.suptitle(
                "load (1 min) "
                + ", ".join(f"{g}: {a}→{b}" for g, (a, b) in zip(groups, loads, strict=True)),
                fontsize=9,
            )
    elif name == "overhead":
        fig, ax = plt.subplots(figsize=(6, 4))
        med = data["steps_per_s_median"]
        ax.bar([LABELS.get(s, s) for s in med], [v or 0 for v in med.values()])
        ax.tick_params(axis="x", labelsize=7)
        ax.set_ylabel("steps/s (median)")
        ax.set_title(f"training throughput, {data['workers']} worker(s)")
    elif name == "streaming":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        rates = list(data["median"])
        for ax, what in zip(axes, ("log", "beat"), strict=True):
            series = {
                q: [data["median"][r][f"{what}_{q}_s"] for r in rates] for q in ("p50", "p99")
            }
            label = "log line" if what == "log" else "heartbeat"
            _bars(ax, rates, series, "seconds", f"{label}: worker -> widget model")
    elif name == "am_scale":
        fig, ax = plt.subplots(figsize=(7, 4))
        ax2 = ax.twinx()

        def side(r: dict) -> str:
            period = r.get("beat_period_ms", 1000)
            return r.get("heartbeats_by", "http") + (f" {period} ms" if period != 1000 else "")

        for by in sorted({side(r) for r in data["levels"]}):
            rows = sorted(
                (r for r in data["levels"] if side(r) == by and r.get("heartbeat_p50_s")),
                key=lambda r: r["executors"],
            )
            xs = [r["executors"] for r in rows]
            ax.plot(xs, [r["heartbeat_p99_s"] for r in rows], "o-", label=f"{by}: p99 (s)")
            ax.plot(xs, [r["heartbeat_p50_s"] for r in rows], "o-", label=f"{by}: p50 (s)")
            cpu = [r["am_cpu_ms_per_heartbeat"] for r in rows]
            ax2.plot(xs, cpu, "s--", label=f"{by}: AM CPU ms/heartbeat")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("simulated executors")
        ax2.set_ylabel("AM CPU ms per heartbeat")
        ax.legend(loc="upper left", fontsize=8)
        ax2.legend(loc="lower right", fontsize=8)
        ax.set_title("AM under simulated executors")
    elif name in ("footprint", "staging"):
        nums = {k: v for k, v in data.items() if k.endswith("_mib") and isinstance(v, float)}
        if name == "staging":
            nums = (
                {
                    "first": data["first"]["staging_s"],
                    "second": data["second"]["staging_s"],
                    "raw WebHDFS, the archive": data["all"][0]["raw_webhdfs_archive_s"],
                }
                if "first" in data
                else {}
            )
        if nums:
            fig, ax = plt.subplots(figsize=(8, 4))
            ax.barh(list(nums), list(nums.values()))
            ax.set_xlabel("MiB" if name == "footprint" else "seconds")
            ax.set_title(name)
    if fig is not None:
        fig.tight_layout()
        fig.savefig(results_dir(bool(data.get("quick"))) / f"{name}.png", dpi=90)
        plt.close(fig)
