"""PettingZoo adapters: ParallelPettingZooEnv and PettingZooEnv (AEC) against PettingZoo itself.

PettingZoo's own `parallel_api_test` / `api_test` certify the envs used here; each adapter
then replays what the PettingZoo env does under the same seed and actions, step for step.
"""

import gymnasium as gym
import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
mpe2 = pytest.importorskip("mpe2")

from mpe2 import simple_speaker_listener_v4, simple_spread_v3  # noqa: E402
from pettingzoo.test import api_test, parallel_api_test  # noqa: E402
from pettingzoo.test.example_envs import (  # noqa: E402
    generated_agents_env_action_mask_info_v0, generated_agents_env_v0,
    generated_agents_parallel_v0)
from pettingzoo.utils import parallel_to_aec  # noqa: E402

from pettingzoo_helpers import Relay  # noqa: E402
from tfrl.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from tfrl.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def tictactoe():
    return pettingzoo.make("aec", "classic/tictactoe-v3")


def connect_four():
    return pettingzoo.make("aec", "classic/connect_four-v3")


def legal_action(rng, space, obs, info):
    """A uniformly random legal action: PettingZoo's masks in obs dicts or in infos."""
    mask = obs.get("action_mask") if isinstance(obs, dict) else (info or {}).get("action_mask")
    if mask is None:
        return int(rng.integers(space.n))
    return int(rng.choice(np.flatnonzero(mask)))


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------- PettingZoo's own tests

@pytest.mark.parametrize("make", [Relay, lambda: simple_spread_v3.parallel_env(N=2)],
                         ids=["relay", "simple_spread"])
def test_parallel_envs_pass_pettingzoo_parallel_api_test(make, capsys):
    parallel_api_test(make(), num_cycles=100)
    assert "Passed Parallel API test" in capsys.readouterr().out


@pytest.mark.parametrize("make", [tictactoe, lambda: parallel_to_aec(Relay())],
                         ids=["tictactoe", "relay_aec"])
def test_aec_envs_pass_pettingzoo_api_test(make, capsys):
    api_test(make(), num_cycles=100)
    assert "Passed API test" in capsys.readouterr().out


# ------------------------------------------------- the adapters replay PettingZoo exactly

def parallel_reference(env, seed, steps):
    """(obs, rewards, terminations, truncations) per step of a Parallel env driven directly."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    trace = [(obs, {}, {}, {})]
    for _ in range(steps):
        if not env.agents:
            break
        actions = {a: legal_action(rng, env.action_space(a), obs[a], infos.get(a))
                   for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        trace.append((obs, rewards, terms, truncs))
    return trace


def parallel_through_adapter(env, seed, steps):
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    trace = [(obs, {}, {}, {})]
    live = list(obs)
    for _ in range(steps):
        if not live:
            break
        actions = {a: legal_action(rng, env.get_action_space(a), obs[a], infos.get(a))
                   for a in live}
        obs, rewards, terms, truncs, infos = env.step(actions)
        all_done = terms.pop("__all__") or truncs.pop("__all__")
        trace.append((obs, rewards, terms, truncs))
        live = [] if all_done else [a for a in obs if not (terms[a] or truncs[a])]
    return trace


@pytest.mark.parametrize("make, steps", [
    (lambda: simple_spread_v3.parallel_env(N=2, max_cycles=25), 30),
    (Relay, 10),
    # Agents join (and, past 10 agents, leave) at random; types with new spaces appear.
    (generated_agents_parallel_v0.parallel_env, 60),
], ids=["simple_spread", "relay", "generated_agents"])
def test_parallel_adapter_replays_the_env(make, steps):
    expected = parallel_reference(make(), 3, steps)
    received = parallel_through_adapter(ParallelPettingZooEnv(make()), 3, steps)
    assert len(received) == len(expected) > 5
    for t, (want, got) in enumerate(zip(expected, received)):
        assert all(same(w, g) for w, g in zip(want, got)), f"step {t} differs"
    joined = set().union(*(obs for obs, *_ in received)) - set(received[0][0])
    left = {a for _, _, terms, truncs in received for a in terms if terms[a] or truncs[a]}
    if make is generated_agents_parallel_v0.parallel_env:
        assert len(joined) >= 5 and len(left) >= 3  # both happen within the 60 steps


def aec_reference(env, seed, iterations):
    """(agent, obs, reward, terminated, truncated) per `agent_iter` turn of an AEC env."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    trace = []
    for agent in env.agent_iter(iterations):
        obs, reward, term, trunc, info = env.last()
        trace.append((agent, obs, reward, term, trunc))
        done = term or trunc
        env.step(None if done else legal_action(rng, env.action_space(agent), obs, info))
    return trace


