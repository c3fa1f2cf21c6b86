"""The parity probe as data: what an adapter receives to run its framework's own update on, and
what it hands back (standard library and numpy: the probe runs in the adapter's own environment).

A :class:`ParityProbe` holds initial weights for every network the algorithm family needs (named
canonically, laid out as ``torch.nn.Linear`` lays them out: ``weight`` is ``(out, in)``), one fixed
batch with terminations *and* truncations in it, and the canonical hyperparameters the framework is
configured from (with one epoch over one minibatch: exactly one optimizer step). The adapter loads
the weights into the framework's own model objects, runs the framework's own target computation
(advantages and returns, or TD targets) and one optimizer step, and returns a
:class:`ParityOutcome`: the targets, the gradient the optimizer received (after any clipping), the
updated weights and the loss terms it can read. An adapter that cannot reach its framework's
internals returns :meth:`ParityOutcome.unverifiable` with the reason: never silence.

Both travel as one ``.npz`` file each (arrays) with a JSON header (everything else).

Canonical parameter names, by family (``i`` counts hidden layers from 0):

========  ==============================================================================================
PPO, A2C  ``policy.i.weight|bias``, ``policy.out.weight|bias`` (logits, or the Gaussian mean),
          ``policy.log_std`` (continuous: state-independent), ``value.i.*``, ``value.out.*``
DQN       ``q.i.*``, ``q.out.*``; the target network ``q_target.i.*``, ``q_target.out.*``
SAC       ``actor.i.*``, ``actor.mean.*``, ``actor.log_std.*`` (state-dependent), ``critic1.i.*``,
          ``critic1.out.*`` (input: observation then action), ``critic2.*``, ``critic1_target.*``,
          ``critic2_target.*``, ``log_alpha`` (shape ``(1,)``)
========  ==============================================================================================
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.harness.workload_view import WorkloadView, workload_view

if TYPE_CHECKING:  # numpy loads when a probe is read or written: the adapter contract imports this module
    import numpy as np

#: Bumped when the probe's or the outcome's shape changes (part of the parity cache key).
PARITY_PROTOCOL_VERSION = 1
_HEADER = "header.json"


class ParityError(ValueError):
    """A probe or outcome file that does not have the shape this protocol defines."""


@dataclass(frozen=True)
class ParityProbe:
    """One fixed update problem for one algorithm family (see the module docstring)."""

    family: str
    #: ``{"kind": "discrete", "n": 2}`` or ``{"kind": "continuous", "shape": [1], "low": [...], "high": [...]}``
    action_space: dict[str, Any]
    observation_dim: int
    #: ``{"hidden_sizes": [...], "activation": "tanh" | "relu"}``
    network: dict[str, Any]
    #: The canonical hyperparameters the framework is configured from (the family's model, plain).
    hyperparameters: dict[str, Any]
    weights: dict[str, np.ndarray]
    batch: dict[str, np.ndarray]
    #: The resolved workload the probe stands for (as ``Workload.to_dict``) and what the driver
    #: derived from its family: the adapter configures its framework from it with its usual mapping.
    workload: dict[str, Any] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def workload_view(self) -> WorkloadView:
        """The probe's workload as ``train()`` would see it."""
        return workload_view(self.workload, self.derived)

    @property
    def discrete(self) -> bool:
        return self.action_space.get("kind") == "discrete"

    def digest(self) -> str:
        """Content digest: the same probe, the same digest (part of the parity cache key)."""
        import numpy as np

        hasher = hashlib.sha256(json.dumps(self._header(), sort_keys=True).encode())
        for group in (self.weights, self.batch):
            for name in sorted(group):
                array = np.ascontiguousarray(group[name])
                hasher.update(f"{name}|{array.dtype.str}|{array.shape}".encode())
                hasher.update(array.tobytes())
        return hasher.hexdigest()[:16]

    def _header(self) -> dict[str, Any]:
        return {"protocol": PARITY_PROTOCOL_VERSION, "family": self.family, "action_space": self.action_space,
                "observation_dim": self.observation_dim, "network": self.network,
                "hyperparameters": self.hyperparameters, "workload": self.workload, "derived": self.derived,
                "seed": self.seed}

    def save(self, path: str | Path) -> None:
        _write(Path(path), self._header(), {"weights": self.weights, "batch": self.batch})

    @classmethod
    def load(cls, path: str | Path) -> ParityProbe:
        header, groups = _read(Path(path), ("weights", "batch"))
        try:
            return cls(family=str(header["family"]), action_space=dict(header["action_space"]),
                       observation_dim=int(header["observation_dim"]), network=dict(header["network"]),
                       hyperparameters=dict(header["hyperparameters"]), weights=groups["weights"],
                       batch=groups["batch"], workload=dict(header.get("workload") or {}),
                       derived=dict(header.get("derived") or {}), seed=int(header.get("seed", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParityError(f"{path}: not a parity probe ({exc})") from None


UNVERIFIABLE = "unverifiable"
RAN = "ran"


@dataclass(frozen=True)
class ParityOutcome:
    """What an adapter's ``parity_update`` returns: the framework's own numbers on the probe, or why
    it could not produce them."""

    status: str  # RAN or UNVERIFIABLE
    reason: str = ""
    #: PPO/A2C: ``advantages`` and ``returns`` (shape of the batch's rewards); DQN/SAC: ``q_target``.
    targets: dict[str, np.ndarray] = field(default_factory=dict)
    #: The gradient each parameter had when the optimizer stepped (after clipping), by canonical name.
    gradients: dict[str, np.ndarray] = field(default_factory=dict)
    #: Every parameter after exactly one optimizer step, by canonical name.
    updated: dict[str, np.ndarray] = field(default_factory=dict)
    #: Loss terms the framework reports (``policy``, ``value``, ``entropy``, ``q``, ``actor``, ...).
    losses: dict[str, float] = field(default_factory=dict)
    #: What the adapter wants read next to the verdict (e.g. a default it had to pin).
    notes: tuple[str, ...] = ()
    #: Effective defaults read back from the built agent (initialization, normalization, ...).
    defaults: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def unverifiable(cls, reason: str, **defaults: Any) -> ParityOutcome:
        """The adapter cannot run its framework's update on the probe; ``reason`` says why."""
        return cls(UNVERIFIABLE, reason=reason, defaults=dict(defaults))

    def save(self, path: str | Path) -> None:
        header = {"protocol": PARITY_PROTOCOL_VERSION, "status": self.status, "reason": self.reason,
                  "losses": {key: float(value) for key, value in self.losses.items()},
                  "notes": list(self.notes), "defaults": self.defaults}
        _write(Path(path), header, {"targets": self.targets, "gradients": self.gradients, "updated": self.updated})

    @classmethod
    def load(cls, path: str | Path) -> ParityOutcome:
        header, groups = _read(Path(path), ("targets", "gradients", "updated"))
        status = header.get("status")
        if status not in (RAN, UNVERIFIABLE):
            raise ParityError(f"{path}: status must be {RAN!r} or {UNVERIFIABLE!r}, got {status!r}")
        return cls(status=status, reason=str(header.get("reason") or ""), targets=groups["targets"],
                   gradients=groups["gradients"], updated=groups["updated"],
                   losses={str(k): float(v) for k, v in dict(header.get("losses") or {}).items()},
                   notes=tuple(str(n) for n in header.get("notes") or ()),
                   defaults=dict(header.get("defaults") or {}))


def as_arrays(values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``values`` (tensors, lists, arrays) as float64 numpy arrays, by name."""
    import numpy as np

    out = {}
    for name, value in values.items():
        if hasattr(value, "detach"):  # a torch tensor, without importing torch here
            value = value.detach().cpu().numpy()
        out[name] = np.asarray(value, dtype=np.float64)
    return out


def _write(path: Path, header: dict[str, Any], groups: Mapping[str, Mapping[str, np.ndarray]]) -> None:
    import numpy as np

    partial = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_HEADER, json.dumps(header, default=_plain))
        for group, arrays in groups.items():
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, np.asarray(array), allow_pickle=False)
                archive.writestr(f"{group}/{name}.npy", buffer.getvalue())
    partial.replace(path)


def _read(path: Path, groups: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, dict[str, np.ndarray]]]:
    import numpy as np

    try:
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read(_HEADER))
            found: dict[str, dict[str, np.ndarray]] = {group: {} for group in groups}
            for member in archive.namelist():
                group, _, name = member.partition("/")
                if group in found and name.endswith(".npy"):
                    found[group][name.removesuffix(".npy")] = np.load(io.BytesIO(archive.read(member)),
                                                                     allow_pickle=False)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParityError(f"{path}: cannot read ({exc})") from None
    if not isinstance(header, dict) or header.get("protocol") != PARITY_PROTOCOL_VERSION:
        raise ParityError(f"{path}: parity protocol {header.get('protocol') if isinstance(header, dict) else '?'}, "
                          f"this rlcompare reads {PARITY_PROTOCOL_VERSION}")
    return header, found


def _plain(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
