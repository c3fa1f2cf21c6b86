"""The built-in workloads and suites, registered through the same hook as any plugin's."""

from __future__ import annotations

from typing import Any

from rlcompare.spec.workload import Suite, Workload, workload_from_dict

CARTPOLE_PPO_QUICK: dict[str, Any] = {
    "id": "cartpole-ppo-quick",
    "description": "CartPole-v1 PPO, 4 in-process envs; learns visibly in about a minute per run on one core.",
    "env": "CartPole-v1",
    "algorithm": "PPO",
    "env_steps": 50_000,
    "seeds": 2,
    "parallelism": {"envs_per_worker": 4, "workers": 1, "mode": "sync", "threads_per_worker": 1},
    "network": {"hidden_sizes": [64, 64], "activation": "tanh"},
    "hyperparameters": {
        "learning_rate": 1e-3,
        "gamma": 0.98,
        "gae_lambda": 0.8,
        "clip_range": 0.2,
        "rollout_steps": 64,
        "minibatch_size": 64,
        "epochs": 10,
        "entropy_coef": 0.0,
        "value_coef": 0.5,
        "max_grad_norm": 0.5,
    },
    # a multiple of one update (4 envs x 64 rollout steps = 256): evaluations land on update boundaries
    "evaluation": {"interval_steps": 5_120, "episodes": 10, "deterministic": True},
    "success_threshold": 475.0,
}


#: The demo's workload: the quick one's settings on the budget where its PPO reaches the threshold
#: (7,680 to 15,360 env steps on the quick suite's runs; a run that reaches it later is shown as not
#: reaching it), evaluated twice as often on fewer episodes, so that four frameworks with two seeds
#: each finish in about two minutes on 2 CPUs.
CARTPOLE_PPO_DEMO: dict[str, Any] = {
    **CARTPOLE_PPO_QUICK,
    "id": "cartpole-ppo-demo",
    "description": "CartPole-v1 PPO, 4 in-process envs, 15,360 env steps: the quick workload on the demo's budget.",
    "env_steps": 15_360,
    # ten updates (4 envs x 64 rollout steps = 256) between evaluations: on update boundaries
    "evaluation": {"interval_steps": 2_560, "episodes": 5, "deterministic": True},
}


#: The zoo's TD3 setting for Pendulum-v1 (td3.yml), with learning starting after 1,000 steps as SAC's.
PENDULUM_TD3: dict[str, Any] = {
    "id": "pendulum-td3", "description": "Pendulum-v1 TD3, one env",
    "env": "Pendulum-v1", "algorithm": "TD3", "env_steps": 20_000, "seeds": 3,
    "network": {"hidden_sizes": [400, 300], "activation": "relu"},
    "hyperparameters": {"learning_rate": 1e-3, "gamma": 0.98, "buffer_size": 200_000, "learning_starts": 1_000,
                        "exploration_noise": 0.1},
    "evaluation": {"interval_steps": 2_000}, "success_threshold": -200.0,
}