def aec_through_adapter(env, seed, iterations):
    """The same turns, read off the adapter's reset and step dicts."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    (agent, first), = obs.items()
    trace, rewards, terms, truncs = [(agent, first, 0, False, False)], {}, {}, {}
    while len(trace) < iterations:
        live = [a for a in obs if not (terms.get(a) or truncs.get(a))]
        if not live:
            break
        assert len(live) == 1, f"more than one agent to act: {live}"
        a = live[0]
        obs, rewards, terms, truncs, infos = env.step(
            {a: legal_action(rng, env.get_action_space(a), obs[a], infos.get(a))})
        for b in obs:
            trace.append((b, obs[b], rewards[b], terms[b], truncs[b]))
    return trace[:iterations]


@pytest.mark.parametrize("make, iterations", [
    (tictactoe, 40), (connect_four, 60),
    (lambda: parallel_to_aec(Relay()), 20),
    # Masks in infos; agents join at random; an illegal move would end it (it never comes).
    (generated_agents_env_v0.env, 80),
], ids=["tictactoe", "connect_four", "relay_aec", "generated_agents"])
def test_aec_adapter_replays_the_env(make, iterations):
    expected = aec_reference(make(), 5, iterations)
    received = aec_through_adapter(PettingZooEnv(make()), 5, iterations)
    assert len(received) == len(expected) > 5
    for i, (want, got) in enumerate(zip(expected, received)):
        assert want[0] == got[0] and all(same(w, g) for w, g in zip(want[1:], got[1:])), \
            f"turn {i}: expected {want}, received {got}"


# ------------------------------------------------------------ agents joining and leaving

def test_parallel_agents_join_and_leave():
    env = ParallelPettingZooEnv(Relay(join_at=2, leave_at=3, max_cycles=5))
    assert isinstance(env, MultiAgentEnv)
    assert env.get_agent_ids() == {"scout_0", "scout_1", "runner_0"}
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["scout_0", "scout_1"] and infos == {"scout_0": {}, "scout_1": {}}
    seen = []
    actions = {"scout_0": 1, "scout_1": 2}
    for t in range(1, 6):
        obs, rewards, terms, truncs, infos = env.step(actions)
        seen.append((list(obs), rewards, terms, truncs))
        actions = {a: 1 for a in obs if not (terms[a] or truncs[a])}
    f, done = False, True
    assert seen == [
        (["scout_0", "scout_1"], {"scout_0": 1.0, "scout_1": 2.0},
         {"scout_0": f, "scout_1": f, "__all__": f}, {"scout_0": f, "scout_1": f, "__all__": f}),
        # runner_0 joins: first seen with reward 0 (it did not act).
        (["scout_0", "scout_1", "runner_0"], {"scout_0": 1.0, "scout_1": 1.0, "runner_0": 0.0},
         {"scout_0": f, "scout_1": f, "runner_0": f, "__all__": f},
         {"scout_0": f, "scout_1": f, "runner_0": f, "__all__": f}),
        # scout_1 terminates: reported once with its flag ...
        (["scout_0", "scout_1", "runner_0"], {"scout_0": 1.0, "scout_1": 1.0, "runner_0": 1.0},
         {"scout_0": f, "scout_1": done, "runner_0": f, "__all__": f},
         {"scout_0": f, "scout_1": f, "runner_0": f, "__all__": f}),
        # ... then it is gone from every dict.
        (["scout_0", "runner_0"], {"scout_0": 1.0, "runner_0": 1.0},
         {"scout_0": f, "runner_0": f, "__all__": f}, {"scout_0": f, "runner_0": f, "__all__": f}),
        # The time limit truncates everyone: truncateds["__all__"].
        (["scout_0", "runner_0"], {"scout_0": 1.0, "runner_0": 1.0},
         {"scout_0": f, "runner_0": f, "__all__": f},
         {"scout_0": done, "runner_0": done, "__all__": done}),
    ]
    assert obs["runner_0"].tolist() == [5.0, 2.0] and infos == {"scout_0": {"t": 5},
                                                                 "runner_0": {"t": 5}}


def test_episode_end_flags_truncated_if_any_agent_was_truncated():
    env = ParallelPettingZooEnv(Relay(join_at=9, leave_at=2, max_cycles=2))
    env.reset(seed=0)
    env.step({"scout_0": 0, "scout_1": 0})
    _, _, terms, truncs, _ = env.step({"scout_0": 0, "scout_1": 0})
    # scout_1 terminated and scout_0 was truncated in the last step: the episode was cut.
    assert terms == {"scout_0": False, "scout_1": True, "__all__": False}
    assert truncs == {"scout_0": True, "scout_1": False, "__all__": True}


def play_aec(env, max_steps):
    """Plays action 1 for whoever is to act; yields each step's dicts."""
    obs, _ = env.reset(seed=0)
    live = list(obs)
    for _ in range(max_steps):
        (agent,) = live
        result = env.step({agent: 1})
        yield result
        obs, _, terms, truncs, _ = result
        if terms["__all__"] or truncs["__all__"]:
            return
        live = [a for a in obs if not (terms[a] or truncs[a])]


