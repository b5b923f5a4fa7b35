"""Names of the data columns that flow through tfrl.

`Columns` is the single source of the strings; `SampleBatch` re-exports them as class
attributes (`SampleBatch.OBS == Columns.OBS == "obs"`), so data written by either API
stays interchangeable with RLlib's.
"""


class Columns:
    """Column names of SampleBatches and episodes."""

    # Environment data.
    OBS = "obs"
    NEXT_OBS = "new_obs"
    ACTIONS = "actions"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    # Legacy done flag (terminated OR truncated), derived for compatibility.
    DONES = "dones"
    INFOS = "infos"
    T = "t"
    EPS_ID = "eps_id"
    UNROLL_ID = "unroll_id"
    AGENT_ID = "agent_id"
    AGENT_INDEX = "agent_index"
    ENV_ID = "env_id"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"

    # Model outputs.
    ACTION_DIST_INPUTS = "action_dist_inputs"
    ACTION_PROB = "action_prob"
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    VALUES_BOOTSTRAPPED = "values_bootstrapped"

    # Recurrent models.
    SEQ_LENS = "seq_lens"
    STATE_IN = "state_in"
    STATE_OUT = "state_out"

    # Postprocessing results.
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
