"""Tunix adapter: GRPO with Google Tunix's ``GRPOLearner`` (JAX) on the harness's language tasks.

The harness builds everything a language workload is made of (:mod:`rlcompare.harness.language`): the
tokenizer's vocabulary, the task, the model's shape and its initial weights. This adapter turns them
into Tunix's own objects and lets ``GRPOLearner`` (with ``RLCluster``, vanilla rollout, one CPU device)
train:

- **Model.** ``tunix.models.qwen2.Qwen2`` built from a ``ModelConfig`` of the workload's
  ``language_model`` (``use_tied_embedding=True``), with the harness's initial weights for the run's
  seed loaded by name (Hugging Face layout mapped as ``tunix/models/qwen2/params.py`` maps it). Tunix's
  own initialization is never used: it zeroes the MLP, a saddle the MLP never leaves.
- **Tokenizer.** A plain Python tokenizer over the harness's vocabulary (Tunix's ``TokenizerAdapter``
  accepts any object with ``encode``/``decode``/``bos_id``/``eos_id``/``pad_id``); Tunix's sampler
  prepends ``<bos>``. Each step's prompt ids are checked against the harness's.
- **Prompts.** The run's training problems in the harness's order
  (:func:`rlcompare.harness.language.training_problem_seeds`), unshuffled, one batch of
  ``prompts_per_step`` prompts per global step.
- **Reward and counting.** Tunix's reward function scores each completion by stepping its tokens
  through the harness's counted environment (:func:`rlcompare.harness.language.score_completion`): the
  harness counts every generated token and computes every reward. Tunix's own count is the length of
  each completion its sampler returned plus one ``<eos>`` per completion the sampler stopped at
  ``<eos>``: Tunix cuts the ``<eos>`` off a completion, so neither its lengths nor its completion mask
  hold it. The mask (what the loss trains) is recorded beside it: it also leaves out any ``<pad>`` the
  policy generated, which Tunix takes for padding.
- **Budget and evaluation.** After each global step every optimizer step is traced as an update, the
  model is handed to the harness as a greedy policy (evaluation pauses the training clock), and the
  prompt iterator ends at the first step boundary at or past the budget of generated tokens.
- **Compilation.** Before the training clock starts, one step's programs (sampling, reference and old
  log-probabilities where used, the train step) are compiled on a batch of the run's own shapes and
  the train step's effects undone; compilations during training are counted and recorded.

XLA's CPU threads are pinned to ``parallelism.threads_per_worker`` through ``PJRT_NPROC`` before JAX
starts (:func:`rlcompare.harness.jax_threads.configure_xla_threads`, as for rejax and SBX).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    language_fidelity,
    map_settings,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: Tunix's ``loss_agg_mode`` for each canonical loss aggregation (``tunix/rl/common.py``, ``aggregate_loss``).
LOSS_AGG_MODES = {"token_mean": "token-mean", "sequence_mean": "sequence-mean-token-mean",
                  "constant": "sequence-mean-token-scale"}
#: Tunix's registered ``advantage_estimator`` for each canonical advantage scaling (``tunix/rl/algo_core.py``).
ADVANTAGE_ESTIMATORS = {"group_std": "grpo", "none": "drgrpo"}
#: What Tunix adds to a group's standard deviation (``algo_core.compute_advantages``); the reference adds 1e-4.
TUNIX_STD_EPS = 1e-6
REFERENCE_STD_EPS = 1e-4

EOS_NOTE = ("Tunix's sampler cuts each completion before its <eos> and the learner masks `completion_ids != "
            "pad_id`: <eos> is generated and counted but never trained (the canonical update trains it), and a "
            "generated <pad> is treated as padding")


def _loss_agg_mode(value: str, _workload: WorkloadLike) -> str:
    return LOSS_AGG_MODES[value]


def _advantage_estimator(value: str, _workload: WorkloadLike) -> str:
    return ADVANTAGE_ESTIMATORS[value]


def _temperature_judge(value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    note = ("RolloutConfig.temperature (top_p=1.0, top_k=None: plain categorical sampling); GRPOLearner copies it "
            "into the loss, which divides the logits by it")
    if int(workload.hyperparameters.iterations) > 1 and float(value) != 1.0:
        return Fidelity.APPROXIMATE, note + ("; with num_iterations > 1 the old policy's log-probabilities come from "
                                             "VanillaRollout.get_per_token_logps, which ignores the temperature")
    return Fidelity.EXACT, note


GRPO_SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate", note="optax.chain(optax.clip_by_global_norm(max_grad_norm), "
            "optax.adam(learning_rate)): Adam (b1=0.9, b2=0.999, eps=1e-8), no weight decay, constant"),
    Setting("group_size", "num_generations"),
    Setting("prompts_per_step", "full_batch_size",
            note="prompts per train_ds batch (one global step); mini_batch_size=None: one optimizer step per "
                 "batch and iteration"),
    Setting("iterations", "num_iterations", note="with more than one, Tunix's old log-probabilities come from the "
            "rollout model before the step"),
    Setting("clip_low", "epsilon", note="Tunix also clips the log-ratio to [-20, 20] before exp"),
    Setting("clip_high", "epsilon_high", note="not a GRPOConfig field in Tunix 0.1.7: set as an attribute, "
            "which grpo_loss_fn reads with hasattr"),
    Setting("kl_coef", "beta", note="kl_loss_mode='low_var_kl' (k3: exp(ref - logp) - (ref - logp) - 1, "
            "kl_clamp_value=None), aggregated as the policy loss is; the reference model is a copy of the run's "
            "initial weights, none when 0"),
    Setting("loss_aggregation", "loss_agg_mode", convert=_loss_agg_mode,
            note="token_mean: 'token-mean'; sequence_mean: 'sequence-mean-token-mean'; constant: "
                 "'sequence-mean-token-scale' (divides by max_tokens_to_generate = the task's max_new_tokens); both "
                 "per-sequence modes average over completions with at least one masked-in token. " + EOS_NOTE),
    Setting("advantage_scaling", "advantage_estimator", convert=_advantage_estimator,
            note="'grpo': (r - group mean) / (unbiased group std + 1e-6); 'drgrpo': r - group mean"),
    Setting("temperature", "temperature", judge=_temperature_judge),
    Setting("max_grad_norm", "max_grad_norm", note="optax.clip_by_global_norm in the optimizer chain (Tunix itself "
            "only logs the gradient norm)"),
]


class TunixAdapter(Adapter):
    id = "tunix"
    framework = "tunix"
    summary = "Tunix: GRPOLearner (JAX, Flax NNX) on the harness's language tasks, CPU"
    import_name = "tunix"
    distributions = ("google-tunix", "jax", "jaxlib", "flax", "optax", "numpy", "gymnasium")
    install_requires = ("google-tunix==0.1.7",)
    #: Tunix 0.1.7 with the JAX stack it resolved to here (no torch).
    environment_requires = (
        "google-tunix==0.1.7", "jax==0.10.2", "jaxlib==0.10.2", "flax==0.12.8", "optax==0.2.8",
        "orbax-checkpoint==0.12.8", "qwix==0.1.8", "grain==0.2.18", "google-metrax==0.2.4",
        "transformers==5.12.1", "numpy==2.4.6", "gymnasium==1.2.2",
    )
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset({"GRPO"}),
            action_spaces=frozenset({"discrete"}),
            vectorized_envs=False,
            rollout_workers=False,
            modes=frozenset({"sync"}),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        from rlcompare.harness.language_ids import completion_tokens

        kwargs, entries = map_settings(workload, GRPO_SETTINGS)
        kwargs.update({
            "kl_loss_mode": "low_var_kl", "kl_clamp_value": None, "loss_algo": "grpo", "policy_loss_fn": "grpo",
            "reward_manager": "sequence-level", "max_tokens_to_generate": completion_tokens(workload.env_kwargs),
            "top_p": 1.0, "top_k": None, "adam": {"b1": 0.9, "b2": 0.999, "eps": 1e-8},
            "mini_batch_size": None, "rollout_engine": "vanilla", "data_shuffle_seed": None,
        })
        entries += language_fidelity(workload, "tunix.models.qwen2.Qwen2", "ModelConfig(use_tied_embedding=True)",
                                     "reward_fns", ("role_to_mesh", "(1, 1) mesh on one CPU device",
                                                    "actor, reference and rollout share the run's one process and device"))
        entries += departures(workload)
        return kwargs, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_tunix.run import train_grpo

        config, _ = self.native_config(workload)
        return train_grpo(workload, context, config)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """Tunix's own advantages and ``grpo_loss_fn`` on the probe (:mod:`rlcompare_tunix.parity`)."""
        if probe.family != "GRPO":
            return ParityOutcome.unverifiable(f"the Tunix adapter offers no {probe.family}")
        from rlcompare_tunix.parity import grpo_loss

        config, _ = self.native_config(probe.workload_view())
        return grpo_loss(probe, config)