def test_aec_agents_join_and_leave():
    env = PettingZooEnv(parallel_to_aec(Relay(join_at=2, leave_at=3, max_cycles=4)))
    turns = [["scout_0"]]
    for obs, rewards, terms, truncs, _ in play_aec(env, 30):
        turns.append([(a, rewards[a], terms[a], truncs[a]) for a in obs])
    f = False
    # The turns of PettingZoo's own agent_iter loop (test_aec_adapter_replays_the_env):
    # parallel_to_aec runs a parallel step when the last agent of its cycle acts (with
    # each agent's latest action), and an agent's rewards reach it at its next turn.
    assert turns == [
        ["scout_0"],
        [("scout_1", 0, f, f)],
        [("scout_0", 1.0, f, f)],
        [("scout_1", 1.0, f, f)],
        [("scout_0", 1.0, f, f)],
        [("scout_1", 1.0, f, f)],
        [("runner_0", 0.0, f, f)],  # joined in step 2
        # Step 3: scout_1 terminates; reported once (PettingZoo selects it first), then gone.
        [("scout_1", 1.0, True, f), ("scout_0", 1.0, f, f)],
        [("runner_0", 1.0, f, f)],
        # Step 4 (max_cycles) truncates the rest: each reported once, and the episode ends.
        [("runner_0", 1.0, f, True), ("scout_0", 1.0, f, True)],
    ]
    assert terms["__all__"] is False and truncs["__all__"] is True


def test_aec_game_over_reports_both_players_with_their_rewards():
    env = PettingZooEnv(tictactoe())
    env.reset(seed=0)
    # player_1 takes the top row (cells 0, 3, 6 in tictactoe_v3's column-major order).
    for agent, cell in [("player_1", 0), ("player_2", 1), ("player_1", 3), ("player_2", 4)]:
        obs, rewards, terms, truncs, _ = env.step({agent: cell})
        assert list(obs) == ["player_2" if agent == "player_1" else "player_1"]
    obs, rewards, terms, truncs, _ = env.step({"player_1": 6})
    assert rewards == {"player_2": -1, "player_1": 1}
    assert terms == {"player_2": True, "player_1": True, "__all__": True}
    assert truncs == {"player_2": False, "player_1": False, "__all__": False}
    with pytest.raises(ValueError, match=r"the episode has ended \(no agents left\); call reset"):
        env.step({"player_2": 0})


# --------------------------------------------------------------- spaces and action masks

def test_per_agent_spaces():
    env = ParallelPettingZooEnv(simple_speaker_listener_v4.parallel_env())
    assert env.observation_space == gym.spaces.Dict({
        "speaker_0": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "listener_0": gym.spaces.Box(-np.inf, np.inf, (11,), np.float32)})
    assert env.get_action_space("speaker_0") == gym.spaces.Discrete(3)
    assert env.get_action_space("listener_0") == gym.spaces.Discrete(5)
    assert env.get_observation_space("listener_0").shape == (11,)
    with pytest.raises(ValueError, match=r"has no action space for agent 'speaker_1' \("
                                         r"action_space\('speaker_1'\) raised KeyError\); its "
                                         r"agents are \['listener_0', 'speaker_0'\]"):
        env.get_action_space("speaker_1")


def test_spaces_of_agents_that_join_later_come_from_the_env():
    pz = generated_agents_parallel_v0.parallel_env()
    env = ParallelPettingZooEnv(pz)  # no possible_agents: reset once, as RLlib does
    assert env.get_agent_ids() == set(pz.agents) and len(env.get_agent_ids()) == 5
    new_type = pz.add_type()
    assert env.get_observation_space(f"{new_type}_0") is pz.observation_space(f"{new_type}_0")


