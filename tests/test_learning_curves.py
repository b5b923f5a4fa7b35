"""The algorithm pages' learning-curve plots (issue 30): every page embeds an SVG that
exists, made from CSVs in bench/curves/ that exist and parse, and tools/plot_curves.py
regenerates an SVG from a CSV. Reads files only; no training."""

import glob
import importlib.util
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = os.path.join(REPO, "docs", "algorithms")
CURVES = os.path.join(REPO, "bench", "curves")
NOT_ALGORITHMS = {"index.md", "common-config.md"}
EMBED = re.compile(r"^!\[[^\]]+\]\(\.\./assets/curves/([\w-]+\.svg)\)\n\n\*([^*\n]+)\*$",
                   re.MULTILINE)


def _plot_curves():
    spec = importlib.util.spec_from_file_location(
        "plot_curves", os.path.join(REPO, "tools", "plot_curves.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages():
    return sorted(p for p in glob.glob(os.path.join(PAGES, "*.md"))
                  if os.path.basename(p) not in NOT_ALGORITHMS)


def test_there_are_algorithm_pages():
    assert len(_pages()) >= 14


@pytest.mark.parametrize("page", _pages(), ids=os.path.basename)
def test_every_algorithm_page_embeds_its_curves(page):
    plot_curves = _plot_curves()
    algo = os.path.basename(page)[:-3].upper()
    with open(page, encoding="utf-8") as f:
        embeds = EMBED.findall(f.read())
    assert [svg for svg, _ in embeds] == [f"{algo.lower()}.svg"], (
        f"{page}: expected one '![...](../assets/curves/{algo.lower()}.svg)' followed by a "
        f"blank line and an italic caption line; found {embeds}")
    svg, caption = embeds[0]
    assert os.path.isfile(os.path.join(REPO, "docs", "assets", "curves", svg))
    csvs = glob.glob(os.path.join(CURVES, f"{algo.lower()}_*.csv"))
    runs = plot_curves.load(csvs).get(algo)
    assert runs, f"no CSV in bench/curves/ records {algo} (expected {algo.lower()}_*.csv)"
    for path in csvs:
        assert os.path.getsize(path) < 8000, f"{path}: thin the rows (bench/curves.py)"
    # The caption is the one tools/plot_curves.py writes from those CSVs (env, seeds,
    # budget, peer, machine, date).
    assert caption == plot_curves.caption(runs)


def test_plot_curves_regenerates_an_svg_from_a_csv(tmp_path):
    plot_curves = _plot_curves()
    source = sorted(glob.glob(os.path.join(CURVES, "ppo_*_tfrl_seed0.csv")))[0]
    assert plot_curves.main(["--out", str(tmp_path), source]) == 0
    with open(tmp_path / "ppo.svg", encoding="utf-8") as f:
        svg = f.read()
    assert svg.startswith("<?xml") and "PPO on CartPole-v1" in svg and "tfrl (1 seed)" in svg
    # Deterministic: the same CSV gives the same bytes.
    again = tmp_path / "again"
    plot_curves.main(["--out", str(again), source])
    assert (again / "ppo.svg").read_text(encoding="utf-8") == svg


def test_a_csv_without_rows_is_refused(tmp_path):
    path = tmp_path / "x_CartPole-v1_tfrl_seed0.csv"
    path.write_text("# algo=X env=CartPole-v1 library=tfrl seed=0 budget=1\n"
                    "env_steps,mean_return,wall_s\n")
    with pytest.raises(ValueError, match="no rows"):
        _plot_curves().read_curve(str(path))


def test_the_caption_names_each_runs_smoothing_window(tmp_path):
    plot_curves = _plot_curves()

    def write(library, smoothing):
        path = tmp_path / f"x_CartPole-v1_{library}_seed0.csv"
        extra = f" smoothing={smoothing}" if smoothing else ""
        path.write_text(f"# algo=X env=CartPole-v1 library={library} seed=0 budget=10{extra}\n"
                        "env_steps,mean_return,wall_s\n5,1.0,0.1\n")
        return str(path)

    same = plot_curves.load([write("tfrl", 20)])["X"]
    assert "mean return of the last 20 training episodes" in plot_curves.caption(same)
    both = plot_curves.load([write("tfrl", 20), write("sb3", 100)])["X"]
    assert "mean return of the last 100 (sb3) / 20 (tfrl) training episodes" in \
        plot_curves.caption(both)
    unknown = plot_curves.load([write("tfrl", None)])["X"]
    assert "mean return of the latest training episodes" in plot_curves.caption(unknown)


def test_a_tuned_files_curve_beside_a_peer_comparison_is_labelled(tmp_path):
    """The tfrl-tuned runs (a tuned file's own settings) keep their budget, seeds and
    smoothing apart in the caption, which names their file; the plot labels them."""
    plot_curves = _plot_curves()

    def write(library, seed, budget, smoothing, extra=""):
        path = tmp_path / f"x_CartPole-v1_{library}_seed{seed}.csv"
        path.write_text(f"# algo=X env=CartPole-v1 library={library} seed={seed} "
                        f"budget={budget} smoothing={smoothing}{extra}\n"
                        "env_steps,mean_return,wall_s\n5,1.0,0.1\n9,2.0,0.2\n")
        return str(path)

    paths = [write("tfrl", 0, 100, 100), write("sb3", 0, 100, 100),
             write("tfrl-tuned", 0, 50, 20, " source=tfrl/tuned/x.yaml"),
             write("tfrl-tuned", 1, 50, 20, " source=tfrl/tuned/x.yaml")]
    # A file run with another algorithm and settings says so (bench_curve_tuned's --algo
    # and --set).
    changed = write("tfrl-tuned", 2, 50, 20, " source=tfrl/tuned/x.yaml+algo=Y+a=1+b=false")
    assert ("tfrl/tuned/x.yaml run as Y with a=1, b=false, other settings;"
            in plot_curves.caption(plot_curves.load([*paths, changed])["X"]))
    caption = plot_curves.caption(plot_curves.load(paths)["X"])
    assert caption.startswith(
        "X on CartPole-v1, seeds 0 (sb3, tfrl) / 0, 1 (tfrl-tuned), 100 (sb3, tfrl) / 50 "
        "(tfrl-tuned) env steps per run; mean return of the last 100 (sb3, tfrl) / 20 "
        "(tfrl-tuned) training episodes; peer: Stable-Baselines3 with the same settings as "
        "tfrl; tfrl, tuned file (tfrl-tuned): tfrl/tuned/x.yaml, other settings;")
    assert plot_curves.main(["--out", str(tmp_path / "svg"), *paths]) == 0
    svg = (tmp_path / "svg" / "x.svg").read_text(encoding="utf-8")
    assert "tfrl, tuned file (2 seeds)" in svg and "Stable-Baselines3 (1 seed)" in svg


def test_an_rllib_peer_is_named_with_its_version_framework_and_stack(tmp_path):
    """bench/bench_async.py's RLlib runs: the caption names RLlib's version, framework and
    API stack from the CSV header, and says whether the settings are tfrl's."""
    plot_curves = _plot_curves()

    def write(library, source, extra=""):
        path = tmp_path / f"x_CartPole-v1_{library}_seed0.csv"
        path.write_text(f"# algo=X env=CartPole-v1 library={library} seed=0 budget=100 "
                        f"smoothing=100 source={source}{extra}\n"
                        "env_steps,mean_return,wall_s\n5,1.0,0.1\n9,2.0,0.2\n")
        return str(path)

    tfrl = write("tfrl", "tfrl/tuned/x.yaml")
    rllib = write("rllib", "tfrl/tuned/x.yaml", " version=2.60.0 framework=torch stack=old")
    caption = plot_curves.caption(plot_curves.load([tfrl, rllib])["X"])
    assert caption.startswith(
        "X on CartPole-v1, one seed (0; more did not fit the run's time), 100 env steps per "
        "run; mean return of the last 100 training episodes; peer: RLlib 2.60.0 (torch, old "
        "API stack) with the same settings as tfrl (tfrl/tuned/x.yaml);")
    other = write("rllib", "rllib/y.py", " version=2.60.0 framework=torch stack=new")
    assert ("peer: RLlib 2.60.0 (torch, new API stack) with settings from rllib/y.py;"
            in plot_curves.caption(plot_curves.load([tfrl, other])["X"]))
    assert plot_curves.main(["--out", str(tmp_path / "svg"), tfrl, other]) == 0
    assert "RLlib (1 seed)" in (tmp_path / "svg" / "x.svg").read_text(encoding="utf-8")


def test_an_rllib_peer_caption_says_what_differs(tmp_path, monkeypatch):
    """An algorithm in PEER_DIFFERS (CQL: RLlib's CQL under its SAC replay step) has it
    said after RLlib's settings."""
    plot_curves = _plot_curves()
    monkeypatch.setitem(plot_curves.PEER_DIFFERS, "X", "except the replay step")
    paths = []
    rllib = " version=2.60.0 framework=torch stack=old"
    for library, extra in (("tfrl", ""), ("rllib", rllib)):
        path = tmp_path / f"x_Pendulum-v1_{library}_seed0.csv"
        path.write_text(f"# algo=X env=Pendulum-v1 library={library} seed=0 budget=4 "
                        f"source=tfrl/tuned/x.yaml{extra}\n# note=offline\n"
                        "env_steps,mean_return,wall_s\n5,1.0,0.1\n9,2.0,0.2\n")
        paths.append(str(path))
    assert ("peer: RLlib 2.60.0 (torch, old API stack) with the same settings as tfrl "
            "(tfrl/tuned/x.yaml), except the replay step;"
            in plot_curves.caption(plot_curves.load(paths)["X"]))


def _bench_offline_curves(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(REPO, "bench"))  # its `from curves import`
    spec = importlib.util.spec_from_file_location(
        "bench_offline_curves", os.path.join(REPO, "bench", "bench_offline_curves.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_offline_peer_runs_map_every_tuned_key_to_rllib(monkeypatch):
    """bench/bench_offline_curves.py (RLlib's BC, MARWIL and CQL beside tfrl's): every key
    of the tuned files has an RLlib name, and CQL's schedule keys are translated so that
    RLlib takes tfrl's gradient steps (0 / 50 / 1,300 / 2,550 after iterations 1-4, as
    tfrl's CQL on cql_pendulum.yaml counts them)."""
    bench = _bench_offline_curves(monkeypatch)
    for algo in bench.TUNED:
        settings = bench.rllib_settings(algo, 3, "/root", 5)
        assert settings["seed"] == 3 and settings["evaluation_duration"] == 5
    cql = bench.rllib_settings("CQL", 0, "/root", 5)
    assert cql["input_"] == os.path.join("/root", "pendulum")
    assert (cql["rollout_fragment_length"], cql["training_intensity"],
            cql["num_steps_sampled_before_learning_starts"],
            cql["min_sample_timesteps_per_iteration"]) == (200, 64.0, 9999, 5000)
    assert (cql["train_batch_size"], cql["num_actions"], cql["bc_iters"]) == (256, 5, 200)
    tuned = bench.tuned_spec("CQL")
    assert bench.tfrl_grad_steps(tuned["config"], 4) == [0, 50, 1300, 2550]
    spec = {**tuned, "config": {**tuned["config"], "n_step": 3}}
    monkeypatch.setattr(bench, "tuned_spec", lambda algo: spec)
    with pytest.raises(ValueError, match=r"no RLlib name for \['n_step'\] of cql_pendulum"):
        bench.rllib_settings("CQL", 0, "/root", 5)
