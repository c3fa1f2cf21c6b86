"""TRL adapter: GRPO with Hugging Face TRL's ``GRPOTrainer`` on the harness's language tasks.

The harness builds everything a language workload is made of (:mod:`rlcompare.harness.language`): the
tokenizer's vocabulary, the task, the model's shape and its initial weights. This adapter turns them
into TRL's own objects and lets ``GRPOTrainer`` train:

- **Model.** ``transformers.Qwen2ForCausalLM`` built from a ``Qwen2Config`` of the workload's
  ``language_model`` (tied embeddings, no padding row), with the harness's initial weights for the run's
  seed loaded by name. Nothing is downloaded (``HF_HUB_OFFLINE``).
- **Tokenizer.** A character-level ``PreTrainedTokenizerFast`` over the harness's vocabulary, which
  prepends ``<bos>``; the first prompt's ids are checked against the harness's own before training.
- **Prompts.** The run's training problems in the harness's order
  (:func:`rlcompare.harness.language.training_problem_seeds`), unshuffled (``shuffle_dataset=False``), so
  every adapter of a seed learns from the same prompts in the same order.
- **Reward and counting.** TRL's reward function scores each completion by stepping its tokens through
  the harness's counted environment (:func:`rlcompare.harness.language.score_completion`): the harness
  counts every generated token and computes every reward. TRL's own count is its
  ``num_input_tokens_seen`` less the prompts' tokens.
- **Budget and evaluation.** A callback traces each optimizer step as an update, hands the model to the
  harness as a greedy policy (evaluation pauses the training clock) and stops TRL at the first step
  boundary at or past the budget of generated tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    FidelityEntry,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    language_fidelity,
    map_settings,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: TRL's ``loss_type`` for each canonical loss aggregation (trl/trainer/grpo_trainer.py, ``_compute_loss``).
LOSS_TYPES = {"token_mean": "dapo", "sequence_mean": "grpo", "constant": "dr_grpo"}
SCALE_REWARDS = {"group_std": "group", "none": "none"}


def _loss_type(value: str, _workload: WorkloadLike) -> str:
    return LOSS_TYPES[value]


def _scale_rewards(value: str, _workload: WorkloadLike) -> str:
    return SCALE_REWARDS[value]


def _batch_size(value: int, workload: WorkloadLike) -> int:
    return int(value) * int(workload.hyperparameters.group_size)


GRPO_SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate", note="AdamW with weight_decay=0.0 and lr_scheduler_type='constant' "
            "(TRL's default schedule decays linearly)"),
    Setting("group_size", "num_generations"),
    Setting("prompts_per_step", "per_device_train_batch_size", convert=_batch_size,
            note="completions per optimizer step (prompts x num_generations), gradient_accumulation_steps=1: "
                 "one generation batch per optimizer step"),
    Setting("iterations", "num_iterations"),
    Setting("clip_low", "epsilon"),
    Setting("clip_high", "epsilon_high"),
    Setting("kl_coef", "beta", note="k3 estimator, use_bias_correction_kl=False (TRL's default multiplies it by the "
            "ratio); the reference model is the run's initial weights"),
    Setting("loss_aggregation", "loss_type", convert=_loss_type,
            note="token_mean: 'dapo' (the generation batch's token count); sequence_mean: 'grpo'; constant: 'dr_grpo' "
                 "(max_completion_length = the task's max_new_tokens)"),
    Setting("advantage_scaling", "scale_rewards", convert=_scale_rewards,
            note="(r - group mean) / (unbiased group std + 1e-4) for 'group'"),
    Setting("temperature", "temperature", note="top_p=1.0, top_k=0; training log-probabilities use the same "
            "temperature"),
    Setting("max_grad_norm", "max_grad_norm"),
]


class TRLAdapter(Adapter):
    id = "trl"
    framework = "trl"
    summary = "TRL: GRPOTrainer (transformers) on the harness's language tasks, CPU"
    #: ``import trl`` loads its submodules lazily (0.05 s): the trainer module is what a run imports
    import_name = "trl.trainer.grpo_trainer"
    distributions = ("trl", "transformers", "accelerate", "datasets", "tokenizers", "torch", "numpy", "gymnasium")
    install_requires = ("trl==1.16.0", "torch==2.13.0")
    #: TRL 1.16 with the transformers, accelerate and datasets it resolved to here; torch's CPU build.
    environment_requires = (
        "trl==1.16.0", "transformers==5.25.0", "accelerate==1.16.0", "datasets==5.2.0", "tokenizers==0.23.3",
        "torch==2.13.0", "numpy==2.4.6", "gymnasium==1.2.2",
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
            "gradient_accumulation_steps": 1, "max_completion_length": completion_tokens(workload.env_kwargs),
            "lr_scheduler_type": "constant", "weight_decay": 0.0, "optim": "adamw_torch", "warmup_steps": 0,
            "top_p": 1.0, "top_k": 0, "use_bias_correction_kl": False, "mask_truncated_completions": False,
            "shuffle_dataset": False,
        })
        entries += language_fidelity(workload, "transformers.Qwen2ForCausalLM", "Qwen2Config(tie_word_embeddings=True)",
                                     "reward_funcs", ("use_cpu", True, "generation and training in the run's one process"))
        return kwargs, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_trl.run import train_grpo

        config, _ = self.native_config(workload)
        return train_grpo(workload, context, config)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """TRL's own advantages and ``_compute_loss`` on the probe (:mod:`rlcompare_trl.parity`)."""
        if probe.family != "GRPO":
            return ParityOutcome.unverifiable(f"the TRL adapter offers no {probe.family}")
        from rlcompare_trl.parity import grpo_loss

        config, _ = self.native_config(probe.workload_view())
        return grpo_loss(probe, config)


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(TRLAdapter)