def test_action_masks_in_observations_pass_through():
    env = PettingZooEnv(connect_four())
    assert env.get_observation_space("player_0")["action_mask"].shape == (7,)
    obs, _ = env.reset(seed=0)
    for _ in range(6):  # fill column 3 (6 rows)
        (agent,) = obs
        obs, *_ = env.step({agent: 3})
    (agent,) = obs
    assert sorted(obs[agent]) == ["action_mask", "observation"]
    assert obs[agent]["action_mask"].tolist() == [1, 1, 1, 0, 1, 1, 1]
    assert env.get_observation_space(agent).contains(obs[agent])


def test_action_masks_in_infos_pass_through():
    pz = generated_agents_env_action_mask_info_v0.env()
    env = PettingZooEnv(pz)
    obs, infos = env.reset(seed=0)
    (agent,) = obs
    mask = infos[agent]["action_mask"]
    assert mask.sum() == 1 and mask is pz.infos[agent]["action_mask"]
    obs, rewards, terms, truncs, infos = env.step({agent: int(np.argmax(mask))})
    (nxt,) = obs
    assert infos[nxt]["action_mask"].shape == (env.get_action_space(nxt).n,)


# ------------------------------------------------------------------ checks at the door

def test_rejects_envs_that_are_not_pettingzoo():
    with pytest.raises(TypeError, match=r"ParallelPettingZooEnv wraps a PettingZoo env; received "
                                        r"CartPoleEnv.*no observation_space\(agent\)"):
        ParallelPettingZooEnv(gym.make("CartPole-v1").unwrapped)
    with pytest.raises(TypeError, match=r"PettingZooEnv wraps a PettingZoo env; received dict"):
        PettingZooEnv({})


def test_rejects_the_other_api():
    with pytest.raises(TypeError, match=r"received the AEC env OrderEnforcingWrapper\. Wrap it "
                                        r"in PettingZooEnv instead, or convert it with "
                                        r"pettingzoo\.utils\.aec_to_parallel"):
        ParallelPettingZooEnv(tictactoe())
    with pytest.raises(TypeError, match=r"received the Parallel env Relay\. Wrap it in "
                                        r"ParallelPettingZooEnv.*parallel_to_aec"):
        PettingZooEnv(Relay())


class GymSpaces(Relay):
    def observation_space(self, agent):
        return (0, 1)


def test_rejects_spaces_that_are_not_gymnasium_spaces():
    with pytest.raises(TypeError, match=r"GymSpaces\.observation_space\('scout_0'\) returned "
                                        r"tuple: \(0, 1\); expected a gymnasium\.spaces\.Space"):
        ParallelPettingZooEnv(GymSpaces())


class NoAgents(Relay):
    def __init__(self):
        super().__init__()
        self.possible_agents = []

    def reset(self, seed=None, options=None):
        self.agents = []
        return {}, {}


class Revenant:
    """A bare AEC env (PettingZoo's API by name): "b" terminates after "a"'s first move,
    and comes back when its dead step is taken."""

    possible_agents = ["a", "b"]

    def observation_space(self, agent):
        return OBS_SPACE

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents, self.agent_selection = ["a", "b"], "a"
        self.terminations = {"a": False, "b": False}
        self.infos = {"a": {}, "b": {}}

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def last(self):
        agent = self.agent_selection
        return self.observe(agent), 0.0, self.terminations[agent], False, {}

    def step(self, action):
        if action is None:  # b's dead step: b should leave, but stays
            self.agent_selection = "a"
            return
        self.terminations["b"], self.agent_selection = True, "b"


OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


class EmptyAfterReset(Relay):
    def reset(self, seed=None, options=None):
        self.agents = []
        return {}, {}


class EmptyAEC(Revenant):
    def reset(self, seed=None, options=None):
        self.agents = []


def test_rejects_a_reset_without_agents():
    with pytest.raises(ValueError, match=r"EmptyAfterReset has no agents after reset\(\); "
                                         r"expected at least one"):
        ParallelPettingZooEnv(EmptyAfterReset()).reset(seed=0)
    with pytest.raises(ValueError, match=r"EmptyAEC has no agents after reset\(\); "
                                         r"expected at least one"):
        PettingZooEnv(EmptyAEC()).reset(seed=0)


