"""The registry's controlled vocabularies and its catalogue of surveys.

Two families of axes: the seed survey's taxonomy for classic deep-RL frameworks (``control``
entries; Liu, Xu, Qiao, Li, ACM CSUR 2024) and the axes on which the 2026 comparisons of RL
libraries for LLM post-training set those libraries side by side (``llm`` entries). The meaning of
every value is documented in docs/registry.md; this module holds the spellings the loader accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: What an entry's ``domain`` says, and so which axes it must state.
DOMAINS: dict[str, str] = {
    "control": "classic deep-RL framework, compared on the seed survey's axes",
    "llm": "RL for LLM post-training, compared on the axes of the 2026 comparisons",
}

# -- common --------------------------------------------------------------------------------------

BACKENDS = ("pytorch", "tensorflow", "jax", "mindspore", "paddlepaddle", "numpy", "warp", "agnostic")
SYNCHRONIZATION = ("synchronous", "asynchronous", "stale-synchronous", "hybrid")
DOCS = ("site", "repository", "none")
TYPE_HINTS = ("checked", "annotated", "none")
ALGORITHM_PATTERN = re.compile(r"^[A-Z0-9][A-Z0-9+-]*$")
SPDX_PATTERN = re.compile(r"^[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*$")

# -- control: the seed survey's taxonomy ---------------------------------------------------------

#: The survey's learning-system architectures, plus ``non-distributed`` for libraries that have
#: one learner process and no actor/learner split (environments may still run in sub-processes).
ARCHITECTURES = ("centralized", "decentralized", "gossip", "fine-grained", "non-distributed")
SIMULATION_PARALLELISM = ("vectorized-cpu", "async-env-pool", "gpu-batch")
COMPUTING_PARALLELISM = ("multi-process", "multi-thread", "multi-node", "multi-gpu", "tpu", "fpga")
ENV_API_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")

# -- llm: the axes of the LLM post-training comparisons ------------------------------------------

ORCHESTRATION = ("ray", "monarch", "launchpad", "native-python", "pub-sub", "http-microservices", "spmd-launcher")
ROLLOUT_BUFFER = ("none", "double-buffer", "bounded-queue", "unbounded-stream")
#: ``nixl``: the trainer registers its weight shards with NVIDIA's NIXL transfer library and the inference
#: workers read them point to point (one-sided RDMA reads over UCX), no collective with the trainer.
WEIGHT_SYNC = ("nccl-broadcast", "cuda-ipc", "in-process", "filesystem", "filesystem-restart", "http",
               "shared-memory-store", "jax-reshard", "adapter-swap", "nixl")
STALENESS = ("none", "version-rejection", "depth-bounding", "is-correction")
PARTIAL_ROLLOUTS = ("none", "drain", "in-flight-continuation", "abort-resume", "save-resume",
                    "group-cancellation")
LORA = ("none", "merged-sync", "adapter-sync")
TRAINING_BACKENDS = ("ddp", "fsdp", "fsdp2", "deepspeed", "megatron", "hf-trainer", "unsloth", "jax",
                     "pytorch-native", "external")
INFERENCE_BACKENDS = ("vllm", "sglang", "hf-transformers", "openai-api", "megatron", "jax", "tensorrt-llm")
PLACEMENT = ("colocated", "disaggregated")


# -- surveys ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Survey:
    """A published comparison; an entry lists it in ``surveys`` with an excerpt read from it.

    Evidence counts as read from the survey when it cites the survey's DOI or arXiv id, one of its
    ``urls`` (or a page under it), or one of its source ``files`` (repository, path).
    """

    id: str
    citation: str
    year: int
    urls: tuple[str, ...] = ()
    doi: str | None = None
    arxiv: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    covers: str = ""


SURVEYS: dict[str, Survey] = {
    survey.id: survey
    for survey in (
        Survey(
            id="liu-2024",
            citation="Liu, Xu, Qiao, Li, 'Acceleration for Deep Reinforcement Learning using Parallel and "
                     "Distributed Computing: A Survey', ACM Computing Surveys 2024",
            year=2024,
            doi="10.1145/3703453",
            arxiv="2411.05614",
            urls=("https://dl.acm.org/doi/10.1145/3703453", "https://arxiv.org/abs/2411.05614"),
            covers="16 open-source libraries for parallel and distributed deep RL",
        ),
        Survey(
            id="hf-2026",
            citation="'Keep the Tokens Flowing: Lessons from 16 Open-Source RL Libraries', Hugging Face blog, "
                     "2026-03-10",
            year=2026,
            urls=("https://huggingface.co/blog/async-rl-training-landscape",),
            files=(("huggingface/blog", "async-rl-training-landscape.md"),),
            covers="16 asynchronous RL libraries for LLM post-training (its section 2 table), on 7 axes",
        ),
        Survey(
            id="anyscale-2025",
            citation="Griggs, Moritz, 'Open Source RL Libraries for LLMs', Anyscale blog, 2025-07-01 "
                     "(updated 2025-09-01)",
            year=2025,
            urls=("https://www.anyscale.com/blog/open-source-rl-libraries-for-llms",),
            # The article's text is readable here only in a third-party copy; excerpts from it say so.
            files=(("kzinmr/ai-topics",
                    "wiki/raw/articles/2025-07-01_anyscale_open-source-rl-libraries-for-llms.md"),),
            covers="10 RL libraries for LLMs: training and inference backends, async, orchestrator",
        ),
    )
}