def departures(workload: WorkloadLike) -> list[FidelityEntry]:
    """Where Tunix's GRPO update departs from the reference's defaults (settings of the reference's variants,
    :mod:`rlcompare.parity.grpo`), with the ones it keeps stated as exact."""
    hp = workload.hyperparameters
    found = [entry("defaults.eos_in_loss", True, Fidelity.APPROXIMATE, "completion_mask", False, EOS_NOTE)]
    if hp.advantage_scaling == "group_std":
        found += [
            entry("defaults.advantage_std_eps", REFERENCE_STD_EPS, Fidelity.APPROXIMATE, "compute_advantages",
                  TUNIX_STD_EPS, "algo_core.compute_advantages divides by (group std + 1e-6), not + 1e-4: a group "
                  "whose rewards barely differ gets larger advantages"),
            entry("defaults.advantage_std", "unbiased", Fidelity.EXACT, "compute_advantages", "std(ddof=1)"),
        ]
    if hp.kl_coef:
        found += [
            entry("defaults.kl_estimator", "k3", Fidelity.EXACT, "kl_loss_mode", "low_var_kl",
                  "Tunix's default kl_loss_mode 'kl' is k1 (logp - ref); 'low_var_kl' is k3, unclamped"),
            entry("defaults.kl_importance_weight", False, Fidelity.EXACT, "grpo_loss_fn", False,
                  "the KL term is added per token unweighted by the probability ratio"),
        ]
    return found


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(TunixAdapter)