# Tuned settings follow the RL Baselines3 Zoo where it has them, so each algorithm can learn its task.
CLASSIC: list[dict[str, Any]] = [
    {**CARTPOLE_PPO_QUICK, "id": "cartpole-ppo", "env_steps": 100_000, "seeds": 3,
     "description": "CartPole-v1 PPO, 4 in-process envs", "evaluation": {"interval_steps": 10_240}},
    {
        "id": "cartpole-a2c", "description": "CartPole-v1 A2C, 8 in-process envs",
        "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 100_000, "seeds": 3,
        "parallelism": {"envs_per_worker": 8},
        "hyperparameters": {"learning_rate": 7e-4, "rollout_steps": 5, "entropy_coef": 0.0, "gamma": 0.99},
        "evaluation": {"interval_steps": 10_000}, "success_threshold": 475.0,
    },
    {
        "id": "cartpole-pg", "description": "CartPole-v1 PG (REINFORCE, batch-standardized returns), 4 in-process envs",
        "env": "CartPole-v1", "algorithm": "PG", "env_steps": 100_000, "seeds": 3,
        "parallelism": {"envs_per_worker": 4},
        "hyperparameters": {"learning_rate": 1e-3, "rollout_steps": 256, "gamma": 0.99},
        "evaluation": {"interval_steps": 10_240}, "success_threshold": 475.0,
    },
    {
        "id": "cartpole-dqn", "description": "CartPole-v1 DQN, one env",
        "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 50_000, "seeds": 3,
        "network": {"hidden_sizes": [256, 256], "activation": "relu"},
        "hyperparameters": {
            "learning_rate": 2.3e-3, "minibatch_size": 64, "buffer_size": 100_000, "learning_starts": 1_000,
            "gamma": 0.99, "target_update_interval": 10, "train_every": 256, "gradient_steps": 128,
            "exploration_fraction": 0.16, "exploration_final_eps": 0.04,
        },
        "evaluation": {"interval_steps": 5_120}, "success_threshold": 475.0,
    },
    {
        "id": "acrobot-dqn", "description": "Acrobot-v1 DQN, one env",
        "env": "Acrobot-v1", "algorithm": "DQN", "env_steps": 100_000, "seeds": 3,
        "network": {"hidden_sizes": [256, 256], "activation": "relu"},
        "hyperparameters": {
            "learning_rate": 6.3e-4, "minibatch_size": 128, "buffer_size": 50_000, "learning_starts": 1_000,
            "gamma": 0.99, "target_update_interval": 250, "train_every": 4, "gradient_steps": 1,
            "exploration_fraction": 0.12, "exploration_final_eps": 0.1,
        },
        "evaluation": {"interval_steps": 10_000}, "success_threshold": -100.0,
    },
    {
        # Evolution strategies on the same env-step budget as cartpole-ppo. A small policy network
        # (ES searches its parameters: fewer of them, faster search) and a small population, so
        # that enough generations fit the budget: a generation of 10 full episodes is 5,000 steps.
        "id": "cartpole-es", "description": "CartPole-v1 evolution strategies, population 10, one env",
        "env": "CartPole-v1", "algorithm": "ES", "env_steps": 100_000, "seeds": 3,
        "network": {"hidden_sizes": [16], "activation": "tanh"},
        "hyperparameters": {"population_size": 10, "sigma": 0.1, "learning_rate": 0.1,
                            "antithetic": True, "centered_ranks": True, "episodes_per_candidate": 1},
        "evaluation": {"interval_steps": 10_000}, "success_threshold": 475.0,
    },
    {
        "id": "pendulum-sac", "description": "Pendulum-v1 SAC, one env",
        "env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 20_000, "seeds": 3,
        "network": {"hidden_sizes": [256, 256], "activation": "relu"},
        "hyperparameters": {"learning_rate": 1e-3, "learning_starts": 1_000, "minibatch_size": 256},
        "evaluation": {"interval_steps": 2_000}, "success_threshold": -200.0,
    },
    PENDULUM_TD3,
    # DDPG on the same settings: what TD3 adds (twin critics, delay, target smoothing) is what differs
    {**PENDULUM_TD3, "id": "pendulum-ddpg", "description": "Pendulum-v1 DDPG, one env", "algorithm": "DDPG"},
]

