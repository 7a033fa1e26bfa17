"""The README's table, from the latest results: ``python -m bench --table`` prints it,
``--write-table`` also puts it between the markers in bench/README.md (a full ``python -m bench``
run does that itself)."""

from __future__ import annotations

import json

from bench.lib.common import BENCH, RESULTS

START, END = "<!-- table:start -->", "<!-- table:end -->"


def _load(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _f(x, unit: str = "") -> str:
    if x is None:
        return "—"
    return f"{x:.3g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def _time_to_training(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/time_to_training*.json."""
    # the 1/2/4-worker run, then the 8-worker one (its own run: the devcluster's NodeManagers
    # raised to hold TonY's 8 × 1 GB workers, TONY_DEVCLUSTER_NM_MEMORY_MB/_VCORES)
    ttt = {
        **_load("time_to_training").get("workers", {}),
        **_load("time_to_training-workers8").get("workers", {}),
    }
    for n, got in ttt.items():
        med, r = got["median"], got["ratios"]
        for key, label in (("to_user_code_s", "user code"), ("to_first_step_s", "first step")):
            for side, other, vs in (
                ("tony_local", "hand", "hand-launched"),
                ("tony_local_cold", "hand", "hand-launched"),
                ("tony_local_first", "hand", "hand-launched"),
                ("tony_local_warm", "hand", "hand-launched"),
                ("tony_yarn", "tony", "TonY 0.4.7 (YARN)"),
                ("tony_yarn", "dshell_yarn", "distributed shell (YARN)"),
                ("tony_yarn", "hand", "hand-launched"),
                ("tony_yarn_warm", "tony", "TonY 0.4.7 (YARN)"),
                ("tony_yarn_warm", "dshell_yarn", "distributed shell (YARN)"),
            ):
                if side in med and other in med:
                    out.append(
                        (
                            f"cell → {label}, {n} worker(s), {side.replace('_', ' ')}",
                            _f(med[side][key], " s"),
                            f"{vs}: {_f(med[other][key], ' s')}",
                            _f(r.get(f"{side}/{other} {key}")),
                        )
                    )
        if "tony_yarn" in med and "tony" in med:
            out.append(
                (
                    f"cell → job end, {n} worker(s), tony yarn",
                    _f(med["tony_yarn"].get("to_job_end_s"), " s"),
                    f"TonY 0.4.7 (YARN): {_f(med['tony'].get('to_job_end_s'), ' s')}",
                    _f(r.get("tony_yarn/tony to_job_end_s")),
                )
            )


def _overhead(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/overhead*.json."""
    ov = _load("overhead")
    for side, value in ov.get("ratio_vs_hand", {}).items():
        if side == "tony":  # TonY's own figure goes in the "beside it" column
            out.append(
                (
                    f"training steps/s, {ov['workers']} worker(s), TonY 0.4.7 (YARN) vs by hand",
                    "",
                    f"TonY: {_f(ov['steps_per_s_median'][side])}, "
                    f"hand-launched: {_f(ov['steps_per_s_median']['hand'])}",
                    _f(value),
                )
            )
            continue
        label = {"tony_local_no_tb": "tony local, --no-tensorboard"}.get(side, side)
        out.append(
            (
                f"training steps/s, {ov['workers']} worker(s), {label.replace('_', ' ')} "
                f"(goal ≥ {ov['goal_ratio']})",
                _f(ov["steps_per_s_median"][side]),
                f"hand-launched: {_f(ov['steps_per_s_median']['hand'])}",
                _f(value),
            )
        )
    for side, cpu in ov.get("cpu_s_by_role_median", {}).items():
        if side != "hand":
            out.append(
                (
                    f"CPU s during that training, {side.replace('_', ' ')}: "
                    "workers / AM / heartbeat sidecars / TensorBoard",
                    " / ".join(
                        _f(cpu.get(k, 0.0))
                        for k in ("executor", "am", "heartbeat_sidecar", "tensorboard")
                    ),
                    f"by hand: workers {_f(ov['cpu_s_by_role_median']['hand'].get('executor'))}",
                    "",
                )
            )


def _streaming(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/streaming*.json."""
    st = _load("streaming")
    for rate, m in st.get("median", {}).items():
        rate_s = rate.replace("_", " ").replace("lines per s", "lines/s")
        out.append(
            (
                f"log line → widget model p50 / p99, {rate_s}",
                f"{_f(m['log_p50_s'], ' s')} / {_f(m['log_p99_s'], ' s')}",
                "",
                "",
            )
        )
        out.append(
            (
                f"heartbeat → widget model p50 / p99; steps/s vs silent, {rate_s}",
                f"{_f(m['beat_p50_s'], ' s')} / {_f(m['beat_p99_s'], ' s')}",
                "silent training",
                _f(m.get("steps_per_s_vs_silent")),
            )
        )


def _staging(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/staging*.json."""
    sg = _load("staging")
    if "first" in sg:
        env_mib = sg.get("environment", {}).get("archive_mib")
        for which in ("first", "second"):
            side = sg[which]
            out.append(
                (
                    f"YARN staging with --pack-env ({env_mib} MiB archive), {which} submission",
                    f"{side['bytes']} B ({side['environment_bytes']} B environment) in "
                    f"{_f(side['staging_s'], ' s')}"
                    + (
                        f" (pack {_f(side['pack_s'], ' s')}, "
                        f"upload {_f(side['env_upload_s'], ' s')})"
                        if which == "first"
                        else ""
                    ),
                    "",
                    "",
                )
            )
        out.append(
            (
                "environment upload throughput",
                _f(sg["env_upload_mib_s"], " MiB/s"),
                f"raw WebHDFS, same archive: {_f(sg['raw_webhdfs_mib_s'], ' MiB/s')}",
                _f(sg["env_upload_vs_raw_webhdfs"]),
            )
        )


def _localization(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/localization*.json."""
    lo = _load("localization")
    if "localizing_s" in lo:
        a = lo["archives"]
        out.append(
            (
                "a NodeManager localizing a packed venv with its interpreter "
                f"({a['venv_archive_mib']} + {a['interpreter_archive_mib']} MiB, "
                f"{a['venv_files']} + {a['interpreter_files']} files)",
                _f(lo["localizing_s"]["venv+interpreter"], " s"),
                f"the venv alone: {_f(lo['localizing_s']['venv'], ' s')}",
                _f(lo["with_interpreter_vs_venv_alone"]),
            )
        )


def _am_scale(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/am_scale*.json."""
    am = _load("am_scale")
    for lv in am.get("levels", []):
        by = lv.get("heartbeats_by", "http")
        if lv.get("beat_period_ms", 1000) != 1000:
            by += f" every {lv['beat_period_ms']} ms"
        out.append(
            (
                f"AM, {lv['executors']} simulated executors, heartbeats by {by}: "
                "heartbeat p50 / p99; AM CPU per heartbeat (goal ≤ 0.1 ms)",
                f"{_f(lv.get('heartbeat_p50_s'), ' s')} / {_f(lv.get('heartbeat_p99_s'), ' s')}; "
                f"{_f(lv.get('am_cpu_ms_per_heartbeat'), ' ms')}",
                f"AM CPU {_f(lv.get('am_cpu_percent'), ' %')}, "
                f"RSS {_f(lv.get('am_rss_mib'), ' MiB')}"
                + (
                    f" ({_f(lv['am_rss_kib_per_task'], ' KiB')}/task)"
                    if "am_rss_kib_per_task" in lv
                    else ""
                )
                + f", errors {lv['errors']}, job {lv['job_state_after']}",
                "",
            )
        )


def _startup(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/startup*.json."""
    su = _load("startup").get("cell_to_all_tasks_in_user_code_s", {})
    if su:
        beside = f"by hand: {_f(su['by_hand_median'], ' s')}"
        if "before_median" in su:
            beside += f"; at {su['before_rev']}: {_f(su['before_median'], ' s')}"
        warm = "tony_jupyter_local_warm_median" in su
        for what, key, ratio in (
            ("a later job (warm spares)", "tony_jupyter_local_warm_median", "warm_vs_before"),
            ("a kernel's first job", "tony_jupyter_local_first_job_median", "first_job_vs_before"),
        ):
            if not warm:  # a result from before the warm path
                what, key, ratio = "", "tony_jupyter_local_median", "now_vs_before"
            out.append(
                (
                    f"local cell → every task in user code, 2 workers{', ' + what if what else ''}"
                    " (goal ≤ 0.15 s)",
                    _f(su[key], " s"),
                    beside,
                    _f(su.get(ratio)) + " vs before" if "before_median" in su else "",
                )
            )
            if not warm:
                break


def _session(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/session*.json."""
    wv = _load("session").get("local_2_workers_warm_vs_before", {})
    if wv:
        out.append(
            (
                "warm-session trivial cell, local, 2 workers: p50 / p90 (goal p50 ≤ 0.02 s)",
                f"{_f(wv['now_p50_s'], ' s')} / {_f(wv['now_p90_s'], ' s')}",
                f"at {wv['before_rev']}: {_f(wv['before_p50_s'], ' s')} / "
                f"{_f(wv['before_p90_s'], ' s')}",
                _f(wv["now_vs_before_p50"]) + " vs before",
            )
        )


def _footprint(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/footprint*.json."""
    fp = _load("footprint")
    for key, value in fp.items():
        if key.endswith("_mib"):
            out.append(
                (f"RSS: {key.removesuffix('_mib').replace('_', ' ')}", _f(value, " MiB"), "", "")
            )
    if "tony_worker_vs_hand" in fp:
        out.append(
            ("RSS: TF worker under tony-jupyter / by hand", "", "", _f(fp["tony_worker_vs_hand"]))
        )


def _ddp(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/ddp*.json."""
    ddp = _load("ddp")
    for key, label in (("to_first_step_s", "launch → first step"), ("steps_per_s", "steps/s")):
        med, unit = ddp.get("median", {}), " s" if key == "to_first_step_s" else ""
        if "tony" in med and "torchrun" in med:
            out.append(
                (
                    f"PyTorch DDP, 2 ranks (gloo): {label}",
                    _f(med["tony"][key], unit),
                    f"torchrun --nproc_per_node 2: {_f(med['torchrun'][key], unit)}",
                    _f(ddp["ratios"].get(f"tony/torchrun {key}")),
                )
            )


def _data(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/data*.json."""
    dt = _load("data")
    tp = dt.get("throughput", {})
    med, paired = tp.get("rows_per_s_median", {}), tp.get("ratio_over_pyarrow", {})
    for side, value in med.items():
        if side != "pyarrow" and not side.startswith("before_"):
            out.append(
                (
                    f"Parquet → batches, rows/s: dataset(), {side.removeprefix('dataset_')}",
                    _f(value / 1e6, " M"),
                    f"plain pyarrow: {_f(med['pyarrow'] / 1e6, ' M')}",
                    _f(paired.get(side)),
                )
            )
    mem = dt.get("memory", {})
    if "dataset_growth_4x_over_1x" in mem:
        out.append(
            (
                "RSS growth streaming 4x the data / 1x, dataset()",
                _f(mem["dataset_4x"]["growth_mib"], " MiB"),
                f"pq.read_table: {_f(mem['read_table_4x']['growth_mib'], ' MiB')}",
                _f(mem["dataset_growth_4x_over_1x"]),
            )
        )


def _panel(out: list[tuple[str, str, str, str]]) -> None:
    """The rows of results/panel*.json."""
    pn = _load("panel")
    if pn.get("list_s"):
        jobs, small = pn["jobs"], pn["jobs"]["baseline"]
        for key, what in (("list_s", "panel's job list"), ("detail_s", "job page's detail")):
            out.append(
                (
                    f"{what} (GET over HTTP), {jobs['long']:,} jobs in the history",
                    _f(pn[key]["long"], " s"),
                    f"{small} jobs: {_f(pn[key]['baseline'], ' s')}",
                    _f(pn[f"{key}_ratio_long_vs_baseline"]),
                )
            )
        out.append(
            (
                "history bytes per job (a real local job)",
                _f(pn["history_bytes_per_job"], " B"),
                "",
                "",
            )
        )


_SECTIONS = (
    _time_to_training,
    _overhead,
    _streaming,
    _staging,
    _localization,
    _am_scale,
    _startup,
    _session,
    _footprint,
    _ddp,
    _data,
    _panel,
)


def rows() -> list[tuple[str, str, str, str]]:
    """(figure, tony-jupyter, beside it, ratio)."""
    out: list[tuple[str, str, str, str]] = []
    for section in _SECTIONS:
        section(out)
    return out


def markdown() -> str:
    lines = ["| figure | tony-jupyter | beside it | ratio |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows()]
    return "\n".join(lines)


def update_readme() -> None:
    readme = BENCH / "README.md"
    text = readme.read_text()
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        readme.write_text(f"{head}{START}\n{markdown()}\n{END}{tail}")