def test_rejects_an_env_without_agents():
    with pytest.raises(ValueError, match=r"ParallelPettingZooEnv: NoAgents has no possible_agents "
                                         r"and no agents after reset\(\); expected at least one"):
        ParallelPettingZooEnv(NoAgents())


@pytest.mark.parametrize("actions, match", [
    ({"scout_0": 1}, r"agent 'scout_1' is to act but got no action\. Received actions for "
                     r"\['scout_0'\]; expected actions for exactly \['scout_0', 'scout_1'\]"),
    ({"scout_0": 1, "scout_1": 1, "runner_0": 0},
     r"agent 'runner_0' is not to act at this step \(finished, unknown or waiting for its "
     r"turn\)"),
    ([1, 1], r"step\(\) takes a dict agent_id -> action; received list: \[1, 1\]"),
])
def test_parallel_rejects_actions_for_the_wrong_agents(actions, match):
    env = ParallelPettingZooEnv(Relay())
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(actions)


def test_aec_rejects_actions_for_an_agent_whose_turn_it_is_not():
    env = PettingZooEnv(tictactoe())
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"PettingZooEnv\.step\(\): agent 'player_2' is not to "
                                         r"act.*expected actions for exactly \['player_1'\]"):
        env.step({"player_1": 0, "player_2": 1})


class Broken(Relay):
    """Relay with one flaw, chosen by `flaw`."""

    def __init__(self, flaw):
        super().__init__()
        self.flaw = flaw

    def reset(self, seed=None, options=None):
        obs, infos = super().reset(seed, options)
        if self.flaw == "old_reset":
            return obs
        if self.flaw == "reset_missing_obs":
            del obs["scout_1"]
        return obs, infos

    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        if self.flaw == "four_dicts":
            return obs, rewards, terms, infos
        if self.flaw == "missing_reward":
            del rewards["scout_1"]
        if self.flaw == "vanish":
            self.agents.remove("scout_1")
        if self.flaw == "flag_and_stay":
            terms["scout_1"] = True
        if self.flaw == "revive" and self.t == 4:
            self.agents.append("scout_1")
        return obs, rewards, terms, truncs, infos


@pytest.mark.parametrize("flaw, match", [
    ("old_reset", r"Broken\.reset\(\) must return \(observations, infos\), two dicts keyed by "
                  r"agent \(PettingZoo >= 1\.23\); received \{'scout_0'"),
    ("reset_missing_obs", r"Broken\.reset\(\) gave no obs entry for agent 'scout_1'; received "
                          r"obs for \['scout_0'\]; expected every agent of the step: "
                          r"\['scout_0', 'scout_1'\]"),
    ("four_dicts", r"Broken\.step\(\) must return five dicts keyed by agent: \(observations, "
                   r"rewards, terminations, truncations, infos\); received \("),
    ("missing_reward", r"Broken\.step\(\) gave no rewards entry for agent 'scout_1'; received "
                       r"rewards for \['scout_0'\]"),
    ("vanish", r"agent 'scout_1' of Broken left env\.agents without a terminated or truncated "
               r"flag \(received terminated=False, truncated=False\); expected the agents flagged "
               r"in a step to be exactly those that leave env\.agents"),
    ("flag_and_stay", r"agent 'scout_1' of Broken is still in env\.agents although flagged "
                      r"terminated=True, truncated=False"),
    ("revive", r"agent 'scout_1' of Broken is live again after it was reported terminated or "
               r"truncated in this episode; PettingZoo agents cannot come back"),
])
def test_parallel_rejects_what_breaks_the_api(flaw, match):
    env = ParallelPettingZooEnv(Broken(flaw))
    with pytest.raises(ValueError, match=match):
        obs, _ = env.reset(seed=0)
        live = list(obs)
        for _ in range(6):
            obs, _, terms, truncs, _ = env.step({a: 0 for a in live})
            live = [a for a in obs if not (terms[a] or truncs[a])]


def test_aec_rejects_a_revived_agent():
    env = PettingZooEnv(Revenant())
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"PettingZooEnv: agent 'b' of Revenant is live again "
                                         r"after it was reported terminated or truncated"):
        env.step({"a": 1})


def test_sub_environment_render_and_close_reach_the_pettingzoo_env():
    pz = simple_spread_v3.parallel_env(N=2, render_mode="rgb_array")
    env = ParallelPettingZooEnv(pz)
    assert env.get_sub_environments is pz.unwrapped and env.par_env is pz
    env.reset(seed=0)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    env.close()