#: Busy CPU time per step of the calibrated environment in the scaling suite.
SCALING_STEP_COST_MS = 1.0
SCALING_WORKERS = (1, 2, 4)
SCALING: list[dict[str, Any]] = [
    {
        "id": f"calibrated-ppo-w{workers}",
        "description": f"PPO on CartPole with {SCALING_STEP_COST_MS:g} ms of CPU per step, {workers} rollout worker(s)",
        "env": "rlcompare/CalibratedCartPole-v0", "env_kwargs": {"step_cost_ms": SCALING_STEP_COST_MS},
        "algorithm": "PPO", "env_steps": 20_000, "seeds": 2,
        "parallelism": {"envs_per_worker": 1, "workers": workers},
        "hyperparameters": {**CARTPOLE_PPO_QUICK["hyperparameters"], "rollout_steps": 512 // workers},
        "evaluation": {"interval_steps": 10_240, "episodes": 5},
    }
    for workers in SCALING_WORKERS
]


#: The scaling suite's EnvPool arm: the same PPO, rollouts and budget on CartPole-v1 (EnvPool has no
#: calibrated environment; its CartPole-v1 is checked equal to Gymnasium's), the training environments
#: simulated by EnvPool (``parallelism.simulation``; ``workers``: EnvPool's threads for the adapters
#: that honour it, the others are refused when planning). Evaluation stays on Gymnasium's CartPole-v1.
SCALING_ENVPOOL: list[dict[str, Any]] = [
    {
        "id": f"envpool-ppo-w{workers}",
        "description": f"PPO on CartPole-v1 simulated by EnvPool, {workers} worker(s) (EnvPool threads)",
        "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 20_000, "seeds": 2,
        "parallelism": {"envs_per_worker": 1, "workers": workers, "simulation": "envpool"},
        "hyperparameters": {**CARTPOLE_PPO_QUICK["hyperparameters"], "rollout_steps": 512 // workers},
        "evaluation": {"interval_steps": 10_240, "episodes": 5}, "success_threshold": 475.0,
    }
    for workers in SCALING_WORKERS
]


#: The tiny language workload: GRPO on one-digit addition (``<bos>3+4=`` -> ``7<eos>``) with the harness's
#: 2-layer, 64-wide Qwen2-style model, initialized from each seed (no pretraining: the policy starts uniform
#: and learns from the rewards alone). A budget of 192,000 generated tokens is at least 1,000 optimizer steps
#: of 8 prompts x 8 completions (at most 3 tokens each). From a random start GRPO's greedy policy first
#: collapses onto the commonest first digit ("1": 45% of the sums); a KL penalty to the initial model and
#: DAPO's higher upper clip keep it exploring (measured with TRL: about half the training problems right
#: after 2,000 steps, without them none). Evaluation is greedy on the held-out problems (a fifth of them,
#: never trained on), its mean return the mean share of each answer right from its start: 1.0 a correct
#: answer, so the share of 1.0 returns is the accuracy.
LLM_TINY: dict[str, Any] = {
    "id": "addition-grpo-tiny",
    "description": "One-digit addition, GRPO on a tiny Qwen2-style model built by the harness; budget in generated tokens",
    "env": "rlcompare/DigitAddition-v0", "env_kwargs": {"digits": 1, "max_new_tokens": 3},
    "algorithm": "GRPO", "env_steps": 192_000, "seeds": 3,
    "hyperparameters": {"learning_rate": 1e-3, "group_size": 8, "prompts_per_step": 8, "temperature": 1.0,
                        "clip_low": 0.2, "clip_high": 0.28, "kl_coef": 0.04,
                        "loss_aggregation": "token_mean", "advantage_scaling": "group_std"},
    # every 100 optimizer steps at most (100 x 192 tokens), on 40 held-out episodes
    "evaluation": {"interval_steps": 19_200, "episodes": 40, "deterministic": True},
    "success_threshold": 0.9,
}


def builtin_workloads() -> list[Workload]:
    specs = [CARTPOLE_PPO_QUICK, CARTPOLE_PPO_DEMO, *CLASSIC, *SCALING, *SCALING_ENVPOOL, LLM_TINY]
    return [workload_from_dict(spec, f"built-in workload {spec['id']}") for spec in specs]


#: The built-in suites: (name, workload ids, description).
BUILTIN_SUITES: tuple[Suite, ...] = (
    Suite("demo", ("cartpole-ppo-demo",), "CartPole-v1 PPO on 15,360 env steps, 2 seeds: what `make demo` runs"),
    Suite("quick", ("cartpole-ppo-quick",), "CartPole-v1 PPO with every adapter; about a minute per run"),
    Suite("classic", tuple(spec["id"] for spec in CLASSIC), "CartPole PPO/A2C/PG/DQN/ES, Acrobot DQN, Pendulum SAC/TD3/DDPG; 3 seeds"),
    Suite("scaling", tuple(spec["id"] for spec in (*SCALING, *SCALING_ENVPOOL)),
          "PPO on a calibrated-cost CartPole at 1, 2 and 4 rollout workers (same 512-step rollouts), and an "
          "EnvPool arm on CartPole-v1 at 1, 2 and 4 workers for the adapters that honour EnvPool"),
    Suite("llm-tiny", (LLM_TINY["id"],), "GRPO on one-digit addition with a tiny language model the harness builds "
          "(no download; CPU): the LLM post-training libraries, 3 seeds, minutes"),
)
